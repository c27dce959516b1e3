// fuse.cast f16 -> f32, squared so that the gradient depends on x; the
// cast rounds to f32, so the step is large (central differences are exact
// for a quadratic); the gradient is rounded back to f16, hence the tolerance.
// RUN: fusec-gradcheck %s --func=f --eps=0.25 --tolerance=2e-3 | FileCheck %s --check-prefix=F

// F: @f: PASS
func.func @f(%x: tensor<3x5xf16>) -> tensor<3x5xf32> {
  %c = fuse.cast %x : tensor<3x5xf16> to tensor<3x5xf32>
  %y = fuse.mul %c, %c : tensor<3x5xf32>, tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
