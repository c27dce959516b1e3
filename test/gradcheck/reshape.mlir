// fuse.reshape.
// RUN: fusec-gradcheck %s --func=f | FileCheck %s --check-prefix=F

// F: @f: PASS
func.func @f(%x: tensor<3x10xf32>) -> tensor<5x3x2xf32> {
  %r = fuse.reshape %x : tensor<3x10xf32> to tensor<5x3x2xf32>
  %y = fuse.mul %r, %r : tensor<5x3x2xf32>, tensor<5x3x2xf32>
  return %y : tensor<5x3x2xf32>
}
