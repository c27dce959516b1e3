func.func @g(%a0: tensor<2x13x17x24xf16>, %a1: tensor<40x3x5x24xf16>, %a2: tensor<40xf16>) -> (tensor<2x12x12x40xf16>) {
  %v0 = fuse.conv2d %a0, %a1, %a2 {padding = array<i64: 1, 0, 2, 1>, dilation = array<i64: 1, 2>} : tensor<2x13x17x24xf16>, tensor<40x3x5x24xf16>, tensor<40xf16>
  %v1 = fuse.relu %v0 : tensor<2x12x12x40xf16>
  return %v1 : tensor<2x12x12x40xf16>
}
