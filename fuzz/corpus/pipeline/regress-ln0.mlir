func.func @main(%x: tensor<4x0xf32>) -> tensor<4x0xf32> {
  %0 = fuse.layer_norm %x : tensor<4x0xf32>
  return %0 : tensor<4x0xf32>
}
