// fuse.conv2d, dilation 2 and 1, with a stride. Data gradient fuse.conv_transpose2d, filter
// gradient fuse.conv2d_filter_grad, bias fuse.reduce_sum; both layouts.
// RUN: fusec-gradcheck %s --func=f_nhwc | FileCheck %s --check-prefix=F-NHWC
// RUN: fusec-gradcheck %s --func=f_nchw | FileCheck %s --check-prefix=F-NCHW

// F-NHWC: @f_nhwc: PASS
func.func @f_nhwc(%x: tensor<1x9x7x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x5x7x4xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 2, 1>, padding = array<i64: 2, 2, 1, 1>, dilation = array<i64: 2, 1>, groups = 1, layout = #fuse.layout<nhwc>} : tensor<1x9x7x3xf32>, tensor<4x3x3x3xf32>
  return %y : tensor<1x5x7x4xf32>
}

// F-NCHW: @f_nchw: PASS
func.func @f_nchw(%x: tensor<1x3x9x7xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x5x7xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 2, 1>, padding = array<i64: 2, 2, 1, 1>, dilation = array<i64: 2, 1>, groups = 1, layout = #fuse.layout<nchw>} : tensor<1x3x9x7xf32>, tensor<4x3x3x3xf32>
  return %y : tensor<1x4x5x7xf32>
}
