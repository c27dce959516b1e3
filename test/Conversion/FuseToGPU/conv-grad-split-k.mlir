// A filter gradient reduces over every pixel of the batch: a deep k under
// few output tiles. Its blocks split k (GemmSchedule.h's splitKOf) so that
// the tiles fill the SMs: a sibling gpu.func runs the mainloop with one
// block per tile and k-split (grid z), storing f32 sums into a workspace
// [splits, groups, m, n]; the kernel itself then adds the splits in order
// and applies the fused epilogue. A shallow reduction keeps one launch.
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90},fusec-tile-kernels{arch=sm_90})' 2>/dev/null | FileCheck %s

// CHECK-LABEL: func.func @deep
// The ResNet-50 layer conv2_x 3x3 at batch 32: 9 tiles of 64 x 64 (the
// tile split k takes), 44 splits of 36 k-tiles (one wave of 3 blocks per
// SM).
// CHECK: %[[PARTS:.+]] = memref.alloc() : memref<44x1x64x576xf32>
// CHECK: gpu.launch_func @deep_kernels::@k0_conv2d_filter_grad_splitk blocks in (%c9, %c1{{[_0-9]*}}, %c44) threads in (%c128, {{.+}} dynamic_shared_memory_size %c65536_i32 args({{.+}}, %[[PARTS]] : memref<44x1x64x576xf32>)
// The reduction: 4 threads per 4 columns (64 x 576 / 4 runs), each adding
// 11 of the splits, their sums meeting in 4 KiB of shared memory.
// CHECK: gpu.launch_func @deep_kernels::@k0_conv2d_filter_grad blocks in (%c144, {{.+}} threads in (%c256, {{.+}} dynamic_shared_memory_size %c4096_i32 args({{.+}}, %[[PARTS]] : memref<44x1x64x576xf32>)
func.func @deep(%x: tensor<32x56x56x64xbf16>, %dy: tensor<32x56x56x64xbf16>) -> tensor<64x3x3x64xbf16> {
  %0 = fuse.conv2d_filter_grad %x, %dy {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>} : tensor<32x56x56x64xbf16>, tensor<32x56x56x64xbf16>
  return %0 : tensor<64x3x3x64xbf16>
}

// Groups are the GEMM's batch (the workspace's second axis, the
// mainloop's grid y); NCHW's filter rows store one element at a time. Its
// 13 splits take one thread per column, without shared memory.
// CHECK-LABEL: func.func @grouped_nchw
// CHECK: memref.alloc() : memref<{{[0-9]+}}x2x32x216xf32>
// CHECK: gpu.launch_func @grouped_nchw_kernels::@k0_conv2d_filter_grad_splitk blocks in (%c{{[0-9]+}}, %c2{{[_0-9]*}}, %c{{[0-9]+}})
// CHECK: gpu.launch_func @grouped_nchw_kernels::@k0_conv2d_filter_grad blocks in (%c54, {{[^)]+}}) threads in (%c256, {{[^)]+}}) args(
func.func @grouped_nchw(%x: tensor<8x48x30x29xf16>, %dy: tensor<8x64x30x29xf16>) -> tensor<64x24x3x3xf16> {
  %0 = fuse.conv2d_filter_grad %x, %dy {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, groups = 2, layout = #fuse.layout<nchw>} : tensor<8x48x30x29xf16>, tensor<8x64x30x29xf16>
  return %0 : tensor<64x24x3x3xf16>
}

// Few k-tiles: no split, one launch and no workspace.
// CHECK-LABEL: func.func @shallow
// CHECK-NOT: memref.alloc
// CHECK-NOT: _splitk
// CHECK: gpu.launch_func @shallow_kernels::@k0_conv2d_filter_grad blocks
// CHECK-NOT: gpu.launch_func
// CHECK: return
func.func @shallow(%x: tensor<2x9x11x24xbf16>, %dy: tensor<2x9x11x40xbf16>) -> tensor<40x3x3x24xbf16> {
  %0 = fuse.conv2d_filter_grad %x, %dy {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>} : tensor<2x9x11x24xbf16>, tensor<2x9x11x40xbf16>
  return %0 : tensor<40x3x3x24xbf16>
}

// The kernel's function: each thread's 11 splits loaded at once, its share
// staged, then the shares added in order and the filter gradient stored.
// The mainloop's function stores the parts.
// CHECK: gpu.func @k0_conv2d_filter_grad(
// CHECK-COUNT-11: vector.load %arg3[{{.+}} : memref<44x1x64x576xf32>, vector<4xf32>
// CHECK: gpu.barrier
// CHECK-COUNT-4: vector.load %{{.+}} : memref<4x64x4xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: vector.store {{.+}}, %arg2[
// CHECK: gpu.func @k0_conv2d_filter_grad_splitk(
// CHECK: nvvm.mma.sync
// CHECK: memref.store %{{.+}}, %arg3[
