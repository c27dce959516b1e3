//===- Strategy.cpp - Which family tiles each kernel, and how -------------===//

#include "Strategy.h"

#include "Families.h"
#include "fusec/Conversion/FuseToGPU.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

llvm::StringRef fusec::tiling::familyName(KernelFamily family) {
  switch (family) {
  case KernelFamily::Elementwise:
    return "elementwise";
  case KernelFamily::DirectConv:
    return "direct_conv";
  case KernelFamily::RowReduction:
    return "row_reduction";
  case KernelFamily::PoolResample:
    return "pool_resample";
  case KernelFamily::Gather:
    return "gather";
  case KernelFamily::AttentionDirect:
    return "attention_direct";
  case KernelFamily::AttentionMmaSync:
    return "attention_mma_sync";
  case KernelFamily::AttentionWgmma:
    return "attention_wgmma";
  case KernelFamily::GemmSimt:
    return "gemm_simt";
  case KernelFamily::GemmMmaSync:
    return "gemm_mma_sync";
  case KernelFamily::GemmWgmma:
    return "gemm_wgmma";
  }
  llvm_unreachable("unknown kernel family");
}

static Operation *findAnchor(KernelOp kernel) {
  for (Operation &op : kernel.getBody().front().without_terminator())
    if (isAnchor(&op) && !isAnchorView(&op))
      return &op;
  return nullptr;
}

/// The GEMM family for `shape` and its tile: warpgroup MMA on sm_90a where
/// TMA can read the operands, else tensor cores for 16-bit types (and f32
/// as TF32 when asked), CUDA cores for IEEE f32.
static FailureOr<KernelStrategy>
selectGemm(KernelOp kernel, Operation *anchor, const GemmShape &shape,
           const TargetDescription &target, const TilingOptions &options) {
  KernelStrategy strategy;
  if (isWgmmaGemm(anchor, shape, target)) {
    strategy.family = KernelFamily::GemmWgmma;
    strategy.shape = shape;
    strategy.options = options;
    TileAttr attr = kernel.getTileAttr();
    if (!attr) {
      strategy.tile = chooseWgmmaTile(anchor, shape, target);
      return strategy;
    }
    strategy.tile = GemmTile::fromAttr(attr);
    if (succeeded(verifyWgmmaTile(kernel, anchor, shape, strategy.tile, target,
                                  /*quiet=*/true)))
      return strategy;
    // A tile that does not suit the warpgroup GEMM (one written for
    // mma.sync) selects mma.sync, whose checks follow.
  }
  bool mma = isMmaSyncGemm(shape, options);
  strategy.family = mma ? KernelFamily::GemmMmaSync : KernelFamily::GemmSimt;
  strategy.shape = shape;
  strategy.options = options;
  if (TileAttr attr = kernel.getTileAttr()) {
    strategy.tile = GemmTile::fromAttr(attr);
    if (failed(mma ? verifyMmaSyncTile(kernel, shape, strategy.tile, target,
                                       options)
                   : verifySimtTile(kernel, strategy.tile, target)))
      return failure();
  } else {
    strategy.tile = mma ? chooseMmaSyncTile(shape, target, options)
                        : chooseSimtTile(shape, target);
  }
  return strategy;
}

FailureOr<KernelStrategy>
fusec::tiling::selectStrategy(KernelOp kernel, const TargetDescription &target,
                              const TilingOptions &options) {
  Operation *anchor = findAnchor(kernel);
  if (anchor && isGemmAnchor(anchor))
    return selectGemm(kernel, anchor, getGemmShape(anchor), target, options);
  KernelStrategy strategy;
  if (auto attention = dyn_cast_or_null<AttentionOp>(anchor);
      attention && isWgmmaAttention(attention, target)) {
    TileAttr attr = kernel.getTileAttr();
    if (!attr || suitsWgmmaAttention(attention, attr, target)) {
      strategy.family = KernelFamily::AttentionWgmma;
      strategy.attention.bc =
          attr ? attr.getBn() : chooseWgmmaAttentionKeys(attention);
      strategy.attention.pingPong = attr && attr.getWarpsN() == 2;
      return strategy;
    }
    // A tile written for mma.sync keeps that kernel.
  }
  if (auto attention = dyn_cast_or_null<AttentionOp>(anchor);
      attention && isMmaSyncAttention(attention)) {
    strategy.family = KernelFamily::AttentionMmaSync;
    strategy.attention = chooseAttentionTile(attention, target);
    if (TileAttr attr = kernel.getTileAttr()) {
      FailureOr<AttentionTile> tile =
          attentionTileFromAttr(kernel, attention, attr, target);
      if (failed(tile))
        return failure();
      strategy.attention = *tile;
    }
    return strategy;
  }
  if (kernel.getTileAttr())
    return kernel.emitOpError(
        "has a tile, but only convolutions, linear layers, matrix products "
        "and (f16, bf16) attention take one");
  if (!anchor)
    strategy.family = KernelFamily::Elementwise;
  else if (isa<Conv2dOp>(anchor))
    strategy.family = KernelFamily::DirectConv;
  else if (isRowReduction(anchor))
    strategy.family = KernelFamily::RowReduction;
  else if (isa<MaxPool2dOp, AvgPool2dOp, GlobalAvgPoolOp, UpsampleOp>(anchor))
    strategy.family = KernelFamily::PoolResample;
  else if (isa<TransposeOp, RopeOp>(anchor))
    strategy.family = KernelFamily::Gather;
  else if (isa<AttentionOp>(anchor))
    strategy.family = KernelFamily::AttentionDirect;
  else
    return kernel.emitOpError("has anchor ")
           << anchor->getName() << ", which no kernel family generates";
  return strategy;
}

