// ResNet-50 stage-2 basic block (inference), NHWC, f32:
//   conv3x3 -> batch_norm -> relu -> conv3x3 -> batch_norm -> + x -> relu
//
//   fusec run examples/resnet_block.mlir --device=cpu
func.func @resnet_block(
    %x: tensor<1x56x56x64xf32>,
    %w1: tensor<64x3x3x64xf32>, %m1: tensor<64xf32>, %v1: tensor<64xf32>,
    %g1: tensor<64xf32>, %b1: tensor<64xf32>,
    %w2: tensor<64x3x3x64xf32>, %m2: tensor<64xf32>, %v2: tensor<64xf32>,
    %g2: tensor<64xf32>, %b2: tensor<64xf32>) -> tensor<1x56x56x64xf32> {
  %0 = fuse.conv2d %x, %w1 {padding = array<i64: 1, 1>}
      : tensor<1x56x56x64xf32>, tensor<64x3x3x64xf32>
  %1 = fuse.batch_norm %0, %m1, %v1, %g1, %b1
      : tensor<1x56x56x64xf32>, tensor<64xf32>
  %2 = fuse.relu %1 : tensor<1x56x56x64xf32>
  %3 = fuse.conv2d %2, %w2 {padding = array<i64: 1, 1>}
      : tensor<1x56x56x64xf32>, tensor<64x3x3x64xf32>
  %4 = fuse.batch_norm %3, %m2, %v2, %g2, %b2
      : tensor<1x56x56x64xf32>, tensor<64xf32>
  %5 = fuse.add %4, %x : tensor<1x56x56x64xf32>, tensor<1x56x56x64xf32>
  %6 = fuse.relu %5 : tensor<1x56x56x64xf32>
  return %6 : tensor<1x56x56x64xf32>
}
