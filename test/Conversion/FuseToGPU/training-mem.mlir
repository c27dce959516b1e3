// The memory-bound kernels of backward graphs (docs/Tiling.md): the
// derivatives of activations and neg fuse into elementwise kernels and
// epilogues, reduce_sum takes the row_reduction family (columns for the
// per-channel sums over N, H, W; rows when the innermost axis is summed),
// the pooling and upsampling gradients gather in pool_resample, slice_grad
// writes zeros around its block in gather.
// RUN: fusec-opt %s --fusec-pipeline-tiled -split-input-file 2>/dev/null | FileCheck %s

// The bias gradient of an NHWC activation behind a ReLU: the derivative is
// an elementwise kernel (two users of its result); the per-channel sum reads
// rows of 8 channels as 16-byte vectors, 1024 threads (8 channels fill one
// block), and adds the partials of its 128 rows of threads in shared memory.
// CHECK-LABEL: gpu.module @bias_grad_kernels
// CHECK: gpu.func @k1_activation_grad({{.+}}) kernel attributes {fusec.family = "elementwise"
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: gpu.func @k0_reduce_sum({{.+}}) kernel attributes {fusec.family = "row_reduction", known_block_size = array<i32: 1024, 1, 1>}
// CHECK: memref<128x64xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: vector.load {{.+}} vector<8xf16>
// CHECK: scf.yield
// CHECK: gpu.barrier
// CHECK: vector.store {{.+}} vector<8xf16>
func.func @bias_grad(%dy: tensor<3x13x11x64xf16>, %y: tensor<3x13x11x64xf16>)
    -> (tensor<64xf16>, tensor<3x13x11x64xf16>) {
  %0 = fuse.activation_grad %dy, %y {activation = #fuse.activation<relu>} : tensor<3x13x11x64xf16>
  %1 = fuse.reduce_sum %0 {axes = array<i64: 0, 1, 2>} : tensor<3x13x11x64xf16>
  return %1, %0 : tensor<64xf16>, tensor<3x13x11x64xf16>
}

// -----

// Summing the innermost axis: a warp per result, shuffles, neg fused into
// the store.
// CHECK-LABEL: gpu.module @rows_kernels
// CHECK: gpu.func @k0_reduce_sum({{.+}}) kernel attributes {fusec.family = "row_reduction", known_block_size = array<i32: 256, 1, 1>}
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: arith.negf
// CHECK: memref.store
func.func @rows(%x: tensor<37x5x129xf32>) -> tensor<37x5x1xf32> {
  %0 = fuse.reduce_sum %x {axes = array<i64: -1>, keep_dims} : tensor<37x5x129xf32>
  %1 = fuse.neg %0 : tensor<37x5x1xf32>
  return %1 : tensor<37x5x1xf32>
}

// -----

// Derivatives with transcendental parts, fused with neg into one kernel.
// CHECK-LABEL: gpu.module @chain_kernels
// CHECK: gpu.func @k0_neg({{.+}}) kernel attributes {fusec.family = "elementwise"
// CHECK: math.erf
// CHECK: math.exp
// CHECK: math.tanh
// CHECK: arith.negf
// CHECK-NOT: gpu.func
func.func @chain(%dy: tensor<3x17x13xbf16>, %x: tensor<3x17x13xbf16>) -> tensor<3x17x13xbf16> {
  %0 = fuse.activation_grad %dy, %x {activation = #fuse.activation<gelu>} : tensor<3x17x13xbf16>
  %1 = fuse.activation_grad %0, %x {activation = #fuse.activation<gelu_tanh>} : tensor<3x17x13xbf16>
  %2 = fuse.neg %1 : tensor<3x17x13xbf16>
  return %2 : tensor<3x17x13xbf16>
}

// -----

// Pooling gradients: a thread per input vector of channels loops over the
// windows that hold it; the max recomputes the window's winner.
// CHECK-LABEL: gpu.module @pool_grads_kernels
// CHECK: gpu.func @k0_max_pool2d_grad({{.+}}) kernel attributes {fusec.family = "pool_resample"
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.cmpf uno
// CHECK: vector.store {{.+}} vector<8xf16>
// CHECK: gpu.func @k1_avg_pool2d_grad({{.+}}) kernel attributes {fusec.family = "pool_resample"
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.divf
// CHECK: vector.store {{.+}} vector<8xf16>
func.func @pool_grads(%x: tensor<2x9x11x16xf16>, %dy: tensor<2x5x6x16xf16>)
    -> (tensor<2x9x11x16xf16>, tensor<2x9x11x16xf16>) {
  %0 = fuse.max_pool2d_grad %x, %dy {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x9x11x16xf16>, tensor<2x5x6x16xf16>
  %1 = fuse.avg_pool2d_grad %dy {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x5x6x16xf16> -> tensor<2x9x11x16xf16>
  return %0, %1 : tensor<2x9x11x16xf16>, tensor<2x9x11x16xf16>
}

// -----

// Upsampling gradients gather (NCHW: a thread per input element): the
// bilinear weights are recomputed per candidate output pixel, and only
// candidates of nonzero weight are read.
// CHECK-LABEL: gpu.module @upsample_grad_kernels
// CHECK: gpu.func @k0_upsample_grad({{.+}}) kernel attributes {fusec.family = "pool_resample"
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.cmpf one
// CHECK: scf.if
// CHECK: memref.load
// CHECK: math.fma
// CHECK: memref.store
func.func @upsample_grad(%dy: tensor<2x5x17x23xf32>) -> tensor<2x5x9x11xf32> {
  %0 = fuse.upsample_grad %dy {mode = #fuse.upsample_mode<bilinear>, size = array<i64: 17, 23>, align_corners, layout = #fuse.layout<nchw>} : tensor<2x5x17x23xf32> -> tensor<2x5x9x11xf32>
  return %0 : tensor<2x5x9x11xf32>
}

// -----

// slice_grad: the block where it lies, zeros elsewhere, 16 bytes at a time.
// CHECK-LABEL: gpu.module @slice_grad_kernels
// CHECK: gpu.func @k0_slice_grad({{.+}}) kernel attributes {fusec.family = "gather"
// CHECK: scf.if
// CHECK: vector.load {{.+}} vector<8xbf16>
// CHECK: vector.store {{.+}} vector<8xbf16>
func.func @slice_grad(%dy: tensor<3x5x16xbf16>) -> tensor<3x9x48xbf16> {
  %0 = fuse.slice_grad %dy {offsets = array<i64: 0, 2, 16>} : tensor<3x5x16xbf16> -> tensor<3x9x48xbf16>
  return %0 : tensor<3x9x48xbf16>
}

// -----

// A linear layer's bias gradient over 8 x 197 tokens (2.4 MB): 768 channels
// fill only 3 blocks, so the sum is split over 48 groups of 33 rows too (a
// grid of 3 x 48, each block writing its partials), then the kernel adds the
// 48 partials of each channel in a fixed order (sumPartialColumns: 32
// channels a block of 1024 threads) and stores through the epilogue.
// CHECK-LABEL: func.func @tokens_bias
// CHECK: %[[P:.+]] = memref.alloc() : memref<1x48x768xf32>
// CHECK: gpu.launch_func @tokens_bias_kernels::@k0_reduce_sum_partials blocks in (%c3, %c48, %c1) threads in (%c256, {{.+}}, %[[P]] : memref<1x48x768xf32>)
// CHECK: gpu.launch_func @tokens_bias_kernels::@k0_reduce_sum blocks in (%c24, %c1, %c1) threads in (%c1024, {{.+}}, %[[P]] : memref<1x48x768xf32>)
// CHECK: gpu.func @k0_reduce_sum({{.+}}) kernel attributes {fusec.family = "row_reduction", known_block_size = array<i32: 1024, 1, 1>}
// CHECK: memref.load %arg2[%c0, {{.+}}] : memref<1x48x768xf32>
// CHECK: gpu.barrier
// CHECK: arith.negf
// CHECK: memref.store {{.+}} : memref<768xbf16>
// CHECK: gpu.func @k0_reduce_sum_partials(
// CHECK: %[[G:.+]] = gpu.block_id y
// CHECK: vector.load {{.+}} vector<8xbf16>
// CHECK: gpu.barrier
// CHECK: memref.store {{.+}}, %arg2[%c0, %[[G]], {{.+}}] : memref<1x48x768xf32>
func.func @tokens_bias(%dy: tensor<8x197x768xbf16>) -> tensor<768xbf16> {
  %0 = fuse.reduce_sum %dy {axes = array<i64: 0, 1>} : tensor<8x197x768xbf16>
  %1 = fuse.neg %0 : tensor<768xbf16>
  return %1 : tensor<768xbf16>
}
