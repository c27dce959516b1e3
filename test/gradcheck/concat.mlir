// fuse.concat: slices of the gradient; an operand used twice sums.
// RUN: fusec-gradcheck %s --func=f | FileCheck %s --check-prefix=F
// RUN: fusec-gradcheck %s --func=neg_axis | FileCheck %s --check-prefix=NEG-AXIS

// F: @f: PASS
func.func @f(%a: tensor<3x4x5xf32>, %b: tensor<3x2x5xf32>) -> tensor<3x10x5xf32> {
  %y = fuse.concat %a, %b, %a {axis = 1} : tensor<3x4x5xf32>, tensor<3x2x5xf32>, tensor<3x4x5xf32>
  return %y : tensor<3x10x5xf32>
}

// NEG-AXIS: @neg_axis: PASS
func.func @neg_axis(%a: tensor<3x4x5xf32>, %b: tensor<3x4x2xf32>) -> tensor<3x4x7xf32> {
  %y = fuse.concat %a, %b {axis = -1} : tensor<3x4x5xf32>, tensor<3x4x2xf32>
  return %y : tensor<3x4x7xf32>
}
