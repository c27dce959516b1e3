// fuse.layer_norm: fuse.norm_grad (the row statistics recomputed from the
// input); scale and shift gradients summed over the rows. A normalised rank
// of 2, no affine parameters, and a large mean (the statistics must not
// lose it).
// RUN: fusec-gradcheck %s --func=affine | FileCheck %s --check-prefix=AFFINE
// RUN: fusec-gradcheck %s --func=rank2 | FileCheck %s --check-prefix=RANK2
// RUN: fusec-gradcheck %s --func=plain | FileCheck %s --check-prefix=PLAIN
// RUN: fusec-gradcheck %s --func=scale_only | FileCheck %s --check-prefix=SCALE

// AFFINE: @affine: PASS
func.func @affine(%x: tensor<3x5x7xf32>, %g: tensor<7xf32>, %b: tensor<7xf32>) -> tensor<3x5x7xf32> {
  %y = fuse.layer_norm %x scale(%g : tensor<7xf32>) shift(%b : tensor<7xf32>) : tensor<3x5x7xf32>
  %r = fuse.mul %y, %y : tensor<3x5x7xf32>, tensor<3x5x7xf32>
  return %r : tensor<3x5x7xf32>
}

// RANK2: @rank2: PASS
func.func @rank2(%x: tensor<3x5x7xf32>, %g: tensor<5x7xf32>, %b: tensor<5x7xf32>) -> tensor<3x5x7xf32> {
  %y = fuse.layer_norm %x scale(%g : tensor<5x7xf32>) shift(%b : tensor<5x7xf32>) {normalized_rank = 2 : i64, epsilon = 1.0e-3 : f64} : tensor<3x5x7xf32>
  %r = fuse.gelu %y : tensor<3x5x7xf32>
  return %r : tensor<3x5x7xf32>
}

// PLAIN: @plain: PASS
func.func @plain(%x: tensor<4x9xf32>) -> tensor<4x9xf32> {
  %y = fuse.layer_norm %x : tensor<4x9xf32>
  %r = fuse.mul %y, %x : tensor<4x9xf32>, tensor<4x9xf32>
  return %r : tensor<4x9xf32>
}

// SCALE: @scale_only: PASS
func.func @scale_only(%x: tensor<2x1x11xf32>, %g: tensor<11xf32>) -> tensor<2x1x11xf32> {
  %y = fuse.layer_norm %x scale(%g : tensor<11xf32>) : tensor<2x1x11xf32>
  %r = fuse.tanh %y : tensor<2x1x11xf32>
  return %r : tensor<2x1x11xf32>
}
