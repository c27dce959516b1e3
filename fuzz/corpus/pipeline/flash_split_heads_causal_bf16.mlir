func.func @g(%a0: tensor<2x37x48xbf16>, %a1: tensor<128x48xbf16>, %a2: tensor<64x48xbf16>, %a3: tensor<64x48xbf16>, %a4: tensor<37x16xbf16>, %a5: tensor<37x16xbf16>, %a6: tensor<40x128xbf16>) -> (tensor<2x37x40xbf16>) {
  %v0 = fuse.linear %a0, %a1 : tensor<2x37x48xbf16>, tensor<128x48xbf16>
  %v1 = fuse.reshape %v0 : tensor<2x37x128xbf16> to tensor<2x37x4x32xbf16>
  %v2 = fuse.transpose %v1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x37x4x32xbf16>
  %v3 = fuse.rope %v2, %a4, %a5 : tensor<2x4x37x32xbf16>, tensor<37x16xbf16>
  %v4 = fuse.linear %a0, %a2 : tensor<2x37x48xbf16>, tensor<64x48xbf16>
  %v5 = fuse.reshape %v4 : tensor<2x37x64xbf16> to tensor<2x37x2x32xbf16>
  %v6 = fuse.transpose %v5 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x37x2x32xbf16>
  %v7 = fuse.rope %v6, %a4, %a5 {interleaved} : tensor<2x2x37x32xbf16>, tensor<37x16xbf16>
  %v8 = fuse.linear %a0, %a3 : tensor<2x37x48xbf16>, tensor<64x48xbf16>
  %v9 = fuse.reshape %v8 : tensor<2x37x64xbf16> to tensor<2x37x2x32xbf16>
  %v10 = fuse.transpose %v9 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x37x2x32xbf16>
  %v11 = fuse.attention %v3, %v7, %v10 {causal} : tensor<2x4x37x32xbf16>, tensor<2x2x37x32xbf16>, tensor<2x2x37x32xbf16>
  %v12 = fuse.transpose %v11 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x37x32xbf16>
  %v13 = fuse.reshape %v12 : tensor<2x37x4x32xbf16> to tensor<2x37x128xbf16>
  %v14 = fuse.linear %v13, %a6 : tensor<2x37x128xbf16>, tensor<40x128xbf16>
  return %v14 : tensor<2x37x40xbf16>
}
