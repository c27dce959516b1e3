func.func @g(%a0: tensor<1x3x7x6xf16>, %a1: tensor<7x3xf16>, %a2: tensor<7x3xf16>) -> (tensor<1x3x7x6xf16>, tensor<7x18xf16>) {
  %v0 = fuse.rope %a0, %a1, %a2 : tensor<1x3x7x6xf16>, tensor<7x3xf16>
  %v1 = fuse.rope %a0, %a1, %a2 {interleaved} : tensor<1x3x7x6xf16>, tensor<7x3xf16>
  %v2 = fuse.transpose %v1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x3x7x6xf16>
  %v3 = fuse.reshape %v2 : tensor<1x7x3x6xf16> to tensor<7x18xf16>
  return %v0, %v3 : tensor<1x3x7x6xf16>, tensor<7x18xf16>
}
