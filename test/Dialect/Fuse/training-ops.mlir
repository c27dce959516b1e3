// Round trip of the training ops, custom and generic forms; their shapes.
// RUN: fusec-opt %s | fusec-opt | FileCheck %s
// RUN: fusec-opt %s -mlir-print-op-generic | fusec-opt | FileCheck %s

// CHECK-LABEL: func.func @batch_norm
func.func @batch_norm(%x: tensor<4x5x6x3xbf16>, %p: tensor<3xf32>, %t: tensor<1xf32>,
                      %xn: tensor<2x3x5x5xf32>, %q: tensor<3xf32>)
    -> (tensor<4x5x6x3xbf16>, tensor<3xf32>, tensor<2x3x5x5xf32>, tensor<4x5x6x3xbf16>, tensor<3xf32>) {
  // CHECK: fuse.batch_norm_train %{{.*}} {momentum = 2.000000e-01 : f64} : tensor<4x5x6x3xbf16>, tensor<3xf32>
  %y, %m, %i, %rm, %rv = fuse.batch_norm_train %x, %p, %p, %p, %p {momentum = 0.2 : f64}
      : tensor<4x5x6x3xbf16>, tensor<3xf32>
  // CHECK: fuse.batch_norm_train %{{.*}} tracked %{{.*}} {cumulative, layout = #fuse.layout<nchw>} : tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<1xf32>
  %yn:5 = fuse.batch_norm_train %xn, %q, %q, %q, %q tracked %t {cumulative, layout = #fuse.layout<nchw>}
      : tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<1xf32>
  // CHECK: fuse.batch_norm_grad %{{.*}} : tensor<4x5x6x3xbf16>, tensor<3xf32>
  %dx, %ds, %db = fuse.batch_norm_grad %y, %x, %m, %i, %p : tensor<4x5x6x3xbf16>, tensor<3xf32>
  return %y, %rv, %yn#0, %dx, %ds : tensor<4x5x6x3xbf16>, tensor<3xf32>, tensor<2x3x5x5xf32>, tensor<4x5x6x3xbf16>, tensor<3xf32>
}

// CHECK-LABEL: func.func @conv_grads
func.func @conv_grads(%x: tensor<2x9x11x6xf16>, %w: tensor<8x3x3x3xf16>,
                      %xt: tensor<1x4x5x8xf16>, %wt: tensor<8x3x3x3xf16>, %xn: tensor<1x8x4x5xf32>, %wn: tensor<8x2x3x3xf32>)
    -> (tensor<2x4x5x8xf16>, tensor<8x3x3x3xf16>, tensor<1x9x11x6xf16>, tensor<1x2x8x9xf32>) {
  // CHECK: fuse.conv2d %{{.*}} {groups = 2 : i64, strides = array<i64: 2, 2>} : tensor<2x9x11x6xf16>, tensor<8x3x3x3xf16>
  %y = fuse.conv2d %x, %w {strides = array<i64: 2, 2>, groups = 2} : tensor<2x9x11x6xf16>, tensor<8x3x3x3xf16>
  // CHECK: fuse.conv2d_filter_grad %{{.*}} {groups = 2 : i64, kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>} : tensor<2x9x11x6xf16>, tensor<2x4x5x8xf16>
  %dw = fuse.conv2d_filter_grad %x, %y {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, groups = 2}
      : tensor<2x9x11x6xf16>, tensor<2x4x5x8xf16>
  // The data gradient of %y: a transposed convolution with the filter as is.
  // CHECK: fuse.conv_transpose2d %{{.*}} {groups = 2 : i64, strides = array<i64: 2, 2>} : tensor<1x4x5x8xf16>, tensor<8x3x3x3xf16>
  %dx = fuse.conv_transpose2d %xt, %wt {strides = array<i64: 2, 2>, groups = 2} : tensor<1x4x5x8xf16>, tensor<8x3x3x3xf16>
  // CHECK: fuse.conv_transpose2d %{{.*}} {layout = #fuse.layout<nchw>, output_padding = array<i64: 1, 0>, padding = array<i64: 1, 1>, strides = array<i64: 2, 2>} : tensor<1x8x4x5xf32>, tensor<8x2x3x3xf32>
  %up = fuse.conv_transpose2d %xn, %wn {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>,
                                        output_padding = array<i64: 1, 0>, layout = #fuse.layout<nchw>}
      : tensor<1x8x4x5xf32>, tensor<8x2x3x3xf32>
  return %y, %dw, %dx, %up : tensor<2x4x5x8xf16>, tensor<8x3x3x3xf16>, tensor<1x9x11x6xf16>, tensor<1x2x8x9xf32>
}

// CHECK-LABEL: func.func @elementwise_and_adjoints
func.func @elementwise_and_adjoints(%x: tensor<2x8x8x3xf32>, %g: tensor<2x4x4x3xf32>, %u: tensor<2x16x16x3xf32>)
    -> (tensor<3xf32>, tensor<2x1x1x3xf32>, tensor<2x8x8x3xf32>, tensor<2x8x8x3xf32>, tensor<2x8x8x3xf32>,
        tensor<2x8x8x3xf32>, tensor<2x8x8x3xf32>, tensor<2x10x8x3xf32>, tensor<f32>) {
  // CHECK: fuse.reduce_sum %{{.*}} {axes = array<i64: 0, 1, 2>} : tensor<2x8x8x3xf32>
  %0 = fuse.reduce_sum %x {axes = array<i64: 0, 1, 2>} : tensor<2x8x8x3xf32>
  // CHECK: fuse.reduce_sum %{{.*}} {axes = array<i64: -2, 1>, keep_dims} : tensor<2x8x8x3xf32>
  %1 = fuse.reduce_sum %x {axes = array<i64: -2, 1>, keep_dims} : tensor<2x8x8x3xf32>
  // CHECK: fuse.activation_grad %{{.*}} {activation = #fuse.activation<relu>} : tensor<2x8x8x3xf32>
  %2 = fuse.activation_grad %x, %x {activation = #fuse.activation<relu>} : tensor<2x8x8x3xf32>
  // CHECK: fuse.activation_grad %{{.*}} {activation = #fuse.activation<clamp>, max = 2.000000e+00 : f64, min = -1.000000e+00 : f64} : tensor<2x8x8x3xf32>
  %3 = fuse.activation_grad %x, %x {activation = #fuse.activation<clamp>, min = -1.0, max = 2.0} : tensor<2x8x8x3xf32>
  // CHECK: fuse.neg %{{.*}} : tensor<2x8x8x3xf32>
  %4 = fuse.neg %x : tensor<2x8x8x3xf32>
  // CHECK: fuse.max_pool2d_grad %{{.*}} {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, strides = array<i64: 2, 2>} : tensor<2x8x8x3xf32>, tensor<2x4x4x3xf32>
  %5 = fuse.max_pool2d_grad %x, %g {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>}
      : tensor<2x8x8x3xf32>, tensor<2x4x4x3xf32>
  // CHECK: fuse.avg_pool2d_grad %{{.*}} {kernel = array<i64: 2, 2>} : tensor<2x4x4x3xf32> -> tensor<2x8x8x3xf32>
  %6 = fuse.avg_pool2d_grad %g {kernel = array<i64: 2, 2>} : tensor<2x4x4x3xf32> -> tensor<2x8x8x3xf32>
  // CHECK: fuse.upsample_grad %{{.*}} {mode = #fuse.upsample_mode<bilinear>, scale = array<f64: 2.000000e+00, 2.000000e+00>} : tensor<2x16x16x3xf32> -> tensor<2x8x8x3xf32>
  %7 = fuse.upsample_grad %u {mode = #fuse.upsample_mode<bilinear>, scale = array<f64: 2.0, 2.0>}
      : tensor<2x16x16x3xf32> -> tensor<2x8x8x3xf32>
  // CHECK: fuse.slice_grad %{{.*}} {offsets = array<i64: 0, 1, 0, 0>} : tensor<2x8x8x3xf32> -> tensor<2x10x8x3xf32>
  %8 = fuse.slice_grad %x {offsets = array<i64: 0, 1, 0, 0>} : tensor<2x8x8x3xf32> -> tensor<2x10x8x3xf32>
  // CHECK: fuse.reduce_sum %{{.*}} {axes = array<i64: 0, 1, 2, 3>} : tensor<2x8x8x3xf32>
  %9 = fuse.reduce_sum %x {axes = array<i64: 0, 1, 2, 3>} : tensor<2x8x8x3xf32>
  return %0, %1, %2, %3, %4, %5, %6, %8, %9 : tensor<3xf32>, tensor<2x1x1x3xf32>, tensor<2x8x8x3xf32>, tensor<2x8x8x3xf32>,
      tensor<2x8x8x3xf32>, tensor<2x8x8x3xf32>, tensor<2x8x8x3xf32>, tensor<2x10x8x3xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @attention_grad
func.func @attention_grad(%q: tensor<1x4x9x16xbf16>, %k: tensor<1x2x7x16xbf16>, %v: tensor<1x2x7x8xbf16>,
                          %m: tensor<9x7xf32>) -> (tensor<1x4x9x16xbf16>, tensor<1x2x7x16xbf16>, tensor<1x2x7x8xbf16>) {
  // CHECK: fuse.attention %{{.*}} {causal, return_lse} : tensor<1x4x9x16xbf16>, tensor<1x2x7x16xbf16>, tensor<1x2x7x8xbf16>, tensor<9x7xf32>
  %o, %lse = fuse.attention %q, %k, %v, %m {causal, return_lse}
      : tensor<1x4x9x16xbf16>, tensor<1x2x7x16xbf16>, tensor<1x2x7x8xbf16>, tensor<9x7xf32>
  // CHECK: fuse.attention_grad %{{.*}} {causal, scale = 2.500000e-01 : f64} : tensor<1x4x9x16xbf16>, tensor<1x2x7x16xbf16>, tensor<1x2x7x8xbf16>, tensor<1x4x9x8xbf16>, tensor<1x4x9xf32>, tensor<9x7xf32>
  %dq, %dk, %dv = fuse.attention_grad %q, %k, %v, %o, %o, %lse, %m {causal, scale = 0.25 : f64}
      : tensor<1x4x9x16xbf16>, tensor<1x2x7x16xbf16>, tensor<1x2x7x8xbf16>, tensor<1x4x9x8xbf16>, tensor<1x4x9xf32>, tensor<9x7xf32>
  return %dq, %dk, %dv : tensor<1x4x9x16xbf16>, tensor<1x2x7x16xbf16>, tensor<1x2x7x8xbf16>
}
