// ResNet-50 bottleneck in training mode (identity shortcut), NHWC, bf16
// activations and f32 batch norm parameters and statistics (PyTorch AMP):
//   1x1 (32 -> 8) -> BN -> relu -> 3x3 (8) -> BN -> relu -> 1x1 (8 -> 32)
//   -> BN -> + x -> relu
// The channels are ResNet-50's conv2_x block (256 -> 64 -> 256) divided by 8,
// at batch 2 and 8x8, so that the CPU reference stays fast; bench/training.py
// builds the full-size block. Returns the output and the six updated running
// statistics.
//
//   fusec-opt examples/training/resnet50_bottleneck.mlir -fusec-autodiff
func.func @resnet50_bottleneck(
    %x: tensor<2x8x8x32xbf16>,
    %w1: tensor<8x1x1x32xbf16>, %rm1: tensor<8xf32>, %rv1: tensor<8xf32>,
    %g1: tensor<8xf32>, %b1: tensor<8xf32>,
    %w2: tensor<8x3x3x8xbf16>, %rm2: tensor<8xf32>, %rv2: tensor<8xf32>,
    %g2: tensor<8xf32>, %b2: tensor<8xf32>,
    %w3: tensor<32x1x1x8xbf16>, %rm3: tensor<32xf32>, %rv3: tensor<32xf32>,
    %g3: tensor<32xf32>, %b3: tensor<32xf32>)
    -> (tensor<2x8x8x32xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
        tensor<32xf32>, tensor<32xf32>) {
  %c1 = fuse.conv2d %x, %w1 : tensor<2x8x8x32xbf16>, tensor<8x1x1x32xbf16>
  %n1, %m1, %i1, %nrm1, %nrv1 = fuse.batch_norm_train %c1, %rm1, %rv1, %g1, %b1
      : tensor<2x8x8x8xbf16>, tensor<8xf32>
  %r1 = fuse.relu %n1 : tensor<2x8x8x8xbf16>
  %c2 = fuse.conv2d %r1, %w2 {padding = array<i64: 1, 1>}
      : tensor<2x8x8x8xbf16>, tensor<8x3x3x8xbf16>
  %n2, %m2, %i2, %nrm2, %nrv2 = fuse.batch_norm_train %c2, %rm2, %rv2, %g2, %b2
      : tensor<2x8x8x8xbf16>, tensor<8xf32>
  %r2 = fuse.relu %n2 : tensor<2x8x8x8xbf16>
  %c3 = fuse.conv2d %r2, %w3 : tensor<2x8x8x8xbf16>, tensor<32x1x1x8xbf16>
  %n3, %m3, %i3, %nrm3, %nrv3 = fuse.batch_norm_train %c3, %rm3, %rv3, %g3, %b3
      : tensor<2x8x8x32xbf16>, tensor<32xf32>
  %s = fuse.add %n3, %x : tensor<2x8x8x32xbf16>, tensor<2x8x8x32xbf16>
  %y = fuse.relu %s : tensor<2x8x8x32xbf16>
  return %y, %nrm1, %nrv1, %nrm2, %nrv2, %nrm3, %nrv3
      : tensor<2x8x8x32xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
        tensor<32xf32>, tensor<32xf32>
}
