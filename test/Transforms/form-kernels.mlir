// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-simplify,fusec-form-kernels))' -split-input-file -verify-diagnostics | FileCheck %s --enable-var-scope

// conv -> batch norm -> relu is one kernel; the batch-norm coefficients are
// recomputed in it from the parameters.
// CHECK-LABEL: func.func @conv_bn_relu
// CHECK-SAME: (%[[X:.+]]: tensor<1x9x9x3xf32>, %[[W:.+]]: tensor<8x3x3x3xf32>, %[[M:.+]]: tensor<8xf32>, %[[V:.+]]: tensor<8xf32>, %[[G:.+]]: tensor<8xf32>, %[[B:.+]]: tensor<8xf32>)
// CHECK: %[[K:.+]] = fuse.kernel "k0_conv2d"(%[[X]], %[[W]], %[[M]], %[[V]], %[[G]], %[[B]])
// CHECK: ^bb0(%[[A0:.+]]: tensor<1x9x9x3xf32>, %[[A1:.+]]: tensor<8x3x3x3xf32>, %[[A2:.+]]: tensor<8xf32>, %[[A3:.+]]: tensor<8xf32>, %[[A4:.+]]: tensor<8xf32>, %[[A5:.+]]: tensor<8xf32>):
// CHECK-NEXT: %[[C:.+]] = fuse.conv2d %[[A0]], %[[A1]]
// CHECK-NEXT: %[[S:.+]], %[[T:.+]] = fuse.batch_norm_coefficients %[[A2]], %[[A3]], %[[A4]], %[[A5]]
// CHECK-NEXT: %[[SS:.+]] = fuse.scale_shift %[[C]], %[[S]], %[[T]]
// CHECK-NEXT: %[[R:.+]] = fuse.relu %[[SS]]
// CHECK-NEXT: fuse.yield %[[R]] : tensor<1x7x7x8xf32>
// CHECK: return %[[K]]
func.func @conv_bn_relu(%x: tensor<1x9x9x3xf32>, %w: tensor<8x3x3x3xf32>, %m: tensor<8xf32>,
                        %v: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<1x7x7x8xf32> {
  // expected-remark @below {{kernel k0_conv2d is anchored on fuse.conv2d}}
  %0 = fuse.conv2d %x, %w : tensor<1x9x9x3xf32>, tensor<8x3x3x3xf32>
  // expected-remark @below {{fused fuse.scale_shift into the epilogue of kernel k0_conv2d}}
  // expected-remark @below {{fused fuse.batch_norm_coefficients into kernel k0_conv2d, which recomputes it from graph parameters}}
  %1 = fuse.batch_norm %0, %m, %v, %g, %b : tensor<1x7x7x8xf32>, tensor<8xf32>
  // expected-remark @below {{fused fuse.relu into the epilogue of kernel k0_conv2d}}
  %2 = fuse.relu %1 : tensor<1x7x7x8xf32>
  return %2 : tensor<1x7x7x8xf32>
}

// -----

// A value with two users ends the kernel; the residual add joins the second
// conv's epilogue.
// CHECK-LABEL: func.func @two_users
// CHECK: %[[K0:.+]] = fuse.kernel "k0_conv2d"
// CHECK: %[[K1:.+]] = fuse.kernel "k1_conv2d"(%[[K0]], %{{.+}})
// CHECK: fuse.add
// CHECK: fuse.relu
// CHECK: return %[[K1]]
func.func @two_users(%x: tensor<1x6x6x4xf16>, %w: tensor<4x1x1x4xf16>) -> tensor<1x6x6x4xf16> {
  // expected-remark @below {{kernel k0_conv2d is anchored on fuse.conv2d}}
  // expected-remark @below {{not fused: the result of fuse.conv2d has 2 users, so kernel k0_conv2d ends here}}
  %0 = fuse.conv2d %x, %w : tensor<1x6x6x4xf16>, tensor<4x1x1x4xf16>
  // expected-remark @below {{kernel k1_conv2d is anchored on fuse.conv2d}}
  %1 = fuse.conv2d %0, %w : tensor<1x6x6x4xf16>, tensor<4x1x1x4xf16>
  // expected-remark @below {{fused fuse.add into the epilogue of kernel k1_conv2d}}
  %2 = fuse.add %1, %0 : tensor<1x6x6x4xf16>, tensor<1x6x6x4xf16>
  // expected-remark @below {{fused fuse.relu into the epilogue of kernel k1_conv2d}}
  %3 = fuse.relu %2 : tensor<1x6x6x4xf16>
  return %3 : tensor<1x6x6x4xf16>
}

// -----

// Anchor-to-anchor edges and layout changes end kernels.
// CHECK-LABEL: func.func @boundaries
// CHECK: fuse.kernel "k0_conv2d"
// CHECK: fuse.kernel "k1_max_pool2d"
// CHECK: fuse.reshape
// CHECK: fuse.kernel "k2_softmax"
func.func @boundaries(%x: tensor<1x8x8x2xf32>, %w: tensor<2x3x3x2xf32>) -> tensor<1x18xf32> {
  // expected-remark @below {{kernel k0_conv2d is anchored on fuse.conv2d}}
  %0 = fuse.conv2d %x, %w : tensor<1x8x8x2xf32>, tensor<2x3x3x2xf32>
  // expected-remark @below {{not fused: fuse.max_pool2d is an anchor and starts its own kernel after k0_conv2d}}
  // expected-remark @below {{kernel k1_max_pool2d is anchored on fuse.max_pool2d}}
  %1 = fuse.max_pool2d %0 {kernel = array<i64: 2, 2>} : tensor<1x6x6x2xf32>
  // expected-remark @below {{kernel k1_max_pool2d ends at fuse.reshape, which re-views its result in place, no copy}}
  %2 = fuse.reshape %1 : tensor<1x3x3x2xf32> to tensor<1x18xf32>
  // expected-remark @below {{kernel k2_softmax is anchored on fuse.softmax}}
  %3 = fuse.softmax %2 : tensor<1x18xf32>
  return %3 : tensor<1x18xf32>
}

// -----

// Elementwise ops left over form kernels built backwards from the last op of
// a chain: a producer joins when all its users are in the kernel, even one
// that is broadcast (recomputed per element).
// CHECK-LABEL: func.func @elementwise
// CHECK: %[[K0:.+]] = fuse.kernel "k0_mul"
// CHECK: fuse.add
// CHECK: fuse.sigmoid
// CHECK: fuse.mul
// CHECK: return %[[K0]]
func.func @elementwise(%a: tensor<5xbf16>, %b: tensor<5xbf16>, %c: tensor<3x5xbf16>) -> tensor<3x5xbf16> {
  // expected-remark @below {{fused fuse.add into kernel k0_mul}}
  %0 = fuse.add %a, %b : tensor<5xbf16>, tensor<5xbf16>
  // expected-remark @below {{fused fuse.sigmoid into kernel k0_mul}}
  %1 = fuse.sigmoid %0 : tensor<5xbf16>
  %2 = fuse.mul %c, %1 : tensor<3x5xbf16>, tensor<5xbf16>
  return %2 : tensor<3x5xbf16>
}

// -----

// A value two elementwise kernels read is computed once.
// CHECK-LABEL: func.func @two_readers
// CHECK: %[[K2:.+]] = fuse.kernel "k2_add"
// CHECK: %[[K1:.+]] = fuse.kernel "k1_relu"(%[[K2]])
// CHECK: %[[K0:.+]] = fuse.kernel "k0_tanh"(%[[K2]])
// CHECK: return %[[K1]], %[[K0]]
func.func @two_readers(%a: tensor<5xf32>, %b: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>) {
  // expected-remark @below {{kernel k2_add computes fuse.add once for the 2 kernels that use it}}
  %0 = fuse.add %a, %b : tensor<5xf32>, tensor<5xf32>
  %1 = fuse.relu %0 : tensor<5xf32>
  %2 = fuse.tanh %0 : tensor<5xf32>
  return %1, %2 : tensor<5xf32>, tensor<5xf32>
}

// -----

// A parameter computation that two kernels use becomes a kernel of its own.
// CHECK-LABEL: func.func @shared_parameters
// CHECK: %[[P:.+]] = fuse.kernel "k2_add"
// CHECK: fuse.kernel "k0_linear"(%{{.+}}, %{{.+}}, %[[P]])
// CHECK: fuse.kernel "k1_linear"(%{{.+}}, %{{.+}}, %[[P]])
func.func @shared_parameters(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>, %b1: tensor<4xf32>, %b2: tensor<4xf32>)
    -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  // expected-remark @below {{kernel k2_add computes fuse.add once for the 2 kernels that use it}}
  %b = fuse.add %b1, %b2 : tensor<4xf32>, tensor<4xf32>
  // expected-remark @below {{kernel k0_linear is anchored on fuse.linear}}
  %0 = fuse.linear %x, %w, %b : tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>
  // expected-remark @below {{kernel k1_linear is anchored on fuse.linear}}
  %1 = fuse.linear %x, %w, %b : tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>
  return %0, %1 : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// A norm computes its input in a prologue; the residual sum that others use
// becomes the kernel's second result.
// CHECK-LABEL: func.func @add_layer_norm
// CHECK: %[[K:.+]]:2 = fuse.kernel "k0_layer_norm"
// CHECK: %[[H:.+]] = fuse.add
// CHECK: %[[N:.+]] = fuse.layer_norm %[[H]]
// CHECK: fuse.yield %[[H]], %[[N]]
// CHECK: return %[[K]]#1, %[[K]]#0
func.func @add_layer_norm(%x: tensor<4x64xbf16>, %r: tensor<4x64xbf16>) -> (tensor<4x64xbf16>, tensor<4x64xbf16>) {
  // expected-remark @below {{fused fuse.add into the prologue of kernel k0_layer_norm, which also writes its result for the other users}}
  %h = fuse.add %x, %r : tensor<4x64xbf16>, tensor<4x64xbf16>
  // expected-remark @below {{kernel k0_layer_norm is anchored on fuse.layer_norm}}
  %0 = fuse.layer_norm %h : tensor<4x64xbf16>
  return %0, %h : tensor<4x64xbf16>, tensor<4x64xbf16>
}

// -----

// A user of the input between the producer and the norm keeps them apart.
// CHECK-LABEL: func.func @used_before
// CHECK: %[[H:.+]] = fuse.kernel "k2_add"
// CHECK: fuse.kernel "k1_tanh"(%[[H]])
// CHECK: fuse.kernel "k0_softmax"(%[[H]])
func.func @used_before(%x: tensor<4x64xf32>, %r: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
  // expected-remark @below {{not fused: fuse.tanh uses the result of fuse.add before kernel k0_softmax would write it}}
  // expected-remark @below {{kernel k2_add computes fuse.add once for the 2 kernels that use it}}
  %h = fuse.add %x, %r : tensor<4x64xf32>, tensor<4x64xf32>
  %t = fuse.tanh %h : tensor<4x64xf32>
  // expected-remark @below {{kernel k0_softmax is anchored on fuse.softmax}}
  %0 = fuse.softmax %h : tensor<4x64xf32>
  return %0, %t : tensor<4x64xf32>, tensor<4x64xf32>
}

// -----

// Attention absorbs the transposes that split its operands into heads, the
// rope on Q, and the transpose that merges its result back: one kernel
// after the projection; the reshapes stay free views between kernels.
// CHECK-LABEL: func.func @split_heads
// CHECK: %[[Q:.+]] = fuse.kernel "k0_linear"
// CHECK: %[[QR:.+]] = fuse.reshape %[[Q]]
// CHECK: %[[A:.+]] = fuse.kernel "k1_attention"(%[[QR]], %{{.+}}, %{{.+}}, %{{.+}})
// CHECK-NEXT: ^bb0(%[[B0:[^:]+]]: tensor<1x6x2x8xf16>,
// CHECK-NEXT: %[[T:.+]] = fuse.transpose %[[B0]]
// CHECK-NEXT: %[[R:.+]] = fuse.rope %[[T]]
// CHECK-NEXT: %[[AT:.+]] = fuse.attention %[[R]], %{{.+}}, %{{.+}} {causal}
// CHECK-NEXT: %[[M:.+]] = fuse.transpose %[[AT]]
// CHECK-NEXT: fuse.yield %[[M]] : tensor<1x6x2x8xf16>
// CHECK: fuse.reshape %[[A]] : tensor<1x6x2x8xf16> to tensor<1x6x16xf16>
func.func @split_heads(%x: tensor<1x6x16xf16>, %w: tensor<16x16xf16>, %c: tensor<6x4xf16>, %s: tensor<6x4xf16>, %kv: tensor<1x2x6x8xf16>) -> tensor<1x6x16xf16> {
  // expected-remark @below {{kernel k0_linear is anchored on fuse.linear}}
  %q = fuse.linear %x, %w : tensor<1x6x16xf16>, tensor<16x16xf16>
  // expected-remark @below {{kernel k0_linear ends at fuse.reshape, which re-views its result in place, no copy}}
  %q1 = fuse.reshape %q : tensor<1x6x16xf16> to tensor<1x6x2x8xf16>
  // expected-remark @below {{fused fuse.transpose into kernel k1_attention, which loads its operand through it}}
  %q2 = fuse.transpose %q1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x6x2x8xf16>
  // expected-remark @below {{fused fuse.rope into kernel k1_attention, which rotates the tiles it loads}}
  %q3 = fuse.rope %q2, %c, %s : tensor<1x2x6x8xf16>, tensor<6x4xf16>
  // expected-remark @below {{kernel k1_attention is anchored on fuse.attention}}
  %a = fuse.attention %q3, %kv, %kv {causal} : tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>
  // expected-remark @below {{fused fuse.transpose into kernel k1_attention, which stores its result permuted}}
  %m = fuse.transpose %a {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x2x6x8xf16>
  // expected-remark @below {{kernel k1_attention ends at fuse.reshape, which re-views its result in place, no copy}}
  %r = fuse.reshape %m : tensor<1x6x2x8xf16> to tensor<1x6x16xf16>
  return %r : tensor<1x6x16xf16>
}

// -----

// A rope whose result is also V (which is never rotated), or that has
// several users, keeps a kernel of its own; the transpose under it then
// stays apart too.
// CHECK-LABEL: func.func @shared_rope
// CHECK: fuse.kernel "k0_transpose"
// CHECK: fuse.kernel "k1_rope"
// CHECK: fuse.kernel "k2_attention"
func.func @shared_rope(%q: tensor<1x6x2x8xf16>, %c: tensor<6x4xf16>, %s: tensor<6x4xf16>) -> tensor<1x2x6x8xf16> {
  // expected-remark @below {{kernel k0_transpose is anchored on fuse.transpose}}
  %q2 = fuse.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x6x2x8xf16>
  // expected-remark @below {{not fused: fuse.rope is an anchor and starts its own kernel after k0_transpose}}
  // expected-remark @below {{kernel k1_rope is anchored on fuse.rope}}
  // expected-remark @below {{not fused: the result of fuse.rope has 3 users, so kernel k1_rope ends here}}
  %q3 = fuse.rope %q2, %c, %s : tensor<1x2x6x8xf16>, tensor<6x4xf16>
  // expected-remark @below {{kernel k2_attention is anchored on fuse.attention}}
  %a = fuse.attention %q3, %q3, %q3 : tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>
  return %a : tensor<1x2x6x8xf16>
}

// -----

// Projections of one input merge into one GEMM reading the weights in
// place; the attention reads Q, K and V through slices of its result.
// CHECK-LABEL: func.func @merged_qkv
// CHECK: fuse.kernel "k0_linear"
// CHECK: fuse.concat
// CHECK: fuse.linear
// CHECK: fuse.reshape
// CHECK: fuse.kernel "k1_attention"
// CHECK-COUNT-3: fuse.slice
// CHECK-NOT: fuse.kernel
func.func @merged_qkv(%x: tensor<1x6x16xf16>, %wq: tensor<16x16xf16>, %wk: tensor<8x16xf16>, %wv: tensor<8x16xf16>) -> tensor<1x2x6x8xf16> {
  // expected-remark @below {{merged 3 fuse.linear ops reading the same input into one GEMM, which reads their weights in place}}
  // expected-remark @below {{kernel k0_linear is anchored on fuse.linear}}
  // expected-remark @below {{not fused: the result of fuse.linear has 3 users, so kernel k0_linear ends here}}
  // expected-remark @below {{fused fuse.concat into kernel k0_linear, which reads the parts in place}}
  %q0 = fuse.linear %x, %wq : tensor<1x6x16xf16>, tensor<16x16xf16>
  %k0 = fuse.linear %x, %wk : tensor<1x6x16xf16>, tensor<8x16xf16>
  %v0 = fuse.linear %x, %wv : tensor<1x6x16xf16>, tensor<8x16xf16>
  // expected-remark @below {{fused fuse.slice into kernel k1_attention, which loads its operand through it}}
  %q1 = fuse.reshape %q0 : tensor<1x6x16xf16> to tensor<1x6x2x8xf16>
  // expected-remark @below {{fused fuse.slice into kernel k1_attention, which loads its operand through it}}
  %k1 = fuse.reshape %k0 : tensor<1x6x8xf16> to tensor<1x6x1x8xf16>
  // expected-remark @below {{fused fuse.slice into kernel k1_attention, which loads its operand through it}}
  %v1 = fuse.reshape %v0 : tensor<1x6x8xf16> to tensor<1x6x1x8xf16>
  // expected-remark @below {{fused fuse.transpose into kernel k1_attention, which loads its operand through it}}
  %q = fuse.transpose %q1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x6x2x8xf16>
  // expected-remark @below {{fused fuse.transpose into kernel k1_attention, which loads its operand through it}}
  %k = fuse.transpose %k1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x6x1x8xf16>
  // expected-remark @below {{fused fuse.transpose into kernel k1_attention, which loads its operand through it}}
  %v = fuse.transpose %v1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x6x1x8xf16>
  // expected-remark @below {{kernel k1_attention is anchored on fuse.attention}}
  %a = fuse.attention %q, %k, %v {causal} : tensor<1x2x6x8xf16>, tensor<1x1x6x8xf16>, tensor<1x1x6x8xf16>
  return %a : tensor<1x2x6x8xf16>
}

// -----

// Elementwise kernels read through slices and concats; a convolution reads
// inputs joined along channels in place; a concat the graph returns is
// materialised by a kernel of its own.
// CHECK-LABEL: func.func @views_in_kernels
// CHECK: fuse.kernel "k0_conv2d"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.concat
// CHECK: fuse.kernel "k2_add"(%arg3, %arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.slice
// CHECK: fuse.kernel "k1_concat"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.concat
func.func @views_in_kernels(%x: tensor<1x4x4x3xf32>, %s: tensor<1x4x4x5xf32>, %w: tensor<6x1x1x8xf32>, %y: tensor<1x4x4x9xf32>) -> (tensor<1x4x4x6xf32>, tensor<1x4x4x3xf32>, tensor<1x4x4x8xf32>) {
  // expected-remark @below {{fused fuse.concat into kernel k0_conv2d, which reads the parts in place}}
  %c = fuse.concat %x, %s {axis = 3} : tensor<1x4x4x3xf32>, tensor<1x4x4x5xf32>
  // expected-remark @below {{kernel k0_conv2d is anchored on fuse.conv2d}}
  %o = fuse.conv2d %c, %w : tensor<1x4x4x8xf32>, tensor<6x1x1x8xf32>
  // expected-remark @below {{fused fuse.slice into kernel k2_add, which reads through it}}
  %t = fuse.slice %y {offsets = array<i64: 0, 0, 0, 6>, sizes = array<i64: 1, 4, 4, 3>} : tensor<1x4x4x9xf32>
  %u = fuse.concat %t, %x {axis = 0} : tensor<1x4x4x3xf32>, tensor<1x4x4x3xf32>
  %v = fuse.slice %u {offsets = array<i64: 1, 0, 0, 0>, sizes = array<i64: 1, 4, 4, 3>} : tensor<2x4x4x3xf32>
  %r = fuse.add %v, %t : tensor<1x4x4x3xf32>, tensor<1x4x4x3xf32>
  // expected-remark @below {{kernel k1_concat materialises fuse.concat: a user reads it from memory or returns it}}
  %e = fuse.concat %s, %x {axis = 3} : tensor<1x4x4x5xf32>, tensor<1x4x4x3xf32>
  return %o, %r, %e : tensor<1x4x4x6xf32>, tensor<1x4x4x3xf32>, tensor<1x4x4x8xf32>
}

// -----

// Rope tables sliced for a position offset (the idiom FuseOps.td gives):
// the slices, shared by the ropes on Q and K, join the attention's kernel,
// which reads the tables through them (they once crashed its tiling).
// CHECK-LABEL: func.func @rope_offset
// CHECK: fuse.kernel "k0_attention"(%arg2, %arg3, %arg0, %arg1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[C:.+]] = fuse.slice %arg4 {offsets = array<i64: 3, 0>
// CHECK-NEXT: %[[S:.+]] = fuse.slice %arg5 {offsets = array<i64: 3, 0>
// CHECK-NEXT: fuse.rope %arg6, %[[C]], %[[S]]
// CHECK-NEXT: fuse.rope %arg7, %[[C]], %[[S]]
// CHECK-NEXT: fuse.attention
// CHECK-NOT: fuse.kernel
func.func @rope_offset(%q: tensor<1x2x6x8xf16>, %k: tensor<1x1x6x8xf16>, %c: tensor<16x4xf16>, %s: tensor<16x4xf16>) -> tensor<1x2x6x8xf16> {
  // expected-remark @below {{fused fuse.slice into kernel k0_attention, which reads through it}}
  %c1 = fuse.slice %c {offsets = array<i64: 3, 0>, sizes = array<i64: 6, 4>} : tensor<16x4xf16>
  // expected-remark @below {{fused fuse.slice into kernel k0_attention, which reads through it}}
  %s1 = fuse.slice %s {offsets = array<i64: 3, 0>, sizes = array<i64: 6, 4>} : tensor<16x4xf16>
  // expected-remark @below {{fused fuse.rope into kernel k0_attention, which rotates the tiles it loads}}
  %q1 = fuse.rope %q, %c1, %s1 : tensor<1x2x6x8xf16>, tensor<6x4xf16>
  // expected-remark @below {{fused fuse.rope into kernel k0_attention, which rotates the tiles it loads}}
  %k1 = fuse.rope %k, %c1, %s1 : tensor<1x1x6x8xf16>, tensor<6x4xf16>
  // expected-remark @below {{kernel k0_attention is anchored on fuse.attention}}
  %a = fuse.attention %q1, %k1, %k {causal} : tensor<1x2x6x8xf16>, tensor<1x1x6x8xf16>, tensor<1x1x6x8xf16>
  return %a : tensor<1x2x6x8xf16>
}

// -----

// What an attention copies by address (under its rope) must be a kernel
// argument under views that keep 16-byte rows: an add, or a slice off a
// 16-byte boundary, stays out of its kernel and is written first (both
// once crashed the tiling or misaligned cp.async).
// CHECK-LABEL: func.func @rope_input_no_address
// CHECK: fuse.kernel "k2_add"
// CHECK: fuse.kernel "k1_slice"
// CHECK: fuse.kernel "k0_attention"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.rope
// CHECK-NEXT: fuse.rope
// CHECK-NEXT: fuse.attention
func.func @rope_input_no_address(%x: tensor<1x2x6x8xf16>, %y: tensor<1x2x6x8xf16>, %z: tensor<1x2x6x11xf16>, %c: tensor<6x4xf16>, %s: tensor<6x4xf16>) -> tensor<1x2x6x8xf16> {
  %q = fuse.add %x, %y : tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>
  // expected-remark @below {{fused fuse.rope into kernel k0_attention, which rotates the tiles it loads}}
  %q1 = fuse.rope %q, %c, %s : tensor<1x2x6x8xf16>, tensor<6x4xf16>
  // expected-remark @below {{kernel k1_slice materialises fuse.slice: a user reads it from memory or returns it}}
  %k = fuse.slice %z {offsets = array<i64: 0, 0, 0, 3>, sizes = array<i64: 1, 2, 6, 8>} : tensor<1x2x6x11xf16>
  // expected-remark @below {{fused fuse.rope into kernel k0_attention, which rotates the tiles it loads}}
  %k1 = fuse.rope %k, %c, %s : tensor<1x2x6x8xf16>, tensor<6x4xf16>
  // expected-remark @below {{kernel k0_attention is anchored on fuse.attention}}
  %a = fuse.attention %q1, %k1, %x : tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>
  return %a : tensor<1x2x6x8xf16>
}

// -----

// A GEMM reads the parts of a concat by address: a slice among them is
// materialised (it once crashed the tiling).
// CHECK-LABEL: func.func @concat_part_view
// CHECK: fuse.kernel "k1_slice"
// CHECK: fuse.kernel "k0_linear"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.concat
// CHECK-NEXT: fuse.linear
func.func @concat_part_view(%x: tensor<9x40xf16>, %w: tensor<48x40xf16>, %w2: tensor<16x40xf16>) -> tensor<9x40xf16> {
  // expected-remark @below {{kernel k1_slice materialises fuse.slice: a user reads it from memory or returns it}}
  %wa = fuse.slice %w {offsets = array<i64: 8, 0>, sizes = array<i64: 24, 40>} : tensor<48x40xf16>
  // expected-remark @below {{fused fuse.concat into kernel k0_linear, which reads the parts in place}}
  %wc = fuse.concat %wa, %w2 {axis = 0} : tensor<24x40xf16>, tensor<16x40xf16>
  // expected-remark @below {{kernel k0_linear is anchored on fuse.linear}}
  %a = fuse.linear %x, %wc : tensor<9x40xf16>, tensor<40x40xf16>
  return %a : tensor<9x40xf16>
}

// -----

// A cast joins the epilogue (autocast's layer norm in f32 feeding a bf16
// linear layer): the kernel computes in f32 and returns the cast's type.
// A reshape still ends the kernel.
// CHECK-LABEL: func.func @cast_epilogue
// CHECK: %[[K:.+]] = fuse.kernel "k0_layer_norm"(%{{.+}}) : (tensor<6x32xf32>) -> tensor<6x32xbf16>
// CHECK: fuse.layer_norm
// CHECK-NEXT: %[[C:.+]] = fuse.cast
// CHECK-NEXT: fuse.yield %[[C]] : tensor<6x32xbf16>
// CHECK: fuse.reshape %[[K]]
func.func @cast_epilogue(%x: tensor<6x32xf32>) -> tensor<2x3x32xbf16> {
  // expected-remark @below {{kernel k0_layer_norm is anchored on fuse.layer_norm}}
  %0 = fuse.layer_norm %x : tensor<6x32xf32>
  // expected-remark @below {{fused fuse.cast into the epilogue of kernel k0_layer_norm}}
  %1 = fuse.cast %0 : tensor<6x32xf32> to tensor<6x32xbf16>
  // expected-remark @below {{kernel k0_layer_norm ends at fuse.reshape, which re-views its result in place, no copy}}
  %2 = fuse.reshape %1 : tensor<6x32xbf16> to tensor<2x3x32xbf16>
  return %2 : tensor<2x3x32xbf16>
}

// -----

// A transpose reads a head's slice of a fused projection through it: one
// pass, whether it moves vectors (the last axis stays) or tiles (it moves).
// A slice with another user is written first.
// CHECK-LABEL: func.func @slice_into_transpose
// CHECK: fuse.kernel "k0_transpose"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.slice
// CHECK-NEXT: fuse.transpose
// CHECK: fuse.kernel "k1_transpose"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.slice
// CHECK-NEXT: fuse.transpose
// CHECK: fuse.kernel "k3_slice"
// CHECK: fuse.kernel "k2_transpose"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.transpose
func.func @slice_into_transpose(%x: tensor<2x6x9x8xf16>, %y: tensor<5x40x33xf32>) -> (tensor<2x3x6x8xf16>, tensor<5x33x20xf32>, tensor<5x33x20xf32>, tensor<5x20x33xf32>) {
  // expected-remark @below {{fused fuse.slice into kernel k0_transpose, which reads through it}}
  %s = fuse.slice %x {offsets = array<i64: 0, 0, 3, 0>, sizes = array<i64: 2, 6, 3, 8>} : tensor<2x6x9x8xf16>
  // expected-remark @below {{kernel k0_transpose is anchored on fuse.transpose}}
  %t = fuse.transpose %s {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x8xf16>
  // expected-remark @below {{fused fuse.slice into kernel k1_transpose, which reads through it}}
  %s2 = fuse.slice %y {offsets = array<i64: 0, 17, 0>, sizes = array<i64: 5, 20, 33>} : tensor<5x40x33xf32>
  // expected-remark @below {{kernel k1_transpose is anchored on fuse.transpose}}
  %t2 = fuse.transpose %s2 {permutation = array<i64: 0, 2, 1>} : tensor<5x20x33xf32>
  // expected-remark @below {{kernel k3_slice materialises fuse.slice: a user reads it from memory or returns it}}
  %s3 = fuse.slice %y {offsets = array<i64: 0, 1, 0>, sizes = array<i64: 5, 20, 33>} : tensor<5x40x33xf32>
  // expected-remark @below {{kernel k2_transpose is anchored on fuse.transpose}}
  %t3 = fuse.transpose %s3 {permutation = array<i64: 0, 2, 1>} : tensor<5x20x33xf32>
  return %t, %t2, %t3, %s3 : tensor<2x3x6x8xf16>, tensor<5x33x20xf32>, tensor<5x33x20xf32>, tensor<5x20x33xf32>
}

// -----

// Autocast's linear layer: a linear kernel reads its bias element by
// element, so the cast of an f32 bias is recomputed in it; the weight's
// cast, which the GEMM reads by address, gets a kernel of its own.
// CHECK-LABEL: func.func @linear_cast_bias
// CHECK-SAME: (%[[X:.+]]: tensor<4x6xbf16>, %[[W:.+]]: tensor<5x6xf32>, %[[B:.+]]: tensor<5xf32>)
// CHECK: %[[WC:.+]] = fuse.kernel "k1_cast"(%[[W]])
// CHECK: fuse.kernel "k0_linear"(%[[B]], %[[X]], %[[WC]])
// CHECK-NEXT: ^bb0(%[[A0:.+]]: tensor<5xf32>, %[[A1:.+]]: tensor<4x6xbf16>, %[[A2:.+]]: tensor<5x6xbf16>):
// CHECK-NEXT: %[[BC:.+]] = fuse.cast %[[A0]]
// CHECK-NEXT: fuse.linear %[[A1]], %[[A2]], %[[BC]]
func.func @linear_cast_bias(%x: tensor<4x6xbf16>, %w: tensor<5x6xf32>, %b: tensor<5xf32>) -> tensor<4x5xbf16> {
  %wc = fuse.cast %w : tensor<5x6xf32> to tensor<5x6xbf16>
  // expected-remark @below {{fused fuse.cast into kernel k0_linear, which recomputes it from graph parameters}}
  %bc = fuse.cast %b : tensor<5xf32> to tensor<5xbf16>
  // expected-remark @below {{kernel k0_linear is anchored on fuse.linear}}
  %y = fuse.linear %x, %wc, %bc : tensor<4x6xbf16>, tensor<5x6xbf16>, tensor<5xbf16>
  return %y : tensor<4x5xbf16>
}

// -----

// Only the bias is read through what fusion puts in front of a linear
// layer: a cast that is also its input (read by address) gets a kernel of
// its own (taking it in once crashed the tiling). A transpose's epilogue
// still takes in the parameter computations only it uses.
// CHECK-LABEL: func.func @cast_bias_and_input
// CHECK: fuse.kernel "k1_cast"
// CHECK: fuse.kernel "k0_linear"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.linear
func.func @cast_bias_and_input(%p: tensor<8xf32>, %w: tensor<8x8xbf16>) -> tensor<8xbf16> {
  %c = fuse.cast %p : tensor<8xf32> to tensor<8xbf16>
  // expected-remark @below {{kernel k0_linear is anchored on fuse.linear}}
  %y = fuse.linear %c, %w, %c : tensor<8xbf16>, tensor<8x8xbf16>, tensor<8xbf16>
  return %y : tensor<8xbf16>
}

// CHECK-LABEL: func.func @transpose_epilogue_parameters
// CHECK: fuse.kernel "k0_transpose"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: fuse.transpose
// CHECK-NEXT: fuse.cast
// CHECK-NEXT: fuse.mul
func.func @transpose_epilogue_parameters(%x: tensor<2x6x3x8xbf16>, %p: tensor<8xf32>) -> tensor<2x3x6x8xbf16> {
  // expected-remark @below {{kernel k0_transpose is anchored on fuse.transpose}}
  %t = fuse.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x3x8xbf16>
  // expected-remark @below {{fused fuse.cast into kernel k0_transpose, which recomputes it from graph parameters}}
  %pc = fuse.cast %p : tensor<8xf32> to tensor<8xbf16>
  // expected-remark @below {{fused fuse.mul into the epilogue of kernel k0_transpose}}
  %y = fuse.mul %t, %pc : tensor<2x3x6x8xbf16>, tensor<8xbf16>
  return %y : tensor<2x3x6x8xbf16>
}
