// Gradient rules of pooling and resampling: their _grad ops.
// RUN: fusec-opt %s -split-input-file -fusec-autodiff 2>/dev/null | FileCheck %s

// CHECK-LABEL: func.func @k3s2_nhwc_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<2x7x6x3xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<2x4x3x3xf32>)
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.max_pool2d_grad %[[A0]], %[[A1]] {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, strides = array<i64: 2, 2>} : tensor<2x7x6x3xf32>, tensor<2x4x3x3xf32>
// CHECK-NEXT: return %[[V2]] : tensor<2x7x6x3xf32>
func.func @k3s2_nhwc(%x: tensor<2x7x6x3xf32>) -> tensor<2x4x3x3xf32> {
  %y = fuse.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, layout = #fuse.layout<nhwc>} : tensor<2x7x6x3xf32>
  return %y : tensor<2x4x3x3xf32>
}

// -----

// CHECK-LABEL: func.func @excl_nchw_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<1x2x4x4xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_#]+]] = fuse.avg_pool2d_grad %[[A0]] {count_include_pad = false, kernel = array<i64: 3, 2>, layout = #fuse.layout<nchw>, padding = array<i64: 1, 0, 1, 1>, strides = array<i64: 1, 2>} : tensor<1x2x4x4xf32> -> tensor<1x2x5x6xf32>
// CHECK-NEXT: return %[[V1]] : tensor<1x2x5x6xf32>
func.func @excl_nchw(%x: tensor<1x2x5x6xf32>) -> tensor<1x2x4x4xf32> {
  %y = fuse.avg_pool2d %x {kernel = array<i64: 3, 2>, strides = array<i64: 1, 2>, padding = array<i64: 1, 0, 1, 1>, count_include_pad = false, layout = #fuse.layout<nchw>} : tensor<1x2x5x6xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @f_nchw_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<2x4x1x1xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_#]+]] = fuse.avg_pool2d_grad %[[A0]] {kernel = array<i64: 5, 3>, layout = #fuse.layout<nchw>} : tensor<2x4x1x1xf32> -> tensor<2x4x5x3xf32>
// CHECK-NEXT: return %[[V1]] : tensor<2x4x5x3xf32>
func.func @f_nchw(%x: tensor<2x4x5x3xf32>) -> tensor<2x4x1x1xf32> {
  %y = fuse.global_avg_pool %x {layout = #fuse.layout<nchw>} : tensor<2x4x5x3xf32>
  return %y : tensor<2x4x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @f_nhwc_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<2x1x1x4xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_#]+]] = fuse.avg_pool2d_grad %[[A0]] {kernel = array<i64: 5, 3>} : tensor<2x1x1x4xf32> -> tensor<2x5x3x4xf32>
// CHECK-NEXT: return %[[V1]] : tensor<2x5x3x4xf32>
func.func @f_nhwc(%x: tensor<2x5x3x4xf32>) -> tensor<2x1x1x4xf32> {
  %y = fuse.global_avg_pool %x {layout = #fuse.layout<nhwc>} : tensor<2x5x3x4xf32>
  return %y : tensor<2x1x1x4xf32>
}

// -----

// CHECK-LABEL: func.func @nearest_size_nhwc_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<1x7x5x2xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_#]+]] = fuse.upsample_grad %[[A0]] {size = array<i64: 7, 5>} : tensor<1x7x5x2xf32> -> tensor<1x3x4x2xf32>
// CHECK-NEXT: return %[[V1]] : tensor<1x3x4x2xf32>
func.func @nearest_size_nhwc(%x: tensor<1x3x4x2xf32>) -> tensor<1x7x5x2xf32> {
  %y = fuse.upsample %x {size = array<i64: 7, 5>, layout = #fuse.layout<nhwc>} : tensor<1x3x4x2xf32>
  return %y : tensor<1x7x5x2xf32>
}

// -----

// CHECK-LABEL: func.func @bilinear_ac_nchw_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<2x2x7x9xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_#]+]] = fuse.upsample_grad %[[A0]] {align_corners, layout = #fuse.layout<nchw>, mode = #fuse.upsample_mode<bilinear>, size = array<i64: 7, 9>} : tensor<2x2x7x9xf32> -> tensor<2x2x3x4xf32>
// CHECK-NEXT: return %[[V1]] : tensor<2x2x3x4xf32>
func.func @bilinear_ac_nchw(%x: tensor<2x2x3x4xf32>) -> tensor<2x2x7x9xf32> {
  %y = fuse.upsample %x {mode = #fuse.upsample_mode<bilinear>, size = array<i64: 7, 9>, align_corners, layout = #fuse.layout<nchw>} : tensor<2x2x3x4xf32>
  return %y : tensor<2x2x7x9xf32>
}
