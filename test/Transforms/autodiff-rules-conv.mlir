// Gradient rules of conv2d (conv_transpose2d with the output_padding that
// restores the input shape, conv2d_filter_grad, reduce_sum for the bias)
// and of conv_transpose2d, in both layouts.
// RUN: fusec-opt %s -split-input-file -fusec-autodiff 2>/dev/null | FileCheck %s

// CHECK-LABEL: func.func @f_nhwc_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<1x8x12x3xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<5x3x3x3xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<1x4x4x5xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.conv_transpose2d %[[A2]], %[[A1]] {output_padding = array<i64: 1, 2>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 3>} : tensor<1x4x4x5xf32>, tensor<5x3x3x3xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.conv2d_filter_grad %[[A0]], %[[A2]] {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 3>} : tensor<1x8x12x3xf32>, tensor<1x4x4x5xf32>
// CHECK-NEXT: return %[[V3]], %[[V4]] : tensor<1x8x12x3xf32>, tensor<5x3x3x3xf32>
func.func @f_nhwc(%x: tensor<1x8x12x3xf32>, %w: tensor<5x3x3x3xf32>) -> tensor<1x4x4x5xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 2, 3>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nhwc>} : tensor<1x8x12x3xf32>, tensor<5x3x3x3xf32>
  return %y : tensor<1x4x4x5xf32>
}

// -----

// CHECK-LABEL: func.func @f_nchw_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<1x3x8x12xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<5x3x3x3xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<1x5x4x4xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.conv_transpose2d %[[A2]], %[[A1]] {layout = #fuse.layout<nchw>, output_padding = array<i64: 1, 2>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 3>} : tensor<1x5x4x4xf32>, tensor<5x3x3x3xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.conv2d_filter_grad %[[A0]], %[[A2]] {kernel = array<i64: 3, 3>, layout = #fuse.layout<nchw>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 3>} : tensor<1x3x8x12xf32>, tensor<1x5x4x4xf32>
// CHECK-NEXT: return %[[V3]], %[[V4]] : tensor<1x3x8x12xf32>, tensor<5x3x3x3xf32>
func.func @f_nchw(%x: tensor<1x3x8x12xf32>, %w: tensor<5x3x3x3xf32>) -> tensor<1x5x4x4xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 2, 3>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nchw>} : tensor<1x3x8x12xf32>, tensor<5x3x3x3xf32>
  return %y : tensor<1x5x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @f_nhwc_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<1x9x7x3xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<4x3x3x3xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<1x5x7x4xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.conv_transpose2d %[[A2]], %[[A1]] {dilation = array<i64: 2, 1>, padding = array<i64: 2, 2, 1, 1>, strides = array<i64: 2, 1>} : tensor<1x5x7x4xf32>, tensor<4x3x3x3xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.conv2d_filter_grad %[[A0]], %[[A2]] {dilation = array<i64: 2, 1>, kernel = array<i64: 3, 3>, padding = array<i64: 2, 2, 1, 1>, strides = array<i64: 2, 1>} : tensor<1x9x7x3xf32>, tensor<1x5x7x4xf32>
// CHECK-NEXT: return %[[V3]], %[[V4]] : tensor<1x9x7x3xf32>, tensor<4x3x3x3xf32>
func.func @f_nhwc(%x: tensor<1x9x7x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x5x7x4xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 2, 1>, padding = array<i64: 2, 2, 1, 1>, dilation = array<i64: 2, 1>, groups = 1, layout = #fuse.layout<nhwc>} : tensor<1x9x7x3xf32>, tensor<4x3x3x3xf32>
  return %y : tensor<1x5x7x4xf32>
}

// -----

// CHECK-LABEL: func.func @f_nchw_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<1x3x7x6xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<6x1x3x3xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<1x6x4x3xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.conv_transpose2d %[[A2]], %[[A1]] {groups = 3 : i64, layout = #fuse.layout<nchw>, output_padding = array<i64: 0, 1>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x6x4x3xf32>, tensor<6x1x3x3xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.conv2d_filter_grad %[[A0]], %[[A2]] {groups = 3 : i64, kernel = array<i64: 3, 3>, layout = #fuse.layout<nchw>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x3x7x6xf32>, tensor<1x6x4x3xf32>
// CHECK-NEXT: return %[[V3]], %[[V4]] : tensor<1x3x7x6xf32>, tensor<6x1x3x3xf32>
func.func @f_nchw(%x: tensor<1x3x7x6xf32>, %w: tensor<6x1x3x3xf32>) -> tensor<1x6x4x3xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 3, layout = #fuse.layout<nchw>} : tensor<1x3x7x6xf32>, tensor<6x1x3x3xf32>
  return %y : tensor<1x6x4x3xf32>
}

// -----

