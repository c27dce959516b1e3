//===- KernelCodegen.h - fuse.kernel to gpu.func ----------------*- C++ -*-===//
//
// Builds the body of one GPU kernel from one fuse.kernel: explicit loops over
// threads, shared-memory tiles and registers, with the kernel's elementwise
// ops applied to each output element before it is stored.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_TRANSFORMS_KERNELCODEGEN_H
#define FUSEC_LIB_TRANSFORMS_KERNELCODEGEN_H

#include "Fuse/FuseOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <array>
#include <optional>

namespace fusec {

/// How the host launches a generated kernel.
struct LaunchConfig {
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
};

/// Tile sizes of the shared-memory GEMM used for convolutions and matrix
/// products: a BM x BN output tile per block of (BM/TM) * (BN/TN) threads,
/// each thread owning a TM x TN register tile, the reduction staged through
/// two shared-memory buffers BK deep.
struct GemmTile {
  int64_t bm = 64, bn = 64, bk = 16, tm = 4, tn = 4;
};

/// The heuristic (docs/Tiling.md): the largest of 128x128 (8x8 per thread),
/// 128x64 (8x4) and 64x64 (4x4) that still gives 132 blocks.
GemmTile chooseGemmTile(int64_t m, int64_t n, int64_t batch);

/// The kernel's `tile` attribute (a dictionary of bm, bn, bk, tm, tn), if it
/// has one. Emits an error at the kernel for a tile that cannot be
/// generated.
mlir::FailureOr<std::optional<GemmTile>>
getTileAttr(mlir::fuse::KernelOp kernel);

/// Appends to `module` a gpu.func named after `kernel` that computes its
/// results. The function takes one memref per kernel input, then one per
/// kernel result. Emits an error at the kernel and fails for an anchor the
/// GPU backend does not handle.
mlir::FailureOr<LaunchConfig> emitKernel(mlir::fuse::KernelOp kernel,
                                         mlir::gpu::GPUModuleOp module);

} // namespace fusec

#endif // FUSEC_LIB_TRANSFORMS_KERNELCODEGEN_H
