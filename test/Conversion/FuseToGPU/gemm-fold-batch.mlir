// A matmul whose rhs is 2-D (shared by every batch) folds the lhs's batch
// dims into its rows, as a linear does: 8 x 197 tokens are one M of 1576
// (13 x 16 tiles of 128 x 192, one TMA map of 1576 rows), not 8 batches of
// 197 rows each padded to 256. The epilogue's rows delinearize back to
// [8, 197]. With bn = 192 and 8 columns a thread, a row takes 24 of the
// 256 consumer threads: 10 rows a round, the last 16 threads idle, so the
// GeLU gradient's full-size input still goes through the staged epilogue
// (16-byte loads, all issued before the stores) instead of the fragment
// one (42 us against 29, H200). With 12 k-tiles and 208 tiles for 132
// blocks, the kernel is persistent: each block walks tiles x, x + 132, and
// the epilogue stages through memory of its own after the pipeline's
// (4 stages of 40 KiB, their barriers, then two passes of 64 rows).
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90a},fusec-tile-kernels{arch=sm_90a})' 2>/dev/null | FileCheck %s

// CHECK-LABEL: func.func @fold
// CHECK: fuse.tensor_map %arg0 {box = array<i64: 64, 128>, dims = array<i64: 768, 1576>, strides = array<i64: 1536>}
// CHECK: gpu.launch_func @fold_kernels::@k0_matmul blocks in (%c132, %c1{{.*}}, %c1{{.*}}) {{.+}} dynamic_shared_memory_size %c215168_i32 {{.+}}bn = 192
// A batched rhs keeps the batches: 3 x ceil(37 / 128) x ceil(48 / bn).
// CHECK-LABEL: func.func @batched
// CHECK: gpu.launch_func @batched_kernels::@k0_matmul blocks in (%c1{{.*}}, %c3{{.*}}, %c1{{.*}})
// CHECK-LABEL: gpu.module @fold_kernels
// CHECK-LABEL: gpu.func @k0_matmul(
// CHECK: memref.view %{{.+}}[%c163968][] : {{.+}} to memref<1x64x200xf32
// CHECK: scf.for %{{.+}} = %block_id_x to %c208 step %c132 {
// CHECK: scf.for %{{.+}} = %block_id_x to %c208 step %c132 {
// CHECK: %[[BUSY:.+]] = arith.constant 240 : index
// CHECK: arith.cmpi slt, %{{.+}}, %[[BUSY]] : index
// CHECK: vector.load %arg2[{{.+}}] {alignment = 16 : i64} : memref<8x197x3072xbf16>, vector<8xbf16>
// CHECK-NOT: vector.store {{.+}} %arg3[
// CHECK: vector.load %arg2[{{.+}}] {alignment = 16 : i64} : memref<8x197x3072xbf16>, vector<8xbf16>
// CHECK: vector.store {{.+}}, %arg3[{{.+}}] {alignment = 16 : i64} : memref<8x197x3072xbf16>, vector<8xbf16>
// CHECK: gpu.return
func.func @fold(%dy: tensor<8x197x768xbf16>, %w: tensor<768x3072xbf16>, %h: tensor<8x197x3072xbf16>) -> tensor<8x197x3072xbf16> {
  %0 = fuse.matmul %dy, %w : tensor<8x197x768xbf16>, tensor<768x3072xbf16>
  %1 = fuse.activation_grad %0, %h {activation = #fuse.activation<gelu_tanh>} : tensor<8x197x3072xbf16>
  return %1 : tensor<8x197x3072xbf16>
}

func.func @batched(%a: tensor<3x37x24xbf16>, %b: tensor<3x24x48xbf16>) -> tensor<3x37x48xbf16> {
  %0 = fuse.matmul %a, %b : tensor<3x37x24xbf16>, tensor<3x24x48xbf16>
  return %0 : tensor<3x37x48xbf16>
}
