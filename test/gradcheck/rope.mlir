// fuse.rope: the gradient is the rotation by minus the angle (the tables
// with the sines negated); the tables carry none. Half-split and
// interleaved pairs.
// RUN: fusec-gradcheck %s --func=half | FileCheck %s --check-prefix=HALF
// RUN: fusec-gradcheck %s --func=interleaved | FileCheck %s --check-prefix=INTER

// HALF: @half: PASS
func.func @half(%x: tensor<2x3x5x6xf32>, %c: tensor<5x3xf32>, %s: tensor<5x3xf32>) -> tensor<2x3x5x6xf32> {
  %y = fuse.rope %x, %c, %s : tensor<2x3x5x6xf32>, tensor<5x3xf32>
  %r = fuse.mul %y, %x : tensor<2x3x5x6xf32>, tensor<2x3x5x6xf32>
  return %r : tensor<2x3x5x6xf32>
}

// INTER: @interleaved: PASS
func.func @interleaved(%x: tensor<3x4x8xf32>, %c: tensor<4x4xf32>, %s: tensor<4x4xf32>) -> tensor<3x4x8xf32> {
  %y = fuse.rope %x, %c, %s {interleaved} : tensor<3x4x8xf32>, tensor<4x4xf32>
  %r = fuse.tanh %y : tensor<3x4x8xf32>
  return %r : tensor<3x4x8xf32>
}
