func.func @g(%a0: tensor<1x40xf16>, %a1: tensor<24x40xf16>) -> (tensor<1x24xf16>) {
  %v0 = fuse.linear %a0, %a1 : tensor<1x40xf16>, tensor<24x40xf16>
  return %v0 : tensor<1x24xf16>
}
