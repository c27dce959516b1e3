func.func @main(%x: tensor<1x65536x65536x1xf16>) -> tensor<1x1x1x1xf16> {
  %0 = fuse.global_avg_pool %x : tensor<1x65536x65536x1xf16>
  return %0 : tensor<1x1x1x1xf16>
}
