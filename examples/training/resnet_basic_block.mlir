// ResNet basic block in training mode, NHWC, bf16 activations and f32 batch
// norm parameters and statistics (PyTorch AMP):
//   conv3x3 -> batch_norm_train -> relu -> conv3x3 -> batch_norm_train
//   -> + x -> relu
// Returns the block's output and the four updated running statistics.
// Small shapes (batch 2, 8x8) so that the CPU reference stays fast.
//
//   fusec-opt examples/training/resnet_basic_block.mlir -fusec-autodiff
func.func @resnet_basic_block(
    %x: tensor<2x8x8x16xbf16>,
    %w1: tensor<16x3x3x16xbf16>, %rm1: tensor<16xf32>, %rv1: tensor<16xf32>,
    %g1: tensor<16xf32>, %b1: tensor<16xf32>,
    %w2: tensor<16x3x3x16xbf16>, %rm2: tensor<16xf32>, %rv2: tensor<16xf32>,
    %g2: tensor<16xf32>, %b2: tensor<16xf32>)
    -> (tensor<2x8x8x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %c1 = fuse.conv2d %x, %w1 {padding = array<i64: 1, 1>}
      : tensor<2x8x8x16xbf16>, tensor<16x3x3x16xbf16>
  %n1, %m1, %i1, %nrm1, %nrv1 = fuse.batch_norm_train %c1, %rm1, %rv1, %g1, %b1
      : tensor<2x8x8x16xbf16>, tensor<16xf32>
  %r1 = fuse.relu %n1 : tensor<2x8x8x16xbf16>
  %c2 = fuse.conv2d %r1, %w2 {padding = array<i64: 1, 1>}
      : tensor<2x8x8x16xbf16>, tensor<16x3x3x16xbf16>
  %n2, %m2, %i2, %nrm2, %nrv2 = fuse.batch_norm_train %c2, %rm2, %rv2, %g2, %b2
      : tensor<2x8x8x16xbf16>, tensor<16xf32>
  %s = fuse.add %n2, %x : tensor<2x8x8x16xbf16>, tensor<2x8x8x16xbf16>
  %y = fuse.relu %s : tensor<2x8x8x16xbf16>
  return %y, %nrm1, %nrv1, %nrm2, %nrv2
      : tensor<2x8x8x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
