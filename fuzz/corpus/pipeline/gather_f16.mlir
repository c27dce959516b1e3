func.func @g(%a0: tensor<2x7x3x32xf16>, %a1: tensor<7x16xf16>, %a2: tensor<7x16xf16>, %a3: tensor<3x5x16xf16>, %a4: tensor<5x8xf16>, %a5: tensor<5x8xf16>, %a6: tensor<3x37x45xf16>, %a7: tensor<2x9x70x66xf16>, %a8: tensor<2x5x24x72xf16>, %a9: tensor<3x40x136xf16>) -> (tensor<2x3x7x32xf16>, tensor<3x5x16xf16>, tensor<3x45x37xf16>, tensor<2x66x9x70xf16>, tensor<2x72x5x24xf16>, tensor<3x136x40xf16>) {
  %v0 = fuse.transpose %a0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x7x3x32xf16>
  %v1 = fuse.rope %v0, %a1, %a2 : tensor<2x3x7x32xf16>, tensor<7x16xf16>
  %v2 = fuse.rope %a3, %a4, %a5 {interleaved} : tensor<3x5x16xf16>, tensor<5x8xf16>
  %v3 = fuse.silu %v2 : tensor<3x5x16xf16>
  %v4 = fuse.transpose %a6 {permutation = array<i64: 0, 2, 1>} : tensor<3x37x45xf16>
  %v5 = fuse.transpose %a7 {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x9x70x66xf16>
  %v6 = fuse.relu %v5 : tensor<2x66x9x70xf16>
  %v7 = fuse.transpose %a8 {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x5x24x72xf16>
  %v8 = fuse.transpose %a9 {permutation = array<i64: 0, 2, 1>} : tensor<3x40x136xf16>
  return %v1, %v3, %v4, %v6, %v7, %v8 : tensor<2x3x7x32xf16>, tensor<3x5x16xf16>, tensor<3x45x37xf16>, tensor<2x66x9x70xf16>, tensor<2x72x5x24xf16>, tensor<3x136x40xf16>
}
