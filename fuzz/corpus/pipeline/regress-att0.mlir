func.func @main(%q: tensor<1x2x4x8xf32>, %k: tensor<1x0x4x8xf32>, %v: tensor<1x0x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %0 = fuse.attention %q, %k, %v : tensor<1x2x4x8xf32>, tensor<1x0x4x8xf32>, tensor<1x0x4x8xf32>
  return %0 : tensor<1x2x4x8xf32>
}
