// Gradient rules of reshape, transpose, slice (slice_grad), concat (slices)
// and split (concat, or slice_grad when a piece has no gradient).
// RUN: fusec-opt %s -split-input-file -fusec-autodiff 2>/dev/null | FileCheck %s

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x10xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<5x3x2xf32>)
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.reshape %[[A0]] : tensor<3x10xf32> to tensor<5x3x2xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.mul %[[A1]], %[[V2]] : tensor<5x3x2xf32>, tensor<5x3x2xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.mul %[[A1]], %[[V2]] : tensor<5x3x2xf32>, tensor<5x3x2xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.add %[[V3]], %[[V4]] : tensor<5x3x2xf32>, tensor<5x3x2xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.reshape %[[V5]] : tensor<5x3x2xf32> to tensor<3x10xf32>
// CHECK-NEXT: return %[[V6]] : tensor<3x10xf32>
func.func @f(%x: tensor<3x10xf32>) -> tensor<5x3x2xf32> {
  %r = fuse.reshape %x : tensor<3x10xf32> to tensor<5x3x2xf32>
  %y = fuse.mul %r, %r : tensor<5x3x2xf32>, tensor<5x3x2xf32>
  return %y : tensor<5x3x2xf32>
}

// -----

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<5x3x4xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_#]+]] = fuse.transpose %[[A0]] {permutation = array<i64: 1, 2, 0>} : tensor<5x3x4xf32>
// CHECK-NEXT: return %[[V1]] : tensor<3x4x5xf32>
func.func @f(%x: tensor<3x4x5xf32>) -> tensor<5x3x4xf32> {
  %y = fuse.transpose %x {permutation = array<i64: 2, 0, 1>} : tensor<3x4x5xf32>
  return %y : tensor<5x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<2x5x7xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_#]+]] = fuse.slice_grad %[[A0]] {offsets = array<i64: 1, 2, 3>} : tensor<2x5x7xf32> -> tensor<4x9x13xf32>
// CHECK-NEXT: return %[[V1]] : tensor<4x9x13xf32>
func.func @f(%x: tensor<4x9x13xf32>) -> tensor<2x5x7xf32> {
  %y = fuse.slice %x {offsets = array<i64: 1, 2, 3>, sizes = array<i64: 2, 5, 7>} : tensor<4x9x13xf32>
  return %y : tensor<2x5x7xf32>
}

// -----

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x10x5xf32>)
// CHECK-NEXT: %[[V1:[a-zA-Z0-9_#]+]] = fuse.slice %[[A0]] {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 3, 4, 5>} : tensor<3x10x5xf32>
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.slice %[[A0]] {offsets = array<i64: 0, 4, 0>, sizes = array<i64: 3, 2, 5>} : tensor<3x10x5xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.slice %[[A0]] {offsets = array<i64: 0, 6, 0>, sizes = array<i64: 3, 4, 5>} : tensor<3x10x5xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.add %[[V1]], %[[V3]] : tensor<3x4x5xf32>, tensor<3x4x5xf32>
// CHECK-NEXT: return %[[V4]], %[[V2]] : tensor<3x4x5xf32>, tensor<3x2x5xf32>
func.func @f(%a: tensor<3x4x5xf32>, %b: tensor<3x2x5xf32>) -> tensor<3x10x5xf32> {
  %y = fuse.concat %a, %b, %a {axis = 1} : tensor<3x4x5xf32>, tensor<3x2x5xf32>, tensor<3x4x5xf32>
  return %y : tensor<3x10x5xf32>
}

// -----

// CHECK-LABEL: func.func @all_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x2x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x2x5xf32>, %[[A2:[a-zA-Z0-9_#]+]]: tensor<3x3x5xf32>, %[[A3:[a-zA-Z0-9_#]+]]: tensor<3x4x5xf32>)
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.mul %[[A1]], %[[A0]] : tensor<3x2x5xf32>, tensor<3x2x5xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.mul %[[A1]], %[[A0]] : tensor<3x2x5xf32>, tensor<3x2x5xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.add %[[V4]], %[[V5]] : tensor<3x2x5xf32>, tensor<3x2x5xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_#]+]] = fuse.concat %[[V6]], %[[A2]], %[[A3]] {axis = 1 : i64} : tensor<3x2x5xf32>, tensor<3x3x5xf32>, tensor<3x4x5xf32>
// CHECK-NEXT: return %[[V7]] : tensor<3x9x5xf32>
func.func @all(%x: tensor<3x9x5xf32>) -> (tensor<3x2x5xf32>, tensor<3x3x5xf32>, tensor<3x4x5xf32>) {
  %p:3 = fuse.split %x {axis = 1, sizes = array<i64: 2, 3, 4>} : tensor<3x9x5xf32>
  %y = fuse.mul %p#0, %p#0 : tensor<3x2x5xf32>, tensor<3x2x5xf32>
  return %y, %p#1, %p#2 : tensor<3x2x5xf32>, tensor<3x3x5xf32>, tensor<3x4x5xf32>
}

// -----

// CHECK-LABEL: func.func @some_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x4x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x2x5xf32>)
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.slice_grad %[[A1]] {offsets = array<i64: 0, 0, 0>} : tensor<3x2x5xf32> -> tensor<3x9x5xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.slice_grad %[[A0]] {offsets = array<i64: 0, 5, 0>} : tensor<3x4x5xf32> -> tensor<3x9x5xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.add %[[V2]], %[[V3]] : tensor<3x9x5xf32>, tensor<3x9x5xf32>
// CHECK-NEXT: return %[[V4]] : tensor<3x9x5xf32>
func.func @some(%x: tensor<3x9x5xf32>) -> (tensor<3x4x5xf32>, tensor<3x2x5xf32>) {
  %p:3 = fuse.split %x {axis = -2, sizes = array<i64: 2, 3, 4>} : tensor<3x9x5xf32>
  return %p#2, %p#0 : tensor<3x4x5xf32>, tensor<3x2x5xf32>
}
