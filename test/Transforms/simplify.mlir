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
