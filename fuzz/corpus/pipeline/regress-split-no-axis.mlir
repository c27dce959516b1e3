// U-Net dxf16>
  %v3 = fuse.relu %v2 : tensor<1x10x12x24xf16>
  %v4:3 = fuse.split %a3 {axi1, sizes = array<i64: 5, 20, 8>} : tensor<3x7x33xf16>
  %v5 = fuse.silu %v4#1 : tensor<3x7x20xf16>
  %v6 = fuse.concat %v4#2, %v5, %v4#0 {axis = 2} : tensor<3x7x8xf16>, tensor<3x7x20xf16>, tensor<3x7x5xf16>
  %v7 = fuse.slice %a3 {offsets = array<i64:21, 2, 0>, sizes = array<i64: 2, 5, 30>} : tensor<3x7x33xf16>
  %v8 = fuse.slice %v6 {offsets = array<i64: 0, ÿÿÿ>,
                          scale = array<f32: 2.0, 2.0>}
      : ten<o1srx16x16x64xf16>
  %cat = fuse
 #//  %nPr1 = e