// U-Net decoder step in training mode, NHWC, bf16 activations and f32 batch
// norm parameters and statistics (PyTorch AMP): the low-resolution features
// are upsampled by a learned 2x2, stride-2 transposed convolution (32 -> 16
// channels), joined with the encoder's skip connection along channels, and
// refined by a 3x3 convolution (32 -> 16) with batch norm and ReLU.
// Batch 2, 4x4 -> 8x8, so that the CPU reference stays fast. Returns the
// output and the two updated running statistics.
//
//   fusec-opt examples/training/unet_decoder_step.mlir -fusec-autodiff
func.func @unet_decoder_step(
    %x: tensor<2x4x4x32xbf16>, %skip: tensor<2x8x8x16xbf16>,
    %wu: tensor<32x2x2x16xbf16>, %bu: tensor<16xbf16>,
    %w: tensor<16x3x3x32xbf16>, %rm: tensor<16xf32>, %rv: tensor<16xf32>,
    %g: tensor<16xf32>, %b: tensor<16xf32>)
    -> (tensor<2x8x8x16xbf16>, tensor<16xf32>, tensor<16xf32>) {
  %up = fuse.conv_transpose2d %x, %wu, %bu {strides = array<i64: 2, 2>}
      : tensor<2x4x4x32xbf16>, tensor<32x2x2x16xbf16>, tensor<16xbf16>
  %cat = fuse.concat %up, %skip {axis = 3}
      : tensor<2x8x8x16xbf16>, tensor<2x8x8x16xbf16>
  %c = fuse.conv2d %cat, %w {padding = array<i64: 1, 1>}
      : tensor<2x8x8x32xbf16>, tensor<16x3x3x32xbf16>
  %n, %m, %i, %nrm, %nrv = fuse.batch_norm_train %c, %rm, %rv, %g, %b
      : tensor<2x8x8x16xbf16>, tensor<16xf32>
  %y = fuse.relu %n : tensor<2x8x8x16xbf16>
  return %y, %nrm, %nrv : tensor<2x8x8x16xbf16>, tensor<16xf32>, tensor<16xf32>
}
