// The GEMM family on tensor cores: f16/bf16 convolutions, linear layers and
// matrix products (and f32 ones with fp32-math=tf32) become a multi-stage
// cp.async pipeline into swizzled shared memory, ldmatrix, mma.sync and the
// fused epilogue on the accumulators. The kernels carry their tiles, so that
// these checks do not depend on the heuristic (the last case checks it).
// RUN: fusec-opt %s --fusec-pipeline-tiled -split-input-file 2>/dev/null | FileCheck %s --enable-var-scope
// RUN: fusec-opt %s --fusec-pipeline-tiled="fp32-math=tf32" -split-input-file 2>/dev/null | FileCheck %s --check-prefix=TF32 --enable-var-scope

// NHWC with channels in 16-byte runs: every tile load is one cp.async of 8
// halves, zero-filled outside the input (padding, edges). Three k-tiles are
// in flight before the loop (4 stages). Each k-step loads its ldmatrix x4
// fragments (chunks XOR-swizzled) and runs its m16n8k16 mma.sync; the first
// issues the copies of a later k-tile, and before the last, the next k-tile
// is waited for and published by a barrier. The accumulators then go through
// shared memory (over the pipeline's buffers), and the residual add and ReLU
// run on rows of 8 channels: loads and stores of 16 bytes, the residual of
// several rows loaded before any row is stored.
// CHECK-LABEL: func.func @conv(
// CHECK: %[[SMEM:.+]] = arith.constant 32768 : i32
// CHECK: gpu.launch_func @conv_kernels::@k0_conv2d blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%[[T:.+]], %{{.+}}, %{{.+}}) dynamic_shared_memory_size %[[SMEM]]
// CHECK: gpu.func @k0_conv2d({{.+}}) kernel attributes {fusec.family = "gemm_mma_sync", fusec.tile = #fuse.tile<bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4>, known_block_size = array<i32: 128, 1, 1>}
// CHECK: %[[SH:.+]] = gpu.dynamic_shared_memory
// CHECK-DAG: %[[STAGE:.+]] = memref.view %[[SH]][%{{.+}}][] : {{.+}} to memref<1x64x72xf32, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[B:.+]] = memref.view %[[SH]][%{{.+}}][] : {{.+}} to memref<4x64x32xf16, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[A:.+]] = memref.view %[[SH]][%{{.+}}][] : {{.+}} to memref<4x64x32xf16, #gpu.address_space<workgroup>>
// CHECK: arith.xori
// CHECK: nvgpu.device_async_copy %{{.+}}, %[[A]][%{{.+}}], 8, %{{.+}} {bypassL1} : memref<2x9x9x32xf16> to memref<4x64x32xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.+}}, %[[B]][%{{.+}}], 8, %{{.+}} {bypassL1} : memref<64x3x3x32xf16> to memref<4x64x32xf16, #gpu.address_space<workgroup>>
// CHECK-COUNT-3: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 2
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.for {{.+}} iter_args({{.+}}) -> ({{(f32, )+}}f32) {
// CHECK: nvgpu.ldmatrix %[[A]][{{.+}}] {numTiles = 4 : i32, transpose = false} : memref<4x64x32xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK: nvgpu.ldmatrix %[[B]][{{.+}}] {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.device_async_copy
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.mma.sync A[{{.+}}] B[{{.+}}] C[{{.+}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: nvgpu.ldmatrix
// CHECK: nvvm.cp.async.wait.group 2
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.mma.sync
// CHECK: scf.yield
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: gpu.barrier
// CHECK: vector.store %{{.+}}, %[[STAGE]][%{{.+}}] {alignment = 8 : i64} : memref<1x64x72xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK: gpu.barrier
// CHECK: vector.load %{{.+}} {alignment = 16 : i64} : memref<2x9x9x64xf16>, vector<8xf16>
// CHECK: vector.load %[[STAGE]][%{{.+}}] {alignment = 16 : i64} : memref<1x64x72xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: vector.store %{{.+}} {alignment = 16 : i64} : memref<2x9x9x64xf16>, vector<8xf16>
func.func @conv(%x: tensor<2x9x9x32xf16>, %w: tensor<64x3x3x32xf16>, %r: tensor<2x9x9x64xf16>) -> tensor<2x9x9x64xf16> {
  %0 = fuse.kernel "k0_conv2d"(%x, %w, %r) {tile = #fuse.tile<bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4>}
      : (tensor<2x9x9x32xf16>, tensor<64x3x3x32xf16>, tensor<2x9x9x64xf16>) -> tensor<2x9x9x64xf16> {
  ^bb0(%a: tensor<2x9x9x32xf16>, %b: tensor<64x3x3x32xf16>, %c: tensor<2x9x9x64xf16>):
    %1 = fuse.conv2d %a, %b {padding = array<i64: 1, 1>} : tensor<2x9x9x32xf16>, tensor<64x3x3x32xf16>
    %2 = fuse.add %1, %c : tensor<2x9x9x64xf16>, tensor<2x9x9x64xf16>
    %3 = fuse.relu %2 : tensor<2x9x9x64xf16>
    fuse.yield %3 : tensor<2x9x9x64xf16>
  }
  return %0 : tensor<2x9x9x64xf16>
}

// -----

// K = 70 has no aligned 16-byte runs: the tiles go element by element,
// loaded (guarded) into registers during the first k-step's mma.sync and
// stored to shared memory before the barrier; bf16 fragments reach mma.sync
// as packed i32. N = 33 is
// odd: the epilogue stores each accumulator where it is, guarded.
// CHECK-LABEL: func.func @linear_odd(
// CHECK: gpu.func @k0_linear({{.+}}) kernel attributes {fusec.family = "gemm_mma_sync"
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: scf.if %{{.+}} -> (bf16)
// CHECK: memref.load %{{.+}} : memref<37x70xbf16>
// CHECK: memref.store %{{.+}} : memref<4x64x32xbf16, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: nvgpu.ldmatrix {{.+}} -> vector<4x2xbf16>
// CHECK: vector.bitcast %{{.+}} : vector<2xbf16> to vector<1xi32>
// CHECK: memref.load %{{.+}} : memref<37x70xbf16>
// CHECK: nvvm.mma.sync {{.+}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32)
// CHECK: memref.store %{{.+}} : memref<4x64x32xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.wait.group 2
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.mma.sync
// CHECK: scf.yield
// CHECK-NOT: gpu.barrier
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: memref.store %{{.+}} : memref<37x33xbf16>
func.func @linear_odd(%x: tensor<37x70xbf16>, %w: tensor<33x70xbf16>) -> tensor<37x33xbf16> {
  %0 = fuse.kernel "k0_linear"(%x, %w) {tile = #fuse.tile<bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4>}
      : (tensor<37x70xbf16>, tensor<33x70xbf16>) -> tensor<37x33xbf16> {
  ^bb0(%a: tensor<37x70xbf16>, %b: tensor<33x70xbf16>):
    %1 = fuse.linear %a, %b : tensor<37x70xbf16>, tensor<33x70xbf16>
    fuse.yield %1 : tensor<37x33xbf16>
  }
  return %0 : tensor<37x33xbf16>
}

// -----

// B given k x n (n contiguous): its tile is stored k-major as copied and
// ldmatrix transposes it on the way to the fragments. Warp tiles of 64 x 64
// load the next k-step's fragments before this one's mma.sync, carrying the
// first step's across iterations.
// CHECK-LABEL: func.func @matmul_nn(
// CHECK: gpu.func @k0_matmul
// CHECK: nvgpu.device_async_copy %{{.+}} : memref<2x64x48xf16> to memref<3x32x128xf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.ldmatrix %{{.+}} {numTiles = 4 : i32, transpose = true} : memref<3x32x128xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK: scf.for {{.+}} iter_args({{.+}}) -> ({{.+}}, vector<2xf16>
// CHECK: nvgpu.ldmatrix
// CHECK: nvvm.mma.sync
// CHECK: scf.yield
func.func @matmul_nn(%a: tensor<2x40x64xf16>, %b: tensor<2x64x48xf16>) -> tensor<2x40x48xf16> {
  %0 = fuse.kernel "k0_matmul"(%a, %b) {tile = #fuse.tile<bm = 128, bn = 128, bk = 32, warps_m = 2, warps_n = 2, stages = 3>}
      : (tensor<2x40x64xf16>, tensor<2x64x48xf16>) -> tensor<2x40x48xf16> {
  ^bb0(%l: tensor<2x40x64xf16>, %r: tensor<2x64x48xf16>):
    %1 = fuse.matmul %l, %r : tensor<2x40x64xf16>, tensor<2x64x48xf16>
    fuse.yield %1 : tensor<2x40x48xf16>
  }
  return %0 : tensor<2x40x48xf16>
}

// -----

// f32 runs on CUDA cores unless fp32-math=tf32 asks for TF32 tensor cores:
// 4 x f32 per cp.async, ldmatrix of 32-bit elements, m16n8k8 mma.sync. TF32
// cannot be transposed by ldmatrix, so B (n contiguous) goes through
// registers into a k-contiguous tile.
// CHECK-LABEL: func.func @matmul_f32(
// CHECK: gpu.func @k0_matmul({{.+}}) kernel attributes {fusec.family = "gemm_simt"
// TF32-LABEL: func.func @matmul_f32(
// TF32: gpu.func @k0_matmul({{.+}}) kernel attributes {fusec.family = "gemm_mma_sync", fusec.tile = #fuse.tile<bm = {{[0-9]+}}, bn = {{[0-9]+}}, bk = {{16|32}}, warps_m = 2, warps_n = 2, stages = 4>
// TF32: nvgpu.device_async_copy %{{.+}}, 4, %{{.+}} {bypassL1} : memref<2x40x64xf32> to memref<4x{{[0-9]+}}x{{16|32}}xf32, #gpu.address_space<workgroup>>
// TF32: memref.store %{{.+}} : memref<4x{{[0-9]+}}x{{16|32}}xf32, #gpu.address_space<workgroup>>
// TF32: nvgpu.ldmatrix {{.+}} -> vector<4x1xf32>
// TF32: nvvm.mma.sync {{.+}} multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (i32, i32, f32)
func.func @matmul_f32(%a: tensor<2x40x64xf32>, %b: tensor<2x64x48xf32>) -> tensor<2x40x48xf32> {
  %0 = fuse.matmul %a, %b : tensor<2x40x64xf32>, tensor<2x64x48xf32>
  return %0 : tensor<2x40x48xf32>
}

// -----

// The heuristic (docs/Tiling.md) on ResNet-50's 28x28 layer at batch 32 on
// 132 SMs: 128 x 128 tiles would give 196 blocks, one and a half rounds;
// 128 x 64 tiles give 392, three per SM, with 12 warps to hide latency.
// CHECK-LABEL: func.func @heuristic(
// CHECK: gpu.func @k0_conv2d({{.+}}) kernel attributes {fusec.family = "gemm_mma_sync", fusec.tile = #fuse.tile<bm = 128, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4>
func.func @heuristic(%x: tensor<32x28x28x128xf16>, %w: tensor<128x3x3x128xf16>) -> tensor<32x28x28x128xf16> {
  %0 = fuse.conv2d %x, %w {padding = array<i64: 1, 1>} : tensor<32x28x28x128xf16>, tensor<128x3x3x128xf16>
  return %0 : tensor<32x28x28x128xf16>
}

// -----

// Attention on tensor cores (FlashAttention-2 style): Q and the K/V tiles
// arrive by cp.async, read through the transpose that splits heads (from
// the [B, N, H, D] memref), Q is rotated in shared memory (16-byte vectors
// of the pairs and of the cos table), S = Q K^T and
// O += P V run on mma.sync, the online softmax uses exp2 and quad shuffles,
// and the result is stored permuted back to [B, N, H, D].
// CHECK-LABEL: func.func @attention(
// CHECK: gpu.func @k0_attention({{.+}}) kernel attributes {fusec.family = "attention_mma_sync"
// CHECK: nvgpu.device_async_copy %{{.+}} : memref<1x6x2x64xf16> to memref<1x128x64xf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.commit.group
// CHECK: vector.load %{{.+}} : memref<6x32xf16>, vector<8xf16>
// CHECK: nvgpu.ldmatrix
// CHECK: scf.for
// CHECK: nvvm.mma.sync {{.+}} shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK: gpu.shuffle xor
// CHECK: math.exp2
// CHECK: nvgpu.ldmatrix {{.+}} {numTiles = 4 : i32, transpose = true}
// CHECK: scf.yield
// CHECK: vector.store %{{.+}} : memref<1x6x2x64xf16>, vector<2xf16>
func.func @attention(%q: tensor<1x6x2x64xf16>, %k: tensor<1x2x9x64xf16>, %c: tensor<6x32xf16>, %s: tensor<6x32xf16>) -> tensor<1x6x2x64xf16> {
  %0 = fuse.kernel "k0_attention"(%q, %k, %c, %s) : (tensor<1x6x2x64xf16>, tensor<1x2x9x64xf16>, tensor<6x32xf16>, tensor<6x32xf16>) -> tensor<1x6x2x64xf16> {
  ^bb0(%a: tensor<1x6x2x64xf16>, %b: tensor<1x2x9x64xf16>, %cc: tensor<6x32xf16>, %ss: tensor<6x32xf16>):
    %1 = fuse.transpose %a {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x6x2x64xf16>
    %2 = fuse.rope %1, %cc, %ss : tensor<1x2x6x64xf16>, tensor<6x32xf16>
    %3 = fuse.attention %2, %b, %b {causal} : tensor<1x2x6x64xf16>, tensor<1x2x9x64xf16>, tensor<1x2x9x64xf16>
    %4 = fuse.transpose %3 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x2x6x64xf16>
    fuse.yield %4 : tensor<1x6x2x64xf16>
  }
  return %0 : tensor<1x6x2x64xf16>
}

// -----

// Rope tables sliced for a position offset inside the kernel: the rotation
// reads the tables in place, 16-byte vectors at row pos + offset (this once
// crashed: the tables were looked up as kernel arguments).
// CHECK-LABEL: func.func @attention_rope_offset(
// CHECK: gpu.func @k0_attention(
// CHECK-SAME: %[[C:[a-z0-9]+]]: memref<40x32xf16>, %[[S:[a-z0-9]+]]: memref<40x32xf16>
// CHECK-SAME: fusec.family = "attention_mma_sync"
// CHECK-DAG: %[[QOFF:.+]] = arith.constant 31 : index
// CHECK-DAG: %[[KOFF:.+]] = arith.constant 28 : index
// CHECK: %[[ROW:.+]] = arith.addi %{{.+}}, %[[QOFF]] : index
// CHECK-NEXT: vector.load %[[C]][%[[ROW]], %{{.+}}] {alignment = 16 : i64} : memref<40x32xf16>, vector<8xf16>
// CHECK: vector.load %[[S]][%[[ROW]], %{{.+}}] {alignment = 16 : i64} : memref<40x32xf16>, vector<8xf16>
// CHECK: scf.for
// CHECK: %[[KROW:.+]] = arith.addi %{{.+}}, %[[KOFF]] : index
// CHECK-NEXT: vector.load %[[C]][%[[KROW]], %{{.+}}] {alignment = 16 : i64} : memref<40x32xf16>, vector<8xf16>
func.func @attention_rope_offset(%q: tensor<1x2x6x64xf16>, %k: tensor<1x2x9x64xf16>, %c: tensor<40x32xf16>, %s: tensor<40x32xf16>) -> tensor<1x2x6x64xf16> {
  %0 = fuse.kernel "k0_attention"(%q, %k, %c, %s) : (tensor<1x2x6x64xf16>, tensor<1x2x9x64xf16>, tensor<40x32xf16>, tensor<40x32xf16>) -> tensor<1x2x6x64xf16> {
  ^bb0(%a: tensor<1x2x6x64xf16>, %b: tensor<1x2x9x64xf16>, %cc: tensor<40x32xf16>, %ss: tensor<40x32xf16>):
    %c6 = fuse.slice %cc {offsets = array<i64: 31, 0>, sizes = array<i64: 6, 32>} : tensor<40x32xf16>
    %s6 = fuse.slice %ss {offsets = array<i64: 31, 0>, sizes = array<i64: 6, 32>} : tensor<40x32xf16>
    %c9 = fuse.slice %cc {offsets = array<i64: 28, 0>, sizes = array<i64: 9, 32>} : tensor<40x32xf16>
    %s9 = fuse.slice %ss {offsets = array<i64: 28, 0>, sizes = array<i64: 9, 32>} : tensor<40x32xf16>
    %1 = fuse.rope %a, %c6, %s6 : tensor<1x2x6x64xf16>, tensor<6x32xf16>
    %2 = fuse.rope %b, %c9, %s9 : tensor<1x2x9x64xf16>, tensor<9x32xf16>
    %3 = fuse.attention %1, %2, %b {causal} : tensor<1x2x6x64xf16>, tensor<1x2x9x64xf16>, tensor<1x2x9x64xf16>
    fuse.yield %3 : tensor<1x2x6x64xf16>
  }
  return %0 : tensor<1x2x6x64xf16>
}

// -----

// Tables computed in the kernel from parameters (a cast): read element by
// element and rounded to bf16 as the cast says.
// CHECK-LABEL: func.func @attention_rope_cast(
// CHECK: gpu.func @k0_attention(
// CHECK-SAME: %[[C:[a-z0-9]+]]: memref<6x32xf32>, %[[S:[a-z0-9]+]]: memref<6x32xf32>
// CHECK: %[[X:.+]] = memref.load %[[C]][{{.+}}] : memref<6x32xf32>
// CHECK-NEXT: arith.truncf %[[X]] : f32 to bf16
func.func @attention_rope_cast(%q: tensor<1x2x6x64xbf16>, %k: tensor<1x2x9x64xbf16>, %c: tensor<6x32xf32>, %s: tensor<6x32xf32>) -> tensor<1x2x6x64xbf16> {
  %0 = fuse.kernel "k0_attention"(%q, %k, %c, %s) : (tensor<1x2x6x64xbf16>, tensor<1x2x9x64xbf16>, tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<1x2x6x64xbf16> {
  ^bb0(%a: tensor<1x2x6x64xbf16>, %b: tensor<1x2x9x64xbf16>, %cc: tensor<6x32xf32>, %ss: tensor<6x32xf32>):
    %c6 = fuse.cast %cc : tensor<6x32xf32> to tensor<6x32xbf16>
    %s6 = fuse.cast %ss : tensor<6x32xf32> to tensor<6x32xbf16>
    %1 = fuse.rope %a, %c6, %s6 {interleaved} : tensor<1x2x6x64xbf16>, tensor<6x32xbf16>
    %3 = fuse.attention %1, %b, %b : tensor<1x2x6x64xbf16>, tensor<1x2x9x64xbf16>, tensor<1x2x9x64xbf16>
    fuse.yield %3 : tensor<1x2x6x64xbf16>
  }
  return %0 : tensor<1x2x6x64xbf16>
}
