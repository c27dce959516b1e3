// fusec-tile-kernels generates each kernel as its fusec.kernel_config says and
// selects nothing: a missing config, or one that does not suit the kernel and
// target, is an error at the kernel.
// RUN: fusec-opt %s --fusec-tile-kernels -split-input-file -verify-diagnostics | FileCheck %s

// A config written by hand is what the kernel gets; the launch carries it
// and the kernel's tuning signature, the gpu.func its family and tile.
// CHECK: gpu.launch_func @linear_kernels::@k0_linear
// CHECK-SAME: fusec.kernel_config = #fuse.kernel_config<family = gemm_simt, tile = #fuse.tile<bm = 32, bn = 16, bk = 8, tm = 2, tn = 4>, source = "by hand">
// CHECK-SAME: fusec.signature = "{{[0-9a-f]+}}"
// CHECK: gpu.func @k0_linear({{.+}}) kernel attributes {fusec.family = "gemm_simt", fusec.tile = #fuse.tile<bm = 32, bn = 16, bk = 8, tm = 2, tn = 4>
func.func @linear(%x: tensor<40x24xf32>, %w: tensor<30x24xf32>) -> tensor<40x30xf32> {
  %0 = fuse.kernel "k0_linear"(%x, %w) {fusec.kernel_config = #fuse.kernel_config<family = gemm_simt, tile = #fuse.tile<bm = 32, bn = 16, bk = 8, tm = 2, tn = 4>, source = "by hand">}
      : (tensor<40x24xf32>, tensor<30x24xf32>) -> tensor<40x30xf32> {
  ^bb0(%a: tensor<40x24xf32>, %b: tensor<30x24xf32>):
    %1 = fuse.linear %a, %b : tensor<40x24xf32>, tensor<30x24xf32>
    fuse.yield %1 : tensor<40x30xf32>
  }
  return %0 : tensor<40x30xf32>
}

// -----

func.func @missing(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'fuse.kernel' op has no fusec.kernel_config; run fusec-select-kernel-config before fusec-tile-kernels}}
  %0 = fuse.kernel "k0"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = fuse.relu %a : tensor<4xf32>
    fuse.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @other_family(%x: tensor<40x24xf32>, %w: tensor<30x24xf32>) -> tensor<40x30xf32> {
  // expected-error @below {{'fuse.kernel' op has config #fuse.kernel_config<family = elementwise, source = "by hand">, but family elementwise does not generate this kernel for the target}}
  %0 = fuse.kernel "k0_linear"(%x, %w) {fusec.kernel_config = #fuse.kernel_config<family = elementwise, source = "by hand">}
      : (tensor<40x24xf32>, tensor<30x24xf32>) -> tensor<40x30xf32> {
  ^bb0(%a: tensor<40x24xf32>, %b: tensor<30x24xf32>):
    %1 = fuse.linear %a, %b : tensor<40x24xf32>, tensor<30x24xf32>
    fuse.yield %1 : tensor<40x30xf32>
  }
  return %0 : tensor<40x30xf32>
}

// -----

// The warpgroup GEMM needs sm_90a (the pass's arch is sm_90).
func.func @wgmma_on_sm90(%x: tensor<64x128xf16>, %w: tensor<256x128xf16>) -> tensor<64x256xf16> {
  // expected-error @below {{family gemm_wgmma does not generate this kernel for the target}}
  %0 = fuse.kernel "k0_linear"(%x, %w) {fusec.kernel_config = #fuse.kernel_config<family = gemm_wgmma, tile = #fuse.tile<bm = 64, bn = 64, bk = 64, warps_m = 4, warps_n = 1, stages = 4>, source = "by hand">}
      : (tensor<64x128xf16>, tensor<256x128xf16>) -> tensor<64x256xf16> {
  ^bb0(%a: tensor<64x128xf16>, %b: tensor<256x128xf16>):
    %1 = fuse.linear %a, %b : tensor<64x128xf16>, tensor<256x128xf16>
    fuse.yield %1 : tensor<64x256xf16>
  }
  return %0 : tensor<64x256xf16>
}

// -----

func.func @tile_kind(%x: tensor<40x24xf32>, %w: tensor<30x24xf32>) -> tensor<40x30xf32> {
  // expected-error @below {{but family gemm_simt needs a #fuse.tile}}
  %0 = fuse.kernel "k0_linear"(%x, %w) {fusec.kernel_config = #fuse.kernel_config<family = gemm_simt, tile = #fuse.attention_tile<rows = 64, keys = 64, warps = 4>, source = "by hand">}
      : (tensor<40x24xf32>, tensor<30x24xf32>) -> tensor<40x30xf32> {
  ^bb0(%a: tensor<40x24xf32>, %b: tensor<30x24xf32>):
    %1 = fuse.linear %a, %b : tensor<40x24xf32>, tensor<30x24xf32>
    fuse.yield %1 : tensor<40x30xf32>
  }
  return %0 : tensor<40x30xf32>
}

// -----

func.func @no_tile_wanted(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{but family elementwise takes no tile}}
  %0 = fuse.kernel "k0"(%x) {fusec.kernel_config = #fuse.kernel_config<family = elementwise, tile = #fuse.tile<bm = 32, bn = 16, bk = 8>, source = "by hand">} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = fuse.relu %a : tensor<4xf32>
    fuse.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// The family's own checks run on the config's tile.
func.func @unsuitable(%x: tensor<40x24xf32>, %w: tensor<30x24xf32>) -> tensor<40x30xf32> {
  // expected-error @below {{'fuse.kernel' op tile #fuse.tile<bm = 48, bn = 64, bk = 16, tm = 5, tn = 4> does not suit the CUDA-core GEMM}}
  %0 = fuse.kernel "k0_linear"(%x, %w) {fusec.kernel_config = #fuse.kernel_config<family = gemm_simt, tile = #fuse.tile<bm = 48, bn = 64, bk = 16, tm = 5, tn = 4>, source = "by hand">}
      : (tensor<40x24xf32>, tensor<30x24xf32>) -> tensor<40x30xf32> {
  ^bb0(%a: tensor<40x24xf32>, %b: tensor<30x24xf32>):
    %1 = fuse.linear %a, %b : tensor<40x24xf32>, tensor<30x24xf32>
    fuse.yield %1 : tensor<40x30xf32>
  }
  return %0 : tensor<40x30xf32>
}

// -----

// An attention tile in mma.sync's terms, on mma.sync.
func.func @attention_rows(%q: tensor<1x2x40x64xf16>, %k: tensor<1x2x50x64xf16>) -> tensor<1x2x40x64xf16> {
  // expected-error @below {{'fuse.kernel' op tile #fuse.tile<bm = 48, bn = 64, bk = 16, warps_m = 4> does not suit attention on tensor cores}}
  %0 = fuse.kernel "k0_attention"(%q, %k) {fusec.kernel_config = #fuse.kernel_config<family = attention_mma_sync, tile = #fuse.attention_tile<rows = 48, keys = 64, warps = 4>, source = "by hand">}
      : (tensor<1x2x40x64xf16>, tensor<1x2x50x64xf16>) -> tensor<1x2x40x64xf16> {
  ^bb0(%a: tensor<1x2x40x64xf16>, %b: tensor<1x2x50x64xf16>):
    %1 = fuse.attention %a, %b, %b : tensor<1x2x40x64xf16>, tensor<1x2x50x64xf16>, tensor<1x2x50x64xf16>
    fuse.yield %1 : tensor<1x2x40x64xf16>
  }
  return %0 : tensor<1x2x40x64xf16>
}
