func.func @g(%a0: tensor<2x4x13x16xbf16>, %a1: tensor<2x2x19x16xbf16>, %a2: tensor<2x2x19x8xbf16>, %a3: tensor<13x19xbf16>) -> (tensor<2x4x13x8xbf16>, tensor<2x4x13x8xbf16>) {
  %v0 = fuse.attention %a0, %a1, %a2, %a3 : tensor<2x4x13x16xbf16>, tensor<2x2x19x16xbf16>, tensor<2x2x19x8xbf16>, tensor<13x19xbf16>
  %v1 = fuse.attention %a0, %a1, %a2 {causal, scale = 0.3} : tensor<2x4x13x16xbf16>, tensor<2x2x19x16xbf16>, tensor<2x2x19x8xbf16>
  return %v0, %v1 : tensor<2x4x13x8xbf16>, tensor<2x4x13x8xbf16>
}
