// fuse.bias_add: the bias gradient sums every other axis.
// RUN: fusec-gradcheck %s --func=last | FileCheck %s --check-prefix=LAST
// RUN: fusec-gradcheck %s --func=axis1 | FileCheck %s --check-prefix=AXIS1

// LAST: @last: PASS
func.func @last(%x: tensor<2x3x5xf32>, %b: tensor<5xf32>) -> tensor<2x3x5xf32> {
  %y = fuse.bias_add %x, %b : tensor<2x3x5xf32>, tensor<5xf32>
  return %y : tensor<2x3x5xf32>
}

// AXIS1: @axis1: PASS
func.func @axis1(%x: tensor<2x3x4x5xf32>, %b: tensor<3xf32>) -> tensor<2x3x4x5xf32> {
  %y = fuse.bias_add %x, %b {axis = 1} : tensor<2x3x4x5xf32>, tensor<3xf32>
  return %y : tensor<2x3x4x5xf32>
}
