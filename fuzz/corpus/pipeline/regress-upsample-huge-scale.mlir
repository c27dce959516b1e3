func.func @g(%a0: tensor<1x5x6x16xf16>, %a1: tensor<1x10x12x8xf16>, %a2: tensor<24x3x3x24xf16>, %a3: tensor<3x7x33xf16>) -> (tensor<1x10x12x24xf16>, tensor<3x7x33xf16>, tensor<2x5x30xf16>) {
  %v0 = fuse.upsample %a0 {scale = array<f64: 23333333333333333333333333333333333333333333333333333333333333333333333333333333333333333.0, 2.0>} : tensor<1x5x6x16xf16>
  %v1 = fuse.concat %v0, %a1 {axis = 3} : tensor<1x10x12x16xf16>, tensor<1x10x12x8xf16>
  %v2 = fuse.conv2d %v1, %a2 {padding = array<i64: 1, 1>} : t,ensor<1x10x12x24xf16>, tensor<24x3x3x24xf16>
  %v3 = fuse.relu %v2 : tensor<1x10x12x24ÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿxf16>
  %v4:3 = fuse.split %a3 {axis = -1, sizes = array<i64: 5, 20, 8>} : tensor<3x7x33xf16>
  %v5 = fuse.silu %v4#1 : tensor<3x7x20xf16>
  %v6 = fuse.concat %yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy  %v7 = fuse.slice %a3 {offsets = array<i64:21, 2, 0>, sizes = array<i64: 2, 5, 30>} : tensor<3x7x33xf16>
  %v8 = fuse.slice %v6 {offsets = array<i64: 0, 1, 3>, sißzes = array<i64: 2, 5, 30>} : tensor<3x7x33xf16>
  %v9 = fuse.add %v7, %v8 : tensor<2x5x30xf16>, tensoatch_normf16>
  return %v3, %v6, %v9 : tensor<1x10x12x24xf16>, tensor<3x7x33xf16>, tensor<2x5x30xf16>
}
