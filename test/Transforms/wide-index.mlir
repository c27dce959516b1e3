// Kernels index in 32 bits while every tensor they touch has fewer than 2^30
// elements, and in 64 bits otherwise: the gpu.module's data layout carries
// the width, and both backends lower `index` by it.
// RUN: fusec-opt %s --fusec-pipeline-tiled -split-input-file 2>/dev/null | FileCheck %s
// RUN: fusec-opt %s --fusec-pipeline-tiled=arch=sm_90a -split-input-file 2>/dev/null | FileCheck %s --check-prefix=HOPPER
// RUN: fusec-opt %s --fusec-pipeline-ptx -split-input-file -o /dev/null
// RUN: rm -rf %t && mkdir %t && fusec-opt %s --fusec-pipeline-tiled -split-input-file 2>/dev/null | fusec-translate --fusec-to-cuda -split-input-file | FileCheck %s --check-prefix=CUDA

// Just under 2^30 elements: 32-bit.
// CHECK-LABEL: func.func @narrow
// CHECK: gpu.module @narrow_kernels attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>}
// CUDA-LABEL: // k0_relu
// CUDA: int thread_id_x = threadIdx.x;
func.func @narrow(%x: tensor<32767x32768xbf16>) -> tensor<32767x32768xbf16> {
  %0 = fuse.relu %x : tensor<32767x32768xbf16>
  return %0 : tensor<32767x32768xbf16>
}

// -----

// 2^31 elements, which 32-bit offsets would wrap: 64-bit.
// CHECK-LABEL: func.func @wide
// CHECK: gpu.module @wide_kernels attributes {dlti.dl_spec = #dlti.dl_spec<index = 64 : i64>}
// CUDA-LABEL: // k0_relu
// CUDA: long long thread_id_x = threadIdx.x;
func.func @wide(%x: tensor<65536x32768xbf16>) -> tensor<65536x32768xbf16> {
  %0 = fuse.relu %x : tensor<65536x32768xbf16>
  return %0 : tensor<65536x32768xbf16>
}

// -----

// Inputs count as results do: a pool over 2^32 values into one output loops
// to 2^32 (it once wrapped to 0 and read nothing).
// CHECK-LABEL: func.func @big_pool
// CHECK: gpu.module @big_pool_kernels attributes {dlti.dl_spec = #dlti.dl_spec<index = 64 : i64>}
// CHECK: %[[N:.*]] = arith.constant 4294967296 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]]
func.func @big_pool(%x: tensor<1x65536x65536x1xf16>) -> tensor<1x1x1x1xf16> {
  %0 = fuse.global_avg_pool %x : tensor<1x65536x65536x1xf16>
  return %0 : tensor<1x1x1x1xf16>
}

// -----

// TMA box coordinates are signed 32-bit: a GEMM with a dimension of 2^31 or
// more takes mma.sync on sm_90a, not the warpgroup GEMM.
// HOPPER: func.func @tall
// HOPPER: fusec.kernel_config = #fuse.kernel_config<family = gemm_mma_sync
// HOPPER: func.func @short
// HOPPER: fusec.kernel_config = #fuse.kernel_config<family = gemm_wgmma
// HOPPER: gpu.module @tall_kernels attributes {dlti.dl_spec = #dlti.dl_spec<index = 64 : i64>}
func.func @tall(%a: tensor<2147483712x64xf16>, %b: tensor<64x64xf16>) -> tensor<2147483712x64xf16> {
  %0 = fuse.matmul %a, %b : tensor<2147483712x64xf16>, tensor<64x64xf16>
  return %0 : tensor<2147483712x64xf16>
}
func.func @short(%a: tensor<4096x64xf16>, %b: tensor<64x64xf16>) -> tensor<4096x64xf16> {
  %0 = fuse.matmul %a, %b : tensor<4096x64xf16>, tensor<64x64xf16>
  return %0 : tensor<4096x64xf16>
}
