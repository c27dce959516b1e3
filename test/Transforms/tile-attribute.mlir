// A kernel's `tile` attribute (#fuse.tile) sets the GEMM tile; a tile that
// is out of range, or does not suit the kernel's family and target, is a
// located error.
// RUN: fusec-opt %s --fusec-select-kernel-config --fusec-tile-kernels -split-input-file -verify-diagnostics | FileCheck %s

// CHECK: gpu.launch_func @linear_kernels::@k0_linear blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%[[T:.+]], %{{.+}}, %{{.+}})
// CHECK: gpu.func @k0_linear({{.+}}) kernel attributes {fusec.family = "gemm_simt", fusec.tile = #fuse.tile<bm = 32, bn = 16, bk = 8, tm = 2, tn = 4>, known_block_size = array<i32: 64, 1, 1>}
// CHECK-DAG: memref.view {{.+}} to memref<2x8x32xf32, #gpu.address_space<workgroup>>
// CHECK-DAG: memref.view {{.+}} to memref<2x8x16xf32, #gpu.address_space<workgroup>>
func.func @linear(%x: tensor<40x24xf32>, %w: tensor<30x24xf32>) -> tensor<40x30xf32> {
  // expected-remark @below {{kernel 'k0_linear': gemm_simt #fuse.tile<bm = 32, bn = 16, bk = 8, tm = 2, tn = 4>, from the tile attribute}}
  %0 = fuse.kernel "k0_linear"(%x, %w) {tile = #fuse.tile<bm = 32, bn = 16, bk = 8, tm = 2, tn = 4>}
      : (tensor<40x24xf32>, tensor<30x24xf32>) -> tensor<40x30xf32> {
  ^bb0(%a: tensor<40x24xf32>, %b: tensor<30x24xf32>):
    %1 = fuse.linear %a, %b : tensor<40x24xf32>, tensor<30x24xf32>
    fuse.yield %1 : tensor<40x30xf32>
  }
  return %0 : tensor<40x30xf32>
}

// -----

func.func @bad_tile(%x: tensor<40x24xf32>, %w: tensor<30x24xf32>) -> tensor<40x30xf32> {
  // expected-error @below {{'fuse.kernel' op tile #fuse.tile<bm = 48, bn = 64, bk = 16, tm = 5, tn = 4> does not suit the CUDA-core GEMM: it needs tm and tn, bm/tm and bn/tn must divide exactly}}
  %0 = fuse.kernel "k0_linear"(%x, %w) {tile = #fuse.tile<bm = 48, bn = 64, bk = 16, tm = 5, tn = 4>}
      : (tensor<40x24xf32>, tensor<30x24xf32>) -> tensor<40x30xf32> {
  ^bb0(%a: tensor<40x24xf32>, %b: tensor<30x24xf32>):
    %1 = fuse.linear %a, %b : tensor<40x24xf32>, tensor<30x24xf32>
    fuse.yield %1 : tensor<40x30xf32>
  }
  return %0 : tensor<40x30xf32>
}

// -----

// Sizes far beyond any GEMM are rejected by the attribute itself, before any
// size computed from them could overflow.
func.func @huge_bk(%x: tensor<40x24xf32>, %w: tensor<30x24xf32>) -> tensor<40x30xf32> {
  // expected-error @below {{tile bk = 2305843009213693952 is out of range [1, 1024]}}
  %0 = fuse.kernel "k0_linear"(%x, %w) {tile = #fuse.tile<bm = 64, bn = 64, bk = 2305843009213693952, tm = 4, tn = 4>}
      : (tensor<40x24xf32>, tensor<30x24xf32>) -> tensor<40x30xf32> {
  ^bb0(%a: tensor<40x24xf32>, %b: tensor<30x24xf32>):
    %1 = fuse.linear %a, %b : tensor<40x24xf32>, tensor<30x24xf32>
    fuse.yield %1 : tensor<40x30xf32>
  }
  return %0 : tensor<40x30xf32>
}

// -----

func.func @bad_key(%x: tensor<40x24xf32>, %w: tensor<30x24xf32>) -> tensor<40x30xf32> {
  // expected-error @+1 {{duplicate or unknown struct parameter name: warps}}
  %0 = fuse.kernel "k0_linear"(%x, %w) {tile = #fuse.tile<warps = 4>}
      : (tensor<40x24xf32>, tensor<30x24xf32>) -> tensor<40x30xf32> {
  ^bb0(%a: tensor<40x24xf32>, %b: tensor<30x24xf32>):
    %1 = fuse.linear %a, %b : tensor<40x24xf32>, tensor<30x24xf32>
    fuse.yield %1 : tensor<40x30xf32>
  }
  return %0 : tensor<40x30xf32>
}

// -----

func.func @not_a_gemm(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{'fuse.kernel' op has a tile, but only convolutions, linear layers, matrix products and (f16, bf16) attention take one}}
  %0 = fuse.kernel "k0_softmax"(%x) {tile = #fuse.tile<bm = 64, bn = 64, bk = 16>}
      : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %1 = fuse.softmax %a : tensor<4x8xf32>
    fuse.yield %1 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @attention_tile(%q: tensor<1x2x40x64xf16>, %k: tensor<1x2x50x64xf16>) -> tensor<1x2x40x64xf16> {
  // expected-error @below {{'fuse.kernel' op tile #fuse.tile<bm = 40, bn = 64, bk = 16> does not suit attention on tensor cores: it needs bm (query rows per block) a multiple of 16 up to 256, warps_m 0 or bm / 16, bn (keys per tile) a multiple of 16 up to 256, bk = 16 and nothing else}}
  %0 = fuse.kernel "k0_attention"(%q, %k) {tile = #fuse.tile<bm = 40, bn = 64, bk = 16>}
      : (tensor<1x2x40x64xf16>, tensor<1x2x50x64xf16>) -> tensor<1x2x40x64xf16> {
  ^bb0(%a: tensor<1x2x40x64xf16>, %b: tensor<1x2x50x64xf16>):
    %1 = fuse.attention %a, %b, %b : tensor<1x2x40x64xf16>, tensor<1x2x50x64xf16>, tensor<1x2x50x64xf16>
    fuse.yield %1 : tensor<1x2x40x64xf16>
  }
  return %0 : tensor<1x2x40x64xf16>
}

// -----

func.func @attention_smem(%q: tensor<1x2x40x256xf16>, %k: tensor<1x2x50x256xf16>) -> tensor<1x2x40x256xf16> {
  // expected-error @below {{'fuse.kernel' op tile #fuse.tile<bm = 256, bn = 256, bk = 16> needs 655360 bytes of shared memory, more than the target's 232448}}
  %0 = fuse.kernel "k0_attention"(%q, %k) {tile = #fuse.tile<bm = 256, bn = 256, bk = 16>}
      : (tensor<1x2x40x256xf16>, tensor<1x2x50x256xf16>) -> tensor<1x2x40x256xf16> {
  ^bb0(%a: tensor<1x2x40x256xf16>, %b: tensor<1x2x50x256xf16>):
    %1 = fuse.attention %a, %b, %b : tensor<1x2x40x256xf16>, tensor<1x2x50x256xf16>, tensor<1x2x50x256xf16>
    fuse.yield %1 : tensor<1x2x40x256xf16>
  }
  return %0 : tensor<1x2x40x256xf16>
}

// -----

// Anything outside a kernel is an error at that op.
func.func @unpartitioned(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'fuse.relu' op is outside every fuse.kernel; run fusec-form-kernels before fusec-tile-kernels}}
  %0 = fuse.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Two kernels of one graph cannot share a name: it names their gpu.func.
func.func @same_name(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-remark @below {{kernel 'k0': elementwise, from the heuristic}}
  %0 = fuse.kernel "k0"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = fuse.relu %a : tensor<4xf32>
    fuse.yield %1 : tensor<4xf32>
  }
  // expected-remark @below {{kernel 'k0': elementwise, from the heuristic}}
  // expected-error @below {{'fuse.kernel' op name 'k0' is taken by another kernel of @same_name}}
  %2 = fuse.kernel "k0"(%0) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %3 = fuse.relu %a : tensor<4xf32>
    fuse.yield %3 : tensor<4xf32>
  }
  return %2 : tensor<4xf32>
}
