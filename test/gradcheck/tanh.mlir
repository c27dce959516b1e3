// fuse.tanh: fuse.activation_grad.
// RUN: fusec-gradcheck %s --func=f | FileCheck %s --check-prefix=F

// F: @f: PASS
func.func @f(%x: tensor<3x7x5xf32>) -> tensor<3x7x5xf32> {
  %a = fuse.add %x, %x : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %b = fuse.add %a, %a : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %y = fuse.tanh %b : tensor<3x7x5xf32>
  return %y : tensor<3x7x5xf32>
}
