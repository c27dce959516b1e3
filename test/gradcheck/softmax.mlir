// fuse.softmax: dx = y * (dy - sum(dy * y)) along the axis, from the
// forward's result. The last axis, an inner axis, and a row of one.
// RUN: fusec-gradcheck %s --func=last | FileCheck %s --check-prefix=LAST
// RUN: fusec-gradcheck %s --func=inner | FileCheck %s --check-prefix=INNER
// RUN: fusec-gradcheck %s --func=one | FileCheck %s --check-prefix=ONE

// LAST: @last: PASS
func.func @last(%x: tensor<3x4x7xf32>) -> tensor<3x4x7xf32> {
  %y = fuse.softmax %x : tensor<3x4x7xf32>
  %r = fuse.mul %y, %x : tensor<3x4x7xf32>, tensor<3x4x7xf32>
  return %r : tensor<3x4x7xf32>
}

// INNER: @inner: PASS
func.func @inner(%x: tensor<3x5x2xf32>) -> tensor<3x5x2xf32> {
  %y = fuse.softmax %x {axis = 1 : i64} : tensor<3x5x2xf32>
  %r = fuse.tanh %y : tensor<3x5x2xf32>
  return %r : tensor<3x5x2xf32>
}

// ONE: @one: PASS
func.func @one(%x: tensor<4x1xf32>) -> tensor<4x1xf32> {
  %y = fuse.softmax %x : tensor<4x1xf32>
  %r = fuse.mul %y, %x : tensor<4x1xf32>, tensor<4x1xf32>
  return %r : tensor<4x1xf32>
}
