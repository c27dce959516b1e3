// Gradient rules of batch norm: the evaluation form (batch_norm_grad with
// epsilon and the running statistics) and the training form (with the saved
// statistics, saved by the forward).
// RUN: fusec-opt %s -split-input-file -fusec-autodiff 2>/dev/null | FileCheck %s

// CHECK-LABEL: func.func @eval_nchw_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<2x4x3x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<4xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<4xf32>, %[[A3:[a-zA-Z0-9_#]+]]: tensor<4xf32>, %[[A4:[a-zA-Z0-9_#]+]]: tensor<2x4x3x5xf32>)
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]], %[[V6:[a-zA-Z0-9_#]+]], %[[V7:[a-zA-Z0-9_#]+]] = fuse.batch_norm_grad %[[A4]], %[[A0]], %[[A1]], %[[A2]], %[[A3]] {epsilon = 1.000000e-02 : f64, layout = #fuse.layout<nchw>} : tensor<2x4x3x5xf32>, tensor<4xf32>
// CHECK-NEXT: return %[[V5]], %[[V6]], %[[V7]] : tensor<2x4x3x5xf32>, tensor<4xf32>, tensor<4xf32>
func.func @eval_nchw(%x: tensor<2x4x3x5xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4x3x5xf32> {
  %y = fuse.batch_norm %x, %m, %v, %g, %b {epsilon = 0.01 : f64, layout = #fuse.layout<nchw>} : tensor<2x4x3x5xf32>, tensor<4xf32>
  return %y : tensor<2x4x3x5xf32>
}

// -----

// CHECK-LABEL: func.func @train_nhwc_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<2x3x5x4xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<4xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<2x3x5x4xf32>, %[[A3:[a-zA-Z0-9_#]+]]: tensor<4xf32>, %[[A4:[a-zA-Z0-9_#]+]]: tensor<4xf32>, %[[A5:[a-zA-Z0-9_#]+]]: tensor<2x3x5x4xf32>)
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.activation_grad %[[A5]], %[[A2]] {activation = #fuse.activation<relu>} : tensor<2x3x5x4xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_#]+]], %[[V8:[a-zA-Z0-9_#]+]], %[[V9:[a-zA-Z0-9_#]+]] = fuse.batch_norm_grad %[[V6]], %[[A0]], %[[A3]], %[[A4]], %[[A1]] : tensor<2x3x5x4xf32>, tensor<4xf32>
// CHECK-NEXT: return %[[V7]], %[[V8]], %[[V9]] : tensor<2x3x5x4xf32>, tensor<4xf32>, tensor<4xf32>
func.func @train_nhwc(%x: tensor<2x3x5x4xf32>, %rm: tensor<4xf32>, %rv: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<2x3x5x4xf32>, tensor<4xf32>) {
  %y:5 = fuse.batch_norm_train %x, %rm, %rv, %g, %b {layout = #fuse.layout<nhwc>} : tensor<2x3x5x4xf32>, tensor<4xf32>
  %r = fuse.relu %y#0 : tensor<2x3x5x4xf32>
  return %r, %y#3 : tensor<2x3x5x4xf32>, tensor<4xf32>
}
