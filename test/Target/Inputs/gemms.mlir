// f16 convolution (16-byte runs), bf16 linear layer (element by element),
// f16 matmul with B given k x n: the tensor-core family's three paths.
func.func @gemms(%x: tensor<2x9x9x32xf16>, %w: tensor<64x3x3x32xf16>,
                 %a: tensor<37x70xbf16>, %b: tensor<33x70xbf16>,
                 %l: tensor<2x40x64xf16>, %r: tensor<2x64x48xf16>)
    -> (tensor<2x9x9x64xf16>, tensor<37x33xbf16>, tensor<2x40x48xf16>) {
  %0 = fuse.conv2d %x, %w {padding = array<i64: 1, 1>} : tensor<2x9x9x32xf16>, tensor<64x3x3x32xf16>
  %1 = fuse.relu %0 : tensor<2x9x9x64xf16>
  %2 = fuse.linear %a, %b : tensor<37x70xbf16>, tensor<33x70xbf16>
  %3 = fuse.matmul %l, %r : tensor<2x40x64xf16>, tensor<2x64x48xf16>
  return %1, %2, %3 : tensor<2x9x9x64xf16>, tensor<37x33xbf16>, tensor<2x40x48xf16>
}
