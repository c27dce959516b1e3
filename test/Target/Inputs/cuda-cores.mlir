// Graphs whose kernels run on CUDA cores, one per family group, for the
// CUDA C backend's tests (fusec --entry=NAME).

// elementwise: a broadcast multiply and a chain of activations in f16.
func.func @elementwise(%x: tensor<3x5x7xf16>, %b: tensor<7xf16>) -> tensor<3x5x7xf16> {
  %0 = fuse.mul %x, %b : tensor<3x5x7xf16>, tensor<7xf16>
  %1 = fuse.sigmoid %0 : tensor<3x5x7xf16>
  %2 = fuse.tanh %1 : tensor<3x5x7xf16>
  %3 = fuse.leaky_relu %2 : tensor<3x5x7xf16>
  return %3 : tensor<3x5x7xf16>
}

// row_reduction: layer norm + GeLU (tanh) in bf16, softmax in f32.
func.func @rows(%x: tensor<3x37x50xbf16>, %g: tensor<50xbf16>, %b: tensor<50xbf16>,
                %s: tensor<4x9x6xf32>) -> (tensor<3x37x50xbf16>, tensor<4x9x6xf32>) {
  %0 = fuse.layer_norm %x scale(%g : tensor<50xbf16>) shift(%b : tensor<50xbf16>) : tensor<3x37x50xbf16>
  %1 = fuse.gelu %0 {approximate = #fuse.gelu_approx<tanh>} : tensor<3x37x50xbf16>
  %2 = fuse.softmax %s : tensor<4x9x6xf32>
  return %1, %2 : tensor<3x37x50xbf16>, tensor<4x9x6xf32>
}

// pool_resample: max pooling (NaN-propagating), average pooling and a
// bilinear upsample.
func.func @pooling(%x: tensor<2x13x11x5xf32>, %y: tensor<1x9x10x6xf32>, %z: tensor<1x5x6x3xf32>)
    -> (tensor<2x7x6x5xf32>, tensor<1x5x5x6xf32>, tensor<1x10x9x3xf32>) {
  %0 = fuse.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x13x11x5xf32>
  %1 = fuse.avg_pool2d %y {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, count_include_pad = false} : tensor<1x9x10x6xf32>
  %2 = fuse.upsample %z {mode = #fuse.upsample_mode<bilinear>, scale = array<f64: 2.0, 1.5>} : tensor<1x5x6x3xf32>
  return %0, %1, %2 : tensor<2x7x6x5xf32>, tensor<1x5x5x6xf32>, tensor<1x10x9x3xf32>
}

// gather: rope and a transpose in bf16.
func.func @gather(%x: tensor<1x3x7x6xbf16>, %c: tensor<7x3xbf16>, %s: tensor<7x3xbf16>)
    -> (tensor<1x3x7x6xbf16>, tensor<1x7x3x6xbf16>) {
  %0 = fuse.rope %x, %c, %s : tensor<1x3x7x6xbf16>, tensor<7x3xbf16>
  %1 = fuse.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x3x7x6xbf16>
  return %0, %1 : tensor<1x3x7x6xbf16>, tensor<1x7x3x6xbf16>
}

// direct_conv: a depthwise convolution with batch norm and hardswish in f16.
func.func @depthwise(%x: tensor<1x12x13x7xf16>, %w: tensor<7x3x3x1xf16>) -> tensor<1x6x7x7xf16> {
  %0 = fuse.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 7} : tensor<1x12x13x7xf16>, tensor<7x3x3x1xf16>
  %1 = fuse.hardswish %0 : tensor<1x6x7x7xf16>
  return %1 : tensor<1x6x7x7xf16>
}

// attention_direct: f32 attention, one thread per output row, with a mask.
func.func @attention(%q: tensor<2x4x13x16xf32>, %k: tensor<2x2x19x16xf32>, %v: tensor<2x2x19x8xf32>,
                     %m: tensor<13x19xf32>) -> tensor<2x4x13x8xf32> {
  %0 = fuse.attention %q, %k, %v, %m : tensor<2x4x13x16xf32>, tensor<2x2x19x16xf32>, tensor<2x2x19x8xf32>, tensor<13x19xf32>
  return %0 : tensor<2x4x13x8xf32>
}
