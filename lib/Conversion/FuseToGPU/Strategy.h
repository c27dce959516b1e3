//===- Strategy.h - Which family tiles each kernel, and how -----*- C++ -*-===//
//
// The strategy selection: from a fuse.kernel and the target description, the
// kernel family that generates it and that family's configuration (for the
// GEMM families, the tile: the kernel's own #fuse.tile, or the family's
// heuristic). docs/Tiling.md describes the rules.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_STRATEGY_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_STRATEGY_H

#include "Families.h"

namespace fusec::tiling {

enum class KernelFamily {
  Elementwise,
  DirectConv,
  RowReduction,
  PoolResample,
  Gather,
  AttentionDirect,
  AttentionMmaSync,
  AttentionWgmma,
  GemmSimt,
  GemmMmaSync,
  GemmWgmma,
};

/// The family's name as recorded on the gpu.func (`fusec.family`).
llvm::StringRef familyName(KernelFamily family);

struct KernelStrategy {
  KernelFamily family = KernelFamily::Elementwise;
  /// GEMM families: the problem's sizes, the tile, the options.
  GemmShape shape;
  GemmTile tile;
  TilingOptions options;
  /// AttentionMmaSync: its tile.
  AttentionTile attention;
  /// Where the configuration came from, for the artifact: "heuristic",
  /// "tile attribute" or "tuning database (GPU)".
  std::string source;
  /// The kernel's signature in the tuning database.
  std::string signature;
};

/// Picks the family and configuration of `kernel`; fails with an error at
/// the kernel when none fits (a tile that does not suit, an anchor no family
/// handles).
mlir::FailureOr<KernelStrategy> selectStrategy(mlir::fuse::KernelOp kernel,
                                               const TargetDescription &target,
                                               const TilingOptions &options);

/// Generates `kernel` into `module` as `strategy` says.
mlir::FailureOr<LaunchConfig> emitKernel(mlir::fuse::KernelOp kernel,
                                         mlir::gpu::GPUModuleOp module,
                                         const KernelStrategy &strategy,
                                         const TargetDescription &target);

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_STRATEGY_H
