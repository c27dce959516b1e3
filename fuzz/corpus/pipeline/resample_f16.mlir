func.func @g(%a0: tensor<1x5x6x3xf16>) -> (tensor<1x13x11x3xf16>, tensor<1x10x9x3xf16>, tensor<1x9x4x3xf16>, tensor<1x1x1x3xf16>) {
  %v0 = fuse.upsample %a0 {size = array<i64: 13, 11>} : tensor<1x5x6x3xf16>
  %v1 = fuse.upsample %a0 {mode = #fuse.upsample_mode<bilinear>, scale = array<f64: 2.0, 1.5>} : tensor<1x5x6x3xf16>
  %v2 = fuse.upsample %a0 {mode = #fuse.upsample_mode<bilinear>, size = array<i64: 9, 4>, align_corners} : tensor<1x5x6x3xf16>
  %v3 = fuse.global_avg_pool %a0 : tensor<1x5x6x3xf16>
  return %v0, %v1, %v2, %v3 : tensor<1x13x11x3xf16>, tensor<1x10x9x3xf16>, tensor<1x9x4x3xf16>, tensor<1x1x1x3xf16>
}
