// fuse.upsample, nearest and bilinear: fuse.upsample_grad.
// RUN: fusec-gradcheck %s --func=nearest2_nhwc | FileCheck %s --check-prefix=NEAREST2-NHWC
// RUN: fusec-gradcheck %s --func=nearest2_nchw | FileCheck %s --check-prefix=NEAREST2-NCHW
// RUN: fusec-gradcheck %s --func=nearest_size_nhwc | FileCheck %s --check-prefix=NEAREST-SIZE-NHWC
// RUN: fusec-gradcheck %s --func=nearest_size_nchw | FileCheck %s --check-prefix=NEAREST-SIZE-NCHW
// RUN: fusec-gradcheck %s --func=bilinear_nhwc | FileCheck %s --check-prefix=BILINEAR-NHWC
// RUN: fusec-gradcheck %s --func=bilinear_nchw | FileCheck %s --check-prefix=BILINEAR-NCHW
// RUN: fusec-gradcheck %s --func=bilinear_ac_nhwc | FileCheck %s --check-prefix=BILINEAR-AC-NHWC
// RUN: fusec-gradcheck %s --func=bilinear_ac_nchw | FileCheck %s --check-prefix=BILINEAR-AC-NCHW

// NEAREST2-NHWC: @nearest2_nhwc: PASS
func.func @nearest2_nhwc(%x: tensor<1x3x4x2xf32>) -> tensor<1x6x8x2xf32> {
  %y = fuse.upsample %x {scale = array<f64: 2.0, 2.0>, layout = #fuse.layout<nhwc>} : tensor<1x3x4x2xf32>
  return %y : tensor<1x6x8x2xf32>
}

// NEAREST2-NCHW: @nearest2_nchw: PASS
func.func @nearest2_nchw(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32> {
  %y = fuse.upsample %x {scale = array<f64: 2.0, 2.0>, layout = #fuse.layout<nchw>} : tensor<1x2x3x4xf32>
  return %y : tensor<1x2x6x8xf32>
}

// NEAREST-SIZE-NHWC: @nearest_size_nhwc: PASS
func.func @nearest_size_nhwc(%x: tensor<1x3x4x2xf32>) -> tensor<1x7x5x2xf32> {
  %y = fuse.upsample %x {size = array<i64: 7, 5>, layout = #fuse.layout<nhwc>} : tensor<1x3x4x2xf32>
  return %y : tensor<1x7x5x2xf32>
}

// NEAREST-SIZE-NCHW: @nearest_size_nchw: PASS
func.func @nearest_size_nchw(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x7x5xf32> {
  %y = fuse.upsample %x {size = array<i64: 7, 5>, layout = #fuse.layout<nchw>} : tensor<1x2x3x4xf32>
  return %y : tensor<1x2x7x5xf32>
}

// BILINEAR-NHWC: @bilinear_nhwc: PASS
func.func @bilinear_nhwc(%x: tensor<1x3x4x2xf32>) -> tensor<1x6x8x2xf32> {
  %y = fuse.upsample %x {mode = #fuse.upsample_mode<bilinear>, scale = array<f64: 2.0, 2.0>, layout = #fuse.layout<nhwc>} : tensor<1x3x4x2xf32>
  return %y : tensor<1x6x8x2xf32>
}

// BILINEAR-NCHW: @bilinear_nchw: PASS
func.func @bilinear_nchw(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32> {
  %y = fuse.upsample %x {mode = #fuse.upsample_mode<bilinear>, scale = array<f64: 2.0, 2.0>, layout = #fuse.layout<nchw>} : tensor<1x2x3x4xf32>
  return %y : tensor<1x2x6x8xf32>
}

// BILINEAR-AC-NHWC: @bilinear_ac_nhwc: PASS
func.func @bilinear_ac_nhwc(%x: tensor<2x3x4x2xf32>) -> tensor<2x7x9x2xf32> {
  %y = fuse.upsample %x {mode = #fuse.upsample_mode<bilinear>, size = array<i64: 7, 9>, align_corners, layout = #fuse.layout<nhwc>} : tensor<2x3x4x2xf32>
  return %y : tensor<2x7x9x2xf32>
}

// BILINEAR-AC-NCHW: @bilinear_ac_nchw: PASS
func.func @bilinear_ac_nchw(%x: tensor<2x2x3x4xf32>) -> tensor<2x2x7x9xf32> {
  %y = fuse.upsample %x {mode = #fuse.upsample_mode<bilinear>, size = array<i64: 7, 9>, align_corners, layout = #fuse.layout<nchw>} : tensor<2x2x3x4xf32>
  return %y : tensor<2x2x7x9xf32>
}
