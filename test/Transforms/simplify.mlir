// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-simplify))' -split-input-file | FileCheck %s --enable-var-scope

// Batch norm becomes coefficients + a per-channel scale/shift on its channel axis.
// CHECK-LABEL: func.func @batch_norm_nchw
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4x5xf32>, %[[M:.+]]: tensor<3xf32>, %[[V:.+]]: tensor<3xf32>, %[[G:.+]]: tensor<3xf32>, %[[B:.+]]: tensor<3xf32>)
// CHECK: %[[S:.+]], %[[T:.+]] = fuse.batch_norm_coefficients %[[M]], %[[V]], %[[G]], %[[B]] {epsilon = 1.000000e-03 : f64} : tensor<3xf32>
// CHECK: %[[R:.+]] = fuse.scale_shift %[[X]], %[[S]], %[[T]] {axis = 1 : i64} : tensor<2x3x4x5xf32>, tensor<3xf32>
// CHECK-NOT: fuse.batch_norm %
// CHECK: return %[[R]]
func.func @batch_norm_nchw(%x: tensor<2x3x4x5xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>,
                           %g: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<2x3x4x5xf32> {
  %0 = fuse.batch_norm %x, %m, %v, %g, %b {epsilon = 1.0e-3, layout = #fuse.layout<nchw>}
      : tensor<2x3x4x5xf32>, tensor<3xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// A bias on the channel axis moves into the convolution / linear layer.
// CHECK-LABEL: func.func @bias_into_conv
// CHECK: %[[C:.+]] = fuse.conv2d %{{.+}}, %{{.+}}, %[[B:.+]] : tensor<1x5x5x3xf16>, tensor<4x3x3x3xf16>, tensor<4xf16>
// CHECK-NOT: fuse.bias_add
// CHECK: %[[L:.+]] = fuse.linear %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x7xf16>, tensor<4x7xf16>, tensor<4xf16>
// CHECK: return %[[C]], %[[L]]
func.func @bias_into_conv(%x: tensor<1x5x5x3xf16>, %w: tensor<4x3x3x3xf16>, %b: tensor<4xf16>,
                          %y: tensor<2x7xf16>, %lw: tensor<4x7xf16>)
    -> (tensor<1x3x3x4xf16>, tensor<2x4xf16>) {
  %0 = fuse.conv2d %x, %w : tensor<1x5x5x3xf16>, tensor<4x3x3x3xf16>
  %1 = fuse.bias_add %0, %b : tensor<1x3x3x4xf16>, tensor<4xf16>
  %2 = fuse.linear %y, %lw : tensor<2x7xf16>, tensor<4x7xf16>
  %3 = fuse.bias_add %2, %b {axis = 1} : tensor<2x4xf16>, tensor<4xf16>
  return %1, %3 : tensor<1x3x3x4xf16>, tensor<2x4xf16>
}

// -----

// Not on the channel axis (NCHW conv, bias on the last axis): left alone.
// CHECK-LABEL: func.func @bias_wrong_axis
// CHECK: fuse.conv2d %{{.+}}, %{{.+}} {layout = #fuse.layout<nchw>}
// CHECK: fuse.bias_add
func.func @bias_wrong_axis(%x: tensor<1x3x5x5xf32>, %w: tensor<3x3x3x3xf32>, %b: tensor<3xf32>)
    -> tensor<1x3x3x3xf32> {
  %0 = fuse.conv2d %x, %w {layout = #fuse.layout<nchw>} : tensor<1x3x5x5xf32>, tensor<3x3x3x3xf32>
  %1 = fuse.bias_add %0, %b : tensor<1x3x3x3xf32>, tensor<3xf32>
  return %1 : tensor<1x3x3x3xf32>
}

// -----

// Chains merge: bias, then scale/shift, then scale/shift, then bias.
// CHECK-LABEL: func.func @chains
// CHECK-SAME: (%[[X:.+]]: tensor<4x6xf32>, %[[B1:.+]]: tensor<6xf32>, %[[S1:.+]]: tensor<6xf32>, %[[T1:.+]]: tensor<6xf32>, %[[S2:.+]]: tensor<6xf32>, %[[T2:.+]]: tensor<6xf32>, %[[B2:.+]]: tensor<6xf32>)
// CHECK-DAG: %[[BS:.+]] = fuse.mul %[[B1]], %[[S1]]
// CHECK-DAG: %[[SH1:.+]] = fuse.add %[[BS]], %[[T1]]
// CHECK-DAG: %[[S:.+]] = fuse.mul %[[S1]], %[[S2]]
// CHECK-DAG: %[[SH2:.+]] = fuse.mul %[[SH1]], %[[S2]]
// CHECK-DAG: %[[TB:.+]] = fuse.add %[[T2]], %[[B2]]
// CHECK-DAG: %[[SH4:.+]] = fuse.add %[[SH2]], %[[TB]]
// CHECK: %[[R:.+]] = fuse.scale_shift %[[X]], %[[S]], %[[SH4]] {axis = 1 : i64}
// CHECK-NEXT: return %[[R]]
func.func @chains(%x: tensor<4x6xf32>, %b1: tensor<6xf32>, %s1: tensor<6xf32>, %t1: tensor<6xf32>,
                  %s2: tensor<6xf32>, %t2: tensor<6xf32>, %b2: tensor<6xf32>) -> tensor<4x6xf32> {
  %0 = fuse.bias_add %x, %b1 : tensor<4x6xf32>, tensor<6xf32>
  %1 = fuse.scale_shift %0, %s1, %t1 : tensor<4x6xf32>, tensor<6xf32>
  %2 = fuse.scale_shift %1, %s2, %t2 {axis = 1} : tensor<4x6xf32>, tensor<6xf32>
  %3 = fuse.bias_add %2, %b2 : tensor<4x6xf32>, tensor<6xf32>
  return %3 : tensor<4x6xf32>
}

// -----

// Two biases merge; a bias whose input has another user does not.
// CHECK-LABEL: func.func @biases
// CHECK: %[[B:.+]] = fuse.add %{{.+}}, %{{.+}} : tensor<6xf32>, tensor<6xf32>
// CHECK: %[[R:.+]] = fuse.bias_add %{{.+}}, %[[B]] : tensor<4x6xf32>, tensor<6xf32>
// CHECK: %[[U:.+]] = fuse.bias_add %{{.+}}, %{{.+}} : tensor<4x6xf32>, tensor<6xf32>
// CHECK: %[[V:.+]] = fuse.bias_add %[[U]], %{{.+}} : tensor<4x6xf32>, tensor<6xf32>
// CHECK: return %[[R]], %[[U]], %[[V]]
func.func @biases(%x: tensor<4x6xf32>, %b1: tensor<6xf32>, %b2: tensor<6xf32>)
    -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %0 = fuse.bias_add %x, %b1 : tensor<4x6xf32>, tensor<6xf32>
  %1 = fuse.bias_add %0, %b2 : tensor<4x6xf32>, tensor<6xf32>
  %2 = fuse.bias_add %x, %b2 : tensor<4x6xf32>, tensor<6xf32>
  %3 = fuse.bias_add %2, %b1 : tensor<4x6xf32>, tensor<6xf32>
  return %1, %2, %3 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}

// -----

// No-op casts, reshapes and transposes vanish; chains collapse.
// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf16>)
// CHECK-NEXT: %[[W:.+]] = fuse.cast %[[X]] : tensor<2x3x4xf16> to tensor<2x3x4xf32>
// CHECK-NEXT: %[[N:.+]] = fuse.cast %[[W]] : tensor<2x3x4xf32> to tensor<2x3x4xbf16>
// CHECK-NEXT: %[[R:.+]] = fuse.reshape %[[X]] : tensor<2x3x4xf16> to tensor<24xf16>
// CHECK-NEXT: %[[T:.+]] = fuse.transpose %[[X]] {permutation = array<i64: 2, 1, 0>} : tensor<2x3x4xf16>
// CHECK-NEXT: return %[[X]], %[[N]], %[[R]], %[[X]], %[[T]]
func.func @identities(%x: tensor<2x3x4xf16>)
    -> (tensor<2x3x4xf16>, tensor<2x3x4xbf16>, tensor<24xf16>, tensor<2x3x4xf16>, tensor<4x3x2xf16>) {
  %0 = fuse.cast %x : tensor<2x3x4xf16> to tensor<2x3x4xf16>
  %1 = fuse.cast %0 : tensor<2x3x4xf16> to tensor<2x3x4xf32>
  %2 = fuse.cast %1 : tensor<2x3x4xf32> to tensor<2x3x4xf16>
  %3 = fuse.cast %1 : tensor<2x3x4xf32> to tensor<2x3x4xbf16>
  %4 = fuse.reshape %2 : tensor<2x3x4xf16> to tensor<6x4xf16>
  %5 = fuse.reshape %4 : tensor<6x4xf16> to tensor<24xf16>
  %6 = fuse.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf16>
  %7 = fuse.transpose %6 {permutation = array<i64: 1, 0, 2>} : tensor<3x2x4xf16>
  %8 = fuse.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf16>
  %9 = fuse.transpose %8 {permutation = array<i64: 2, 0, 1>} : tensor<3x2x4xf16>
  %10 = fuse.transpose %x {permutation = array<i64: 0, 1, 2>} : tensor<2x3x4xf16>
  return %2, %3, %5, %7, %9 : tensor<2x3x4xf16>, tensor<2x3x4xbf16>, tensor<24xf16>, tensor<2x3x4xf16>, tensor<4x3x2xf16>
}

// -----

// A split becomes one slice per piece; a slice moves below a reshape that
// splits its sliced axis into heads.
// CHECK-LABEL: func.func @split_heads_of_fused_qkv
// CHECK: %[[Q:.+]] = fuse.slice %{{.+}} {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 1, 5, 16>}
// CHECK: fuse.relu %[[Q]]
// CHECK: %[[R:.+]] = fuse.reshape %{{.+}} : tensor<1x5x32xf16> to tensor<1x5x4x8xf16>
// CHECK: fuse.slice %[[R]] {offsets = array<i64: 0, 0, 2, 0>, sizes = array<i64: 1, 5, 1, 8>} : tensor<1x5x4x8xf16>
func.func @split_heads_of_fused_qkv(%qkv: tensor<1x5x32xf16>) -> (tensor<1x5x16xf16>, tensor<1x5x1x8xf16>) {
  %q, %k, %v = fuse.split %qkv {axis = -1, sizes = array<i64: 16, 8, 8>} : tensor<1x5x32xf16>
  %r = fuse.relu %q : tensor<1x5x16xf16>
  %k1 = fuse.reshape %k : tensor<1x5x8xf16> to tensor<1x5x1x8xf16>
  return %r, %k1 : tensor<1x5x16xf16>, tensor<1x5x1x8xf16>
}

// -----

// Slices of slices, and of one operand of a concat, collapse.
// CHECK-LABEL: func.func @slice_folds
// CHECK-SAME: (%[[X:.+]]: tensor<6x8xf32>, %[[Y:.+]]: tensor<6x3xf32>)
// CHECK: %[[A:.+]] = fuse.slice %[[X]] {offsets = array<i64: 3, 3>, sizes = array<i64: 2, 2>}
// CHECK: %[[B:.+]] = fuse.slice %[[Y]] {offsets = array<i64: 1, 0>, sizes = array<i64: 2, 3>}
// CHECK: return %[[A]], %[[B]], %[[Y]]
func.func @slice_folds(%x: tensor<6x8xf32>, %y: tensor<6x3xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>, tensor<6x3xf32>) {
  %a = fuse.slice %x {offsets = array<i64: 1, 2>, sizes = array<i64: 4, 4>} : tensor<6x8xf32>
  %b = fuse.slice %a {offsets = array<i64: 2, 1>, sizes = array<i64: 2, 2>} : tensor<4x4xf32>
  %c = fuse.concat %x, %y {axis = 1} : tensor<6x8xf32>, tensor<6x3xf32>
  %d = fuse.slice %c {offsets = array<i64: 1, 8>, sizes = array<i64: 2, 3>} : tensor<6x11xf32>
  %e = fuse.slice %c {offsets = array<i64: 0, 8>, sizes = array<i64: 6, 3>} : tensor<6x11xf32>
  return %b, %d, %e : tensor<2x2xf32>, tensor<2x3xf32>, tensor<6x3xf32>
}

// -----

// Linear layers of one input merge into one reading concatenated weights;
// each result becomes a slice of the merged one. A layer whose result an
// anchor reads from memory (the layer norm) keeps its own kernel.
// CHECK-LABEL: func.func @merge_linears
// CHECK-DAG: %[[W:.+]] = fuse.concat %arg1, %arg2 {axis = 0 : i64} : tensor<16x8xf16>, tensor<8x8xf16>
// CHECK-DAG: %[[B:.+]] = fuse.concat %arg4, %arg5 {axis = 0 : i64} : tensor<16xf16>, tensor<8xf16>
// CHECK: %[[L:.+]] = fuse.linear %arg0, %[[W]], %[[B]] : tensor<3x8xf16>, tensor<24x8xf16>, tensor<24xf16>
// CHECK: fuse.slice %[[L]] {offsets = array<i64: 0, 0>, sizes = array<i64: 3, 16>}
// CHECK: fuse.slice %[[L]] {offsets = array<i64: 0, 16>, sizes = array<i64: 3, 8>}
// CHECK: fuse.linear %arg0, %arg3, %arg6
func.func @merge_linears(%x: tensor<3x8xf16>, %w1: tensor<16x8xf16>, %w2: tensor<8x8xf16>, %w3: tensor<8x8xf16>,
                         %b1: tensor<16xf16>, %b2: tensor<8xf16>, %b3: tensor<8xf16>)
    -> (tensor<3x16xf16>, tensor<3x8xf16>, tensor<3x8xf16>) {
  %a = fuse.linear %x, %w1, %b1 : tensor<3x8xf16>, tensor<16x8xf16>, tensor<16xf16>
  %b = fuse.linear %x, %w2, %b2 : tensor<3x8xf16>, tensor<8x8xf16>, tensor<8xf16>
  %c = fuse.linear %x, %w3, %b3 : tensor<3x8xf16>, tensor<8x8xf16>, tensor<8xf16>
  %ra = fuse.relu %a : tensor<3x16xf16>
  %rb = fuse.silu %b : tensor<3x8xf16>
  %n = fuse.rms_norm %c : tensor<3x8xf16>
  return %ra, %rb, %n : tensor<3x16xf16>, tensor<3x8xf16>, tensor<3x8xf16>
}

// -----

// Gate and up projections whose results meet in the gating multiply stay
// apart: the later one's epilogue computes silu(gate) * up.
// CHECK-LABEL: func.func @gate_up_stay_apart
// CHECK-NOT: fuse.concat
// CHECK-COUNT-2: fuse.linear %arg0
func.func @gate_up_stay_apart(%x: tensor<3x8xbf16>, %wg: tensor<16x8xbf16>, %wu: tensor<16x8xbf16>) -> tensor<3x16xbf16> {
  %g = fuse.linear %x, %wg : tensor<3x8xbf16>, tensor<16x8xbf16>
  %u = fuse.linear %x, %wu : tensor<3x8xbf16>, tensor<16x8xbf16>
  %s = fuse.silu %g : tensor<3x16xbf16>
  %m = fuse.mul %s, %u : tensor<3x16xbf16>, tensor<3x16xbf16>
  return %m : tensor<3x16xbf16>
}

// -----

// A layer that reads its input as its weight too uses the input twice, and
// is still merged once (it was merged twice and freed twice: found by
// fusec-fuzz-builder under ASan).
// CHECK-LABEL: func.func @input_as_weight
// CHECK-SAME: (%[[X:.+]]: tensor<8x8xf32>)
// CHECK: %[[W:.+]] = fuse.concat %[[X]], %[[X]] {axis = 0 : i64} : tensor<8x8xf32>, tensor<8x8xf32>
// CHECK: fuse.linear %[[X]], %[[W]] : tensor<8x8xf32>, tensor<16x8xf32>
// CHECK-NOT: fuse.linear
func.func @input_as_weight(%x: tensor<8x8xf32>) -> tensor<8x1x1x8xf32> {
  %q = fuse.linear %x, %x : tensor<8x8xf32>, tensor<8x8xf32>
  %k = fuse.linear %x, %x : tensor<8x8xf32>, tensor<8x8xf32>
  %qr = fuse.reshape %q : tensor<8x8xf32> to tensor<8x1x1x8xf32>
  %kr = fuse.reshape %k : tensor<8x8xf32> to tensor<8x1x1x8xf32>
  %o = fuse.attention %qr, %kr, %kr : tensor<8x1x1x8xf32>, tensor<8x1x1x8xf32>, tensor<8x1x1x8xf32>
  return %o : tensor<8x1x1x8xf32>
}

// -----

// An activation and a cast after a reshape move above it, into the reach of
// the GEMM's epilogue; a reshape with another user stays where it is.
// CHECK-LABEL: func.func @unary_before_reshape
// CHECK: %[[L:.+]] = fuse.linear %{{.+}}, %{{.+}} : tensor<6x8xbf16>, tensor<12x8xbf16>
// CHECK: %[[G:.+]] = fuse.gelu %[[L]] : tensor<6x12xbf16>
// CHECK: %[[C:.+]] = fuse.cast %[[G]] : tensor<6x12xbf16> to tensor<6x12xf32>
// CHECK: %[[R:.+]] = fuse.reshape %[[C]] : tensor<6x12xf32> to tensor<2x3x12xf32>
// CHECK: %[[S:.+]] = fuse.reshape %[[L]] : tensor<6x12xbf16> to tensor<2x3x12xbf16>
// CHECK: %[[T:.+]] = fuse.tanh %[[S]] : tensor<2x3x12xbf16>
// CHECK: return %[[R]], %[[T]], %[[S]]
func.func @unary_before_reshape(%x: tensor<6x8xbf16>, %w: tensor<12x8xbf16>)
    -> (tensor<2x3x12xf32>, tensor<2x3x12xbf16>, tensor<2x3x12xbf16>) {
  %0 = fuse.linear %x, %w : tensor<6x8xbf16>, tensor<12x8xbf16>
  %1 = fuse.reshape %0 : tensor<6x12xbf16> to tensor<2x3x12xbf16>
  %2 = fuse.gelu %1 : tensor<2x3x12xbf16>
  %3 = fuse.cast %2 : tensor<2x3x12xbf16> to tensor<2x3x12xf32>
  %4 = fuse.reshape %0 : tensor<6x12xbf16> to tensor<2x3x12xbf16>
  %5 = fuse.tanh %4 : tensor<2x3x12xbf16>
  return %3, %5, %4 : tensor<2x3x12xf32>, tensor<2x3x12xbf16>, tensor<2x3x12xbf16>
}
