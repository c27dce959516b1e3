// Batch norm in training and its gradient: three launches over the same
// memrefs (BatchNormTraining.cpp, docs/Tiling.md): per-channel partial sums
// into a workspace, a finalize that writes the per-channel results and the
// coefficients, then the element pass with the fused epilogue.
// RUN: fusec-opt %s --fusec-pipeline-tiled -split-input-file 2>&1 | FileCheck %s --enable-var-scope

// NHWC bf16 with f32 statistics: the ReLU fuses into the normalising pass;
// 16-byte vectors of 8 channels in both passes.
// CHECK: remark: fused fuse.relu into the epilogue of kernel k0_batch_norm_train
// CHECK: remark: kernel 'k0_batch_norm_train': row_reduction, from the heuristic
// CHECK-LABEL: func.func @nhwc(
// CHECK: %[[PART:.+]] = memref.alloc() : memref<2x1x64xf32>
// CHECK: %[[COEF:.+]] = memref.alloc() : memref<4x64xf32>
// CHECK: gpu.launch_func @nhwc_kernels::@k0_batch_norm_train_stats blocks in ({{.+}}) threads in ({{.+}}) dynamic_shared_memory_size {{.+}} args({{.+}}, %[[PART]] : memref<2x1x64xf32>, %[[COEF]] : memref<4x64xf32>)
// CHECK-NEXT: gpu.launch_func @nhwc_kernels::@k0_batch_norm_train_finalize
// CHECK-NEXT: gpu.launch_func @nhwc_kernels::@k0_batch_norm_train blocks
// CHECK-SAME: fusec.kernel_config = #fuse.kernel_config<family = row_reduction, source = "heuristic">
// CHECK: gpu.func @k0_batch_norm_train(
// CHECK-SAME: fusec.family = "row_reduction"
// CHECK: arith.maximumf
// CHECK: vector.store {{.+}} : memref<2x5x7x64xbf16>, vector<8xbf16>
// CHECK: gpu.func @k0_batch_norm_train_stats(
// CHECK: scf.for
// CHECK: vector.load {{.+}} : memref<2x5x7x64xbf16>, vector<8xbf16>
// CHECK: gpu.barrier
// CHECK: gpu.func @k0_batch_norm_train_finalize(
// CHECK: math.rsqrt
func.func @nhwc(%x: tensor<2x5x7x64xbf16>, %rm: tensor<64xf32>, %rv: tensor<64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<2x5x7x64xbf16>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %y, %mean, %invstd, %nrm, %nrv = fuse.batch_norm_train %x, %rm, %rv, %w, %b : tensor<2x5x7x64xbf16>, tensor<64xf32>
  %r = fuse.relu %y : tensor<2x5x7x64xbf16>
  return %r, %mean, %invstd, %nrm, %nrv : tensor<2x5x7x64xbf16>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// NCHW with odd extents: a block per (channel, share) of its strided planes,
// reduced by warp shuffles; the cumulative running average divides by
// batches_tracked.
// CHECK-LABEL: func.func @nchw(
// CHECK: gpu.launch_func @nchw_kernels::@k0_batch_norm_train_stats blocks in (%[[C37:.+]], %{{.+}}, %{{.+}})
// CHECK: gpu.launch_func @nchw_kernels::@k0_batch_norm_train_finalize
// CHECK: gpu.launch_func @nchw_kernels::@k0_batch_norm_train blocks
// CHECK: gpu.func @k0_batch_norm_train_stats(
// CHECK: gpu.shuffle xor
// CHECK: gpu.func @k0_batch_norm_train_finalize(
// CHECK: arith.divf
func.func @nchw(%x: tensor<3x37x7x13xf32>, %rm: tensor<37xf32>, %rv: tensor<37xf32>, %w: tensor<37xf32>, %b: tensor<37xf32>, %n: tensor<1xf32>) -> (tensor<3x37x7x13xf32>, tensor<37xf32>) {
  %y, %mean, %invstd, %nrm, %nrv = fuse.batch_norm_train %x, %rm, %rv, %w, %b tracked %n {layout = #fuse.layout<nchw>, cumulative} : tensor<3x37x7x13xf32>, tensor<37xf32>, tensor<1xf32>
  return %y, %nrv : tensor<3x37x7x13xf32>, tensor<37xf32>
}

// -----

// The gradient in training form: sums of dy and dy * (x - mean), then dx
// from dy and x.
// CHECK-LABEL: func.func @grad(
// CHECK: memref.alloc() : memref<2x1x64xf32>
// CHECK: gpu.launch_func @grad_kernels::@k0_batch_norm_grad_stats
// CHECK: gpu.launch_func @grad_kernels::@k0_batch_norm_grad_finalize
// CHECK: gpu.launch_func @grad_kernels::@k0_batch_norm_grad blocks
// CHECK: gpu.func @k0_batch_norm_grad(
// CHECK: vector.load %arg0
// CHECK-NEXT: vector.load %arg1
// CHECK: vector.store {{.+}} : memref<2x5x7x64xf16>, vector<8xf16>
func.func @grad(%dy: tensor<2x5x7x64xf16>, %x: tensor<2x5x7x64xf16>, %m: tensor<64xf32>, %s: tensor<64xf32>, %w: tensor<64xf32>) -> (tensor<2x5x7x64xf16>, tensor<64xf32>, tensor<64xf32>) {
  %dx, %dw, %db = fuse.batch_norm_grad %dy, %x, %m, %s, %w : tensor<2x5x7x64xf16>, tensor<64xf32>
  return %dx, %dw, %db : tensor<2x5x7x64xf16>, tensor<64xf32>, tensor<64xf32>
}

// -----

// The evaluation form without parameter gradients needs no sums: the
// finalize computes the coefficients, and dx reads dy alone.
// CHECK-LABEL: func.func @grad_eval(
// CHECK-NOT: _stats
// CHECK: memref.alloc() : memref<4x64xf32>
// CHECK-NEXT: gpu.launch_func @grad_eval_kernels::@k0_batch_norm_grad_finalize
// CHECK-NEXT: gpu.launch_func @grad_eval_kernels::@k0_batch_norm_grad blocks
// CHECK: gpu.func @k0_batch_norm_grad(
// CHECK-NOT: vector.load %arg1
// CHECK: vector.load %arg0
// CHECK-NOT: vector.load %arg1
// CHECK: gpu.func @k0_batch_norm_grad_finalize(
func.func @grad_eval(%dy: tensor<2x5x7x64xf16>, %x: tensor<2x5x7x64xf16>, %m: tensor<64xf32>, %v: tensor<64xf32>, %w: tensor<64xf32>) -> tensor<2x5x7x64xf16> {
  %dx, %dw, %db = fuse.batch_norm_grad %dy, %x, %m, %v, %w {epsilon = 1.0e-5 : f64} : tensor<2x5x7x64xf16>, tensor<64xf32>
  return %dx : tensor<2x5x7x64xf16>
}
