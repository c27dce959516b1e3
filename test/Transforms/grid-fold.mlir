// CUDA caps grid y and z at 65535 blocks. A batch past that folds the grid
// into x, and the kernel recovers its batch from the linear block id.
// RUN: fusec-opt %s --fusec-pipeline-tiled -split-input-file 2>/dev/null | FileCheck %s

// The SIMT GEMM puts batches on z: 70000 of them launch along x.
// CHECK-LABEL: func.func @batched
// CHECK: gpu.launch_func @{{.*}}::@k0_matmul blocks in (%c70000, %c1, %c1)
// CHECK: gpu.func @k0_matmul
// CHECK-NOT: gpu.block_id y
// CHECK-NOT: gpu.block_id z
// CHECK: %[[ID:.*]] = gpu.block_id x
// CHECK: vector.load %arg0[%[[ID]],
func.func @batched(%a: tensor<70000x16x16xf32>, %b: tensor<70000x16x16xf32>) -> tensor<70000x16x16xf32> {
  %0 = fuse.matmul %a, %b : tensor<70000x16x16xf32>, tensor<70000x16x16xf32>
  return %0 : tensor<70000x16x16xf32>
}

// -----

// Attention puts batch x heads on y and query tiles on x: 2 x 65537 blocks
// launch as 131074, each splitting its id into (x, y).
// CHECK-LABEL: func.func @heads
// CHECK: gpu.launch_func @{{.*}}::@k0_attention blocks in (%c131074, %c1, %c1)
// CHECK: gpu.func @k0_attention
// CHECK-NOT: gpu.block_id y
// CHECK: %[[ID:.*]] = gpu.block_id x
// CHECK-DAG: arith.remui %[[ID]], %c2
// CHECK-DAG: arith.divui %[[ID]], %c2
func.func @heads(%q: tensor<1x65537x129x16xbf16>, %k: tensor<1x65537x8x16xbf16>, %v: tensor<1x65537x8x16xbf16>) -> tensor<1x65537x129x16xbf16> {
  %0 = fuse.attention %q, %k, %v : tensor<1x65537x129x16xbf16>, tensor<1x65537x8x16xbf16>, tensor<1x65537x8x16xbf16>
  return %0 : tensor<1x65537x129x16xbf16>
}
