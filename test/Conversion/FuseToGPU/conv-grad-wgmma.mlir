// On sm_90a an NHWC stride-1 filter gradient whose input channels fill
// 128-byte panels takes the warpgroup GEMM: A is the output gradient
// [pixels, Co] through a 2-D tensor map, B the input through the forward's
// im2col map, both MN-major; k walks the batch's output pixels and splits
// across blocks as on mma.sync (conv-grad-split-k.mlir). With one block
// per SM the splits round down to one wave. The split mainloop launches
// first with the kernel's arguments: memrefs, the workspace, then the maps.
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90a},fusec-tile-kernels{arch=sm_90a})' 2>/dev/null | FileCheck %s

// ResNet-50's conv2_x 3x3 at batch 32: n = 9 taps x 64 channels, three
// tiles of 64 x 192 (one consumer warpgroup), 44 splits of the 1568
// k-tiles.
// CHECK-LABEL: func.func @deep
// CHECK: %[[PARTS:.+]] = memref.alloc() : memref<44x1x64x576xf32>
// CHECK: %[[DY:.+]] = fuse.tensor_map %arg1 {box = array<i64: 64, 64>, dims = array<i64: 64, 100352>, strides = array<i64: 128>}
// CHECK: %[[X:.+]] = fuse.tensor_map %arg0 {box = array<i64: 64, 64>, dims = array<i64: 64, 56, 56, 32>, im2col_lower = array<i64: -1, -1>, im2col_upper = array<i64: -1, -1>
// CHECK: gpu.launch_func @deep_kernels::@k0_conv2d_filter_grad_splitk blocks in (%c3, %c1{{[_0-9]*}}, %c44) threads in (%c256, {{.+}} dynamic_shared_memory_size %c131136_i32 args({{.+}}, %[[PARTS]] : memref<44x1x64x576xf32>, %[[DY]] : !llvm.ptr, %[[X]] : !llvm.ptr)
// CHECK: gpu.launch_func @deep_kernels::@k0_conv2d_filter_grad blocks in (%c144, {{.+}} args({{.+}}, %[[PARTS]] : memref<44x1x64x576xf32>, %[[DY]] : !llvm.ptr, %[[X]] : !llvm.ptr) {fusec.kernel_config = #fuse.kernel_config<family = gemm_wgmma, tile = #fuse.tile<bm = 64, bn = 192, bk = 64, warps_m = 4, warps_n = 1, stages = 4>
func.func @deep(%x: tensor<32x56x56x64xbf16>, %dy: tensor<32x56x56x64xbf16>) -> tensor<64x3x3x64xbf16> {
  %0 = fuse.conv2d_filter_grad %x, %dy {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>} : tensor<32x56x56x64xbf16>, tensor<32x56x56x64xbf16>
  return %0 : tensor<64x3x3x64xbf16>
}

// conv4_x: the ranking weighs the splits' partial sums (written and read
// back) against the mainloop: 36 tiles of 128 x 128 (two consumers) in 3
// splits (108 blocks, one wave at one block per SM) rather than 18 of 128
// x 256 in 7 (twice the partial sums).
// CHECK-LABEL: func.func @wide
// CHECK: memref.alloc() : memref<3x1x256x2304xf32>
// CHECK: gpu.launch_func @wide_kernels::@k0_conv2d_filter_grad_splitk blocks in (%c36, %c1{{[_0-9]*}}, %c3) threads in (%c384,
// CHECK: family = gemm_wgmma, tile = #fuse.tile<bm = 128, bn = 128, bk = 64, warps_m = 8, warps_n = 1, stages = 4>
func.func @wide(%x: tensor<32x14x14x256xf16>, %dy: tensor<32x14x14x256xf16>) -> tensor<256x3x3x256xf16> {
  %0 = fuse.conv2d_filter_grad %x, %dy {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>} : tensor<32x14x14x256xf16>, tensor<32x14x14x256xf16>
  return %0 : tensor<256x3x3x256xf16>
}

// A strided window is not an im2col map's; 40 channels are not whole
// 128-byte panels of one tap: both stay on mma.sync.
// CHECK-LABEL: func.func @strided
// CHECK: family = gemm_mma_sync
func.func @strided(%x: tensor<8x28x28x64xf16>, %dy: tensor<8x14x14x64xf16>) -> tensor<64x3x3x64xf16> {
  %0 = fuse.conv2d_filter_grad %x, %dy {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<8x28x28x64xf16>, tensor<8x14x14x64xf16>
  return %0 : tensor<64x3x3x64xf16>
}
// CHECK-LABEL: func.func @narrow
// CHECK: family = gemm_mma_sync
func.func @narrow(%x: tensor<8x28x28x40xf16>, %dy: tensor<8x28x28x64xf16>) -> tensor<64x3x3x40xf16> {
  %0 = fuse.conv2d_filter_grad %x, %dy {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>} : tensor<8x28x28x40xf16>, tensor<8x28x28x64xf16>
  return %0 : tensor<64x3x3x40xf16>
}

// The reduction's function takes the workspace before the maps; the
// mainloop's keeps every block resident alone (its pipeline of 128 KiB
// fits an SM once; setmaxnreg moves the producer's registers to the
// consumer), loads both operands by TMA and runs MN-major wgmma.
// CHECK: gpu.func @k0_conv2d_filter_grad(%arg0: memref<32x56x56x64xbf16>, %arg1: memref<32x56x56x64xbf16>, %arg2: memref<64x3x3x64xbf16>, %arg3: memref<44x1x64x576xf32>, %arg4: !llvm.ptr, %arg5: !llvm.ptr) kernel attributes {fusec.family = "gemm_wgmma", fusec.tensor_map_args = array<i64: 4, 5>
// CHECK-NOT: nvvm.wgmma
// CHECK: gpu.func @k0_conv2d_filter_grad_splitk({{.+}} kernel attributes {fusec.tensor_map_args = array<i64: 4, 5>, known_block_size = array<i32: 256, 1, 1>, nvvm.minctasm = 1 : i32}
// CHECK: nvvm.setmaxregister  decrease 40
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.+}} im2col
// CHECK: nvvm.setmaxregister  increase 232
// CHECK: nvvm.wgmma.mma_async {{.+}} <m = 64, n = 192, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK: memref.store %{{.+}}, %arg3[
