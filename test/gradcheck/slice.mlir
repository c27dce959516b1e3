// fuse.slice: fuse.slice_grad places the gradient into zeros.
// RUN: fusec-gradcheck %s --func=f | FileCheck %s --check-prefix=F

// F: @f: PASS
func.func @f(%x: tensor<4x9x13xf32>) -> tensor<2x5x7xf32> {
  %y = fuse.slice %x {offsets = array<i64: 1, 2, 3>, sizes = array<i64: 2, 5, 7>} : tensor<4x9x13xf32>
  return %y : tensor<2x5x7xf32>
}
