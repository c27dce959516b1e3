// fuse.max_pool2d: fuse.max_pool2d_grad.
// RUN: fusec-gradcheck %s --func=k3s2_nhwc | FileCheck %s --check-prefix=K3S2-NHWC
// RUN: fusec-gradcheck %s --func=k3s2_nchw | FileCheck %s --check-prefix=K3S2-NCHW
// RUN: fusec-gradcheck %s --func=k2_nhwc | FileCheck %s --check-prefix=K2-NHWC
// RUN: fusec-gradcheck %s --func=k2_nchw | FileCheck %s --check-prefix=K2-NCHW

// K3S2-NHWC: @k3s2_nhwc: PASS
func.func @k3s2_nhwc(%x: tensor<2x7x6x3xf32>) -> tensor<2x4x3x3xf32> {
  %y = fuse.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, layout = #fuse.layout<nhwc>} : tensor<2x7x6x3xf32>
  return %y : tensor<2x4x3x3xf32>
}

// K3S2-NCHW: @k3s2_nchw: PASS
func.func @k3s2_nchw(%x: tensor<2x3x7x6xf32>) -> tensor<2x3x4x3xf32> {
  %y = fuse.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, layout = #fuse.layout<nchw>} : tensor<2x3x7x6xf32>
  return %y : tensor<2x3x4x3xf32>
}

// K2-NHWC: @k2_nhwc: PASS
func.func @k2_nhwc(%x: tensor<1x6x7x2xf32>) -> tensor<1x3x2x2xf32> {
  %y = fuse.max_pool2d %x {kernel = array<i64: 2, 3>, layout = #fuse.layout<nhwc>} : tensor<1x6x7x2xf32>
  return %y : tensor<1x3x2x2xf32>
}

// K2-NCHW: @k2_nchw: PASS
func.func @k2_nchw(%x: tensor<1x2x6x7xf32>) -> tensor<1x2x3x2xf32> {
  %y = fuse.max_pool2d %x {kernel = array<i64: 2, 3>, layout = #fuse.layout<nchw>} : tensor<1x2x6x7xf32>
  return %y : tensor<1x2x3x2xf32>
}
