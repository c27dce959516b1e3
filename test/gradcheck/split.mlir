// fuse.split: the pieces' gradients concatenated; a piece without one
// leaves zeros (slice_grad).
// RUN: fusec-gradcheck %s --func=all | FileCheck %s --check-prefix=ALL
// RUN: fusec-gradcheck %s --func=some | FileCheck %s --check-prefix=SOME

// ALL: @all: PASS
func.func @all(%x: tensor<3x9x5xf32>) -> (tensor<3x2x5xf32>, tensor<3x3x5xf32>, tensor<3x4x5xf32>) {
  %p:3 = fuse.split %x {axis = 1, sizes = array<i64: 2, 3, 4>} : tensor<3x9x5xf32>
  %y = fuse.mul %p#0, %p#0 : tensor<3x2x5xf32>, tensor<3x2x5xf32>
  return %y, %p#1, %p#2 : tensor<3x2x5xf32>, tensor<3x3x5xf32>, tensor<3x4x5xf32>
}

// SOME: @some: PASS
func.func @some(%x: tensor<3x9x5xf32>) -> (tensor<3x4x5xf32>, tensor<3x2x5xf32>) {
  %p:3 = fuse.split %x {axis = -2, sizes = array<i64: 2, 3, 4>} : tensor<3x9x5xf32>
  return %p#2, %p#0 : tensor<3x4x5xf32>, tensor<3x2x5xf32>
}
