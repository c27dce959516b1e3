// The warpgroup GEMM's pipeline is no deeper than its k-tiles (at least
// two): a 1x1 convolution of 64 input channels has one k-tile. A tile runs
// two blocks an SM only where its accumulators fit the registers ptxas
// compiles it with at two blocks: 64 x 256 with two stages would fit the
// shared memory twice, but ptxas cannot compile its m64n256 wgmma within
// 128 registers (C7602).
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90a},fusec-tile-kernels{arch=sm_90a})' 2>/dev/null | FileCheck %s

// CHECK-LABEL: func.func @one_k_tile
// CHECK: fusec.kernel_config = #fuse.kernel_config<family = gemm_wgmma, tile = #fuse.tile<{{.*}}stages = 2>
func.func @one_k_tile(%x: tensor<8x28x28x64xbf16>, %w: tensor<256x1x1x64xbf16>) -> tensor<8x28x28x256xbf16> {
  %0 = fuse.conv2d %x, %w : tensor<8x28x28x64xbf16>, tensor<256x1x1x64xbf16>
  return %0 : tensor<8x28x28x256xbf16>
}

// Four k-tiles: four stages.
// CHECK-LABEL: func.func @four_k_tiles
// CHECK: tile = #fuse.tile<{{.*}}stages = 4>
func.func @four_k_tiles(%x: tensor<8x28x28x256xbf16>, %w: tensor<256x1x1x256xbf16>) -> tensor<8x28x28x256xbf16> {
  %0 = fuse.conv2d %x, %w : tensor<8x28x28x256xbf16>, tensor<256x1x1x256xbf16>
  return %0 : tensor<8x28x28x256xbf16>
}

// CHECK-LABEL: func.func @wide_two_stages
// CHECK: gpu.func @k0_conv2d({{.*}}fusec.tile = #fuse.tile<bm = 64, bn = 256, bk = 64, warps_m = 4, warps_n = 1, stages = 2>{{.*}}nvvm.minctasm = 1 : i32
func.func @wide_two_stages(%x: tensor<8x28x28x64xbf16>, %w: tensor<256x1x1x64xbf16>) -> tensor<8x28x28x256xbf16> {
  %0 = fuse.kernel "k0_conv2d"(%x, %w) {tile = #fuse.tile<bm = 64, bn = 256, bk = 64, warps_m = 4, warps_n = 1, stages = 2>} : (tensor<8x28x28x64xbf16>, tensor<256x1x1x64xbf16>) -> tensor<8x28x28x256xbf16> {
  ^bb0(%a: tensor<8x28x28x64xbf16>, %b: tensor<256x1x1x64xbf16>):
    %1 = fuse.conv2d %a, %b : tensor<8x28x28x64xbf16>, tensor<256x1x1x64xbf16>
    fuse.yield %1 : tensor<8x28x28x256xbf16>
  }
  return %0 : tensor<8x28x28x256xbf16>
}
