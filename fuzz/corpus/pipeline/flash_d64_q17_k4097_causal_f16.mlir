func.func @g(%a0: tensor<1x1x17x64xf16>, %a1: tensor<1x1x4097x64xf16>, %a2: tensor<1x1x4097x64xf16>) -> (tensor<1x1x17x64xf16>) {
  %v0 = fuse.attention %a0, %a1, %a2 {causal} : tensor<1x1x17x64xf16>, tensor<1x1x4097x64xf16>, tensor<1x1x4097x64xf16>
  return %v0 : tensor<1x1x17x64xf16>
}
