// LLaMA-style decoder block, bf16: 256 features, 4 query heads sharing 2
// key/value heads of 64 (grouped-query attention), rotary embeddings,
// causal attention, a SiLU-gated FFN of width 688, RMSNorm, two residual
// adds, no biases. Compiles to 8 kernels: the Q/K/V and the gate/up
// projections each merge into one GEMM, the attention reads its operands
// through the head split and the rotary embedding.
//
//   fusec run examples/llama_block.mlir --device=cpu
func.func @llama_block(
    %x: tensor<1x128x256xbf16>,
    %attn_norm: tensor<256xbf16>,
    %wq: tensor<256x256xbf16>, %wk: tensor<128x256xbf16>,
    %wv: tensor<128x256xbf16>, %wo: tensor<256x256xbf16>,
    %cos: tensor<128x32xbf16>, %sin: tensor<128x32xbf16>,
    %ffn_norm: tensor<256xbf16>,
    %w_gate: tensor<688x256xbf16>, %w_up: tensor<688x256xbf16>,
    %w_down: tensor<256x688xbf16>)
    -> tensor<1x128x256xbf16> {
  // Attention.
  %n = fuse.rms_norm %x : tensor<1x128x256xbf16>
  %h = fuse.mul %n, %attn_norm : tensor<1x128x256xbf16>, tensor<256xbf16>
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
  // SiLU-gated feed-forward.
  %n2 = fuse.rms_norm %r1 : tensor<1x128x256xbf16>
  %h2 = fuse.mul %n2, %ffn_norm : tensor<1x128x256xbf16>, tensor<256xbf16>
  %g = fuse.linear %h2, %w_gate
      : tensor<1x128x256xbf16>, tensor<688x256xbf16>
  %u = fuse.linear %h2, %w_up
      : tensor<1x128x256xbf16>, tensor<688x256xbf16>
  %s = fuse.silu %g : tensor<1x128x688xbf16>
  %m = fuse.mul %s, %u : tensor<1x128x688xbf16>, tensor<1x128x688xbf16>
  %d = fuse.linear %m, %w_down
      : tensor<1x128x688xbf16>, tensor<256x688xbf16>
  %r2 = fuse.add %r1, %d : tensor<1x128x256xbf16>, tensor<1x128x256xbf16>
  return %r2 : tensor<1x128x256xbf16>
}
