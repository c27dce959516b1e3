//===- FamilyTable.cpp - Every kernel family, in one table ----------------===//
//
// One entry per family, in selection order: the GEMM families before the
// direct convolution (a convolution with wide groups is a GEMM), the
// tensor-core families before the portable ones, elementwise chains (no
// anchor) last. Each entry adapts its family's file (Families.h) to
// FamilyInfo; a tile is asked about as a value, never written onto the
// kernel.
//
//===----------------------------------------------------------------------===//

#include "FamilyTable.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

KernelQuery::KernelQuery(KernelOp kernel, const TargetDescription &target,
                         const TilingOptions &options)
    : kernel(kernel), target(target), options(options) {
  for (Operation &op : kernel.getBody().front().without_terminator())
    if (isAnchor(&op) && !isAnchorView(&op)) {
      anchor = &op;
      break;
    }
}

/// `check`, its diagnostics dropped when `quiet` (to try another family).
static LogicalResult quietly(MLIRContext *context, bool quiet,
                             llvm::function_ref<LogicalResult()> check) {
  if (!quiet)
    return check();
  ScopedDiagnosticHandler drop(context, [](Diagnostic &) { return success(); });
  return check();
}

//===----------------------------------------------------------------------===//
// GEMM families: the tile is a #fuse.tile (GemmTile).
//===----------------------------------------------------------------------===//

static bool isGemm(const KernelQuery &q) {
  return q.anchor && isGemmAnchor(q.anchor);
}

static TileAttr gemmAttr(const KernelQuery &q, const GemmTile &tile) {
  return tile.toAttr(q.kernel.getContext());
}

static std::vector<TileAttr> gemmAttrs(const KernelQuery &q,
                                       const std::vector<GemmTile> &tiles) {
  std::vector<TileAttr> attrs;
  for (const GemmTile &tile : tiles)
    attrs.push_back(gemmAttr(q, tile));
  return attrs;
}

/// The GEMM tile `verify` accepts for `attr`.
static FailureOr<Attribute>
gemmFromTile(const KernelQuery &q, TileAttr attr, bool quiet,
             llvm::function_ref<LogicalResult(const GemmTile &)> verify) {
  GemmTile tile = GemmTile::fromAttr(attr);
  if (failed(
          quietly(q.kernel.getContext(), quiet, [&] { return verify(tile); })))
    return failure();
  return Attribute(gemmAttr(q, tile));
}

static GemmTile gemmTileOf(Attribute tile) {
  return GemmTile::fromAttr(cast<TileAttr>(tile));
}

static const FamilyInfo kGemmWgmma{
    KernelFamily::GemmWgmma,
    [](const KernelQuery &q) {
      return isGemm(q) && isWgmmaGemm(q.anchor, q.gemmShape(), q.target);
    },
    [](const KernelQuery &q) -> Attribute {
      return gemmAttr(q, chooseWgmmaTile(q.anchor, q.gemmShape(), q.target));
    },
    [](const KernelQuery &q, TileAttr attr, bool quiet) {
      return gemmFromTile(q, attr, quiet, [&](const GemmTile &tile) {
        return verifyWgmmaTile(q.kernel, q.anchor, q.gemmShape(), tile,
                               q.target, quiet);
      });
    },
    [](const KernelQuery &q) {
      return gemmAttrs(q, wgmmaTuningTiles(q.anchor, q.gemmShape(), q.target));
    },
    [](const KernelQuery &q, gpu::GPUModuleOp module, Attribute tile) {
      return makeGemmWgmmaKernel(q.kernel, module, q.target, gemmTileOf(tile));
    }};

static const FamilyInfo kGemmMmaSync{
    KernelFamily::GemmMmaSync,
    [](const KernelQuery &q) {
      return isGemm(q) && isMmaSyncGemm(q.gemmShape(), q.options);
    },
    [](const KernelQuery &q) -> Attribute {
      return gemmAttr(q, chooseMmaSyncTile(q.gemmShape(), q.target, q.options));
    },
    [](const KernelQuery &q, TileAttr attr, bool quiet) {
      return gemmFromTile(q, attr, quiet, [&](const GemmTile &tile) {
        return verifyMmaSyncTile(q.kernel, q.gemmShape(), tile, q.target,
                                 q.options);
      });
    },
    [](const KernelQuery &q) {
      return gemmAttrs(q,
                       mmaSyncTuningTiles(q.gemmShape(), q.target, q.options));
    },
    [](const KernelQuery &q, gpu::GPUModuleOp module, Attribute tile) {
      return makeGemmMmaSyncKernel(q.kernel, module, q.target, gemmTileOf(tile),
                                   q.gemmShape(), q.options);
    }};

