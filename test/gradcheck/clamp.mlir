// fuse.clamp {min = -0.5 : f64, max = 0.7 : f64}: fuse.activation_grad.
// RUN: fusec-gradcheck %s --func=f | FileCheck %s --check-prefix=F

// F: @f: PASS
func.func @f(%x: tensor<3x7x5xf32>) -> tensor<3x7x5xf32> {
  %y = fuse.clamp %x {min = -0.5 : f64, max = 0.7 : f64} : tensor<3x7x5xf32>
  return %y : tensor<3x7x5xf32>
}
