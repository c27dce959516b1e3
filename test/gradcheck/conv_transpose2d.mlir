// fuse.conv_transpose2d: data gradient fuse.conv2d, filter gradient
// fuse.conv2d_filter_grad of (dy, x); strides, output_padding, dilation,
// groups, bias, both layouts.
// RUN: fusec-gradcheck %s --func=up_nhwc | FileCheck %s --check-prefix=UP-NHWC
// RUN: fusec-gradcheck %s --func=groups_nhwc | FileCheck %s --check-prefix=GROUPS-NHWC
// RUN: fusec-gradcheck %s --func=up_nchw | FileCheck %s --check-prefix=UP-NCHW
// RUN: fusec-gradcheck %s --func=groups_nchw | FileCheck %s --check-prefix=GROUPS-NCHW

// UP-NHWC: @up_nhwc: PASS
func.func @up_nhwc(%x: tensor<1x4x5x3xf32>, %w: tensor<3x3x3x4xf32>, %b: tensor<4xf32>) -> tensor<1x8x9x4xf32> {
  %y = fuse.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 0>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nhwc>} : tensor<1x4x5x3xf32>, tensor<3x3x3x4xf32>, tensor<4xf32>
  return %y : tensor<1x8x9x4xf32>
}

// GROUPS-NHWC: @groups_nhwc: PASS
func.func @groups_nhwc(%x: tensor<2x3x3x4xf32>, %w: tensor<4x3x2x3xf32>) -> tensor<2x6x5x6xf32> {
  %y = fuse.conv_transpose2d %x, %w {strides = array<i64: 1, 2>, padding = array<i64: 0, 1, 1, 0>, output_padding = array<i64: 0, 0>, dilation = array<i64: 2, 1>, groups = 2, layout = #fuse.layout<nhwc>} : tensor<2x3x3x4xf32>, tensor<4x3x2x3xf32>
  return %y : tensor<2x6x5x6xf32>
}

// UP-NCHW: @up_nchw: PASS
func.func @up_nchw(%x: tensor<1x3x4x5xf32>, %w: tensor<3x4x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x8x9xf32> {
  %y = fuse.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 0>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nchw>} : tensor<1x3x4x5xf32>, tensor<3x4x3x3xf32>, tensor<4xf32>
  return %y : tensor<1x4x8x9xf32>
}

// GROUPS-NCHW: @groups_nchw: PASS
func.func @groups_nchw(%x: tensor<2x4x3x3xf32>, %w: tensor<4x3x3x2xf32>) -> tensor<2x6x6x5xf32> {
  %y = fuse.conv_transpose2d %x, %w {strides = array<i64: 1, 2>, padding = array<i64: 0, 1, 1, 0>, output_padding = array<i64: 0, 0>, dilation = array<i64: 2, 1>, groups = 2, layout = #fuse.layout<nchw>} : tensor<2x4x3x3xf32>, tensor<4x3x3x2xf32>
  return %y : tensor<2x6x6x5xf32>
}
