func.func @g(%a0: tensor<2x13x11x16xf16>) -> (tensor<2x7x6x16xf16>) {
  %v0 = fuse.max_pool2d %a0 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, layout = #fuse.layout<nhwc>} : tensor<2x13x11x16xf16>
  %v1 = fuse.silu %v0 : tensor<2x7x6x16xf16>
  return %v1 : tensor<2x7x6x16xf16>
}
