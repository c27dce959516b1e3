func.func @g(%a0: tensor<1x6x9x10xf32>) -> (tensor<1x6x5x5xf32>) {
  %v0 = fuse.avg_pool2d %a0 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, layout = #fuse.layout<nchw>, count_include_pad = false} : tensor<1x6x9x10xf32>
  %v1 = fuse.silu %v0 : tensor<1x6x5x5xf32>
  return %v1 : tensor<1x6x5x5xf32>
}
