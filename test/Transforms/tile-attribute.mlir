// A kernel's `tile` attribute sets the GEMM tile; a tile that cannot be
// generated is a located error.
// RUN: fusec-opt %s --fusec-tile-kernels -split-input-file -verify-diagnostics | FileCheck %s

// CHECK: gpu.launch_func @linear_kernels::@k0_linear blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%[[T:.+]], %{{.+}}, %{{.+}})
// CHECK: gpu.func @k0_linear({{.+}}) workgroup(%{{.+}} : memref<2x8x32xf32, #gpu.address_space<workgroup>>, %{{.+}} : memref<2x8x16xf32, #gpu.address_space<workgroup>>) kernel attributes {fusec.tile = {bk = 8 : i64, bm = 32 : i64, bn = 16 : i64, tm = 2 : i64, tn = 4 : i64}, known_block_size = array<i32: 64, 1, 1>}
func.func @linear(%x: tensor<40x24xf32>, %w: tensor<30x24xf32>) -> tensor<40x30xf32> {
  %0 = fuse.kernel "k0_linear"(%x, %w) {tile = {bm = 32, bn = 16, bk = 8, tm = 2, tn = 4}}
      : (tensor<40x24xf32>, tensor<30x24xf32>) -> tensor<40x30xf32> {
  ^bb0(%a: tensor<40x24xf32>, %b: tensor<30x24xf32>):
    %1 = fuse.linear %a, %b : tensor<40x24xf32>, tensor<30x24xf32>
    fuse.yield %1 : tensor<40x30xf32>
  }
  return %0 : tensor<40x30xf32>
}

// -----

func.func @bad_tile(%x: tensor<40x24xf32>, %w: tensor<30x24xf32>) -> tensor<40x30xf32> {
  // expected-error @below {{'fuse.kernel' op tile {bm = 48, bn = 64, bk = 16, tm = 5, tn = 4} is invalid: bm/tm and bn/tn must divide exactly}}
  %0 = fuse.kernel "k0_linear"(%x, %w) {tile = {bm = 48, tm = 5}}
      : (tensor<40x24xf32>, tensor<30x24xf32>) -> tensor<40x30xf32> {
  ^bb0(%a: tensor<40x24xf32>, %b: tensor<30x24xf32>):
    %1 = fuse.linear %a, %b : tensor<40x24xf32>, tensor<30x24xf32>
    fuse.yield %1 : tensor<40x30xf32>
  }
  return %0 : tensor<40x30xf32>
}

// -----

func.func @bad_key(%x: tensor<40x24xf32>, %w: tensor<30x24xf32>) -> tensor<40x30xf32> {
  // expected-error @below {{'fuse.kernel' op tile entry 'warps' is not one of bm, bn, bk, tm, tn with a positive integer}}
  %0 = fuse.kernel "k0_linear"(%x, %w) {tile = {warps = 4}}
      : (tensor<40x24xf32>, tensor<30x24xf32>) -> tensor<40x30xf32> {
  ^bb0(%a: tensor<40x24xf32>, %b: tensor<30x24xf32>):
    %1 = fuse.linear %a, %b : tensor<40x24xf32>, tensor<30x24xf32>
    fuse.yield %1 : tensor<40x30xf32>
  }
  return %0 : tensor<40x30xf32>
}

// -----

// Anything outside a kernel is an error at that op.
func.func @unpartitioned(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'fuse.relu' op is outside every fuse.kernel; run fusec-form-kernels before fusec-tile-kernels}}
  %0 = fuse.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
