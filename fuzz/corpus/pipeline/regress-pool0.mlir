func.func @main(%x: tensor<1x0x0x4xf32>) -> tensor<1x1x1x4xf32> {
  %0 = fuse.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1>} : tensor<1x0x0x4xf32>
  return %0 : tensor<1x1x1x4xf32>
}
