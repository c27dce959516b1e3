// fuse.norm_grad (NormGrad.cpp): a rows pass over blocks of rows, each
// block writing its columns' partial sums of dy * x^ and dy into a
// workspace [2, G, D], then the kernel itself adds each column's G partials
// (32 columns a block of 1024 threads). Without parameter gradients there
// are no partials: one launch, the epilogue (the residual's gradient)
// fused into it.
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90},fusec-tile-kernels{arch=sm_90})' 2>/dev/null | FileCheck %s
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90},fusec-tile-kernels{arch=sm_90})' 2>/dev/null | FileCheck %s --check-prefix=ROWS

// 600 rows of 4096 bf16: 200 blocks of 3 rows (about two an SM), 256
// threads holding two 16-byte vectors of a row each.
// CHECK-LABEL: func.func @resident
// CHECK: %[[PARTS:.+]] = memref.alloc() : memref<2x200x4096xf32>
// CHECK: gpu.launch_func @resident_kernels::@k0_norm_grad_rows blocks in (%c200, {{.+}} threads in (%c256, {{.+}} args({{.+}}, %[[PARTS]] : memref<2x200x4096xf32>)
// CHECK: gpu.launch_func @resident_kernels::@k0_norm_grad blocks in (%c128, {{.+}} threads in (%c1024, {{.+}} args({{.+}}, %[[PARTS]] : memref<2x200x4096xf32>)
// CHECK-NOT: gpu.launch_func
// The rows pass copies dy and x into 4 shared-memory stages with cp.async,
// 3 rows ahead (each thread its own vectors: 12 copies before the loop, 4
// in it), and never loads them from memory again (the epilogue takes them
// from the stage).
// ROWS-LABEL: gpu.module @resident_kernels
// ROWS: gpu.func @k0_norm_grad_rows
// ROWS-COUNT-12: nvgpu.device_async_copy {{.+}} : memref<600x4096xbf16> to memref<4x2x4096xbf16, #gpu.address_space<workgroup>>
// ROWS: scf.for
// ROWS-COUNT-4: nvgpu.device_async_copy {{.+}} : memref<600x4096xbf16> to memref<4x2x4096xbf16, #gpu.address_space<workgroup>>
// ROWS-NOT: vector.load {{.+}} : memref<600x4096xbf16>
// ROWS: gpu.module @streamed_dx_kernels
func.func @resident(%dy: tensor<600x4096xbf16>, %x: tensor<600x4096xbf16>, %g: tensor<4096xbf16>) -> (tensor<600x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>) {
  %0:3 = fuse.norm_grad %dy, %x scale(%g : tensor<4096xbf16>) : tensor<600x4096xbf16>
  return %0#0, %0#1, %0#2 : tensor<600x4096xbf16>, tensor<4096xbf16>, tensor<4096xbf16>
}

// A long row (65537, no vector divides it): the streamed passes; only dx is
// wanted, with the residual's gradient added in the same launch.
// CHECK-LABEL: func.func @streamed_dx
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch_func @streamed_dx_kernels::@k0_norm_grad blocks in (%c3, {{.+}} threads in (%c256,
// CHECK-NOT: gpu.launch_func
func.func @streamed_dx(%dy: tensor<3x65537xf32>, %x: tensor<3x65537xf32>, %r: tensor<3x65537xf32>) -> tensor<3x65537xf32> {
  %0:3 = fuse.norm_grad %dy, %x {rms} : tensor<3x65537xf32>
  %1 = fuse.add %0#0, %r : tensor<3x65537xf32>, tensor<3x65537xf32>
  return %1 : tensor<3x65537xf32>
}

// 1000 rows of 768 f32 with the residual's gradient: a warp a row, 8 rows
// a block (250 blocks of 4 rows), 6 vectors a lane read straight from
// memory (no stages), shuffles alone reducing each row; the residual's 6
// vectors are loaded before the first store; the warps' column sums meet in
// shared memory [8, 2, 768] and are added in warp order.
// CHECK-LABEL: func.func @warp_rows
// CHECK: memref.alloc() : memref<2x250x768xf32>
// CHECK: gpu.launch_func @warp_rows_kernels::@k0_norm_grad_rows blocks in (%c250, {{.+}} threads in (%c256, {{.+}} dynamic_shared_memory_size %c49152_i32
// ROWS-LABEL: gpu.module @warp_rows_kernels
// ROWS: gpu.func @k0_norm_grad_rows
// ROWS: memref.view {{.+}} to memref<8x2x768xf32, #gpu.address_space<workgroup>>
// ROWS-NOT: nvgpu.device_async_copy
// ROWS: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c8
// ROWS-COUNT-6: vector.load %arg0[{{.+}}] {alignment = 16 : i64} : memref<1000x768xf32>, vector<4xf32>
// ROWS-COUNT-20: gpu.shuffle xor
// ROWS-NOT: gpu.barrier
// ROWS-COUNT-6: vector.load %arg3[{{.+}}] {alignment = 16 : i64} : memref<1000x768xf32>, vector<4xf32>
// ROWS-NOT: vector.load %arg3
// ROWS-COUNT-6: vector.store {{.+}} : memref<1000x768xf32>, vector<4xf32>
// ROWS: gpu.barrier
// ROWS: gpu.return
func.func @warp_rows(%dy: tensor<1000x768xf32>, %x: tensor<1000x768xf32>, %g: tensor<768xf32>, %r: tensor<1000x768xf32>) -> (tensor<1000x768xf32>, tensor<768xf32>, tensor<768xf32>) {
  %0:3 = fuse.norm_grad %dy, %x scale(%g : tensor<768xf32>) : tensor<1000x768xf32>
  %1 = fuse.add %r, %0#0 : tensor<1000x768xf32>, tensor<1000x768xf32>
  return %1, %0#1, %0#2 : tensor<1000x768xf32>, tensor<768xf32>, tensor<768xf32>
}
