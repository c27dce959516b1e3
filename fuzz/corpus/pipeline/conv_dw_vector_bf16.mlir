func.func @g(%a0: tensor<2x11x13x16xbf16>, %a1: tensor<16x3x3x1xbf16>, %a2: tensor<16xbf16>, %a3: tensor<16xbf16>, %a4: tensor<16xbf16>, %a5: tensor<16xbf16>, %a6: tensor<16xbf16>) -> (tensor<2x6x7x16xbf16>) {
  %v0 = fuse.conv2d %a0, %a1, %a2 {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 16, layout = #fuse.layout<nhwc>} : tensor<2x11x13x16xbf16>, tensor<16x3x3x1xbf16>, tensor<16xbf16>
  %v1 = fuse.batch_norm %v0, %a3, %a4, %a5, %a6 {layout = #fuse.layout<nhwc>} : tensor<2x6x7x16xbf16>, tensor<16xbf16>
  %v2 = fuse.relu6 %v1 : tensor<2x6x7x16xbf16>
  return %v2 : tensor<2x6x7x16xbf16>
}
