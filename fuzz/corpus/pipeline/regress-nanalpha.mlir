func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = fuse.leaky_relu %x {alpha = 0x7FF8000000000000 : f64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
