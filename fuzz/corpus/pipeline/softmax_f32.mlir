func.func @g(%a0: tensor<4x9x6xf32>) -> (tensor<4x9x6xf32>, tensor<4x9x6xf32>) {
  %v0 = fuse.softmax %a0 {axis = 1} : tensor<4x9x6xf32>
  %v1 = fuse.softmax %a0 : tensor<4x9x6xf32>
  return %v0, %v1 : tensor<4x9x6xf32>, tensor<4x9x6xf32>
}
