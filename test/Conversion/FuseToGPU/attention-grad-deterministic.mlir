// fuse.attention_grad {deterministic}: dQ the same bit for bit run to run.
// On sm_90a (AttentionGradWgmma.cpp) the first launch also zeroes an i32
// counter per query tile and 64-dim panel of dQ; every block of keys walks
// the tiles in the same order (causal: from the last tile down, the group's
// heads inner), and a consumer's leader waits until the counter equals its
// block's index (an atomic add of 0 in a loop, then GPU-scope and proxy
// fences) before its bulk reduction, and counts it once the reduction
// completed (a step later, and after the loop). On sm_90 the mma.sync
// family's dQ atomics are unordered: the direct family takes the op.
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
// The step's tile, causal and ordered: 1 - it / 2 (2 heads a key head).
// CHECK-LABEL: gpu.func @k0_attention_grad_main(
// The previous step's reductions counted (it > 0) before the dS barrier.
// CHECK: scf.if
// CHECK: nvvm.cp.async.bulk.wait_group 0
// CHECK-NOT: {read}
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK-NEXT: nvvm.memory.barrier <gpu>
// CHECK: memref.atomic_rmw addi %c1_i32{{.*}}, %arg12[
// CHECK: nvvm.barrier id = %c1_i32
// Each panel's reduction waits for the blocks of keys before this one.
// CHECK: %[[BY:.+]] = gpu.block_id y
// CHECK-NEXT: %[[SELF:.+]] = arith.index_cast %[[BY]] : index to i32
// CHECK-NEXT: scf.while : () -> () {
// CHECK-NEXT: %[[SEEN:.+]] = memref.atomic_rmw addi %c0_i32{{.*}}, %arg12[
// CHECK-NEXT: %[[MORE:.+]] = arith.cmpi ne, %[[SEEN]], %[[SELF]] : i32
// CHECK-NEXT: scf.condition(%[[MORE]])
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK-NEXT: nvvm.memory.barrier <gpu>
// CHECK: nvvm.cp.async.bulk.tensor.reduce
// CHECK: scf.while
// CHECK: nvvm.cp.async.bulk.tensor.reduce
// After the loop, the last step's reductions.
// CHECK: nvvm.cp.async.bulk.wait_group 0
// CHECK: memref.atomic_rmw addi %c1_i32{{.*}}, %arg12[

// SM90-LABEL: func.func @det
// SM90-NOT: xi32>
// SM90: gpu.launch_func @det_kernels::@k0_attention_grad {{.+}}family = attention_direct
func.func @det(%q: tensor<2x4x77x128xbf16>, %k: tensor<2x2x300x128xbf16>, %v: tensor<2x2x300x128xbf16>, %o: tensor<2x4x77x128xbf16>, %do: tensor<2x4x77x128xbf16>, %lse: tensor<2x4x77xf32>) -> (tensor<2x4x77x128xbf16>, tensor<2x2x300x128xbf16>, tensor<2x2x300x128xbf16>) {
  %dq, %dk, %dv = fuse.attention_grad %q, %k, %v, %o, %do, %lse {causal, deterministic} : tensor<2x4x77x128xbf16>, tensor<2x2x300x128xbf16>, tensor<2x2x300x128xbf16>, tensor<2x4x77x128xbf16>, tensor<2x4x77xf32>
  return %dq, %dk, %dv : tensor<2x4x77x128xbf16>, tensor<2x2x300x128xbf16>, tensor<2x2x300x128xbf16>
}
