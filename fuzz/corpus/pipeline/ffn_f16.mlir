func.func @g(%a0: tensor<2x33x70xf16>, %a1: tensor<129x70xf16>, %a2: tensor<129xf16>, %a3: tensor<45x129xf16>) -> (tensor<2x33x45xf16>) {
  %v0 = fuse.linear %a0, %a1, %a2 : tensor<2x33x70xf16>, tensor<129x70xf16>, tensor<129xf16>
  %v1 = fuse.gelu %v0 : tensor<2x33x129xf16>
  %v2 = fuse.linear %v1, %a3 : tensor<2x33x129xf16>, tensor<45x129xf16>
  return %v2 : tensor<2x33x45xf16>
}
