// fuse.conv2d, 1x1 with a bias. Data gradient fuse.conv_transpose2d, filter
// gradient fuse.conv2d_filter_grad, bias fuse.reduce_sum; both layouts.
// RUN: fusec-gradcheck %s --func=f_nhwc | FileCheck %s --check-prefix=F-NHWC
// RUN: fusec-gradcheck %s --func=f_nchw | FileCheck %s --check-prefix=F-NCHW

// F-NHWC: @f_nhwc: PASS
func.func @f_nhwc(%x: tensor<2x3x5x5xf32>, %w: tensor<3x1x1x5xf32>, %b: tensor<3xf32>) -> tensor<2x3x5x3xf32> {
  %y = fuse.conv2d %x, %w, %b {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nhwc>} : tensor<2x3x5x5xf32>, tensor<3x1x1x5xf32>, tensor<3xf32>
  return %y : tensor<2x3x5x3xf32>
}

// F-NCHW: @f_nchw: PASS
func.func @f_nchw(%x: tensor<2x5x3x5xf32>, %w: tensor<3x5x1x1xf32>, %b: tensor<3xf32>) -> tensor<2x3x3x5xf32> {
  %y = fuse.conv2d %x, %w, %b {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nchw>} : tensor<2x5x3x5xf32>, tensor<3x5x1x1xf32>, tensor<3xf32>
  return %y : tensor<2x3x3x5xf32>
}
