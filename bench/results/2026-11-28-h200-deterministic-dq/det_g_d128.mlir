func.func @g(%q: tensor<1x16x2048x128xbf16>, %k: tensor<1x16x2048x128xbf16>, %v: tensor<1x16x2048x128xbf16>, %o: tensor<1x16x2048x128xbf16>, %do: tensor<1x16x2048x128xbf16>, %lse: tensor<1x16x2048xf32>) -> (tensor<1x16x2048x128xbf16>, tensor<1x16x2048x128xbf16>, tensor<1x16x2048x128xbf16>) {
  %dq, %dk, %dv = fuse.attention_grad %q, %k, %v, %o, %do, %lse {deterministic} : tensor<1x16x2048x128xbf16>, tensor<1x16x2048x128xbf16>, tensor<1x16x2048x128xbf16>, tensor<1x16x2048x128xbf16>, tensor<1x16x2048xf32>
  return %dq, %dk, %dv : tensor<1x16x2048x128xbf16>, tensor<1x16x2048x128xbf16>, tensor<1x16x2048x128xbf16>
}
