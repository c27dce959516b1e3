// The convolution gradients as kernels: fuse.conv_transpose2d (the data
// gradient) and fuse.conv2d_filter_grad (the weight gradient) run on the
// convolution's implicit-GEMM families, a transpose with narrow groups on
// the direct family.
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_80})' 2>/dev/null | FileCheck %s --check-prefixes=CHECK,SM80
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90a})' 2>/dev/null | FileCheck %s --check-prefixes=CHECK,SM90A
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_80 fp32-math=tf32})' 2>/dev/null | FileCheck %s --check-prefix=TF32
// RUN: fusec-opt %s --pass-pipeline='builtin.module(func.func(fusec-form-kernels),fusec-select-kernel-config{arch=sm_90a},fusec-tile-kernels{arch=sm_90a})' 2>/dev/null | FileCheck %s --check-prefix=GPU

// CHECK-LABEL: func.func @grads
// CHECK: fuse.kernel "k0_conv_transpose2d"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = gemm_mma_sync, tile = #fuse.tile<bm = 128, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4>, source = "heuristic">
// CHECK: fuse.add
// CHECK: fuse.relu
// SM80: fuse.kernel "k1_conv_transpose2d"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = gemm_mma_sync, tile = #fuse.tile<bm = 64, bn = 64, bk = 64, warps_m = 2, warps_n = 2, stages = 4>, source = "heuristic">
// SM90A: fuse.kernel "k1_conv_transpose2d"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = gemm_wgmma, tile = #fuse.tile<bm = 64, bn = 64, bk = 64, warps_m = 4, warps_n = 1, stages = 4>, source = "heuristic">
// CHECK: fuse.kernel "k2_conv_transpose2d"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = direct_conv, source = "heuristic">
// CHECK: fuse.kernel "k3_conv_transpose2d"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = gemm_simt, tile = #fuse.tile<bm = 64, bn = 64, bk = 16, tm = 4, tn = 4>, source = "heuristic">
// CHECK: fuse.kernel "k4_conv2d_filter_grad"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = gemm_mma_sync, tile = #fuse.tile<bm = 64, bn = 64, bk = 64, warps_m = 2, warps_n = 2, stages = 4>, source = "heuristic">
// CHECK: fuse.kernel "k5_conv2d_filter_grad"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = gemm_mma_sync, tile = #fuse.tile<bm = 64, bn = 64, bk = 64, warps_m = 2, warps_n = 2, stages = 4>, source = "heuristic">
// CHECK: fuse.kernel "k6_conv2d_filter_grad"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = gemm_simt, tile = #fuse.tile<bm = 64, bn = 64, bk = 16, tm = 4, tn = 4>, source = "heuristic">

// f32 with fp32-math=tf32 takes the tensor cores.
// TF32: fuse.kernel "k3_conv_transpose2d"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = gemm_mma_sync, tile = #fuse.tile<bm = 128, bn = 64, bk = 16, warps_m = 2, warps_n = 2, stages = 4>, source = "heuristic">
// TF32: fuse.kernel "k6_conv2d_filter_grad"{{.+}}fusec.kernel_config = #fuse.kernel_config<family = gemm_mma_sync, tile = #fuse.tile<bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 4>, source = "heuristic">

// Each becomes its family's gpu.func; the stride-2 transpose tests which
// taps land on an input pixel (remainder by the stride).
// GPU: gpu.func @k0_conv_transpose2d({{.+}}) kernel attributes {{{.*}}fusec.family = "gemm_mma_sync"
// GPU: arith.remui %{{.+}}, %c2_
// GPU: gpu.func @k1_conv_transpose2d({{.+}}) kernel attributes {{{.*}}fusec.family = "gemm_wgmma"
// GPU: gpu.func @k2_conv_transpose2d({{.+}}) kernel attributes {{{.*}}fusec.family = "direct_conv"
// GPU: gpu.func @k3_conv_transpose2d({{.+}}) kernel attributes {{{.*}}fusec.family = "gemm_simt"
// GPU: gpu.func @k4_conv2d_filter_grad({{.+}}) kernel attributes {{{.*}}fusec.family = "gemm_mma_sync"
// GPU: nvgpu.ldmatrix {{.+}}transpose = true
// GPU: gpu.func @k5_conv2d_filter_grad({{.+}}) kernel attributes {{{.*}}fusec.family = "gemm_mma_sync"
// GPU: gpu.func @k6_conv2d_filter_grad({{.+}}) kernel attributes {{{.*}}fusec.family = "gemm_simt"

func.func @grads(%x: tensor<2x9x11x32xf16>, %wt: tensor<32x3x3x48xf16>, %bias: tensor<48xf16>,
                 %r: tensor<2x18x22x48xf16>,
                 %y: tensor<1x14x14x64xbf16>, %w64: tensor<64x3x3x64xbf16>,
                 %d: tensor<1x9x9x16xf16>, %dw: tensor<16x3x3x1xf16>,
                 %x32: tensor<2x7x5x24xf32>, %w32: tensor<24x3x3x40xf32>,
                 %dy: tensor<2x9x11x48xf16>,
                 %xn: tensor<2x48x9x11xbf16>, %dyn: tensor<2x36x9x11xbf16>,
                 %dy32: tensor<2x7x5x40xf32>)
    -> (tensor<2x18x22x48xf16>, tensor<1x14x14x64xbf16>, tensor<1x17x17x16xf16>,
        tensor<2x7x5x40xf32>, tensor<48x3x3x32xf16>, tensor<36x16x3x3xbf16>,
        tensor<40x3x3x24xf32>) {
  // Stride 2, output_padding, bias and a fused residual add and ReLU.
  %0 = fuse.conv_transpose2d %x, %wt, %bias {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>,
      output_padding = array<i64: 1, 1>} : tensor<2x9x11x32xf16>, tensor<32x3x3x48xf16>, tensor<48xf16>
  %1 = fuse.add %0, %r : tensor<2x18x22x48xf16>, tensor<2x18x22x48xf16>
  %2 = fuse.relu %1 : tensor<2x18x22x48xf16>
  // Stride 1: the convolution with the flipped filter.
  %3 = fuse.conv_transpose2d %y, %w64 {padding = array<i64: 1, 1>} : tensor<1x14x14x64xbf16>, tensor<64x3x3x64xbf16>
  // Depthwise: narrow groups.
  %4 = fuse.conv_transpose2d %d, %dw {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 16}
      : tensor<1x9x9x16xf16>, tensor<16x3x3x1xf16>
  // f32.
  %5 = fuse.conv_transpose2d %x32, %w32 {padding = array<i64: 1, 1>} : tensor<2x7x5x24xf32>, tensor<24x3x3x40xf32>
  // Filter gradients: NHWC, NCHW grouped, f32.
  %6 = fuse.conv2d_filter_grad %x, %dy {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>}
      : tensor<2x9x11x32xf16>, tensor<2x9x11x48xf16>
  %7 = fuse.conv2d_filter_grad %xn, %dyn {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, groups = 3,
      layout = #fuse.layout<nchw>} : tensor<2x48x9x11xbf16>, tensor<2x36x9x11xbf16>
  %8 = fuse.conv2d_filter_grad %x32, %dy32 {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>}
      : tensor<2x7x5x24xf32>, tensor<2x7x5x40xf32>
  return %2, %3, %4, %5, %6, %7, %8 : tensor<2x18x22x48xf16>, tensor<1x14x14x64xbf16>, tensor<1x17x17x16xf16>,
      tensor<2x7x5x40xf32>, tensor<48x3x3x32xf16>, tensor<36x16x3x3xbf16>, tensor<40x3x3x24xf32>
}
