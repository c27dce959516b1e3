func.func @main(%a: tensor<70000x16x16xf32>, %b: tensor<70000x16x16xf32>) -> tensor<70000x16x16xf32> {
  %0 = fuse.matmul %a, %b : tensor<70000x16x16xf32>, tensor<70000x16x16xf32>
  return %0 : tensor<70000x16x16xf32>
}