// CHECK-LABEL: func.func @f_nhwc_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<2x3x5x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x1x1x5xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<2x3x5x3xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.conv_transpose2d %[[A2]], %[[A1]] : tensor<2x3x5x3xf32>, tensor<3x1x1x5xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.conv2d_filter_grad %[[A0]], %[[A2]] {kernel = array<i64: 1, 1>} : tensor<2x3x5x5xf32>, tensor<2x3x5x3xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.reduce_sum %[[A2]] {axes = array<i64: 0, 1, 2>} : tensor<2x3x5x3xf32>
// CHECK-NEXT: return %[[V3]], %[[V4]], %[[V5]] : tensor<2x3x5x5xf32>, tensor<3x1x1x5xf32>, tensor<3xf32>
func.func @f_nhwc(%x: tensor<2x3x5x5xf32>, %w: tensor<3x1x1x5xf32>, %b: tensor<3xf32>) -> tensor<2x3x5x3xf32> {
  %y = fuse.conv2d %x, %w, %b {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nhwc>} : tensor<2x3x5x5xf32>, tensor<3x1x1x5xf32>, tensor<3xf32>
  return %y : tensor<2x3x5x3xf32>
}

// -----

// CHECK-LABEL: func.func @f_nchw_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<1x2x6x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x2x2x3xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<1x3x7x4xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.conv_transpose2d %[[A2]], %[[A1]] {layout = #fuse.layout<nchw>, padding = array<i64: 0, 2, 1, 0>} : tensor<1x3x7x4xf32>, tensor<3x2x2x3xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.conv2d_filter_grad %[[A0]], %[[A2]] {kernel = array<i64: 2, 3>, layout = #fuse.layout<nchw>, padding = array<i64: 0, 2, 1, 0>} : tensor<1x2x6x5xf32>, tensor<1x3x7x4xf32>
// CHECK-NEXT: return %[[V3]], %[[V4]] : tensor<1x2x6x5xf32>, tensor<3x2x2x3xf32>
func.func @f_nchw(%x: tensor<1x2x6x5xf32>, %w: tensor<3x2x2x3xf32>) -> tensor<1x3x7x4xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 2, 1, 0>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nchw>} : tensor<1x2x6x5xf32>, tensor<3x2x2x3xf32>
  return %y : tensor<1x3x7x4xf32>
}

// -----

// CHECK-LABEL: func.func @up_nhwc_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<1x4x5x3xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x3x3x4xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<1x8x9x4xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.conv2d %[[A2]], %[[A1]] {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x8x9x4xf32>, tensor<3x3x3x4xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.conv2d_filter_grad %[[A2]], %[[A0]] {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x8x9x4xf32>, tensor<1x4x5x3xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.reduce_sum %[[A2]] {axes = array<i64: 0, 1, 2>} : tensor<1x8x9x4xf32>
// CHECK-NEXT: return %[[V3]], %[[V4]], %[[V5]] : tensor<1x4x5x3xf32>, tensor<3x3x3x4xf32>, tensor<4xf32>
func.func @up_nhwc(%x: tensor<1x4x5x3xf32>, %w: tensor<3x3x3x4xf32>, %b: tensor<4xf32>) -> tensor<1x8x9x4xf32> {
  %y = fuse.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 0>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nhwc>} : tensor<1x4x5x3xf32>, tensor<3x3x3x4xf32>, tensor<4xf32>
  return %y : tensor<1x8x9x4xf32>
}

// -----

// CHECK-LABEL: func.func @groups_nchw_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<2x4x3x3xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<4x3x3x2xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<2x6x6x5xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.conv2d %[[A2]], %[[A1]] {dilation = array<i64: 2, 1>, groups = 2 : i64, layout = #fuse.layout<nchw>, padding = array<i64: 0, 1, 1, 0>, strides = array<i64: 1, 2>} : tensor<2x6x6x5xf32>, tensor<4x3x3x2xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.conv2d_filter_grad %[[A2]], %[[A0]] {dilation = array<i64: 2, 1>, groups = 2 : i64, kernel = array<i64: 3, 2>, layout = #fuse.layout<nchw>, padding = array<i64: 0, 1, 1, 0>, strides = array<i64: 1, 2>} : tensor<2x6x6x5xf32>, tensor<2x4x3x3xf32>
// CHECK-NEXT: return %[[V3]], %[[V4]] : tensor<2x4x3x3xf32>, tensor<4x3x3x2xf32>
func.func @groups_nchw(%x: tensor<2x4x3x3xf32>, %w: tensor<4x3x3x2xf32>) -> tensor<2x6x6x5xf32> {
  %y = fuse.conv_transpose2d %x, %w {strides = array<i64: 1, 2>, padding = array<i64: 0, 1, 1, 0>, output_padding = array<i64: 0, 0>, dilation = array<i64: 2, 1>, groups = 2, layout = #fuse.layout<nchw>} : tensor<2x4x3x3xf32>, tensor<4x3x3x2xf32>
  return %y : tensor<2x6x6x5xf32>
}
