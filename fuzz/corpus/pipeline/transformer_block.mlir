// Pre-norm transformer decoder block, bf16: 256 features, 4 query heads
// sharing 2 key/value heads (grouped-query attention), rotary embeddings,
// causal attention, a GeLU FFN of width 1024, residual adds.
//
//   fusec run examples/transformer_block.mlir --device=cpu
func.func @transformer_block(
    %x: tensor<1x128x256xbf16>,
    %ln1_g: tensor<256xbf16>, %ln1_b: tensor<256xbf16>,
    %wq: tensor<256x256xbf16>, %wk: tensor<128x256xbf16>,
    %wv: tensor<128x256xbf16>, %wo: tensor<256x256xbf16>,
    %cos: tensor<128x32xbf16>, %sin: tensor<128x32xbf16>,
    %ln2_g: tensor<256xbf16>, %ln2_b: tensor<256xbf16>,
    %w1: tensor<1024x256xbf16>, %b1: tensor<1024xbf16>,
    %w2: tensor<256x1024xbf16>, %b2: tensor<256xbf16>)
    -> tensor<1x128x256xbf16> {
  // Attention.
  %h = fuse.layer_norm %x scale(%ln1_g : tensor<256xbf16>)
                          shift(%ln1_b : tensor<256xbf16>)
      : tensor<1x128x256xbf16>
  %q0 = fuse.linear %h, %wq : tensor<1x128x256xbf16>, tensor<256x256xbf16>
  %k0 = fuse.linear %h, %wk : tensor<1x128x256xbf16>, tensor<128x256xbf16>
  %v0 = fuse.linear %h, %wv : tensor<1x128x256xbf16>, tensor<128x256xbf16>
  %q1 = fuse.reshape %q0 : tensor<1x128x256xbf16> to tensor<1x128x4x64xbf16>
  %k1 = fuse.reshape %k0 : tensor<1x128x128xbf16> to tensor<1x128x2x64xbf16>
  %v1 = fuse.reshape %v0 : tensor<1x128x128xbf16> to tensor<1x128x2x64xbf16>
  %q2 = fuse.transpose %q1 {permutation = array<i64: 0, 2, 1, 3>}
      : tensor<1x128x4x64xbf16>
  %k2 = fuse.transpose %k1 {permutation = array<i64: 0, 2, 1, 3>}
      : tensor<1x128x2x64xbf16>
  %v2 = fuse.transpose %v1 {permutation = array<i64: 0, 2, 1, 3>}
      : tensor<1x128x2x64xbf16>
  %q = fuse.rope %q2, %cos, %sin : tensor<1x4x128x64xbf16>, tensor<128x32xbf16>
  %k = fuse.rope %k2, %cos, %sin : tensor<1x2x128x64xbf16>, tensor<128x32xbf16>
  %a = fuse.attention %q, %k, %v2 {causal}
      : tensor<1x4x128x64xbf16>, tensor<1x2x128x64xbf16>,
        tensor<1x2x128x64xbf16>
  %a1 = fuse.transpose %a {permutation = array<i64: 0, 2, 1, 3>}
      : tensor<1x4x128x64xbf16>
  %a2 = fuse.reshape %a1 : tensor<1x128x4x64xbf16> to tensor<1x128x256xbf16>
  %o = fuse.linear %a2, %wo : tensor<1x128x256xbf16>, tensor<256x256xbf16>
  %r1 = fuse.add %x, %o : tensor<1x128x256xbf16>, tensor<1x128x256xbf16>
  // Feed-forward.
  %h2 = fuse.layer_norm %r1 scale(%ln2_g : tensor<256xbf16>)
                           shift(%ln2_b : tensor<256xbf16>)
      : tensor<1x128x256xbf16>
  %f1 = fuse.linear %h2, %w1, %b1
      : tensor<1x128x256xbf16>, tensor<1024x256xbf16>, tensor<1024xbf16>
  %f2 = fuse.gelu %f1 {approximate = #fuse.gelu_approx<tanh>}
      : tensor<1x128x1024xbf16>
  %f3 = fuse.linear %f2, %w2, %b2
      : tensor<1x128x1024xbf16>, tensor<256x1024xbf16>, tensor<256xbf16>
  %r2 = fuse.add %r1, %f3 : tensor<1x128x256xbf16>, tensor<1x128x256xbf16>
  return %r2 : tensor<1x128x256xbf16>
}
