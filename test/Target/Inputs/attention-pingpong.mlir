// Attention whose consumer warpgroups take turns (ping-pong), by its tile.
func.func @g(%q: tensor<1x2x257x128xbf16>, %k: tensor<1x1x257x128xbf16>, %v: tensor<1x1x257x128xbf16>) -> tensor<1x2x257x128xbf16> {
  %0 = fuse.kernel "k0_attention"(%q, %k, %v) {tile = #fuse.tile<bm = 128, bn = 128, bk = 16, warps_n = 2>}
      : (tensor<1x2x257x128xbf16>, tensor<1x1x257x128xbf16>, tensor<1x1x257x128xbf16>) -> tensor<1x2x257x128xbf16> {
  ^bb0(%a: tensor<1x2x257x128xbf16>, %c: tensor<1x1x257x128xbf16>, %d: tensor<1x1x257x128xbf16>):
    %1 = fuse.attention %a, %c, %d {scale = 0.125, causal} : tensor<1x2x257x128xbf16>, tensor<1x1x257x128xbf16>, tensor<1x1x257x128xbf16>
    fuse.yield %1 : tensor<1x2x257x128xbf16>
  }
  return %0 : tensor<1x2x257x128xbf16>
}