static const FamilyInfo kGemmSimt{
    KernelFamily::GemmSimt,
    [](const KernelQuery &q) {
      return isGemm(q) && !isMmaSyncGemm(q.gemmShape(), q.options);
    },
    [](const KernelQuery &q) -> Attribute {
      return gemmAttr(q, chooseSimtTile(q.gemmShape(), q.target));
    },
    [](const KernelQuery &q, TileAttr attr, bool quiet) {
      return gemmFromTile(q, attr, quiet, [&](const GemmTile &tile) {
        return verifySimtTile(q.kernel, tile, q.target);
      });
    },
    [](const KernelQuery &) { return std::vector<TileAttr>(); },
    [](const KernelQuery &q, gpu::GPUModuleOp module, Attribute tile) {
      return makeGemmSimtKernel(q.kernel, module, q.target, gemmTileOf(tile));
    }};

//===----------------------------------------------------------------------===//
// Tensor-core attention: the tile is a #fuse.attention_tile (AttentionTile).
//===----------------------------------------------------------------------===//

static AttentionOp attentionOf(const KernelQuery &q) {
  return dyn_cast_or_null<AttentionOp>(q.anchor);
}

static AttentionTile attentionTileOf(Attribute tile) {
  return AttentionTile::fromAttr(cast<AttentionTileAttr>(tile));
}

/// `tiles` in #fuse.tile's terms, as the autotuner tries them.
static std::vector<TileAttr>
attentionTiles(const KernelQuery &q, bool wgmma,
               std::initializer_list<AttentionTile> tiles) {
  std::vector<TileAttr> attrs;
  for (const AttentionTile &tile : tiles)
    attrs.push_back(tile.toAttr(q.kernel.getContext(), wgmma).asTile());
  return attrs;
}

static const FamilyInfo kAttentionWgmma{
    KernelFamily::AttentionWgmma,
    [](const KernelQuery &q) {
      AttentionOp op = attentionOf(q);
      return op && isWgmmaAttention(op, q.target);
    },
    [](const KernelQuery &q) -> Attribute {
      AttentionTile tile;
      tile.bc = chooseWgmmaAttentionKeys(attentionOf(q));
      return tile.toAttr(q.kernel.getContext(), /*wgmma=*/true);
    },
    [](const KernelQuery &q, TileAttr attr,
       bool quiet) -> FailureOr<Attribute> {
      if (!suitsWgmmaAttention(attentionOf(q), attr, q.target)) {
        if (!quiet)
          q.kernel.emitOpError("tile ")
              << attr
              << " does not suit attention on warpgroup MMA: it needs bm = "
                 "128, bn 64 or 128, bk = 16, no warps_m, warps_n at most 2 "
                 "and the target's shared memory";
        return failure();
      }
      AttentionTile tile;
      tile.bc = attr.getBn();
      tile.pingPong = attr.getWarpsN() == 2;
      return Attribute(tile.toAttr(q.kernel.getContext(), /*wgmma=*/true));
    },
    [](const KernelQuery &q) {
      return attentionTiles(
          q, /*wgmma=*/true,
          {{0, 64, false}, {0, 64, true}, {0, 128, false}, {0, 128, true}});
    },
    [](const KernelQuery &q, gpu::GPUModuleOp module, Attribute tile) {
      return makeAttentionWgmmaKernel(q.kernel, module, q.target,
                                      attentionTileOf(tile));
    }};

static const FamilyInfo kAttentionMmaSync{
    KernelFamily::AttentionMmaSync,
    [](const KernelQuery &q) {
      AttentionOp op = attentionOf(q);
      return op && isMmaSyncAttention(op);
    },
    [](const KernelQuery &q) -> Attribute {
      return chooseAttentionTile(attentionOf(q), q.target)
          .toAttr(q.kernel.getContext(), /*wgmma=*/false);
    },
    [](const KernelQuery &q, TileAttr attr,
       bool quiet) -> FailureOr<Attribute> {
      FailureOr<AttentionTile> tile;
      if (failed(quietly(q.kernel.getContext(), quiet, [&] {
            tile =
                attentionTileFromAttr(q.kernel, attentionOf(q), attr, q.target);
            return LogicalResult(tile);
          })))
        return failure();
      return Attribute(tile->toAttr(q.kernel.getContext(), /*wgmma=*/false));
    },
    [](const KernelQuery &q) {
      return attentionTiles(q, /*wgmma=*/false,
                            {{4, 32}, {4, 64}, {8, 64}, {8, 128}});
    },
    [](const KernelQuery &q, gpu::GPUModuleOp module, Attribute tile) {
      return makeAttentionMmaSyncKernel(q.kernel, module, q.target,
                                        attentionTileOf(tile));
    }};

//===----------------------------------------------------------------------===//
// Families without a tile.
//===----------------------------------------------------------------------===//

/// Batch norm with batch statistics and its gradient: a statistics pass, a
/// per-channel finalize, then the element pass with the epilogue
/// (BatchNormTraining.cpp; this table is its one caller).
namespace fusec::tiling {
std::unique_ptr<KernelBuilder>
makeBatchNormTrainingKernel(KernelOp kernel, gpu::GPUModuleOp module,
                            const TargetDescription &target);
} // namespace fusec::tiling

