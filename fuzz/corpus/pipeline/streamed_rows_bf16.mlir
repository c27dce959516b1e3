func.func @g(%a0: tensor<2x65537xbf16>, %a1: tensor<65537xbf16>, %a2: tensor<65537xbf16>, %a3: tensor<3x33333xbf16>, %a4: tensor<3x33333xbf16>, %a5: tensor<4x12345xbf16>, %a6: tensor<12345xbf16>, %a7: tensor<3x5003xbf16>, %a8: tensor<2x40000xbf16>, %a9: tensor<5x17xbf16>, %a10: tensor<4x15xbf16>) -> (tensor<2x65537xbf16>, tensor<3x33333xbf16>, tensor<3x33333xbf16>, tensor<4x12345xbf16>, tensor<3x5003xbf16>, tensor<2x40000xbf16>, tensor<5x17xbf16>, tensor<4x15xbf16>) {
  %v0 = fuse.layer_norm %a0 scale(%a1 : tensor<65537xbf16>) shift(%a2 : tensor<65537xbf16>) : tensor<2x65537xbf16>
  %v1 = fuse.add %a3, %a4 : tensor<3x33333xbf16>, tensor<3x33333xbf16>
  %v2 = fuse.layer_norm %v1 : tensor<3x33333xbf16>
  %v3 = fuse.rms_norm %a5 scale(%a6 : tensor<12345xbf16>) : tensor<4x12345xbf16>
  %v4 = fuse.softmax %a7 : tensor<3x5003xbf16>
  %v5 = fuse.softmax %a8 : tensor<2x40000xbf16>
  %v6 = fuse.softmax %a9 : tensor<5x17xbf16>
  %v7 = fuse.layer_norm %a10 : tensor<4x15xbf16>
  return %v0, %v2, %v1, %v3, %v4, %v5, %v6, %v7 : tensor<2x65537xbf16>, tensor<3x33333xbf16>, tensor<3x33333xbf16>, tensor<4x12345xbf16>, tensor<3x5003xbf16>, tensor<2x40000xbf16>, tensor<5x17xbf16>, tensor<4x15xbf16>
}
