// fuse.linear: input, weight (rows of every leading axis) and bias.
// RUN: fusec-gradcheck %s --func=bias | FileCheck %s --check-prefix=BIAS
// RUN: fusec-gradcheck %s --func=nobias | FileCheck %s --check-prefix=NOBIAS

// BIAS: @bias: PASS
func.func @bias(%x: tensor<3x5x7xf32>, %w: tensor<4x7xf32>, %b: tensor<4xf32>) -> tensor<3x5x4xf32> {
  %y = fuse.linear %x, %w, %b : tensor<3x5x7xf32>, tensor<4x7xf32>, tensor<4xf32>
  return %y : tensor<3x5x4xf32>
}

// NOBIAS: @nobias: PASS
func.func @nobias(%x: tensor<5x7xf32>, %w: tensor<3x7xf32>) -> tensor<5x3xf32> {
  %y = fuse.linear %x, %w : tensor<5x7xf32>, tensor<3x7xf32>
  return %y : tensor<5x3xf32>
}
