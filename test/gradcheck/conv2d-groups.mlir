// fuse.conv2d, 3 groups. Data gradient fuse.conv_transpose2d, filter
// gradient fuse.conv2d_filter_grad, bias fuse.reduce_sum; both layouts.
// RUN: fusec-gradcheck %s --func=f_nhwc | FileCheck %s --check-prefix=F-NHWC
// RUN: fusec-gradcheck %s --func=f_nchw | FileCheck %s --check-prefix=F-NCHW

// F-NHWC: @f_nhwc: PASS
func.func @f_nhwc(%x: tensor<2x5x5x6xf32>, %w: tensor<9x3x3x2xf32>) -> tensor<2x5x5x9xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 3, layout = #fuse.layout<nhwc>} : tensor<2x5x5x6xf32>, tensor<9x3x3x2xf32>
  return %y : tensor<2x5x5x9xf32>
}

// F-NCHW: @f_nchw: PASS
func.func @f_nchw(%x: tensor<2x6x5x5xf32>, %w: tensor<9x2x3x3xf32>) -> tensor<2x9x5x5xf32> {
  %y = fuse.conv2d %x, %w {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 3, layout = #fuse.layout<nchw>} : tensor<2x6x5x5xf32>, tensor<9x2x3x3xf32>
  return %y : tensor<2x9x5x5xf32>
}