FailureOr<LaunchConfig>
fusec::tiling::emitKernel(KernelOp kernel, gpu::GPUModuleOp module,
                          const KernelStrategy &strategy,
                          const TargetDescription &target) {
  std::unique_ptr<KernelBuilder> builder;
  switch (strategy.family) {
  case KernelFamily::Elementwise:
    builder = makeElementwiseKernel(kernel, module, target);
    break;
  case KernelFamily::DirectConv:
    builder = makeDirectConvKernel(kernel, module, target);
    break;
  case KernelFamily::RowReduction:
    builder = makeRowReductionKernel(kernel, module, target);
    break;
  case KernelFamily::PoolResample:
    builder = makePoolResampleKernel(kernel, module, target);
    break;
  case KernelFamily::Gather:
    builder = makeGatherKernel(kernel, module, target);
    break;
  case KernelFamily::AttentionDirect:
    builder = makeAttentionDirectKernel(kernel, module, target);
    break;
  case KernelFamily::AttentionMmaSync:
    builder = makeAttentionMmaSyncKernel(kernel, module, target,
                                         strategy.attention);
    break;
  case KernelFamily::AttentionWgmma:
    builder = makeAttentionWgmmaKernel(kernel, module, target,
                                       strategy.attention);
    break;
  case KernelFamily::GemmSimt:
    builder = makeGemmSimtKernel(kernel, module, target, strategy.tile);
    break;
  case KernelFamily::GemmMmaSync:
    builder = makeGemmMmaSyncKernel(kernel, module, target, strategy.tile,
                                    strategy.shape, strategy.options);
    break;
  case KernelFamily::GemmWgmma:
    builder = makeGemmWgmmaKernel(kernel, module, target, strategy.tile);
    break;
  }
  return builder->build();
}

std::vector<TileAttr>
fusec::tiling::tuningCandidates(KernelOp kernel,
                                const TargetDescription &target,
                                llvm::StringRef fp32Math) {
  MLIRContext *context = kernel.getContext();
  TilingOptions options;
  options.fp32Math = fp32Math == "tf32" ? Fp32Math::TF32 : Fp32Math::IEEE;
  Operation *anchor = findAnchor(kernel);
  std::vector<TileAttr> tiles;
  if (anchor && isGemmAnchor(anchor)) {
    GemmShape shape = getGemmShape(anchor);
    std::vector<GemmTile> gemm;
    if (isWgmmaGemm(anchor, shape, target))
      gemm = wgmmaTuningTiles(anchor, shape, target);
    if (isMmaSyncGemm(shape, options))
      llvm::append_range(gemm, mmaSyncTuningTiles(shape, target, options));
    for (const GemmTile &t : gemm)
      tiles.push_back(t.toAttr(context));
  } else if (auto attention = dyn_cast_or_null<AttentionOp>(anchor)) {
    if (isWgmmaAttention(attention, target))
      for (int64_t keys : {64, 128})
        for (bool pingPong : {false, true})
          tiles.push_back(
              AttentionTile{0, keys, pingPong}.toAttr(context, true));
    if (isMmaSyncAttention(attention))
      for (auto [warps, keys] : {std::pair{4, 32}, {4, 64}, {8, 64}, {8, 128}})
        tiles.push_back(AttentionTile{warps, keys}.toAttr(context, false));
  }
  // Only what a kernel's own tile attribute would be allowed to ask for.
  std::vector<TileAttr> out;
  TileAttr saved = kernel.getTileAttr();
  for (TileAttr attr : tiles) {
    kernel.setTileAttr(attr);
    ScopedDiagnosticHandler quiet(context, [](Diagnostic &) { return success(); });
    if (succeeded(selectStrategy(kernel, target, options)))
      out.push_back(attr);
  }
  if (saved)
    kernel.setTileAttr(saved);
  else
    kernel.removeTileAttr();
  return out;
}
