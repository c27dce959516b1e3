// Gradient rules of matmul (the transpose flags absorbed, broadcast batch
// axes summed) and linear.
// RUN: fusec-opt %s -split-input-file -fusec-autodiff 2>/dev/null | FileCheck %s

// CHECK-LABEL: func.func @plain_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<5x3xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x4xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<5x4xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.matmul %[[A2]], %[[A1]] {transpose_rhs} : tensor<5x4xf32>, tensor<3x4xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.matmul %[[A0]], %[[A2]] {transpose_lhs} : tensor<5x3xf32>, tensor<5x4xf32>
// CHECK-NEXT: return %[[V3]], %[[V4]] : tensor<5x3xf32>, tensor<3x4xf32>
func.func @plain(%a: tensor<5x3xf32>, %b: tensor<3x4xf32>) -> tensor<5x4xf32> {
  %y = fuse.matmul %a, %b : tensor<5x3xf32>, tensor<3x4xf32>
  return %y : tensor<5x4xf32>
}

// -----

// CHECK-LABEL: func.func @tl_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x4xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<5x4xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.matmul %[[A1]], %[[A2]] {transpose_rhs} : tensor<3x4xf32>, tensor<5x4xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.matmul %[[A0]], %[[A2]] : tensor<3x5xf32>, tensor<5x4xf32>
// CHECK-NEXT: return %[[V3]], %[[V4]] : tensor<3x5xf32>, tensor<3x4xf32>
func.func @tl(%a: tensor<3x5xf32>, %b: tensor<3x4xf32>) -> tensor<5x4xf32> {
  %y = fuse.matmul %a, %b {transpose_lhs} : tensor<3x5xf32>, tensor<3x4xf32>
  return %y : tensor<5x4xf32>
}

// -----

// CHECK-LABEL: func.func @tr_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<5x3xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<4x3xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<5x4xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.matmul %[[A2]], %[[A1]] : tensor<5x4xf32>, tensor<4x3xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.matmul %[[A2]], %[[A0]] {transpose_lhs} : tensor<5x4xf32>, tensor<5x3xf32>
// CHECK-NEXT: return %[[V3]], %[[V4]] : tensor<5x3xf32>, tensor<4x3xf32>
func.func @tr(%a: tensor<5x3xf32>, %b: tensor<4x3xf32>) -> tensor<5x4xf32> {
  %y = fuse.matmul %a, %b {transpose_rhs} : tensor<5x3xf32>, tensor<4x3xf32>
  return %y : tensor<5x4xf32>
}

// -----

// CHECK-LABEL: func.func @tl_tr_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<4x3xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<5x4xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.matmul %[[A1]], %[[A2]] {transpose_lhs, transpose_rhs} : tensor<4x3xf32>, tensor<5x4xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.matmul %[[A2]], %[[A0]] {transpose_lhs, transpose_rhs} : tensor<5x4xf32>, tensor<3x5xf32>
// CHECK-NEXT: return %[[V3]], %[[V4]] : tensor<3x5xf32>, tensor<4x3xf32>
func.func @tl_tr(%a: tensor<3x5xf32>, %b: tensor<4x3xf32>) -> tensor<5x4xf32> {
  %y = fuse.matmul %a, %b {transpose_lhs, transpose_rhs} : tensor<3x5xf32>, tensor<4x3xf32>
  return %y : tensor<5x4xf32>
}

// -----

// CHECK-LABEL: func.func @bcast_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<2x3x5x4xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x4x6xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<2x3x5x6xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.matmul %[[A2]], %[[A1]] {transpose_rhs} : tensor<2x3x5x6xf32>, tensor<3x4x6xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.matmul %[[A0]], %[[A2]] {transpose_lhs} : tensor<2x3x5x4xf32>, tensor<2x3x5x6xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.reduce_sum %[[V4]] {axes = array<i64: 0>} : tensor<2x3x4x6xf32>
// CHECK-NEXT: return %[[V3]], %[[V5]] : tensor<2x3x5x4xf32>, tensor<3x4x6xf32>
func.func @bcast(%a: tensor<2x3x5x4xf32>, %b: tensor<3x4x6xf32>) -> tensor<2x3x5x6xf32> {
  %y = fuse.matmul %a, %b : tensor<2x3x5x4xf32>, tensor<3x4x6xf32>
  return %y : tensor<2x3x5x6xf32>
}

// -----

// CHECK-LABEL: func.func @bcast_tl_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x4x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<2x1x4x6xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<2x3x5x6xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.matmul %[[A1]], %[[A2]] {transpose_rhs} : tensor<2x1x4x6xf32>, tensor<2x3x5x6xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.reduce_sum %[[V3]] {axes = array<i64: 0>} : tensor<2x3x4x5xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.matmul %[[A0]], %[[A2]] : tensor<3x4x5xf32>, tensor<2x3x5x6xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.reduce_sum %[[V5]] {axes = array<i64: 1>} : tensor<2x3x4x6xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_#]+]] = fuse.reshape %[[V6]] : tensor<2x4x6xf32> to tensor<2x1x4x6xf32>
// CHECK-NEXT: return %[[V4]], %[[V7]] : tensor<3x4x5xf32>, tensor<2x1x4x6xf32>
func.func @bcast_tl(%a: tensor<3x4x5xf32>, %b: tensor<2x1x4x6xf32>) -> tensor<2x3x5x6xf32> {
  %y = fuse.matmul %a, %b {transpose_lhs} : tensor<3x4x5xf32>, tensor<2x1x4x6xf32>
  return %y : tensor<2x3x5x6xf32>
}

// -----

// CHECK-LABEL: func.func @bias_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x5x7xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<4x7xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<3x5x4xf32>)
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.matmul %[[A2]], %[[A1]] : tensor<3x5x4xf32>, tensor<4x7xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.reshape %[[A2]] : tensor<3x5x4xf32> to tensor<15x4xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.reshape %[[A0]] : tensor<3x5x7xf32> to tensor<15x7xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.matmul %[[V4]], %[[V5]] {transpose_lhs} : tensor<15x4xf32>, tensor<15x7xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_#]+]] = fuse.reduce_sum %[[A2]] {axes = array<i64: 0, 1>} : tensor<3x5x4xf32>
// CHECK-NEXT: return %[[V3]], %[[V6]], %[[V7]] : tensor<3x5x7xf32>, tensor<4x7xf32>, tensor<4xf32>
func.func @bias(%x: tensor<3x5x7xf32>, %w: tensor<4x7xf32>, %b: tensor<4xf32>) -> tensor<3x5x4xf32> {
  %y = fuse.linear %x, %w, %b : tensor<3x5x7xf32>, tensor<4x7xf32>, tensor<4xf32>
  return %y : tensor<3x5x4xf32>
}
