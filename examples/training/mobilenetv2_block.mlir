// MobileNetV2 inverted residual block in training mode, NHWC, bf16
// activations and f32 batch norm parameters and statistics (PyTorch AMP):
//   1x1 expand (16 -> 96) -> BN -> relu6 -> 3x3 depthwise (96 groups) -> BN
//   -> relu6 -> 1x1 project (96 -> 16) -> BN -> + x
// Batch 2, 8x8, so that the CPU reference stays fast. Returns the output and
// the six updated running statistics.
//
//   fusec-opt examples/training/mobilenetv2_block.mlir -fusec-autodiff
func.func @mobilenetv2_block(
    %x: tensor<2x8x8x16xbf16>,
    %we: tensor<96x1x1x16xbf16>, %rme: tensor<96xf32>, %rve: tensor<96xf32>,
    %ge: tensor<96xf32>, %be: tensor<96xf32>,
    %wd: tensor<96x3x3x1xbf16>, %rmd: tensor<96xf32>, %rvd: tensor<96xf32>,
    %gd: tensor<96xf32>, %bd: tensor<96xf32>,
    %wp: tensor<16x1x1x96xbf16>, %rmp: tensor<16xf32>, %rvp: tensor<16xf32>,
    %gp: tensor<16xf32>, %bp: tensor<16xf32>)
    -> (tensor<2x8x8x16xbf16>, tensor<96xf32>, tensor<96xf32>, tensor<96xf32>, tensor<96xf32>,
        tensor<16xf32>, tensor<16xf32>) {
  %c1 = fuse.conv2d %x, %we : tensor<2x8x8x16xbf16>, tensor<96x1x1x16xbf16>
  %n1, %m1, %i1, %nrm1, %nrv1 = fuse.batch_norm_train %c1, %rme, %rve, %ge, %be
      : tensor<2x8x8x96xbf16>, tensor<96xf32>
  %r1 = fuse.relu6 %n1 : tensor<2x8x8x96xbf16>
  %c2 = fuse.conv2d %r1, %wd {padding = array<i64: 1, 1>, groups = 96}
      : tensor<2x8x8x96xbf16>, tensor<96x3x3x1xbf16>
  %n2, %m2, %i2, %nrm2, %nrv2 = fuse.batch_norm_train %c2, %rmd, %rvd, %gd, %bd
      : tensor<2x8x8x96xbf16>, tensor<96xf32>
  %r2 = fuse.relu6 %n2 : tensor<2x8x8x96xbf16>
  %c3 = fuse.conv2d %r2, %wp : tensor<2x8x8x96xbf16>, tensor<16x1x1x96xbf16>
  %n3, %m3, %i3, %nrm3, %nrv3 = fuse.batch_norm_train %c3, %rmp, %rvp, %gp, %bp
      : tensor<2x8x8x16xbf16>, tensor<16xf32>
  %y = fuse.add %n3, %x : tensor<2x8x8x16xbf16>, tensor<2x8x8x16xbf16>
  return %y, %nrm1, %nrv1, %nrm2, %nrv2, %nrm3, %nrv3
      : tensor<2x8x8x16xbf16>, tensor<96xf32>, tensor<96xf32>, tensor<96xf32>, tensor<96xf32>,
        tensor<16xf32>, tensor<16xf32>
}
