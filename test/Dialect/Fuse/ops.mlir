// Round trip of every fuse op, in the custom and in the generic form.
// RUN: fusec-opt %s | fusec-opt | FileCheck %s --enable-var-scope
// RUN: fusec-opt %s -mlir-print-op-generic | fusec-opt | FileCheck %s --enable-var-scope

// CHECK-LABEL: func.func @conv2d
// CHECK-SAME: (%[[X:.+]]: tensor<1x17x23x6xf32>, %[[W:.+]]: tensor<8x3x3x3xf32>, %[[B:.+]]: tensor<8xf32>, %[[XN:.+]]: tensor<2x6x9x9xf16>, %[[WN:.+]]: tensor<6x1x3x3xf16>)
func.func @conv2d(%x: tensor<1x17x23x6xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>,
                  %xn: tensor<2x6x9x9xf16>, %wn: tensor<6x1x3x3xf16>)
    -> (tensor<1x8x11x8xf32>, tensor<1x15x21x8xf32>, tensor<2x6x5x5xf16>) {
  // CHECK: %[[C0:.+]] = fuse.conv2d %[[X]], %[[W]], %[[B]] {dilation = array<i64: 1, 2>, groups = 2 : i64, padding = array<i64: 1, 0, 2, 1>, strides = array<i64: 2, 2>} : tensor<1x17x23x6xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>
  %0 = fuse.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 0, 2, 1>,
                               dilation = array<i64: 1, 2>, groups = 2}
      : tensor<1x17x23x6xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>
  // CHECK: %[[C1:.+]] = fuse.conv2d %[[X]], %[[W]] {groups = 2 : i64} : tensor<1x17x23x6xf32>, tensor<8x3x3x3xf32>
  %1 = fuse.conv2d %x, %w {groups = 2, layout = #fuse.layout<nhwc>}
      : tensor<1x17x23x6xf32>, tensor<8x3x3x3xf32>
  // CHECK: %[[C2:.+]] = fuse.conv2d %[[XN]], %[[WN]] {groups = 6 : i64, layout = #fuse.layout<nchw>, padding = array<i64: 1, 1>, strides = array<i64: 2, 2>} : tensor<2x6x9x9xf16>, tensor<6x1x3x3xf16>
  %2 = fuse.conv2d %xn, %wn {groups = 6, layout = #fuse.layout<nchw>, padding = array<i64: 1, 1>,
                             strides = array<i64: 2, 2>}
      : tensor<2x6x9x9xf16>, tensor<6x1x3x3xf16>
  // CHECK: return %[[C0]], %[[C1]], %[[C2]] : tensor<1x8x11x8xf32>, tensor<1x15x21x8xf32>, tensor<2x6x5x5xf16>
  return %0, %1, %2 : tensor<1x8x11x8xf32>, tensor<1x15x21x8xf32>, tensor<2x6x5x5xf16>
}

// CHECK-LABEL: func.func @batch_norm
func.func @batch_norm(%x: tensor<2x5x7x3xbf16>, %c: tensor<3xbf16>, %xn: tensor<2x5x7x3xf32>,
                      %cn: tensor<5xf32>, %x2: tensor<4x5xf32>)
    -> (tensor<2x5x7x3xbf16>, tensor<2x5x7x3xf32>, tensor<4x5xf32>) {
  // CHECK: fuse.batch_norm %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x5x7x3xbf16>, tensor<3xbf16>
  %0 = fuse.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-5} : tensor<2x5x7x3xbf16>, tensor<3xbf16>
  // CHECK: fuse.batch_norm {{.+}} {epsilon = 1.000000e-03 : f64, layout = #fuse.layout<nchw>} : tensor<2x5x7x3xf32>, tensor<5xf32>
  %1 = fuse.batch_norm %xn, %cn, %cn, %cn, %cn {epsilon = 1.0e-3, layout = #fuse.layout<nchw>}
      : tensor<2x5x7x3xf32>, tensor<5xf32>
  // CHECK: fuse.batch_norm {{.+}} : tensor<4x5xf32>, tensor<5xf32>
  %2 = fuse.batch_norm %x2, %cn, %cn, %cn, %cn : tensor<4x5xf32>, tensor<5xf32>
  return %0, %1, %2 : tensor<2x5x7x3xbf16>, tensor<2x5x7x3xf32>, tensor<4x5xf32>
}

