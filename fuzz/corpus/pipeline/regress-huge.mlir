func.func @main(%x: tensor<1000000000x1000000000xf32>) -> tensor<1000000000x1000000000xf32> {
  %0 = fuse.relu %x : tensor<1000000000x1000000000xf32>
  return %0 : tensor<1000000000x1000000000xf32>
}
