// fuse.conv2d, asymmetric padding, a 2x3 kernel. Data gradient fuse.conv_transpose2d, filter
// gradient fuse.conv2d_filter_grad, bias fuse.reduce_sum; both layouts.
// RUN: fusec-gradcheck %s --func=f_nhwc | FileCheck %s --check-prefix=F-NHWC
// RUN: fusec-gradcheck %s --func=f_nchw | FileCheck %s --check-prefix=F-NCHW

// F-NHWC: @f_nhwc: PASS
func.func @f_nhwc(%x: tensor<1x6x5x2xf32>, %w: tensor<3x2x3x2xf32>) -> tensor<1x7x4x3xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 2, 1, 0>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nhwc>} : tensor<1x6x5x2xf32>, tensor<3x2x3x2xf32>
  return %y : tensor<1x7x4x3xf32>
}

// F-NCHW: @f_nchw: PASS
func.func @f_nchw(%x: tensor<1x2x6x5xf32>, %w: tensor<3x2x2x3xf32>) -> tensor<1x3x7x4xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 0, 2, 1, 0>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nchw>} : tensor<1x2x6x5xf32>, tensor<3x2x2x3xf32>
  return %y : tensor<1x3x7x4xf32>
}
