func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = fuse.kernel "k0" (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %0 = fuse.kernel "k1" (%a) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%b: tensor<4x8xf32>):
      %1 = fuse.relu %b : tensor<4x8xf32>
      fuse.yield %1 : tensor<4x8xf32>
    }
    fuse.yield %0 : tensor<4x8xf32>
  }
  return %y : tensor<4x8xf32>
}
