func.func @g(%a0: tensor<2x9x40xf16>, %a1: tensor<24x40xf16>, %a2: tensor<24xf16>, %a3: tensor<16x40xf16>, %a4: tensor<16xf16>, %a5: tensor<72x40xf16>, %a6: tensor<72xf16>) -> (tensor<2x9x24xf16>, tensor<2x9x16xf16>, tensor<2x9x72xf16>) {
  %v0 = fuse.linear %a0, %a1, %a2 : tensor<2x9x40xf16>, tensor<24x40xf16>, tensor<24xf16>
  %v1 = fuse.relu %v0 : tensor<2x9x24xf16>
  %v2 = fuse.linear %a0, %a3, %a4 : tensor<2x9x40xf16>, tensor<16x40xf16>, tensor<16xf16>
  %v3 = fuse.silu %v2 : tensor<2x9x16xf16>
  %v4 = fuse.linear %a0, %a5, %a6 : tensor<2x9x40xf16>, tensor<72x40xf16>, tensor<72xf16>
  %v5 = fuse.tanh %v4 : tensor<2x9x72xf16>
  return %v1, %v3, %v5 : tensor<2x9x24xf16>, tensor<2x9x16xf16>, tensor<2x9x72xf16>
}
