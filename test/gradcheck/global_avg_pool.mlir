// fuse.global_avg_pool: fuse.avg_pool2d_grad over the whole image.
// RUN: fusec-gradcheck %s --func=f_nhwc | FileCheck %s --check-prefix=F-NHWC
// RUN: fusec-gradcheck %s --func=f_nchw | FileCheck %s --check-prefix=F-NCHW

// F-NHWC: @f_nhwc: PASS
func.func @f_nhwc(%x: tensor<2x5x3x4xf32>) -> tensor<2x1x1x4xf32> {
  %y = fuse.global_avg_pool %x {layout = #fuse.layout<nhwc>} : tensor<2x5x3x4xf32>
  return %y : tensor<2x1x1x4xf32>
}

// F-NCHW: @f_nchw: PASS
func.func @f_nchw(%x: tensor<2x4x5x3xf32>) -> tensor<2x4x1x1xf32> {
  %y = fuse.global_avg_pool %x {layout = #fuse.layout<nchw>} : tensor<2x4x5x3xf32>
  return %y : tensor<2x4x1x1xf32>
}
