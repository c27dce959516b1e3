// fuse.rms_norm: fuse.norm_grad with `rms` (the root mean square
// recomputed from the input); the scale's gradient summed over the rows.
// RUN: fusec-gradcheck %s --func=scaled | FileCheck %s --check-prefix=SCALED
// RUN: fusec-gradcheck %s --func=plain | FileCheck %s --check-prefix=PLAIN
// RUN: fusec-gradcheck %s --func=rank2 | FileCheck %s --check-prefix=RANK2

// SCALED: @scaled: PASS
func.func @scaled(%x: tensor<3x5x13xf32>, %g: tensor<13xf32>) -> tensor<3x5x13xf32> {
  %y = fuse.rms_norm %x scale(%g : tensor<13xf32>) : tensor<3x5x13xf32>
  %r = fuse.silu %y : tensor<3x5x13xf32>
  return %r : tensor<3x5x13xf32>
}

// PLAIN: @plain: PASS
func.func @plain(%x: tensor<6x5xf32>) -> tensor<6x5xf32> {
  %y = fuse.rms_norm %x {epsilon = 1.0e-2 : f64} : tensor<6x5xf32>
  %r = fuse.mul %y, %x : tensor<6x5xf32>, tensor<6x5xf32>
  return %r : tensor<6x5xf32>
}

// RANK2: @rank2: PASS
func.func @rank2(%x: tensor<2x3x7xf32>, %g: tensor<3x7xf32>) -> tensor<2x3x7xf32> {
  %y = fuse.rms_norm %x scale(%g : tensor<3x7xf32>) {normalized_rank = 2 : i64} : tensor<2x3x7xf32>
  return %y : tensor<2x3x7xf32>
}