// CHECK-LABEL: func.func @binary
func.func @binary(%a: tensor<2x3x4xf32>, %c: tensor<4xf32>, %s: tensor<f32>, %n: tensor<3x1xf32>,
                  %x: tensor<2x3x4x5xf16>, %b: tensor<3xf16>)
    -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>,
        tensor<2x3x4x5xf16>, tensor<2x3x4xf32>) {
  // CHECK: fuse.add %{{.+}}, %{{.+}} : tensor<2x3x4xf32>, tensor<2x3x4xf32>
  %0 = fuse.add %a, %a : tensor<2x3x4xf32>, tensor<2x3x4xf32>
  // CHECK: fuse.sub %{{.+}}, %{{.+}} : tensor<2x3x4xf32>, tensor<4xf32>
  %1 = fuse.sub %a, %c : tensor<2x3x4xf32>, tensor<4xf32>
  // CHECK: fuse.mul %{{.+}}, %{{.+}} : tensor<f32>, tensor<2x3x4xf32>
  %2 = fuse.mul %s, %a : tensor<f32>, tensor<2x3x4xf32>
  // CHECK: fuse.div %{{.+}}, %{{.+}} : tensor<2x3x4xf32>, tensor<3x1xf32>
  %3 = fuse.div %a, %n : tensor<2x3x4xf32>, tensor<3x1xf32>
  // CHECK: fuse.bias_add %{{.+}}, %{{.+}} {axis = 1 : i64} : tensor<2x3x4x5xf16>, tensor<3xf16>
  %4 = fuse.bias_add %x, %b {axis = 1} : tensor<2x3x4x5xf16>, tensor<3xf16>
  // CHECK: fuse.bias_add %{{.+}}, %{{.+}} : tensor<2x3x4xf32>, tensor<4xf32>
  %5 = fuse.bias_add %a, %c : tensor<2x3x4xf32>, tensor<4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>,
                                  tensor<2x3x4xf32>, tensor<2x3x4x5xf16>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @activations
func.func @activations(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  // CHECK: %[[A0:.+]] = fuse.relu %{{.+}} : tensor<3x5xf32>
  %0 = fuse.relu %x : tensor<3x5xf32>
  // CHECK: %[[A1:.+]] = fuse.relu6 %[[A0]] : tensor<3x5xf32>
  %1 = fuse.relu6 %0 : tensor<3x5xf32>
  // CHECK: %[[A2:.+]] = fuse.clamp %[[A1]] {max = 2.500000e+00 : f64, min = -1.000000e+00 : f64} : tensor<3x5xf32>
  %2 = fuse.clamp %1 {min = -1.0, max = 2.5} : tensor<3x5xf32>
  // CHECK: %[[A3:.+]] = fuse.leaky_relu %[[A2]] : tensor<3x5xf32>
  %3 = fuse.leaky_relu %2 : tensor<3x5xf32>
  // CHECK: %[[A4:.+]] = fuse.leaky_relu %[[A3]] {alpha = 2.000000e-01 : f64} : tensor<3x5xf32>
  %4 = fuse.leaky_relu %3 {alpha = 0.2} : tensor<3x5xf32>
  // CHECK: %[[A5:.+]] = fuse.gelu %[[A4]] : tensor<3x5xf32>
  %5 = fuse.gelu %4 {approximate = #fuse.gelu_approx<none>} : tensor<3x5xf32>
  // CHECK: %[[A6:.+]] = fuse.gelu %[[A5]] {approximate = #fuse.gelu_approx<tanh>} : tensor<3x5xf32>
  %6 = fuse.gelu %5 {approximate = #fuse.gelu_approx<tanh>} : tensor<3x5xf32>
  // CHECK: %[[A7:.+]] = fuse.silu %[[A6]] : tensor<3x5xf32>
  %7 = fuse.silu %6 : tensor<3x5xf32>
  // CHECK: %[[A8:.+]] = fuse.sigmoid %[[A7]] : tensor<3x5xf32>
  %8 = fuse.sigmoid %7 : tensor<3x5xf32>
  // CHECK: %[[A9:.+]] = fuse.tanh %[[A8]] : tensor<3x5xf32>
  %9 = fuse.tanh %8 : tensor<3x5xf32>
  // CHECK: %[[A10:.+]] = fuse.hardswish %[[A9]] : tensor<3x5xf32>
  %10 = fuse.hardswish %9 : tensor<3x5xf32>
  // CHECK: return %[[A10]]
  return %10 : tensor<3x5xf32>
}

// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<2x1x5x7xbf16>, %b: tensor<3x7x4xbf16>, %at: tensor<7x5xbf16>,
                  %bt: tensor<4x7xbf16>, %x: tensor<2x9x7xf32>, %w: tensor<6x7xf32>, %bias: tensor<6xf32>)
    -> (tensor<2x3x5x4xbf16>, tensor<5x4xbf16>, tensor<2x9x6xf32>, tensor<2x9x6xf32>) {
  // CHECK: fuse.matmul %{{.+}}, %{{.+}} : tensor<2x1x5x7xbf16>, tensor<3x7x4xbf16>
  %0 = fuse.matmul %a, %b : tensor<2x1x5x7xbf16>, tensor<3x7x4xbf16>
  // CHECK: fuse.matmul %{{.+}}, %{{.+}} {transpose_lhs, transpose_rhs} : tensor<7x5xbf16>, tensor<4x7xbf16>
  %1 = fuse.matmul %at, %bt {transpose_lhs, transpose_rhs} : tensor<7x5xbf16>, tensor<4x7xbf16>
  // CHECK: fuse.linear %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x9x7xf32>, tensor<6x7xf32>, tensor<6xf32>
  %2 = fuse.linear %x, %w, %bias : tensor<2x9x7xf32>, tensor<6x7xf32>, tensor<6xf32>
  // CHECK: fuse.linear %{{.+}}, %{{.+}} : tensor<2x9x7xf32>, tensor<6x7xf32>
  %3 = fuse.linear %x, %w : tensor<2x9x7xf32>, tensor<6x7xf32>
  return %0, %1, %2, %3 : tensor<2x3x5x4xbf16>, tensor<5x4xbf16>, tensor<2x9x6xf32>, tensor<2x9x6xf32>
}

// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<2x3x8xf16>, %g: tensor<8xf16>, %g2: tensor<3x8xf16>)
    -> (tensor<2x3x8xf16>, tensor<2x3x8xf16>, tensor<2x3x8xf16>, tensor<2x3x8xf16>,
        tensor<2x3x8xf16>, tensor<2x3x8xf16>) {
  // CHECK: fuse.layer_norm %{{.+}} scale(%{{.+}} : tensor<8xf16>) shift(%{{.+}} : tensor<8xf16>) : tensor<2x3x8xf16>
  %0 = fuse.layer_norm %x scale(%g : tensor<8xf16>) shift(%g : tensor<8xf16>) : tensor<2x3x8xf16>
  // CHECK: fuse.layer_norm %{{.+}} shift(%{{.+}} : tensor<3x8xf16>) {epsilon = 1.000000e-03 : f64, normalized_rank = 2 : i64} : tensor<2x3x8xf16>
  %1 = fuse.layer_norm %x shift(%g2 : tensor<3x8xf16>) {normalized_rank = 2, epsilon = 1.0e-3} : tensor<2x3x8xf16>
  // CHECK: fuse.layer_norm %{{.+}} : tensor<2x3x8xf16>
  %2 = fuse.layer_norm %x : tensor<2x3x8xf16>
  // CHECK: fuse.rms_norm %{{.+}} scale(%{{.+}} : tensor<8xf16>) : tensor<2x3x8xf16>
  %3 = fuse.rms_norm %x scale(%g : tensor<8xf16>) : tensor<2x3x8xf16>
  // CHECK: fuse.rms_norm %{{.+}} {normalized_rank = 2 : i64} : tensor<2x3x8xf16>
  %4 = fuse.rms_norm %x {normalized_rank = 2} : tensor<2x3x8xf16>
  // CHECK: fuse.softmax %{{.+}} {axis = 0 : i64} : tensor<2x3x8xf16>
  %5 = fuse.softmax %x {axis = 0} : tensor<2x3x8xf16>
  return %0, %1, %2, %3, %4, %5 : tensor<2x3x8xf16>, tensor<2x3x8xf16>, tensor<2x3x8xf16>,
                                  tensor<2x3x8xf16>, tensor<2x3x8xf16>, tensor<2x3x8xf16>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x8x5x16xbf16>, %k: tensor<2x2x7x16xbf16>, %v: tensor<2x2x7x12xbf16>,
                     %m: tensor<5x7xbf16>, %cos: tensor<5x8xbf16>, %sin: tensor<5x8xbf16>)
    -> (tensor<2x8x5x12xbf16>, tensor<2x8x5x12xbf16>, tensor<2x8x5x16xbf16>, tensor<2x8x5x16xbf16>) {
  // CHECK: fuse.attention %{{.+}}, %{{.+}}, %{{.+}} {causal} : tensor<2x8x5x16xbf16>, tensor<2x2x7x16xbf16>, tensor<2x2x7x12xbf16>
  %0 = fuse.attention %q, %k, %v {causal} : tensor<2x8x5x16xbf16>, tensor<2x2x7x16xbf16>, tensor<2x2x7x12xbf16>
  // CHECK: fuse.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {scale = 1.250000e-01 : f64} : tensor<2x8x5x16xbf16>, tensor<2x2x7x16xbf16>, tensor<2x2x7x12xbf16>, tensor<5x7xbf16>
  %1 = fuse.attention %q, %k, %v, %m {scale = 0.125} : tensor<2x8x5x16xbf16>, tensor<2x2x7x16xbf16>, tensor<2x2x7x12xbf16>, tensor<5x7xbf16>
  // CHECK: fuse.rope %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x8x5x16xbf16>, tensor<5x8xbf16>
  %2 = fuse.rope %q, %cos, %sin : tensor<2x8x5x16xbf16>, tensor<5x8xbf16>
  // CHECK: fuse.rope %{{.+}}, %{{.+}}, %{{.+}} {interleaved} : tensor<2x8x5x16xbf16>, tensor<5x8xbf16>
  %3 = fuse.rope %q, %cos, %sin {interleaved} : tensor<2x8x5x16xbf16>, tensor<5x8xbf16>
  return %0, %1, %2, %3 : tensor<2x8x5x12xbf16>, tensor<2x8x5x12xbf16>, tensor<2x8x5x16xbf16>, tensor<2x8x5x16xbf16>
}

// CHECK-LABEL: func.func @pooling
func.func @pooling(%x: tensor<1x9x10x3xf32>, %xn: tensor<1x3x9x10xf32>)
    -> (tensor<1x4x5x3xf32>, tensor<1x3x5x5xf32>, tensor<1x1x1x3xf32>, tensor<1x3x1x1xf32>,
        tensor<1x18x20x3xf32>, tensor<1x3x4x7xf32>, tensor<1x3x13x15xf32>) {
  // CHECK: fuse.max_pool2d %{{.+}} {kernel = array<i64: 3, 3>, padding = array<i64: 1, 0, 1, 0>, strides = array<i64: 2, 2>} : tensor<1x9x10x3xf32>
  %0 = fuse.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>,
                           padding = array<i64: 1, 0, 1, 0>} : tensor<1x9x10x3xf32>
  // CHECK: fuse.avg_pool2d %{{.+}} {count_include_pad = false, kernel = array<i64: 2, 2>, layout = #fuse.layout<nchw>, padding = array<i64: 1, 0>} : tensor<1x3x9x10xf32>
  %1 = fuse.avg_pool2d %xn {kernel = array<i64: 2, 2>, padding = array<i64: 1, 0>, count_include_pad = false,
                            layout = #fuse.layout<nchw>} : tensor<1x3x9x10xf32>
  // CHECK: fuse.global_avg_pool %{{.+}} : tensor<1x9x10x3xf32>
  %2 = fuse.global_avg_pool %x : tensor<1x9x10x3xf32>
  // CHECK: fuse.global_avg_pool %{{.+}} {layout = #fuse.layout<nchw>} : tensor<1x3x9x10xf32>
  %3 = fuse.global_avg_pool %xn {layout = #fuse.layout<nchw>} : tensor<1x3x9x10xf32>
  // CHECK: fuse.upsample %{{.+}} {scale = array<f64: 2.000000e+00, 2.000000e+00>} : tensor<1x9x10x3xf32>
  %4 = fuse.upsample %x {scale = array<f64: 2.0, 2.0>} : tensor<1x9x10x3xf32>
  // CHECK: fuse.upsample %{{.+}} {layout = #fuse.layout<nchw>, mode = #fuse.upsample_mode<bilinear>, size = array<i64: 4, 7>} : tensor<1x3x9x10xf32>
  %5 = fuse.upsample %xn {mode = #fuse.upsample_mode<bilinear>, size = array<i64: 4, 7>,
                          layout = #fuse.layout<nchw>} : tensor<1x3x9x10xf32>
  // CHECK: fuse.upsample %{{.+}} {align_corners, layout = #fuse.layout<nchw>, mode = #fuse.upsample_mode<bilinear>, scale = array<f64: 1.500000e+00, 1.500000e+00>} : tensor<1x3x9x10xf32>
  %6 = fuse.upsample %xn {mode = #fuse.upsample_mode<bilinear>, scale = array<f64: 1.5, 1.5>,
                          align_corners, layout = #fuse.layout<nchw>} : tensor<1x3x9x10xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<1x4x5x3xf32>, tensor<1x3x5x5xf32>, tensor<1x1x1x3xf32>,
                                      tensor<1x3x1x1xf32>, tensor<1x18x20x3xf32>, tensor<1x3x4x7xf32>,
                                      tensor<1x3x13x15xf32>
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xbf16>, tensor<6x4xf32>, tensor<4x2x3xf32>) {
  // CHECK: fuse.cast %{{.+}} : tensor<2x3x4xf32> to tensor<2x3x4xbf16>
  %0 = fuse.cast %x : tensor<2x3x4xf32> to tensor<2x3x4xbf16>
  // CHECK: fuse.reshape %{{.+}} : tensor<2x3x4xf32> to tensor<6x4xf32>
  %1 = fuse.reshape %x : tensor<2x3x4xf32> to tensor<6x4xf32>
  // CHECK: fuse.transpose %{{.+}} {permutation = array<i64: 2, 0, 1>} : tensor<2x3x4xf32>
  %2 = fuse.transpose %x {permutation = array<i64: 2, 0, 1>} : tensor<2x3x4xf32>
  return %0, %1, %2 : tensor<2x3x4xbf16>, tensor<6x4xf32>, tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @slice_concat_split
func.func @slice_concat_split(%x: tensor<2x3x8xf16>, %y: tensor<2x3x4xf16>)
    -> (tensor<1x2x8xf16>, tensor<2x3x12xf16>, tensor<2x3x5xf16>, tensor<2x3x3xf16>) {
  // CHECK: fuse.slice %{{.+}} {offsets = array<i64: 1, 1, 0>, sizes = array<i64: 1, 2, 8>} : tensor<2x3x8xf16>
  %0 = fuse.slice %x {offsets = array<i64: 1, 1, 0>, sizes = array<i64: 1, 2, 8>} : tensor<2x3x8xf16>
  // CHECK: fuse.concat %{{.+}}, %{{.+}} {axis = -1 : i64} : tensor<2x3x8xf16>, tensor<2x3x4xf16>
  %1 = fuse.concat %x, %y {axis = -1} : tensor<2x3x8xf16>, tensor<2x3x4xf16>
  // CHECK: fuse.split %{{.+}} {axis = 2 : i64, sizes = array<i64: 5, 3>} : tensor<2x3x8xf16>
  %2:2 = fuse.split %x {axis = 2, sizes = array<i64: 5, 3>} : tensor<2x3x8xf16>
  return %0, %1, %2#0, %2#1 : tensor<1x2x8xf16>, tensor<2x3x12xf16>, tensor<2x3x5xf16>, tensor<2x3x3xf16>
}

// A tiled TMA map (128-byte swizzle by default) and an im2col one over NHWC.
// CHECK-LABEL: func.func @tensor_maps
func.func @tensor_maps(%a: memref<8192x4096xbf16>, %x: memref<2x9x9x32xf16>) -> (!llvm.ptr, !llvm.ptr) {
  // CHECK: fuse.tensor_map %{{.+}} {box = array<i64: 64, 128>, dims = array<i64: 4096, 8192>, strides = array<i64: 8192>} : memref<8192x4096xbf16> -> !llvm.ptr
  %0 = fuse.tensor_map %a {dims = array<i64: 4096, 8192>, strides = array<i64: 8192>, box = array<i64: 64, 128>} : memref<8192x4096xbf16> -> !llvm.ptr
  // CHECK: fuse.tensor_map %{{.+}} {box = array<i64: 32, 64>, dims = array<i64: 32, 9, 9, 2>, im2col_lower = array<i64: -1, -1>, im2col_upper = array<i64: -1, -1>, strides = array<i64: 64, 576, 5184>, swizzle = 64 : i64} : memref<2x9x9x32xf16> -> !llvm.ptr
  %1 = fuse.tensor_map %x {dims = array<i64: 32, 9, 9, 2>, strides = array<i64: 64, 576, 5184>, box = array<i64: 32, 64>, swizzle = 64, im2col_lower = array<i64: -1, -1>, im2col_upper = array<i64: -1, -1>} : memref<2x9x9x32xf16> -> !llvm.ptr
  return %0, %1 : !llvm.ptr, !llvm.ptr
}
