// The staged GEMM epilogue loads the full-size inputs of several rows (a
// residual here) before it stores any of them: the compiler may not move a
// load above a store to another buffer it cannot prove apart, so loads
// issued between stores would each wait out the memory latency. Rows past
// the result load the last row (clamped) and store nothing.
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90a},fusec-tile-kernels{arch=sm_90a})' 2>/dev/null | FileCheck %s

// CHECK-LABEL: gpu.func @k0_conv2d
// CHECK: %[[LAST:.+]] = arith.constant 783 : index
// CHECK: arith.minsi %{{.+}}, %[[LAST]] : index
// CHECK: vector.load %arg2[{{.+}}] {alignment = 16 : i64} : memref<4x14x14x256xbf16>, vector<8xbf16>
// CHECK-NOT: vector.store %{{.+}}, %arg3[
// CHECK: vector.load %arg2[{{.+}}] {alignment = 16 : i64} : memref<4x14x14x256xbf16>, vector<8xbf16>
// CHECK-NOT: vector.store %{{.+}}, %arg3[
// CHECK: vector.load %arg2[{{.+}}] {alignment = 16 : i64} : memref<4x14x14x256xbf16>, vector<8xbf16>
// CHECK-NOT: vector.store %{{.+}}, %arg3[
// CHECK: vector.load %arg2[{{.+}}] {alignment = 16 : i64} : memref<4x14x14x256xbf16>, vector<8xbf16>
// CHECK-NOT: vector.load %arg2
// CHECK: vector.store %{{.+}}, %arg3[
// CHECK-NOT: vector.load %arg2
// CHECK: gpu.return
func.func @residual(%x: tensor<4x14x14x64xbf16>, %w: tensor<256x1x1x64xbf16>, %r: tensor<4x14x14x256xbf16>) -> tensor<4x14x14x256xbf16> {
  %c = fuse.conv2d %x, %w : tensor<4x14x14x64xbf16>, tensor<256x1x1x64xbf16>
  %s = fuse.add %c, %r : tensor<4x14x14x256xbf16>, tensor<4x14x14x256xbf16>
  return %s : tensor<4x14x14x256xbf16>
}
