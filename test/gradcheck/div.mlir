// fuse.div: gradients of both operands, summed over broadcast axes.
// RUN: fusec-gradcheck %s --func=same | FileCheck %s --check-prefix=SAME
// RUN: fusec-gradcheck %s --func=bcast | FileCheck %s --check-prefix=BCAST
// RUN: fusec-gradcheck %s --func=scalar | FileCheck %s --check-prefix=SCALAR
// RUN: fusec-gradcheck %s --func=both | FileCheck %s --check-prefix=BOTH

// SAME: @same: PASS
func.func @same(%x: tensor<3x5xf32>, %w: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %d = fuse.sigmoid %w : tensor<3x5xf32>
  %y = fuse.div %x, %d : tensor<3x5xf32>, tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// BCAST: @bcast: PASS
func.func @bcast(%x: tensor<2x5x7x3xf32>, %w: tensor<5x1x3xf32>) -> tensor<2x5x7x3xf32> {
  %d = fuse.sigmoid %w : tensor<5x1x3xf32>
  %y = fuse.div %x, %d : tensor<2x5x7x3xf32>, tensor<5x1x3xf32>
  return %y : tensor<2x5x7x3xf32>
}

// SCALAR: @scalar: PASS
func.func @scalar(%x: tensor<3x7xf32>, %w: tensor<f32>) -> tensor<3x7xf32> {
  %d = fuse.sigmoid %w : tensor<f32>
  %y = fuse.div %x, %d : tensor<3x7xf32>, tensor<f32>
  return %y : tensor<3x7xf32>
}

// BOTH: @both: PASS
func.func @both(%x: tensor<1x3xf32>, %w: tensor<4x1xf32>) -> tensor<4x3xf32> {
  %d = fuse.sigmoid %w : tensor<4x1xf32>
  %y = fuse.div %x, %d : tensor<1x3xf32>, tensor<4x1xf32>
  return %y : tensor<4x3xf32>
}
