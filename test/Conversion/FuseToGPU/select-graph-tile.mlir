// A kernel's own #fuse.tile wins: the first family (in the table's order)
// that takes the kernel and accepts the tile generates it; when none does,
// the last one's error says why.
// RUN: fusec-opt %s --fusec-select-kernel-config=arch=sm_90a -split-input-file -verify-diagnostics | FileCheck %s

// A tile the warpgroup GEMM cannot take (one written for mma.sync) selects
// mma.sync.
// CHECK-LABEL: func.func @mma_tile
// CHECK: fusec.kernel_config = #fuse.kernel_config<family = gemm_mma_sync, tile = #fuse.tile<bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 3>, source = "tile attribute">
func.func @mma_tile(%x: tensor<64x128xf16>, %w: tensor<256x128xf16>) -> tensor<64x256xf16> {
  // expected-remark @below {{kernel 'k0_linear': gemm_mma_sync #fuse.tile<bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 3>, from the tile attribute}}
  %0 = fuse.kernel "k0_linear"(%x, %w) {tile = #fuse.tile<bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 3>}
      : (tensor<64x128xf16>, tensor<256x128xf16>) -> tensor<64x256xf16> {
  ^bb0(%a: tensor<64x128xf16>, %b: tensor<256x128xf16>):
    %1 = fuse.linear %a, %b : tensor<64x128xf16>, tensor<256x128xf16>
    fuse.yield %1 : tensor<64x256xf16>
  }
  return %0 : tensor<64x256xf16>
}

// -----

// CHECK-LABEL: func.func @wgmma_tile
// CHECK: fusec.kernel_config = #fuse.kernel_config<family = gemm_wgmma, tile = #fuse.tile<bm = 128, bn = 128, bk = 64, warps_m = 8, warps_n = 1, stages = 3>, source = "tile attribute">
func.func @wgmma_tile(%x: tensor<64x128xf16>, %w: tensor<256x128xf16>) -> tensor<64x256xf16> {
  // expected-remark @below {{kernel 'k0_linear': gemm_wgmma}}
  %0 = fuse.kernel "k0_linear"(%x, %w) {tile = #fuse.tile<bm = 128, bn = 128, bk = 64, warps_m = 8, warps_n = 1, stages = 3>}
      : (tensor<64x128xf16>, tensor<256x128xf16>) -> tensor<64x256xf16> {
  ^bb0(%a: tensor<64x128xf16>, %b: tensor<256x128xf16>):
    %1 = fuse.linear %a, %b : tensor<64x128xf16>, tensor<256x128xf16>
    fuse.yield %1 : tensor<64x256xf16>
  }
  return %0 : tensor<64x256xf16>
}

// -----

// Attention: a #fuse.tile in wgmma's terms (128 rows, ping-pong) becomes a
// #fuse.attention_tile.
// CHECK-LABEL: func.func @attention_ping_pong
// CHECK: fusec.kernel_config = #fuse.kernel_config<family = attention_wgmma, tile = #fuse.attention_tile<rows = 128, keys = 64, ping_pong = true>, source = "tile attribute">
func.func @attention_ping_pong(%q: tensor<1x2x64x64xf16>, %k: tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16> {
  // expected-remark @below {{kernel 'k0_attention': attention_wgmma #fuse.attention_tile<rows = 128, keys = 64, ping_pong = true>, from the tile attribute}}
  %0 = fuse.kernel "k0_attention"(%q, %k) {tile = #fuse.tile<bm = 128, bn = 64, bk = 16, warps_n = 2>}
      : (tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16> {
  ^bb0(%a: tensor<1x2x64x64xf16>, %b: tensor<1x2x64x64xf16>):
    %1 = fuse.attention %a, %b, %b : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>
    fuse.yield %1 : tensor<1x2x64x64xf16>
  }
  return %0 : tensor<1x2x64x64xf16>
}

// -----

// ... and one in mma.sync's terms keeps mma.sync, on sm_90a too.
// CHECK-LABEL: func.func @attention_warps
// CHECK: fusec.kernel_config = #fuse.kernel_config<family = attention_mma_sync, tile = #fuse.attention_tile<rows = 64, keys = 32, warps = 4>, source = "tile attribute">
func.func @attention_warps(%q: tensor<1x2x64x64xf16>, %k: tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16> {
  // expected-remark @below {{kernel 'k0_attention': attention_mma_sync}}
  %0 = fuse.kernel "k0_attention"(%q, %k) {tile = #fuse.tile<bm = 64, bn = 32, bk = 16, warps_m = 4>}
      : (tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16> {
  ^bb0(%a: tensor<1x2x64x64xf16>, %b: tensor<1x2x64x64xf16>):
    %1 = fuse.attention %a, %b, %b : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>
    fuse.yield %1 : tensor<1x2x64x64xf16>
  }
  return %0 : tensor<1x2x64x64xf16>
}

// -----

// A tile neither GEMM family on tensor cores takes: mma.sync's error.
func.func @unsuitable(%x: tensor<64x128xf16>, %w: tensor<256x128xf16>) -> tensor<64x256xf16> {
  // expected-error @below {{'fuse.kernel' op tile #fuse.tile<bm = 128, bn = 7, bk = 64, warps_m = 8, warps_n = 1, stages = 3> does not suit the tensor-core GEMM}}
  %0 = fuse.kernel "k0_linear"(%x, %w) {tile = #fuse.tile<bm = 128, bn = 7, bk = 64, warps_m = 8, warps_n = 1, stages = 3>}
      : (tensor<64x128xf16>, tensor<256x128xf16>) -> tensor<64x256xf16> {
  ^bb0(%a: tensor<64x128xf16>, %b: tensor<256x128xf16>):
    %1 = fuse.linear %a, %b : tensor<64x128xf16>, tensor<256x128xf16>
    fuse.yield %1 : tensor<64x256xf16>
  }
  return %0 : tensor<64x256xf16>
}
