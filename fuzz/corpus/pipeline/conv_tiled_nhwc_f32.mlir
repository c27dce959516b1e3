func.func @g(%a0: tensor<3x13x11x19xf32>, %a1: tensor<70x3x3x19xf32>, %a2: tensor<70xf32>, %a3: tensor<70xf32>, %a4: tensor<70xf32>, %a5: tensor<70xf32>, %a6: tensor<70xf32>) -> (tensor<3x7x6x70xf32>) {
  %v0 = fuse.conv2d %a0, %a1, %a2 {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1, layout = #fuse.layout<nhwc>} : tensor<3x13x11x19xf32>, tensor<70x3x3x19xf32>, tensor<70xf32>
  %v1 = fuse.batch_norm %v0, %a3, %a4, %a5, %a6 {layout = #fuse.layout<nhwc>} : tensor<3x7x6x70xf32>, tensor<70xf32>
  %v2 = fuse.relu %v1 : tensor<3x7x6x70xf32>
  return %v2 : tensor<3x7x6x70xf32>
}
