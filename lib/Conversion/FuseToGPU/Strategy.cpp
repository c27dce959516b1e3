//===- Strategy.cpp - Which family tiles each kernel, and how -------------===//

#include "Strategy.h"

#include "fusec/Conversion/FuseToGPU.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

/// The families that take a tile and take the kernel, in table order.
static SmallVector<const FamilyInfo *>
tiledFamiliesFor(const KernelQuery &query) {
  SmallVector<const FamilyInfo *> families;
  for (const FamilyInfo &info : familyTable())
    if (info.hasTile() && info.takes(query))
      families.push_back(&info);
  return families;
}

FailureOr<KernelConfigAttr>
fusec::tiling::selectConfig(const KernelQuery &query, TileAttr tile,
                            llvm::StringRef source, bool quiet) {
  KernelOp kernel = query.kernel;
  MLIRContext *context = kernel.getContext();
  if (!tile) {
    for (const FamilyInfo &info : familyTable())
      if (info.takes(query))
        return KernelConfigAttr::get(
            context, info.family,
            info.hasTile() ? info.heuristic(query) : Attribute(), source);
    if (!quiet)
      kernel.emitOpError("has anchor ")
          << query.anchor->getName() << ", which no kernel family generates";
    return failure();
  }
  SmallVector<const FamilyInfo *> families = tiledFamiliesFor(query);
  if (families.empty()) {
    if (!quiet)
      kernel.emitOpError(
          "has a tile, but only convolutions, linear layers, matrix products "
          "and (f16, bf16) attention take one");
    return failure();
  }
  // A tile that does not suit a family (a warpgroup one written for
  // mma.sync) selects the next; the last one's checks say why it fails.
  for (const FamilyInfo *info : families) {
    bool last = info == families.back();
    FailureOr<Attribute> typed =
        info->fromTile(query, tile, /*quiet=*/quiet || !last);
    if (succeeded(typed))
      return KernelConfigAttr::get(context, info->family, *typed, source);
  }
  return failure();
}

LogicalResult fusec::tiling::verifyConfig(const KernelQuery &query,
                                          KernelConfigAttr config) {
  const FamilyInfo &info = familyInfo(config.getFamily());
  KernelOp kernel = query.kernel;
  if (!info.takes(query))
    return kernel.emitOpError("has config ")
           << config << ", but family " << info.name()
           << " does not generate this kernel for the target";
  Attribute tile = config.getTile();
  if (!info.hasTile())
    return tile ? kernel.emitOpError("has config ")
                      << config << ", but family " << info.name()
                      << " takes no tile"
                : success();
  if (!tile || tile.getTypeID() != info.heuristic(query).getTypeID())
    return kernel.emitOpError("has config ")
           << config << ", but family " << info.name() << " needs a "
           << (isa<TileAttr>(info.heuristic(query)) ? "#fuse.tile"
                                                    : "#fuse.attention_tile");
  return info.fromTile(query, config.getTileAsTileAttr(), /*quiet=*/false);
}

FailureOr<LaunchConfig> fusec::tiling::emitKernel(const KernelQuery &query,
                                                  gpu::GPUModuleOp module,
                                                  KernelConfigAttr config) {
  return familyInfo(config.getFamily())
      .build(query, module, config.getTile())
      ->build();
}

FailureOr<TilingTarget>
fusec::tiling::parseTilingTarget(ModuleOp module, llvm::StringRef arch,
                                 int64_t smCount, llvm::StringRef fp32Math) {
  llvm::Expected<TargetDescription> target =
      TargetDescription::get(arch, smCount);
  if (!target) {
    module.emitError(llvm::toString(target.takeError()));
    return failure();
  }
  TilingTarget result{*target, {}};
  if (fp32Math == "tf32") {
    result.options.fp32Math = Fp32Math::TF32;
  } else if (fp32Math != "ieee") {
    module.emitError("fp32-math must be ieee or tf32, found '")
        << fp32Math << "'";
    return failure();
  }
  return result;
}

std::vector<TileAttr>
fusec::tiling::tuningCandidates(KernelOp kernel,
                                const TargetDescription &target,
                                llvm::StringRef fp32Math) {
  TilingOptions options;
  options.fp32Math = fp32Math == "tf32" ? Fp32Math::TF32 : Fp32Math::IEEE;
  KernelQuery query(kernel, target, options);
  std::vector<TileAttr> tiles;
  for (const FamilyInfo &info : familyTable())
    if (info.tuningTiles && info.takes(query))
      llvm::append_range(tiles, info.tuningTiles(query));
  // Only what a kernel's own tile attribute would be allowed to ask for.
  llvm::erase_if(tiles, [&](TileAttr tile) {
    return failed(selectConfig(query, tile, "", /*quiet=*/true));
  });
  return tiles;
}
