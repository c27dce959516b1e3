// --emit=gpu stops after lowering the kernels to the NVVM and LLVM dialects:
// one pointer per buffer (bare-pointer convention) and 32-bit indices.
// RUN: fusec %s --emit=gpu | FileCheck %s --enable-var-scope
// CHECK: gpu.module @g_kernels [#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">]
// CHECK: llvm.func @k0_relu(%{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr) attributes {fusec.family = "elementwise", gpu.kernel
// CHECK: nvvm.read.ptx.sreg.tid.x range <i32, 0, 256> : i32
func.func @g(%x: tensor<3x50xf32>) -> tensor<3x50xf32> {
  %0 = fuse.relu %x : tensor<3x50xf32>
  return %0 : tensor<3x50xf32>
}
