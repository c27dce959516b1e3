func.func @g(%a0: tensor<5x2048xf32>, %a1: tensor<5x2048xf32>, %a2: tensor<2048xf32>, %a3: tensor<2048xf32>, %a4: tensor<3x2x1024xf32>) -> (tensor<5x2048xf32>, tensor<5x2048xf32>, tensor<5x2048xf32>, tensor<3x2x1024xf32>) {
  %v0 = fuse.add %a0, %a1 : tensor<5x2048xf32>, tensor<5x2048xf32>
  %v1 = fuse.layer_norm %v0 scale(%a2 : tensor<2048xf32>) shift(%a3 : tensor<2048xf32>) : tensor<5x2048xf32>
  %v2 = fuse.rms_norm %a0 scale(%a2 : tensor<2048xf32>) : tensor<5x2048xf32>
  %v3 = fuse.softmax %a4 : tensor<3x2x1024xf32>
  return %v1, %v0, %v2, %v3 : tensor<5x2048xf32>, tensor<5x2048xf32>, tensor<5x2048xf32>, tensor<3x2x1024xf32>
}
