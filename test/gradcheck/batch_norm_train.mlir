// fuse.batch_norm_train, then a ReLU: fuse.batch_norm_grad with the saved
// statistics; the running statistics (operands and results) carry no
// gradient.
// RUN: fusec-gradcheck %s --func=train_nhwc | FileCheck %s --check-prefix=TRAIN-NHWC
// RUN: fusec-gradcheck %s --func=train_nchw | FileCheck %s --check-prefix=TRAIN-NCHW

// TRAIN-NHWC: @train_nhwc: PASS
func.func @train_nhwc(%x: tensor<2x3x5x4xf32>, %rm: tensor<4xf32>, %rv: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<2x3x5x4xf32>, tensor<4xf32>) {
  %y:5 = fuse.batch_norm_train %x, %rm, %rv, %g, %b {layout = #fuse.layout<nhwc>} : tensor<2x3x5x4xf32>, tensor<4xf32>
  %r = fuse.relu %y#0 : tensor<2x3x5x4xf32>
  return %r, %y#3 : tensor<2x3x5x4xf32>, tensor<4xf32>
}

// TRAIN-NCHW: @train_nchw: PASS
func.func @train_nchw(%x: tensor<2x4x3x5xf32>, %rm: tensor<4xf32>, %rv: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<2x4x3x5xf32>, tensor<4xf32>) {
  %y:5 = fuse.batch_norm_train %x, %rm, %rv, %g, %b {layout = #fuse.layout<nchw>} : tensor<2x4x3x5xf32>, tensor<4xf32>
  %r = fuse.relu %y#0 : tensor<2x4x3x5xf32>
  return %r, %y#3 : tensor<2x4x3x5xf32>, tensor<4xf32>
}
