// fuse.batch_norm (evaluation): gradients of the input, scale and shift;
// the running statistics are buffers.
// RUN: fusec-gradcheck %s --func=eval_nhwc | FileCheck %s --check-prefix=EVAL-NHWC
// RUN: fusec-gradcheck %s --func=eval_nchw | FileCheck %s --check-prefix=EVAL-NCHW

// EVAL-NHWC: @eval_nhwc: PASS
func.func @eval_nhwc(%x: tensor<2x3x5x4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x3x5x4xf32> {
  %y = fuse.batch_norm %x, %m, %v, %g, %b {epsilon = 0.01 : f64, layout = #fuse.layout<nhwc>} : tensor<2x3x5x4xf32>, tensor<4xf32>
  return %y : tensor<2x3x5x4xf32>
}

// EVAL-NCHW: @eval_nchw: PASS
func.func @eval_nchw(%x: tensor<2x4x3x5xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4x3x5xf32> {
  %y = fuse.batch_norm %x, %m, %v, %g, %b {epsilon = 0.01 : f64, layout = #fuse.layout<nchw>} : tensor<2x4x3x5xf32>, tensor<4xf32>
  return %y : tensor<2x4x3x5xf32>
}
