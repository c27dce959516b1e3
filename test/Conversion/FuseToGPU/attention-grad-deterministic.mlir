// fuse.attention_grad {deterministic}: dQ the same bit for bit run to run.
// On sm_90a (AttentionGradWgmma.cpp) the first launch also zeroes an i32
// counter per query tile and 64-dim panel of dQ; every block of keys walks
// the tiles in the same order (causal: from the last tile down, the group's
// heads inner), and the dQ writer warp waits until the counter equals its
// block's index (an atomic add of 0 in a loop, then GPU-scope and proxy
// fences) before its bulk reduction, and counts it once the reduction
// completed. On sm_90 the mma.sync family's dQ atomics are unordered: the
// direct family takes the op.
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90a},fusec-tile-kernels{arch=sm_90a})' 2>/dev/null | FileCheck %s
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90},fusec-tile-kernels{arch=sm_90})' 2>/dev/null | FileCheck %s --check-prefix=SM90

// 77 queries: 2 tiles of 64; head dim 128: 2 panels.
// CHECK-LABEL: func.func @det
// CHECK: %[[DQ:.+]] = memref.alloc() : memref<2x4x128x128xf32>
// CHECK: %[[COUNT:.+]] = memref.alloc() : memref<2x4x2x2xi32>
// CHECK: gpu.launch_func @det_kernels::@k0_attention_grad_pre {{.+}}, %[[DQ]] : memref<2x4x128x128xf32>, %[[COUNT]] : memref<2x4x2x2xi32>)
// CHECK: gpu.launch_func @det_kernels::@k0_attention_grad_main blocks in (%c4, %c3, {{.+}}, %[[COUNT]] : memref<2x4x2x2xi32>,
// CHECK: gpu.launch_func @det_kernels::@k0_attention_grad {{.+}}family = attention_grad_wgmma
// CHECK-LABEL: gpu.func @k0_attention_grad_pre(
// CHECK: %[[ZERO:.+]] = arith.constant 0 : i32
// CHECK-NEXT: memref.store %[[ZERO]], %arg12[{{.+}}] : memref<2x4x2x2xi32>
// The writer (warp 1 of the producer warpgroup), per step and panel: once
// the consumer staged the panel (barrier 2 + panel), it spins until the
// counter is its block's index, fences, reduces; once the reductions have
// read shared memory it frees the panels (barriers 4 and 5), and once they
// completed, fences and counts them.
// CHECK-LABEL: gpu.func @k0_attention_grad_main(
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: nvvm.barrier id = %c2_i32 number_of_threads = %c160_i32
// CHECK: %[[BY:.+]] = gpu.block_id y
// CHECK-NEXT: %[[SELF:.+]] = arith.index_cast %[[BY]] : index to i32
// CHECK-NEXT: scf.while : () -> () {
// CHECK-NEXT: %[[SEEN:.+]] = memref.atomic_rmw addi %c0_i32{{.*}}, %arg12[{{.+}}] : (i32, memref<2x4x2x2xi32>) -> i32
// CHECK-NEXT: %[[MORE:.+]] = arith.cmpi ne, %[[SEEN]], %[[SELF]] : i32
// CHECK-NEXT: scf.condition(%[[MORE]])
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK-NEXT: nvvm.memory.barrier <gpu>
// CHECK: nvvm.cp.async.bulk.tensor.reduce
// CHECK: nvvm.barrier id = %c3_i32 number_of_threads = %c160_i32
// CHECK: scf.while
// CHECK: nvvm.cp.async.bulk.tensor.reduce
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: nvvm.barrier.arrive id = %c4_i32
// CHECK: nvvm.barrier.arrive id = %c5_i32
// CHECK: nvvm.cp.async.bulk.wait_group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK-NEXT: nvvm.memory.barrier <gpu>
// CHECK: memref.atomic_rmw addi %c1_i32{{.*}}, %arg12[
// CHECK: memref.atomic_rmw addi %c1_i32{{.*}}, %arg12[
// CHECK: nvvm.setmaxregister increase 240
// The consumers neither spin nor count: they stage their panel once the
// writer has read the last one, and tell it.
// CHECK-NOT: memref.atomic_rmw
// CHECK: nvvm.barrier id = %c4_i32 number_of_threads = %c160_i32
// CHECK: nvvm.barrier.arrive id = %c2_i32 number_of_threads = %c160_i32
// CHECK: nvvm.barrier id = %c5_i32 number_of_threads = %c160_i32
// CHECK: nvvm.barrier.arrive id = %c3_i32 number_of_threads = %c160_i32

// SM90-LABEL: func.func @det
// SM90-NOT: xi32>
// SM90: gpu.launch_func @det_kernels::@k0_attention_grad {{.+}}family = attention_direct
func.func @det(%q: tensor<2x4x77x128xbf16>, %k: tensor<2x2x300x128xbf16>, %v: tensor<2x2x300x128xbf16>, %o: tensor<2x4x77x128xbf16>, %do: tensor<2x4x77x128xbf16>, %lse: tensor<2x4x77xf32>) -> (tensor<2x4x77x128xbf16>, tensor<2x2x300x128xbf16>, tensor<2x2x300x128xbf16>) {
  %dq, %dk, %dv = fuse.attention_grad %q, %k, %v, %o, %do, %lse {causal, deterministic} : tensor<2x4x77x128xbf16>, tensor<2x2x300x128xbf16>, tensor<2x2x300x128xbf16>, tensor<2x4x77x128xbf16>, tensor<2x4x77xf32>
  return %dq, %dk, %dv : tensor<2x4x77x128xbf16>, tensor<2x2x300x128xbf16>, tensor<2x2x300x128xbf16>
}
