func.func @g(%a0: tensor<2x12x10x9xf32>, %a1: tensor<36x4x3x3xf32>, %a2: tensor<36xf32>, %a3: tensor<36xf32>, %a4: tensor<36xf32>, %a5: tensor<36xf32>) -> (tensor<2x36x10x9xf32>) {
  %v0 = fuse.conv2d %a0, %a1 {strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 3, layout = #fuse.layout<nchw>} : tensor<2x12x10x9xf32>, tensor<36x4x3x3xf32>
  %v1 = fuse.batch_norm %v0, %a2, %a3, %a4, %a5 {layout = #fuse.layout<nchw>} : tensor<2x36x10x9xf32>, tensor<36xf32>
  %v2 = fuse.silu %v1 : tensor<2x36x10x9xf32>
  return %v2 : tensor<2x36x10x9xf32>
}
