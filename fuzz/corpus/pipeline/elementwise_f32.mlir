func.func @g(%a0: tensor<3x5x7xf32>, %a1: tensor<7xf32>) -> (tensor<3x5x7xf32>) {
  %v0 = fuse.mul %a0, %a1 : tensor<3x5x7xf32>, tensor<7xf32>
  %v1 = fuse.sigmoid %v0 : tensor<3x5x7xf32>
  %v2 = fuse.tanh %v1 : tensor<3x5x7xf32>
  %v3 = fuse.leaky_relu %v2 : tensor<3x5x7xf32>
  return %v3 : tensor<3x5x7xf32>
}
