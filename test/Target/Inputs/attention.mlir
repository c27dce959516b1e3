// Attention in bf16, head dim 128 with grouped-query heads and a causal
// mask, and in f16 over odd lengths with head dim 64.
func.func @attention(%q: tensor<2x8x300x128xbf16>, %k: tensor<2x2x300x128xbf16>,
                     %v: tensor<2x2x300x128xbf16>, %q2: tensor<1x3x77x64xf16>,
                     %k2: tensor<1x3x45x64xf16>, %v2: tensor<1x3x45x64xf16>)
    -> (tensor<2x8x300x128xbf16>, tensor<1x3x77x64xf16>) {
  %0 = fuse.attention %q, %k, %v {causal} : tensor<2x8x300x128xbf16>, tensor<2x2x300x128xbf16>, tensor<2x2x300x128xbf16>
  %1 = fuse.attention %q2, %k2, %v2 : tensor<1x3x77x64xf16>, tensor<1x3x45x64xf16>, tensor<1x3x45x64xf16>
  return %0, %1 : tensor<2x8x300x128xbf16>, tensor<1x3x77x64xf16>
}
