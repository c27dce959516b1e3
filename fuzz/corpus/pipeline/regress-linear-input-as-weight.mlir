func.func @self_weight(%x: tensor<8x8xf32>) -> tensor<8x1x1x8xf32> {
  %q = fuse.linear %x, %x : tensor<8x8xf32>, tensor<8x8xf32>
  %k = fuse.linear %x, %x : tensor<8x8xf32>, tensor<8x8xf32>
  %qr = fuse.reshape %q : tensor<8x8xf32> to tensor<8x1x1x8xf32>
  %kr = fuse.reshape %k : tensor<8x8xf32> to tensor<8x1x1x8xf32>
  %o = fuse.attention %qr, %kr, %kr : tensor<8x1x1x8xf32>, tensor<8x1x1x8xf32>, tensor<8x1x1x8xf32>
  return %o : tensor<8x1x1x8xf32>
}
