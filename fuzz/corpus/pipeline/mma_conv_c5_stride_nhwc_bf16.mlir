func.func @g(%a0: tensor<3x19x13x5xbf16>, %a1: tensor<40x5x5x5xbf16>, %a2: tensor<40xbf16>, %a3: tensor<40xbf16>, %a4: tensor<40xbf16>, %a5: tensor<40xbf16>) -> (tensor<3x10x7x40xbf16>) {
  %v0 = fuse.conv2d %a0, %a1 {strides = array<i64: 2, 2>, padding = array<i64: 2, 2>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nhwc>} : tensor<3x19x13x5xbf16>, tensor<40x5x5x5xbf16>
  %v1 = fuse.batch_norm %v0, %a2, %a3, %a4, %a5 {layout = #fuse.layout<nhwc>} : tensor<3x10x7x40xbf16>, tensor<40xbf16>
  %v2 = fuse.relu %v1 : tensor<3x10x7x40xbf16>
  return %v2 : tensor<3x10x7x40xbf16>
}
