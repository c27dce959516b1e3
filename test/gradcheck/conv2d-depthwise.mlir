// fuse.conv2d, depthwise (groups = channels), multiplier 2, stride 2. Data gradient fuse.conv_transpose2d, filter
// gradient fuse.conv2d_filter_grad, bias fuse.reduce_sum; both layouts.
// RUN: fusec-gradcheck %s --func=f_nhwc | FileCheck %s --check-prefix=F-NHWC
// RUN: fusec-gradcheck %s --func=f_nchw | FileCheck %s --check-prefix=F-NCHW

// F-NHWC: @f_nhwc: PASS
func.func @f_nhwc(%x: tensor<1x7x6x3xf32>, %w: tensor<6x3x3x1xf32>) -> tensor<1x4x3x6xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 3, layout = #fuse.layout<nhwc>} : tensor<1x7x6x3xf32>, tensor<6x3x3x1xf32>
  return %y : tensor<1x4x3x6xf32>
}

// F-NCHW: @f_nchw: PASS
func.func @f_nchw(%x: tensor<1x3x7x6xf32>, %w: tensor<6x1x3x3xf32>) -> tensor<1x6x4x3xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 3, layout = #fuse.layout<nchw>} : tensor<1x3x7x6xf32>, tensor<6x1x3x3xf32>
  return %y : tensor<1x6x4x3xf32>
}
