func.func @g(%a0: tensor<2x1x21x17xf32>, %a1: tensor<3x67x17xf32>) -> (tensor<2x3x21x67xf32>) {
  %v0 = fuse.matmul %a0, %a1 {transpose_rhs} : tensor<2x1x21x17xf32>, tensor<3x67x17xf32>
  return %v0 : tensor<2x3x21x67xf32>
}
