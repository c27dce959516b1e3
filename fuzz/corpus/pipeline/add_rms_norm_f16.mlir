func.func @g(%a0: tensor<5x300xf16>, %a1: tensor<5x300xf16>, %a2: tensor<300xf16>) -> (tensor<5x300xf16>, tensor<5x300xf16>) {
  %v0 = fuse.add %a0, %a1 : tensor<5x300xf16>, tensor<5x300xf16>
  %v1 = fuse.rms_norm %v0 scale(%a2 : tensor<300xf16>) : tensor<5x300xf16>
  return %v1, %v0 : tensor<5x300xf16>, tensor<5x300xf16>
}
