func.func @g(%a0: tensor<3x37x50xbf16>, %a1: tensor<50xbf16>, %a2: tensor<50xbf16>) -> (tensor<3x37x50xbf16>) {
  %v0 = fuse.layer_norm %a0 scale(%a1 : tensor<50xbf16>) shift(%a2 : tensor<50xbf16>) : tensor<3x37x50xbf16>
  %v1 = fuse.gelu %v0 {approximate = #fuse.gelu_approx<tanh>} : tensor<3x37x50xbf16>
  return %v1 : tensor<3x37x50xbf16>
}
