// U-Net decoder step, f16 NHWC: the low-resolution features are upsampled
// (bilinear, 2x), joined with the encoder's skip connection along channels,
// and refined by two 3x3 convolutions with batch norm and ReLU. Compiles to
// 3 kernels: the first convolution reads the concatenation in place, so the
// joined tensor never exists in memory.
//
//   fusec run examples/unet_decoder.mlir --device=cpu
func.func @unet_decoder(
    %x: tensor<1x16x16x64xf16>, %skip: tensor<1x32x32x32xf16>,
    %w1: tensor<32x3x3x96xf16>,
    %m1: tensor<32xf16>, %v1: tensor<32xf16>, %g1: tensor<32xf16>, %b1: tensor<32xf16>,
    %w2: tensor<32x3x3x32xf16>,
    %m2: tensor<32xf16>, %v2: tensor<32xf16>, %g2: tensor<32xf16>, %b2: tensor<32xf16>)
    -> tensor<1x32x32x32xf16> {
  %up = fuse.upsample %x {mode = #fuse.upsample_mode<bilinear>,
                          scale = array<f64: 2.0, 2.0>}
      : tensor<1x16x16x64xf16>
  %cat = fuse.concat %up, %skip {axis = 3}
      : tensor<1x32x32x64xf16>, tensor<1x32x32x32xf16>
  %c1 = fuse.conv2d %cat, %w1 {padding = array<i64: 1, 1>}
      : tensor<1x32x32x96xf16>, tensor<32x3x3x96xf16>
  %n1 = fuse.batch_norm %c1, %m1, %v1, %g1, %b1
      : tensor<1x32x32x32xf16>, tensor<32xf16>
  %r1 = fuse.relu %n1 : tensor<1x32x32x32xf16>
  %c2 = fuse.conv2d %r1, %w2 {padding = array<i64: 1, 1>}
      : tensor<1x32x32x32xf16>, tensor<32x3x3x32xf16>
  %n2 = fuse.batch_norm %c2, %m2, %v2, %g2, %b2
      : tensor<1x32x32x32xf16>, tensor<32xf16>
  %r2 = fuse.relu %n2 : tensor<1x32x32x32xf16>
  return %r2 : tensor<1x32x32x32xf16>
}
