// fuse.attention_grad {return_score_grad}: dS, what the additive mask's
// gradient sums, stored by each family where it computes it, dropped past
// the query and key counts. Causal, the first launch zeroes each query
// row's keys after the query (the main loop skips whole tiles of them): a
// row's 8 lanes (tensor cores) or 32 (direct) take every 8th or 32nd key.
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90},fusec-tile-kernels{arch=sm_90})' 2>/dev/null | FileCheck %s --check-prefixes=CHECK,MMA
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90a},fusec-tile-kernels{arch=sm_90a})' 2>/dev/null | FileCheck %s --check-prefixes=CHECK,WG

// The kernel (scaling dQ) stores no dS; the main launch stores its 32
// elements of a tile per thread, each under a bounds check.
// MMA: gpu.launch_func @ds_kernels::@k0_attention_grad_pre
// MMA: gpu.launch_func @ds_kernels::@k0_attention_grad_main
// MMA: gpu.launch_func @ds_kernels::@k0_attention_grad {{.+}}family = attention_grad_mma_sync
// WG: gpu.launch_func @ds_kernels::@k0_attention_grad {{.+}}family = attention_grad_wgmma
// CHECK-LABEL: func.func @ds_direct
// f32 (direct): the query rows' launch zeroes, the key rows' (lane 0)
// stores.
// CHECK: gpu.launch_func @ds_direct_kernels::@k0_attention_grad_rows
// CHECK: gpu.launch_func @ds_direct_kernels::@k0_attention_grad {{.+}}family = attention_direct
// CHECK-LABEL: gpu.module @ds_kernels
// CHECK-LABEL: gpu.func @k0_attention_grad(
// CHECK-NOT: memref.store {{.+}} : memref<2x4x77x90xf32>
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @k0_attention_grad_pre(
// CHECK: scf.for %[[J:arg[0-9]+]] = %{{.+}} to %c90 step %c8{{.*}} {
// CHECK-NEXT: memref.store %cst{{.*}}, %arg10[%{{.+}}, %{{.+}}, %{{.+}}, %[[J]]] : memref<2x4x77x90xf32>
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @k0_attention_grad_main(
// CHECK-COUNT-32: memref.store %{{.+}}, %arg10[{{.+}}] : memref<2x4x77x90xf32>
// CHECK-NOT: memref<2x4x77x90xf32>
// CHECK: gpu.return
func.func @ds(%q: tensor<2x4x77x64xbf16>, %k: tensor<2x2x90x64xbf16>, %v: tensor<2x2x90x64xbf16>, %o: tensor<2x4x77x64xbf16>, %do: tensor<2x4x77x64xbf16>, %lse: tensor<2x4x77xf32>, %m: tensor<77x90xf32>) -> (tensor<2x4x77x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x4x77x90xf32>) {
  %dq, %dk, %dv, %ds = fuse.attention_grad %q, %k, %v, %o, %do, %lse, %m {causal, return_score_grad} : tensor<2x4x77x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x4x77x64xbf16>, tensor<2x4x77xf32>, tensor<77x90xf32>
  return %dq, %dk, %dv, %ds : tensor<2x4x77x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x4x77x90xf32>
}

// CHECK-LABEL: gpu.module @ds_direct_kernels
// CHECK-LABEL: gpu.func @k0_attention_grad(
// CHECK: memref.store %{{.+}}, %{{.+}}[{{.+}}] : memref<1x2x5x9xbf16>
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @k0_attention_grad_rows(
// CHECK: scf.for %[[J:arg[0-9]+]] = %{{.+}} to %c9 step %c32{{.*}} {
// CHECK-NEXT: memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %[[J]]] : memref<1x2x5x9xbf16>
func.func @ds_direct(%q: tensor<1x2x5x8xf32>, %k: tensor<1x1x9x8xf32>, %v: tensor<1x1x9x8xf32>, %o: tensor<1x2x5x8xf32>, %do: tensor<1x2x5x8xf32>, %lse: tensor<1x2x5xf32>, %m: tensor<1x1x5x9xbf16>) -> (tensor<1x2x5x8xf32>, tensor<1x2x5x9xbf16>) {
  %dq, %dk, %dv, %ds = fuse.attention_grad %q, %k, %v, %o, %do, %lse, %m {causal, return_score_grad} : tensor<1x2x5x8xf32>, tensor<1x1x9x8xf32>, tensor<1x1x9x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5xf32>, tensor<1x1x5x9xbf16>
  return %dq, %ds : tensor<1x2x5x8xf32>, tensor<1x2x5x9xbf16>
}
