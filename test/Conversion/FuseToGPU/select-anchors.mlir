// fusec-select-kernel-config picks each kernel's family (and tile) by its
// anchor, its types and the target, and says so in a remark.
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_80})' 2>/dev/null | FileCheck %s --check-prefixes=CHECK,SM80
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90})' 2>/dev/null | FileCheck %s --check-prefixes=CHECK,SM80
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90a})' 2>/dev/null | FileCheck %s --check-prefixes=CHECK,SM90A
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_80 fp32-math=tf32})' 2>/dev/null | FileCheck %s --check-prefix=TF32
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90a})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// CHECK-LABEL: func.func @anchors
// SM80: fuse.kernel "k0_linear"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = gemm_mma_sync, tile = #fuse.tile<bm = 64, bn = 64, bk = 64, warps_m = 2, warps_n = 2, stages = 4>, source = "heuristic">
// SM90A: fuse.kernel "k0_linear"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = gemm_wgmma, tile = #fuse.tile<bm = 64, bn = 64, bk = 64, warps_m = 4, warps_n = 1, stages = 2>, source = "heuristic">
// CHECK: fuse.kernel "k1_linear"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = gemm_simt, tile = #fuse.tile<bm = 64, bn = 64, bk = 16, tm = 4, tn = 4>, source = "heuristic">
// SM80: fuse.kernel "k2_attention"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = attention_mma_sync, tile = #fuse.attention_tile<rows = 128, keys = 64, warps = 8>, source = "heuristic">
// SM90A: fuse.kernel "k2_attention"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = attention_wgmma, tile = #fuse.attention_tile<rows = 128, keys = 128>, source = "heuristic">
// CHECK: fuse.kernel "k3_attention"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = attention_direct, source = "heuristic">
// CHECK: fuse.kernel "k4_conv2d"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = direct_conv, source = "heuristic">
// CHECK: fuse.kernel "k5_max_pool2d"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = pool_resample, source = "heuristic">
// CHECK: fuse.kernel "k6_transpose"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = gather, source = "heuristic">
// CHECK: fuse.kernel "k7_softmax"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = row_reduction, source = "heuristic">
// CHECK: fuse.kernel "k8_relu"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = elementwise, source = "heuristic">

// f32 with fp32-math=tf32 takes the tensor cores.
// TF32: fuse.kernel "k1_linear"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = gemm_mma_sync, tile = #fuse.tile<bm = 64, bn = 128, bk = 16, warps_m = 2, warps_n = 2, stages = 4>, source = "heuristic">

// REMARK: select-anchors.mlir:[[@LINE+14]]:8: remark: kernel 'k0_linear': gemm_wgmma #fuse.tile<bm = 64, bn = 64, bk = 64, warps_m = 4, warps_n = 1, stages = 2>, from the heuristic
// REMARK: select-anchors.mlir:[[@LINE+14]]:8: remark: kernel 'k1_linear': gemm_simt #fuse.tile<bm = 64, bn = 64, bk = 16, tm = 4, tn = 4>, from the heuristic
// REMARK: select-anchors.mlir:[[@LINE+14]]:8: remark: kernel 'k2_attention': attention_wgmma #fuse.attention_tile<rows = 128, keys = 128>, from the heuristic
// REMARK: remark: kernel 'k3_attention': attention_direct, from the heuristic
// REMARK: remark: kernel 'k8_relu': elementwise, from the heuristic
func.func @anchors(%x: tensor<64x128xf16>, %w: tensor<256x128xf16>,
                   %f: tensor<64x128xf32>, %g: tensor<256x128xf32>,
                   %q: tensor<1x2x64x64xf16>, %kv: tensor<1x2x64x64xf16>,
                   %q32: tensor<1x2x8x16xf32>, %img: tensor<1x9x9x16xbf16>,
                   %dw: tensor<16x3x3x1xbf16>, %t: tensor<3x37x45xf16>,
                   %s: tensor<4x200xf32>)
    -> (tensor<64x256xf16>, tensor<64x256xf32>, tensor<1x2x64x64xf16>,
        tensor<1x2x8x16xf32>, tensor<1x9x9x16xbf16>, tensor<1x5x5x16xbf16>,
        tensor<3x45x37xf16>, tensor<4x200xf32>, tensor<4x200xf32>) {
  %0 = fuse.linear %x, %w : tensor<64x128xf16>, tensor<256x128xf16>
  %1 = fuse.linear %f, %g : tensor<64x128xf32>, tensor<256x128xf32>
  %2 = fuse.attention %q, %kv, %kv : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>
  %3 = fuse.attention %q32, %q32, %q32 : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  %4 = fuse.conv2d %img, %dw {padding = array<i64: 1, 1>, groups = 16} : tensor<1x9x9x16xbf16>, tensor<16x3x3x1xbf16>
  %5 = fuse.max_pool2d %img {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<1x9x9x16xbf16>
  %6 = fuse.transpose %t {permutation = array<i64: 0, 2, 1>} : tensor<3x37x45xf16>
  %7 = fuse.softmax %s : tensor<4x200xf32>
  %8 = fuse.relu %s : tensor<4x200xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<64x256xf16>, tensor<64x256xf32>, tensor<1x2x64x64xf16>, tensor<1x2x8x16xf32>, tensor<1x9x9x16xbf16>, tensor<1x5x5x16xbf16>, tensor<3x45x37xf16>, tensor<4x200xf32>, tensor<4x200xf32>
}
