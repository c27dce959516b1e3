// fuse.attention_grad on tensor cores (AttentionGradMmaSync.cpp, f16 and
// bf16, head dims up to 128): a warp per query row writes delta and zeroes
// the f32 dQ accumulator, a block per 128 keys of a (batch, key head)
// runs the FlashAttention-2 loop over the query tiles, then a thread per
// element scales dQ. Otherwise (AttentionGradDirect.cpp): a launch of a warp per
// query row (delta = rowsum(dO * O) into a workspace, and dQ), then the
// kernel itself, a warp per key row (dK and dV over the group's query
// heads). Without dK and dV there is no workspace and one launch.
// fuse.attention {return_lse} stores each row's log-sum-exp beside its
// output, which still takes a fused transpose.
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90},fusec-tile-kernels{arch=sm_90})' 2>/dev/null | FileCheck %s
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90a},fusec-tile-kernels{arch=sm_90a})' 2>/dev/null | FileCheck %s --check-prefix=WG

// bf16: 2 x 4 x 77 query rows in 20 blocks of 256 threads, 8 lanes a row
// (64 head dims, 8 elements a lane); 1 key tile of 128
// x 2 x 2 (batch, key head); 2 x 4 x 77 x 64 elements of dQ in 154 blocks
// of 256.
// CHECK-LABEL: func.func @grads
// CHECK: %[[DELTA:.+]] = memref.alloc() : memref<2x4x77xf32>
// CHECK: %[[DQ:.+]] = memref.alloc() : memref<2x4x77x64xf32>
// CHECK: gpu.launch_func @grads_kernels::@k0_attention_grad_pre blocks in (%c20, {{.+}} threads in (%c256, {{.+}}, %[[DELTA]] : memref<2x4x77xf32>, %[[DQ]] : memref<2x4x77x64xf32>)
// CHECK: gpu.launch_func @grads_kernels::@k0_attention_grad_main blocks in (%c1_{{[0-9]+}}, %c4, {{.+}} threads in (%c256_{{[0-9]+}}, {{.+}} dynamic_shared_memory_size
// CHECK: gpu.launch_func @grads_kernels::@k0_attention_grad blocks in (%c154, {{.+}} threads in (%c256_{{[0-9]+}}, {{.+}} {fusec.kernel_config = #fuse.kernel_config<family = attention_grad_mma_sync
// CHECK-NOT: gpu.launch_func
// f32, direct: 2 x 4 x 77 query rows in 154 blocks of 4 warps, 2 x 2 x 90
// key rows in 90.
// CHECK-LABEL: func.func @grads_direct
// CHECK: %[[DELTA:.+]] = memref.alloc() : memref<2x4x77xf32>
// CHECK: gpu.launch_func @grads_direct_kernels::@k0_attention_grad_rows blocks in (%c154, {{.+}} threads in (%c128, {{.+}}, %[[DELTA]] : memref<2x4x77xf32>)
// CHECK: gpu.launch_func @grads_direct_kernels::@k0_attention_grad blocks in (%c90, {{.+}} threads in (%c128_{{[0-9]+}}, {{.+}}, %[[DELTA]] : memref<2x4x77xf32>) {fusec.kernel_config = #fuse.kernel_config<family = attention_direct
// CHECK-NOT: gpu.launch_func
// CHECK-LABEL: func.func @dq_only
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch_func @dq_only_kernels::@k0_attention_grad blocks in (%c17,
// CHECK-NOT: gpu.launch_func
// CHECK-LABEL: func.func @forward
// CHECK: gpu.launch_func @forward_kernels::@k0_attention {{.+}} args(%arg0 : memref<1x2x33x64xbf16>, %arg1 : memref<1x2x40x64xbf16>, %arg3 : memref<1x2x33xf32>, %arg2 : memref<1x33x2x64xbf16>) {fusec.kernel_config = #fuse.kernel_config<family = attention_mma_sync
// The first launch of @grads: a row's 8 lanes (64 head dims, 8 elements
// each) add their shares of delta by 3 shuffles.
// CHECK-LABEL: gpu.func @k0_attention_grad_pre(
// CHECK-COUNT-3: gpu.shuffle xor
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @k0_attention(
// CHECK: math.log2
// CHECK: memref.store %{{.+}}, %arg2[%{{.+}}, %{{.+}}, %{{.+}}] : memref<1x2x33xf32>
// sm_90a (AttentionGradWgmma.cpp): delta, the log-sum-exp times log2(e)
// and the dQ accumulator padded to 128 query rows; TMA maps over Q, dO
// (64-dim panels by 64 queries), K, V (by 128 keys), the two workspaces and
// the accumulator (rows of 256 f32: a 64 x 64 panel is 16); a block of 3
// warpgroups per (batch, key head) and 128 keys. dS^T goes through shared
// memory (a proxy fence before wgmma reads it, A MN-major), and dQ's panel
// into the accumulator by a bulk reduction; the scaling takes 8 head dims a
// thread: 2 x 4 x 128 x 64 / 8 in 32 blocks of 256.
// WG-LABEL: func.func @grads
// WG: %[[DELTA:.+]] = memref.alloc() : memref<2x4x128xf32>
// WG: %[[LSE2:.+]] = memref.alloc() : memref<2x4x128xf32>
// WG: %[[DQ:.+]] = memref.alloc() : memref<2x4x128x64xf32>
// WG: fuse.tensor_map %arg0 {box = array<i64: 64, 64, 1>, dims = array<i64: 64, 77, 8>, strides = array<i64: 128, 9856>}
// WG: fuse.tensor_map %arg4 {box = array<i64: 64, 64, 1>
// WG: fuse.tensor_map %arg1 {box = array<i64: 64, 128, 1>, dims = array<i64: 64, 90, 4>, strides = array<i64: 128, 11520>}
// WG: fuse.tensor_map %arg2 {box = array<i64: 64, 128, 1>
// WG: fuse.tensor_map %[[LSE2]] {box = array<i64: 64, 1>, dims = array<i64: 128, 8>, strides = array<i64: 512>, swizzle = 0 : i64}
// WG: fuse.tensor_map %[[DELTA]] {box = array<i64: 64, 1>
// WG: fuse.tensor_map %[[DQ]] {box = array<i64: 256, 16>, dims = array<i64: 256, 256>, strides = array<i64: 1024>, swizzle = 0 : i64}
// WG: gpu.launch_func @grads_kernels::@k0_attention_grad_pre blocks in (%c32, {{.+}} threads in (%c256,
// WG: gpu.launch_func @grads_kernels::@k0_attention_grad_main blocks in (%c4, %c1{{.*}} threads in (%c384,
// WG: gpu.launch_func @grads_kernels::@k0_attention_grad blocks in (%c32_{{[0-9]+}}, {{.+}}family = attention_grad_wgmma
// The producer warpgroup's warp 1 (the dQ writer): per step, once the
// panel's consumer staged it (barrier 2 of 128 + 32 threads), the bulk
// reduction; once it has read shared memory, the panel is free again
// (barrier 4, an arrive after a warp sync); the last reductions waited for.
// WG-LABEL: gpu.func @k0_attention_grad_main(
// WG: nvvm.setmaxregister decrease 24
// WG: nvvm.barrier id = %c2_i32 number_of_threads = %c160_i32
// WG: nvvm.cp.async.bulk.tensor.reduce %arg18
// WG: nvvm.cp.async.bulk.commit.group
// WG: nvvm.cp.async.bulk.wait_group 0 {read}
// WG: nvvm.bar.warp.sync
// WG: nvvm.barrier.arrive id = %c4_i32 number_of_threads = %c160_i32
// WG: nvvm.cp.async.bulk.wait_group 0
// WG-NOT: {read}
// WG: nvvm.setmaxregister increase 240
// The consumers: dS^T to shared memory, dQ's panel by wgmma (A MN-major),
// staged once the writer has read the last one.
// WG: nvvm.wgmma.mma_async {{.+}} A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// WG: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// WG: nvvm.barrier id = %c1_i32 number_of_threads = %c256_i32
// WG: nvvm.wgmma.mma_async {{.+}} A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// WG: nvvm.barrier id = %c4_i32 number_of_threads = %c160_i32
// WG: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// WG: nvvm.bar.warp.sync
// WG: nvvm.barrier.arrive id = %c2_i32 number_of_threads = %c160_i32
func.func @grads(%q: tensor<2x4x77x64xbf16>, %k: tensor<2x2x90x64xbf16>, %v: tensor<2x2x90x64xbf16>, %o: tensor<2x4x77x64xbf16>, %do: tensor<2x4x77x64xbf16>, %lse: tensor<2x4x77xf32>) -> (tensor<2x4x77x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>) {
  %dq, %dk, %dv = fuse.attention_grad %q, %k, %v, %o, %do, %lse {causal} : tensor<2x4x77x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x4x77x64xbf16>, tensor<2x4x77xf32>
  return %dq, %dk, %dv : tensor<2x4x77x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>
}
func.func @grads_direct(%q: tensor<2x4x77x64xf32>, %k: tensor<2x2x90x64xf32>, %v: tensor<2x2x90x64xf32>, %o: tensor<2x4x77x64xf32>, %do: tensor<2x4x77x64xf32>, %lse: tensor<2x4x77xf32>) -> (tensor<2x4x77x64xf32>, tensor<2x2x90x64xf32>, tensor<2x2x90x64xf32>) {
  %dq, %dk, %dv = fuse.attention_grad %q, %k, %v, %o, %do, %lse {causal} : tensor<2x4x77x64xf32>, tensor<2x2x90x64xf32>, tensor<2x2x90x64xf32>, tensor<2x4x77x64xf32>, tensor<2x4x77xf32>
  return %dq, %dk, %dv : tensor<2x4x77x64xf32>, tensor<2x2x90x64xf32>, tensor<2x2x90x64xf32>
}
func.func @dq_only(%q: tensor<1x2x33x64xf32>, %k: tensor<1x2x33x64xf32>, %o: tensor<1x2x33x64xf32>, %lse: tensor<1x2x33xf32>) -> tensor<1x2x33x64xf32> {
  %dq, %dk, %dv = fuse.attention_grad %q, %k, %k, %o, %o, %lse : tensor<1x2x33x64xf32>, tensor<1x2x33x64xf32>, tensor<1x2x33x64xf32>, tensor<1x2x33x64xf32>, tensor<1x2x33xf32>
  return %dq : tensor<1x2x33x64xf32>
}
func.func @forward(%q: tensor<1x2x33x64xbf16>, %k: tensor<1x2x40x64xbf16>) -> (tensor<1x33x2x64xbf16>, tensor<1x2x33xf32>) {
  %o, %lse = fuse.attention %q, %k, %k {return_lse} : tensor<1x2x33x64xbf16>, tensor<1x2x40x64xbf16>, tensor<1x2x40x64xbf16>
  %t = fuse.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x2x33x64xbf16>
  return %t, %lse : tensor<1x33x2x64xbf16>, tensor<1x2x33xf32>
}
