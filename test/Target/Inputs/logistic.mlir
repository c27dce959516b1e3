// The logistic activations in a product's epilogue (SiLU) and alone
// (sigmoid, in f32), for test/Target/logistic-division.test.
func.func @gate(%x: tensor<128x64xbf16>, %w: tensor<256x64xbf16>) -> tensor<128x256xbf16> {
  %0 = fuse.linear %x, %w : tensor<128x64xbf16>, tensor<256x64xbf16>
  %1 = fuse.silu %0 : tensor<128x256xbf16>
  return %1 : tensor<128x256xbf16>
}

func.func @alone(%x: tensor<37x41xf32>) -> tensor<37x41xf32> {
  %0 = fuse.sigmoid %x : tensor<37x41xf32>
  return %0 : tensor<37x41xf32>
}
