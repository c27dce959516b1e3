// fusec-autodiff's errors, each located.
// RUN: fusec-opt %s -split-input-file -fusec-autodiff -verify-diagnostics

func.func @no_rule(%x: tensor<4x6xf32>) -> tensor<4xf32> {
  // expected-error @below {{fusec-autodiff: fuse.reduce_sum has no gradient rule}}
  %0 = fuse.reduce_sum %x {axes = array<i64: 1>} : tensor<4x6xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
// expected-error @below {{fusec-autodiff: the module has several functions; name one with func=}}
func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// Ops with rules around one without: the error is at the one without.
func.func @no_rule_inside(%x: tensor<4x6xf32>, %w: tensor<6xf32>) -> tensor<4x1xf32> {
  %0 = fuse.add %x, %w : tensor<4x6xf32>, tensor<6xf32>
  // expected-error @below {{fusec-autodiff: fuse.reduce_sum has no gradient rule}}
  %1 = fuse.reduce_sum %0 {axes = array<i64: 1>, keep_dims} : tensor<4x6xf32>
  // The ops after it have been differentiated already.
  // expected-remark @below {{read result #0 of fuse.relu in the backward from the graph's result #0 (not saved)}}
  %2 = fuse.relu %1 : tensor<4x1xf32>
  return %2 : tensor<4x1xf32>
}
