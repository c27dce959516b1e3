func.func @g(%a0: tensor<2x5x7x24xbf16>, %a1: tensor<24x40xbf16>, %a2: tensor<3x11x33xbf16>, %a3: tensor<24xbf16>, %a4: tensor<24xbf16>, %a5: tensor<24xbf16>, %a6: tensor<24xbf16>, %a7: tensor<40xbf16>, %a8: tensor<33xbf16>) -> (tensor<2x5x7x24xbf16>, tensor<24x40xbf16>, tensor<3x11x33xbf16>) {
  %v0 = fuse.batch_norm %a0, %a3, %a4, %a5, %a6 : tensor<2x5x7x24xbf16>, tensor<24xbf16>
  %v1 = fuse.relu %v0 : tensor<2x5x7x24xbf16>
  %v2 = fuse.bias_add %a1, %a7 : tensor<24x40xbf16>, tensor<40xbf16>
  %v3 = fuse.gelu %v2 : tensor<24x40xbf16>
  %v4 = fuse.bias_add %a2, %a8 : tensor<3x11x33xbf16>, tensor<33xbf16>
  %v5 = fuse.silu %v4 : tensor<3x11x33xbf16>
  return %v1, %v3, %v5 : tensor<2x5x7x24xbf16>, tensor<24x40xbf16>, tensor<3x11x33xbf16>
}
