// fuse.transpose: the inverse permutation.
// RUN: fusec-gradcheck %s --func=f | FileCheck %s --check-prefix=F

// F: @f: PASS
func.func @f(%x: tensor<3x4x5xf32>) -> tensor<5x3x4xf32> {
  %y = fuse.transpose %x {permutation = array<i64: 2, 0, 1>} : tensor<3x4x5xf32>
  return %y : tensor<5x3x4xf32>
}
