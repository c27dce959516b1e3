// fuse.avg_pool2d: fuse.avg_pool2d_grad, with and without padding in the
// divisor.
// RUN: fusec-gradcheck %s --func=incl_nhwc | FileCheck %s --check-prefix=INCL-NHWC
// RUN: fusec-gradcheck %s --func=incl_nchw | FileCheck %s --check-prefix=INCL-NCHW
// RUN: fusec-gradcheck %s --func=excl_nhwc | FileCheck %s --check-prefix=EXCL-NHWC
// RUN: fusec-gradcheck %s --func=excl_nchw | FileCheck %s --check-prefix=EXCL-NCHW

// INCL-NHWC: @incl_nhwc: PASS
func.func @incl_nhwc(%x: tensor<2x7x6x3xf32>) -> tensor<2x4x3x3xf32> {
  %y = fuse.avg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, layout = #fuse.layout<nhwc>} : tensor<2x7x6x3xf32>
  return %y : tensor<2x4x3x3xf32>
}

// INCL-NCHW: @incl_nchw: PASS
func.func @incl_nchw(%x: tensor<2x3x7x6xf32>) -> tensor<2x3x4x3xf32> {
  %y = fuse.avg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, layout = #fuse.layout<nchw>} : tensor<2x3x7x6xf32>
  return %y : tensor<2x3x4x3xf32>
}

// EXCL-NHWC: @excl_nhwc: PASS
func.func @excl_nhwc(%x: tensor<1x5x6x2xf32>) -> tensor<1x4x4x2xf32> {
  %y = fuse.avg_pool2d %x {kernel = array<i64: 3, 2>, strides = array<i64: 1, 2>, padding = array<i64: 1, 0, 1, 1>, count_include_pad = false, layout = #fuse.layout<nhwc>} : tensor<1x5x6x2xf32>
  return %y : tensor<1x4x4x2xf32>
}

// EXCL-NCHW: @excl_nchw: PASS
func.func @excl_nchw(%x: tensor<1x2x5x6xf32>) -> tensor<1x2x4x4xf32> {
  %y = fuse.avg_pool2d %x {kernel = array<i64: 3, 2>, strides = array<i64: 1, 2>, padding = array<i64: 1, 0, 1, 1>, count_include_pad = false, layout = #fuse.layout<nchw>} : tensor<1x2x5x6xf32>
  return %y : tensor<1x2x4x4xf32>
}
