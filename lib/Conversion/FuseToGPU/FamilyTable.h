//===- FamilyTable.h - Every kernel family, in one table --------*- C++ -*-===//
//
// Per kernel family (the #fuse.kernel_family enum): whether it takes a
// kernel, its tile (the heuristic's, the one a #fuse.tile asks for, the
// autotuner's candidates) and its builder (the make*Kernel factory of
// Families.h). Selection (Strategy.h) walks the table in order; tiling
// builds through it. Nothing here writes to the IR: a tile is asked about
// as a value. Adding a family is one enum case, one entry here and its file.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_FAMILYTABLE_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_FAMILYTABLE_H

#include "Families.h"

namespace fusec::tiling {

/// What a family's selector looks at: the kernel, its anchor (null for an
/// elementwise chain), the target and the options.
struct KernelQuery {
  /// Mutable: op handles have no const methods; nothing writes through it.
  mutable mlir::fuse::KernelOp kernel;
  mlir::Operation *anchor = nullptr;
  const TargetDescription &target;
  const TilingOptions &options;

  KernelQuery(mlir::fuse::KernelOp kernel, const TargetDescription &target,
              const TilingOptions &options);
  /// The GEMM the anchor computes (GEMM families only).
  GemmShape gemmShape() const { return getGemmShape(anchor); }
};

struct FamilyInfo {
  mlir::fuse::KernelFamily family;
  /// Whether the family generates the kernel (its anchor, types, target).
  bool (*takes)(const KernelQuery &);
  /// Families with a tile: the heuristic's tile (a #fuse.tile or a
  /// #fuse.attention_tile); null for the others.
  mlir::Attribute (*heuristic)(const KernelQuery &) = nullptr;
  /// The family's tile for what a #fuse.tile asks, or failure (with an
  /// error at the kernel unless `quiet`) if it does not suit.
  mlir::FailureOr<mlir::Attribute> (*fromTile)(const KernelQuery &,
                                               mlir::fuse::TileAttr,
                                               bool quiet) = nullptr;
  /// The tiles the autotuner tries, in #fuse.tile's terms.
  std::vector<mlir::fuse::TileAttr> (*tuningTiles)(const KernelQuery &) =
      nullptr;
  /// The kernel's builder, for the config's tile (null without one).
  std::unique_ptr<KernelBuilder> (*build)(const KernelQuery &,
                                          mlir::gpu::GPUModuleOp,
                                          mlir::Attribute tile);

  bool hasTile() const { return heuristic != nullptr; }
  llvm::StringRef name() const {
    return mlir::fuse::stringifyKernelFamily(family);
  }
};

/// Every family, in the order selection tries them: the first that takes a
/// kernel generates it.
llvm::ArrayRef<FamilyInfo> familyTable();
const FamilyInfo &familyInfo(mlir::fuse::KernelFamily family);

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_FAMILYTABLE_H
