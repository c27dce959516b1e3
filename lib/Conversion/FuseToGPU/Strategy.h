//===- Strategy.h - Which family tiles each kernel, and how -----*- C++ -*-===//
//
// The selection over the family table (FamilyTable.h): from a fuse.kernel,
// the target and a #fuse.tile asked for (the kernel's own, or a tuning
// database entry's) or none, the #fuse.kernel_config it is generated with;
// the check that a config suits its kernel; the generation through the
// config's family. docs/Tiling.md describes the rules. Nothing here writes
// the kernel's attributes.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_STRATEGY_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_STRATEGY_H

#include "FamilyTable.h"

namespace fusec::tiling {

/// With `tile`, the first family that takes the kernel and accepts the tile
/// (the last such family's checks reporting why none did); without, the
/// first family that takes the kernel, with its heuristic tile. `source`
/// goes into the config. Fails when none fits, with an error at the kernel
/// unless `quiet`.
mlir::FailureOr<mlir::fuse::KernelConfigAttr>
selectConfig(const KernelQuery &query, mlir::fuse::TileAttr tile,
             llvm::StringRef source, bool quiet = false);

/// Whether `config` suits the kernel: its family takes it and accepts its
/// tile, of the family's kind. An error at the kernel if not.
mlir::LogicalResult verifyConfig(const KernelQuery &query,
                                 mlir::fuse::KernelConfigAttr config);

/// Generates the kernel into `module` as `config` says.
mlir::FailureOr<LaunchConfig> emitKernel(const KernelQuery &query,
                                         mlir::gpu::GPUModuleOp module,
                                         mlir::fuse::KernelConfigAttr config);

/// The target and options the tiling passes' `arch`, `sm-count` and
/// `fp32-math` name; an error at `module` if they are not valid.
struct TilingTarget {
  TargetDescription target;
  TilingOptions options;
};
mlir::FailureOr<TilingTarget> parseTilingTarget(mlir::ModuleOp module,
                                                llvm::StringRef arch,
                                                int64_t smCount,
                                                llvm::StringRef fp32Math);

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_STRATEGY_H
