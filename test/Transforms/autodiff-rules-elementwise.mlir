// Gradient rules of the elementwise arithmetic: broadcast operands sum to
// their shape (reduce_sum + reshape), sub and div negate, cast casts back.
// RUN: fusec-opt %s -split-input-file -fusec-autodiff 2>/dev/null | FileCheck %s

// CHECK-LABEL: func.func @bcast_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<2x5x7x3xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_#]+]] = fuse.reduce_sum %[[A0]] {axes = array<i64: 0, 2>} : tensor<2x5x7x3xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.reshape %[[V1]] : tensor<5x3xf32> to tensor<5x1x3xf32>
// CHECK-NEXT: return %[[A0]], %[[V2]] : tensor<2x5x7x3xf32>, tensor<5x1x3xf32>
func.func @bcast(%x: tensor<2x5x7x3xf32>, %w: tensor<5x1x3xf32>) -> tensor<2x5x7x3xf32> {
  %y = fuse.add %x, %w : tensor<2x5x7x3xf32>, tensor<5x1x3xf32>
  return %y : tensor<2x5x7x3xf32>
}

// -----

// CHECK-LABEL: func.func @both_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<4x3xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_#]+]] = fuse.reduce_sum %[[A0]] {axes = array<i64: 0>} : tensor<4x3xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.reshape %[[V1]] : tensor<3xf32> to tensor<1x3xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.reduce_sum %[[A0]] {axes = array<i64: 1>} : tensor<4x3xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.reshape %[[V3]] : tensor<4xf32> to tensor<4x1xf32>
// CHECK-NEXT: return %[[V2]], %[[V4]] : tensor<1x3xf32>, tensor<4x1xf32>
func.func @both(%x: tensor<1x3xf32>, %w: tensor<4x1xf32>) -> tensor<4x3xf32> {
  %y = fuse.add %x, %w : tensor<1x3xf32>, tensor<4x1xf32>
  return %y : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @scalar_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x7xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_#]+]] = fuse.neg %[[A0]] : tensor<3x7xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.reduce_sum %[[V1]] {axes = array<i64: 0, 1>} : tensor<3x7xf32>
// CHECK-NEXT: return %[[A0]], %[[V2]] : tensor<3x7xf32>, tensor<f32>
func.func @scalar(%x: tensor<3x7xf32>, %w: tensor<f32>) -> tensor<3x7xf32> {
  %y = fuse.sub %x, %w : tensor<3x7xf32>, tensor<f32>
  return %y : tensor<3x7xf32>
}

// -----

// CHECK-LABEL: func.func @bcast_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<2x5x7x3xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<5x1x3xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<2x5x7x3xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.mul %[[A2]], %[[A1]] : tensor<2x5x7x3xf32>, tensor<5x1x3xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.mul %[[A2]], %[[A0]] : tensor<2x5x7x3xf32>, tensor<2x5x7x3xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.reduce_sum %[[V4]] {axes = array<i64: 0, 2>} : tensor<2x5x7x3xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.reshape %[[V5]] : tensor<5x3xf32> to tensor<5x1x3xf32>
// CHECK-NEXT: return %[[V3]], %[[V6]] : tensor<2x5x7x3xf32>, tensor<5x1x3xf32>
func.func @bcast(%x: tensor<2x5x7x3xf32>, %w: tensor<5x1x3xf32>) -> tensor<2x5x7x3xf32> {
  %y = fuse.mul %x, %w : tensor<2x5x7x3xf32>, tensor<5x1x3xf32>
  return %y : tensor<2x5x7x3xf32>
}

// -----

// CHECK-LABEL: func.func @same_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x5xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<3x5xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.sigmoid %[[A1]] : tensor<3x5xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.div %[[A2]], %[[V3]] : tensor<3x5xf32>, tensor<3x5xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.div %[[A0]], %[[V3]] : tensor<3x5xf32>, tensor<3x5xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.div %[[V5]], %[[V3]] : tensor<3x5xf32>, tensor<3x5xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_#]+]] = fuse.mul %[[A2]], %[[V6]] : tensor<3x5xf32>, tensor<3x5xf32>
// CHECK-NEXT: %[[V8:[a-zA-Z0-9_#]+]] = fuse.neg %[[V7]] : tensor<3x5xf32>
// CHECK-NEXT: %[[V9:[a-zA-Z0-9_#]+]] = fuse.activation_grad %[[V8]], %[[V3]] {activation = #fuse.activation<sigmoid>} : tensor<3x5xf32>
// CHECK-NEXT: return %[[V4]], %[[V9]] : tensor<3x5xf32>, tensor<3x5xf32>
func.func @same(%x: tensor<3x5xf32>, %w: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %d = fuse.sigmoid %w : tensor<3x5xf32>
  %y = fuse.div %x, %d : tensor<3x5xf32>, tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x5xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_#]+]] = fuse.neg %[[A0]] : tensor<3x5xf32>
// CHECK-NEXT: return %[[V1]] : tensor<3x5xf32>
func.func @f(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %y = fuse.neg %x : tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// CHECK-LABEL: func.func @axis1_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<2x3x4x5xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_#]+]] = fuse.reduce_sum %[[A0]] {axes = array<i64: 0, 2, 3>} : tensor<2x3x4x5xf32>
// CHECK-NEXT: return %[[A0]], %[[V1]] : tensor<2x3x4x5xf32>, tensor<3xf32>
func.func @axis1(%x: tensor<2x3x4x5xf32>, %b: tensor<3xf32>) -> tensor<2x3x4x5xf32> {
  %y = fuse.bias_add %x, %b {axis = 1} : tensor<2x3x4x5xf32>, tensor<3xf32>
  return %y : tensor<2x3x4x5xf32>
}

// -----

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x5xf16>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x5xf32>)
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.cast %[[A0]] : tensor<3x5xf16> to tensor<3x5xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.mul %[[A1]], %[[V2]] : tensor<3x5xf32>, tensor<3x5xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.mul %[[A1]], %[[V2]] : tensor<3x5xf32>, tensor<3x5xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.add %[[V3]], %[[V4]] : tensor<3x5xf32>, tensor<3x5xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.cast %[[V5]] : tensor<3x5xf32> to tensor<3x5xf16>
// CHECK-NEXT: return %[[V6]] : tensor<3x5xf16>
func.func @f(%x: tensor<3x5xf16>) -> tensor<3x5xf32> {
  %c = fuse.cast %x : tensor<3x5xf16> to tensor<3x5xf32>
  %y = fuse.mul %c, %c : tensor<3x5xf32>, tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
