// MobileNetV2 inverted residual block (inference), NHWC, f16:
//   1x1 expand -> bn -> relu6 -> 3x3 depthwise -> bn -> relu6
//   -> 1x1 project -> bn -> + x
//
//   fusec run examples/mobilenet_block.mlir --device=cpu
func.func @mobilenet_block(
    %x: tensor<1x28x28x32xf16>,
    %we: tensor<192x1x1x32xf16>, %me: tensor<192xf16>, %ve: tensor<192xf16>,
    %ge: tensor<192xf16>, %be: tensor<192xf16>,
    %wd: tensor<192x3x3x1xf16>, %md: tensor<192xf16>, %vd: tensor<192xf16>,
    %gd: tensor<192xf16>, %bd: tensor<192xf16>,
    %wp: tensor<32x1x1x192xf16>, %mp: tensor<32xf16>, %vp: tensor<32xf16>,
    %gp: tensor<32xf16>, %bp: tensor<32xf16>) -> tensor<1x28x28x32xf16> {
  %0 = fuse.conv2d %x, %we : tensor<1x28x28x32xf16>, tensor<192x1x1x32xf16>
  %1 = fuse.batch_norm %0, %me, %ve, %ge, %be
      : tensor<1x28x28x192xf16>, tensor<192xf16>
  %2 = fuse.relu6 %1 : tensor<1x28x28x192xf16>
  %3 = fuse.conv2d %2, %wd {padding = array<i64: 1, 1>, groups = 192}
      : tensor<1x28x28x192xf16>, tensor<192x3x3x1xf16>
  %4 = fuse.batch_norm %3, %md, %vd, %gd, %bd
      : tensor<1x28x28x192xf16>, tensor<192xf16>
  %5 = fuse.relu6 %4 : tensor<1x28x28x192xf16>
  %6 = fuse.conv2d %5, %wp : tensor<1x28x28x192xf16>, tensor<32x1x1x192xf16>
  %7 = fuse.batch_norm %6, %mp, %vp, %gp, %bp
      : tensor<1x28x28x32xf16>, tensor<32xf16>
  %8 = fuse.add %7, %x : tensor<1x28x28x32xf16>, tensor<1x28x28x32xf16>
  return %8 : tensor<1x28x28x32xf16>
}
