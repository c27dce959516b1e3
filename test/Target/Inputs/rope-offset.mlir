// Rotary embeddings whose cos/sin tables are slices (a position offset, the
// idiom FuseOps.td gives) or computed from parameters, feeding attention on
// every path: tensor cores in f16 and bf16 (half-split and interleaved,
// causal, grouped-query, heads split by a transpose), one thread per output
// in f32; and what an attention or a GEMM reads by address but cannot read
// in place (an add or a misaligned slice under a rope, a slice among a
// concat's parts), which fusion materialises first.

func.func @offset_f16(%q: tensor<1x4x37x64xf16>, %k: tensor<1x2x37x64xf16>, %v: tensor<1x2x37x64xf16>,
                      %cos: tensor<100x32xf16>, %sin: tensor<100x32xf16>) -> tensor<1x4x37x64xf16> {
  %c = fuse.slice %cos {offsets = array<i64: 5, 0>, sizes = array<i64: 37, 32>} : tensor<100x32xf16>
  %s = fuse.slice %sin {offsets = array<i64: 5, 0>, sizes = array<i64: 37, 32>} : tensor<100x32xf16>
  %qr = fuse.rope %q, %c, %s : tensor<1x4x37x64xf16>, tensor<37x32xf16>
  %kr = fuse.rope %k, %c, %s : tensor<1x2x37x64xf16>, tensor<37x32xf16>
  %o = fuse.attention %qr, %kr, %v {causal} : tensor<1x4x37x64xf16>, tensor<1x2x37x64xf16>, tensor<1x2x37x64xf16>
  return %o : tensor<1x4x37x64xf16>
}

func.func @offset_bf16_interleaved(%x: tensor<2x19x2x128xbf16>, %kv: tensor<2x2x23x128xbf16>,
                                   %cos: tensor<64x64xbf16>, %sin: tensor<64x64xbf16>) -> tensor<2x2x19x128xbf16> {
  %q = fuse.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x19x2x128xbf16>
  %cq = fuse.slice %cos {offsets = array<i64: 40, 0>, sizes = array<i64: 19, 64>} : tensor<64x64xbf16>
  %sq = fuse.slice %sin {offsets = array<i64: 40, 0>, sizes = array<i64: 19, 64>} : tensor<64x64xbf16>
  %ck = fuse.slice %cos {offsets = array<i64: 36, 0>, sizes = array<i64: 23, 64>} : tensor<64x64xbf16>
  %sk = fuse.slice %sin {offsets = array<i64: 36, 0>, sizes = array<i64: 23, 64>} : tensor<64x64xbf16>
  %qr = fuse.rope %q, %cq, %sq {interleaved} : tensor<2x2x19x128xbf16>, tensor<19x64xbf16>
  %kr = fuse.rope %kv, %ck, %sk {interleaved} : tensor<2x2x23x128xbf16>, tensor<23x64xbf16>
  %o = fuse.attention %qr, %kr, %kv : tensor<2x2x19x128xbf16>, tensor<2x2x23x128xbf16>, tensor<2x2x23x128xbf16>
  return %o : tensor<2x2x19x128xbf16>
}

func.func @offset_f32(%q: tensor<1x2x13x16xf32>, %k: tensor<1x1x13x16xf32>, %v: tensor<1x1x13x16xf32>,
                      %cos: tensor<20x8xf32>, %sin: tensor<20x8xf32>) -> tensor<1x2x13x16xf32> {
  %c = fuse.slice %cos {offsets = array<i64: 7, 0>, sizes = array<i64: 13, 8>} : tensor<20x8xf32>
  %s = fuse.slice %sin {offsets = array<i64: 7, 0>, sizes = array<i64: 13, 8>} : tensor<20x8xf32>
  %qr = fuse.rope %q, %c, %s : tensor<1x2x13x16xf32>, tensor<13x8xf32>
  %kr = fuse.rope %k, %c, %s : tensor<1x1x13x16xf32>, tensor<13x8xf32>
  %o = fuse.attention %qr, %kr, %v {causal} : tensor<1x2x13x16xf32>, tensor<1x1x13x16xf32>, tensor<1x1x13x16xf32>
  return %o : tensor<1x2x13x16xf32>
}

func.func @cast_tables(%q: tensor<1x2x37x64xf16>, %k: tensor<1x2x37x64xf16>,
                       %cos: tensor<37x32xf32>, %sin: tensor<37x32xf32>) -> tensor<1x2x37x64xf16> {
  %c = fuse.cast %cos : tensor<37x32xf32> to tensor<37x32xf16>
  %s = fuse.cast %sin : tensor<37x32xf32> to tensor<37x32xf16>
  %qr = fuse.rope %q, %c, %s : tensor<1x2x37x64xf16>, tensor<37x32xf16>
  %o = fuse.attention %qr, %k, %k : tensor<1x2x37x64xf16>, tensor<1x2x37x64xf16>, tensor<1x2x37x64xf16>
  return %o : tensor<1x2x37x64xf16>
}

func.func @no_address(%x: tensor<1x2x37x64xf16>, %y: tensor<1x2x37x64xf16>, %z: tensor<1x2x37x67xf16>,
                      %cos: tensor<37x32xf16>, %sin: tensor<37x32xf16>) -> tensor<1x2x37x64xf16> {
  %q = fuse.add %x, %y : tensor<1x2x37x64xf16>, tensor<1x2x37x64xf16>
  %qr = fuse.rope %q, %cos, %sin : tensor<1x2x37x64xf16>, tensor<37x32xf16>
  %k = fuse.slice %z {offsets = array<i64: 0, 0, 0, 3>, sizes = array<i64: 1, 2, 37, 64>} : tensor<1x2x37x67xf16>
  %kr = fuse.rope %k, %cos, %sin : tensor<1x2x37x64xf16>, tensor<37x32xf16>
  %o = fuse.attention %qr, %kr, %x : tensor<1x2x37x64xf16>, tensor<1x2x37x64xf16>, tensor<1x2x37x64xf16>
  return %o : tensor<1x2x37x64xf16>
}

func.func @concat_part(%x: tensor<9x40xf16>, %w: tensor<48x40xf16>, %w2: tensor<16x40xf16>) -> tensor<9x40xf16> {
  %wa = fuse.slice %w {offsets = array<i64: 8, 0>, sizes = array<i64: 24, 40>} : tensor<48x40xf16>
  %wc = fuse.concat %wa, %w2 {axis = 0} : tensor<24x40xf16>, tensor<16x40xf16>
  %a = fuse.linear %x, %wc : tensor<9x40xf16>, tensor<40x40xf16>
  return %a : tensor<9x40xf16>
}
