func.func @g(%q: tensor<4x16x1024x64xbf16>, %k: tensor<4x16x1024x64xbf16>, %v: tensor<4x16x1024x64xbf16>, %m: tensor<4x1x1024x1024xbf16>) -> tensor<4x16x1024x64xbf16> {
  %o = fuse.attention %q, %k, %v, %m : tensor<4x16x1024x64xbf16>, tensor<4x16x1024x64xbf16>, tensor<4x16x1024x64xbf16>, tensor<4x1x1024x1024xbf16>
  return %o : tensor<4x16x1024x64xbf16>
}