/// Layer and RMS norm backward: a rows pass, then the parameter gradients
/// (NormGrad.cpp; this table is its one caller).
namespace fusec::tiling {
std::unique_ptr<KernelBuilder>
makeNormGradKernel(KernelOp kernel, gpu::GPUModuleOp module,
                   const TargetDescription &target);
} // namespace fusec::tiling

/// Batch norm with batch statistics or its gradient.
static bool isBatchNormTraining(const KernelQuery &q) {
  return isa_and_nonnull<BatchNormTrainOp, BatchNormGradOp>(q.anchor);
}

/// The builder of a family without a tile: its factory, on the kernel alone.
template <std::unique_ptr<KernelBuilder> (*Make)(KernelOp, gpu::GPUModuleOp,
                                                 const TargetDescription &)>
static std::unique_ptr<KernelBuilder>
buildUntiled(const KernelQuery &q, gpu::GPUModuleOp module, Attribute) {
  return Make(q.kernel, module, q.target);
}

llvm::ArrayRef<FamilyInfo> fusec::tiling::familyTable() {
  static const FamilyInfo table[] = {
      kGemmWgmma,
      kGemmMmaSync,
      kGemmSimt,
      kAttentionWgmma,
      kAttentionMmaSync,
      {KernelFamily::AttentionGradWgmma,
       [](const KernelQuery &q) {
         auto grad = dyn_cast_or_null<AttentionGradOp>(q.anchor);
         return grad && isWgmmaAttentionGrad(grad, q.target);
       },
       nullptr, nullptr, nullptr, buildUntiled<makeAttentionGradWgmmaKernel>},
      {KernelFamily::AttentionGradMmaSync,
       [](const KernelQuery &q) {
         // Its dQ atomics are unordered; the direct family's dQ is one
         // warp's ordered sum.
         auto grad = dyn_cast_or_null<AttentionGradOp>(q.anchor);
         return grad && !grad.getDeterministic() &&
                isMmaSyncAttentionGrad(grad);
       },
       nullptr, nullptr, nullptr, buildUntiled<makeAttentionGradMmaSyncKernel>},
      {KernelFamily::AttentionDirect,
       [](const KernelQuery &q) {
         return isa_and_nonnull<AttentionOp, AttentionGradOp>(q.anchor);
       },
       nullptr, nullptr, nullptr,
       [](const KernelQuery &q, gpu::GPUModuleOp module, Attribute) {
         if (isa<AttentionGradOp>(q.anchor))
           return makeAttentionGradDirectKernel(q.kernel, module, q.target);
         return makeAttentionDirectKernel(q.kernel, module, q.target);
       }},
      {KernelFamily::DirectConv,
       [](const KernelQuery &q) {
         return isa_and_nonnull<Conv2dOp, ConvTranspose2dOp>(q.anchor);
       },
       nullptr, nullptr, nullptr, buildUntiled<makeDirectConvKernel>},
      // Normalisations: over rows, and batch norm's over channels with batch
      // statistics (BatchNormTraining.cpp).
      {KernelFamily::RowReduction,
       [](const KernelQuery &q) {
         return q.anchor &&
                (isRowReduction(q.anchor) || isBatchNormTraining(q) ||
                 // Training: sums over axes, norm backward.
                 isa<ReduceSumOp, NormGradOp>(q.anchor));
       },
       nullptr, nullptr, nullptr,
       [](const KernelQuery &q, gpu::GPUModuleOp module, Attribute) {
         if (isa<NormGradOp>(q.anchor))
           return makeNormGradKernel(q.kernel, module, q.target);
         return isBatchNormTraining(q)
                    ? makeBatchNormTrainingKernel(q.kernel, module, q.target)
                    : makeRowReductionKernel(q.kernel, module, q.target);
       }},
      {KernelFamily::PoolResample,
       [](const KernelQuery &q) {
         return isa_and_nonnull<MaxPool2dOp, AvgPool2dOp, GlobalAvgPoolOp,
                                UpsampleOp,
                                // Training (issue 25): their gradients.
                                MaxPool2dGradOp, AvgPool2dGradOp,
                                UpsampleGradOp>(q.anchor);
       },
       nullptr, nullptr, nullptr, buildUntiled<makePoolResampleKernel>},
      {KernelFamily::Gather,
       [](const KernelQuery &q) {
         return isa_and_nonnull<TransposeOp, RopeOp,
                                // Training (issue 25): zero-padded writes.
                                SliceGradOp>(q.anchor);
       },
       nullptr, nullptr, nullptr, buildUntiled<makeGatherKernel>},
      {KernelFamily::Elementwise,
       [](const KernelQuery &q) { return !q.anchor; }, nullptr, nullptr,
       nullptr, buildUntiled<makeElementwiseKernel>},
  };
  return table;
}

const FamilyInfo &fusec::tiling::familyInfo(KernelFamily family) {
  for (const FamilyInfo &info : familyTable())
    if (info.family == family)
      return info;
  llvm_unreachable("a kernel family without an entry in the table");
}
