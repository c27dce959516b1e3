// fuse.conv2d, 3x3, padding 1. Data gradient fuse.conv_transpose2d, filter
// gradient fuse.conv2d_filter_grad, bias fuse.reduce_sum; both layouts.
// RUN: fusec-gradcheck %s --func=f_nhwc | FileCheck %s --check-prefix=F-NHWC
// RUN: fusec-gradcheck %s --func=f_nchw | FileCheck %s --check-prefix=F-NCHW

// F-NHWC: @f_nhwc: PASS
func.func @f_nhwc(%x: tensor<2x5x7x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x5x7x4xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nhwc>} : tensor<2x5x7x3xf32>, tensor<4x3x3x3xf32>
  return %y : tensor<2x5x7x4xf32>
}

// F-NCHW: @f_nchw: PASS
func.func @f_nchw(%x: tensor<2x3x5x7xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x5x7xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nchw>} : tensor<2x3x5x7xf32>, tensor<4x3x3x3xf32>
  return %y : tensor<2x4x5x7xf32>
}
