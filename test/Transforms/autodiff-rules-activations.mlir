// Gradient rules of the activations: fuse.activation_grad of the result
// (relu, relu6, clamp, sigmoid, tanh) or of the input (the others).
// RUN: fusec-opt %s -split-input-file -fusec-autodiff 2>/dev/null | FileCheck %s

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>)
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.add %[[A0]], %[[A0]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.add %[[V2]], %[[V2]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.relu %[[V3]] : tensor<3x7x5xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.activation_grad %[[A1]], %[[V4]] {activation = #fuse.activation<relu>} : tensor<3x7x5xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.add %[[V5]], %[[V5]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_#]+]] = fuse.add %[[V6]], %[[V6]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: return %[[V7]] : tensor<3x7x5xf32>
func.func @f(%x: tensor<3x7x5xf32>) -> tensor<3x7x5xf32> {
  %a = fuse.add %x, %x : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %b = fuse.add %a, %a : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %y = fuse.relu %b : tensor<3x7x5xf32>
  return %y : tensor<3x7x5xf32>
}

// -----

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>)
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.add %[[A0]], %[[A0]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.add %[[V2]], %[[V2]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.add %[[V3]], %[[V3]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.relu6 %[[V4]] : tensor<3x7x5xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.activation_grad %[[A1]], %[[V5]] {activation = #fuse.activation<relu6>} : tensor<3x7x5xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_#]+]] = fuse.add %[[V6]], %[[V6]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V8:[a-zA-Z0-9_#]+]] = fuse.add %[[V7]], %[[V7]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V9:[a-zA-Z0-9_#]+]] = fuse.add %[[V8]], %[[V8]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: return %[[V9]] : tensor<3x7x5xf32>
func.func @f(%x: tensor<3x7x5xf32>) -> tensor<3x7x5xf32> {
  %a = fuse.add %x, %x : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %b = fuse.add %a, %a : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %c = fuse.add %b, %b : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %y = fuse.relu6 %c : tensor<3x7x5xf32>
  return %y : tensor<3x7x5xf32>
}

// -----

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>)
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.clamp %[[A0]] {max = 0.69999999999999996 : f64, min = -5.000000e-01 : f64} : tensor<3x7x5xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.activation_grad %[[A1]], %[[V2]] {activation = #fuse.activation<clamp>, max = 0.69999999999999996 : f64, min = -5.000000e-01 : f64} : tensor<3x7x5xf32>
// CHECK-NEXT: return %[[V3]] : tensor<3x7x5xf32>
func.func @f(%x: tensor<3x7x5xf32>) -> tensor<3x7x5xf32> {
  %y = fuse.clamp %x {min = -0.5 : f64, max = 0.7 : f64} : tensor<3x7x5xf32>
  return %y : tensor<3x7x5xf32>
}

// -----

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>)
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.add %[[A0]], %[[A0]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.add %[[V2]], %[[V2]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.activation_grad %[[A1]], %[[V3]] {activation = #fuse.activation<leaky_relu>, alpha = 2.000000e-01 : f64} : tensor<3x7x5xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.add %[[V4]], %[[V4]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.add %[[V5]], %[[V5]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: return %[[V6]] : tensor<3x7x5xf32>
func.func @f(%x: tensor<3x7x5xf32>) -> tensor<3x7x5xf32> {
  %a = fuse.add %x, %x : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %b = fuse.add %a, %a : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %y = fuse.leaky_relu %b {alpha = 0.2 : f64} : tensor<3x7x5xf32>
  return %y : tensor<3x7x5xf32>
}

// -----

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>)
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.add %[[A0]], %[[A0]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.add %[[V2]], %[[V2]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.activation_grad %[[A1]], %[[V3]] {activation = #fuse.activation<gelu>} : tensor<3x7x5xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.add %[[V4]], %[[V4]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.add %[[V5]], %[[V5]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: return %[[V6]] : tensor<3x7x5xf32>
func.func @f(%x: tensor<3x7x5xf32>) -> tensor<3x7x5xf32> {
  %a = fuse.add %x, %x : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %b = fuse.add %a, %a : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %y = fuse.gelu %b : tensor<3x7x5xf32>
  return %y : tensor<3x7x5xf32>
}

// -----

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>)
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.add %[[A0]], %[[A0]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.add %[[V2]], %[[V2]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.activation_grad %[[A1]], %[[V3]] {activation = #fuse.activation<gelu_tanh>} : tensor<3x7x5xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.add %[[V4]], %[[V4]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.add %[[V5]], %[[V5]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: return %[[V6]] : tensor<3x7x5xf32>
func.func @f(%x: tensor<3x7x5xf32>) -> tensor<3x7x5xf32> {
  %a = fuse.add %x, %x : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %b = fuse.add %a, %a : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %y = fuse.gelu %b {approximate = #fuse.gelu_approx<tanh>} : tensor<3x7x5xf32>
  return %y : tensor<3x7x5xf32>
}

// -----

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>)
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.add %[[A0]], %[[A0]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.add %[[V2]], %[[V2]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.activation_grad %[[A1]], %[[V3]] {activation = #fuse.activation<silu>} : tensor<3x7x5xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.add %[[V4]], %[[V4]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.add %[[V5]], %[[V5]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: return %[[V6]] : tensor<3x7x5xf32>
func.func @f(%x: tensor<3x7x5xf32>) -> tensor<3x7x5xf32> {
  %a = fuse.add %x, %x : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %b = fuse.add %a, %a : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %y = fuse.silu %b : tensor<3x7x5xf32>
  return %y : tensor<3x7x5xf32>
}

// -----

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>)
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.add %[[A0]], %[[A0]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.add %[[V2]], %[[V2]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.sigmoid %[[V3]] : tensor<3x7x5xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.activation_grad %[[A1]], %[[V4]] {activation = #fuse.activation<sigmoid>} : tensor<3x7x5xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.add %[[V5]], %[[V5]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_#]+]] = fuse.add %[[V6]], %[[V6]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: return %[[V7]] : tensor<3x7x5xf32>
func.func @f(%x: tensor<3x7x5xf32>) -> tensor<3x7x5xf32> {
  %a = fuse.add %x, %x : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %b = fuse.add %a, %a : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %y = fuse.sigmoid %b : tensor<3x7x5xf32>
  return %y : tensor<3x7x5xf32>
}

// -----

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>)
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.add %[[A0]], %[[A0]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.add %[[V2]], %[[V2]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.tanh %[[V3]] : tensor<3x7x5xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.activation_grad %[[A1]], %[[V4]] {activation = #fuse.activation<tanh>} : tensor<3x7x5xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.add %[[V5]], %[[V5]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V7:[a-zA-Z0-9_#]+]] = fuse.add %[[V6]], %[[V6]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: return %[[V7]] : tensor<3x7x5xf32>
func.func @f(%x: tensor<3x7x5xf32>) -> tensor<3x7x5xf32> {
  %a = fuse.add %x, %x : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %b = fuse.add %a, %a : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %y = fuse.tanh %b : tensor<3x7x5xf32>
  return %y : tensor<3x7x5xf32>
}

// -----

// CHECK-LABEL: func.func @f_backward(
// CHECK-SAME: %[[A0:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>, %[[A1:[a-zA-Z0-9_#]+]]: tensor<3x7x5xf32>)
// CHECK-NEXT: %[[V2:[a-zA-Z0-9_#]+]] = fuse.add %[[A0]], %[[A0]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V3:[a-zA-Z0-9_#]+]] = fuse.add %[[V2]], %[[V2]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V4:[a-zA-Z0-9_#]+]] = fuse.activation_grad %[[A1]], %[[V3]] {activation = #fuse.activation<hardswish>} : tensor<3x7x5xf32>
// CHECK-NEXT: %[[V5:[a-zA-Z0-9_#]+]] = fuse.add %[[V4]], %[[V4]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: %[[V6:[a-zA-Z0-9_#]+]] = fuse.add %[[V5]], %[[V5]] : tensor<3x7x5xf32>, tensor<3x7x5xf32>
// CHECK-NEXT: return %[[V6]] : tensor<3x7x5xf32>
func.func @f(%x: tensor<3x7x5xf32>) -> tensor<3x7x5xf32> {
  %a = fuse.add %x, %x : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %b = fuse.add %a, %a : tensor<3x7x5xf32>, tensor<3x7x5xf32>
  %y = fuse.hardswish %b : tensor<3x7x5xf32>
  return %y : tensor<3x7x5xf32>
}
