func.func @g(%a0: tensor<1x12x13x7xf16>, %a1: tensor<7x3x3x1xf16>, %a2: tensor<7xf16>, %a3: tensor<7xf16>, %a4: tensor<7xf16>, %a5: tensor<7xf16>) -> (tensor<1x6x7x7xf16>) {
  %v0 = fuse.conv2d %a0, %a1 {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 7, layout = #fuse.layout<nhwc>} : tensor<1x12x13x7xf16>, tensor<7x3x3x1xf16>
  %v1 = fuse.batch_norm %v0, %a2, %a3, %a4, %a5 {layout = #fuse.layout<nhwc>} : tensor<1x6x7x7xf16>, tensor<7xf16>
  %v2 = fuse.hardswish %v1 : tensor<1x6x7x7xf16>
  return %v2 : tensor<1x6x7x7xf16>
}
