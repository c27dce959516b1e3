//===- GemmWgmma.cpp - The GEMM family on Hopper's warpgroup MMA ----------===//
//
// f16 and bf16 convolutions (NHWC, stride 1, through TMA im2col), linear
// layers and matrix products on sm_90a, the structure of CUTLASS 3's
// warp-specialised kernels:
//
//  - a producer warpgroup, one thread of which issues TMA copies
//    (cp.async.bulk.tensor) of A and B k-tiles into `stages` shared-memory
//    buffers, 128-byte swizzled, each completing on a "full" mbarrier;
//  - bm / 64 consumer warpgroups, each computing 64 rows of the bm x bn
//    tile with wgmma.mma_async m64nNk16 from shared memory (descriptors),
//    f32 accumulators in registers; a consumer warpgroup releases a stage
//    (its "empty" mbarrier) once the wgmma reading it completed, keeping one
//    k-tile's wgmma in flight;
//  - registers move from the producer to the consumers (setmaxnreg);
//    the stages, their mbarriers and the split are the TmaPipeline's
//    (Pipeline.h), shared with AttentionWgmma.cpp;
//  - the fused epilogue runs on the accumulators, whose layout is
//    mma.sync's (GemmEpilogue.cpp), on the consumers alone.
//
// The operands are read through TMA tensor maps the runtime encodes
// (fuse.tensor_map in the plan): K-major (k contiguous) or MN-major (m or n
// contiguous, transposed by wgmma), 2-D, or 3-D with a batch axis. Edges are
// TMA's zero fill, so any M, N and K work.
//
//===----------------------------------------------------------------------===//

#include "Families.h"
#include "GemmSchedule.h"
#include "Pipeline.h"
#include "Wgmma.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {

/// One operand as TMA tensor maps see it.
struct WgmmaOperand {
  /// The kernel's memref parameters holding the operand, each with the
  /// index along i (m or n) at which it starts (several for merged linear
  /// weights), and the extents of each map, innermost first: (k, i[, batch])
  /// when K-major, (i, k[, batch]) otherwise.
  struct Part {
    unsigned memref;
    int64_t start;
    SmallVector<int64_t> dims;
  };
  SmallVector<Part> parts;
  bool kMajor = true;
  /// Byte strides of the maps' outer axes.
  SmallVector<int64_t> strides;
  /// The operand's own batch dimensions, which broadcast to the GEMM's
  /// (empty: no batch axis).
  SmallVector<int64_t> batchShape;
  /// A convolution's operand: its input read through an im2col map (A), or
  /// its filter seen as [Ci, kw, kh, Co] (B); k-tiles walk the filter taps
  /// and, within a tap, blocks of input channels. A filter gradient's B is
  /// the input through the im2col map, MN-major: its k-tiles walk the
  /// batch's output pixels, its columns the taps x input channels.
  struct Conv {
    int64_t kh, kw, dh, dw, top, left, ho, wo, n, ci;
    /// A transposed convolution's filter, [Ci, kh, kw, Co]: read MN-major,
    /// its taps reversed (a stride-1 transpose is the convolution with the
    /// flipped filter).
    bool flipped = false;
  };
  std::optional<Conv> conv;
  bool im2col = false;
};

struct WgmmaOperands {
  WgmmaOperand a, b;
  /// The GEMM's batch dimensions (matmul's result batch).
  SmallVector<int64_t> batchShape;
};

/// The kernel parameter behind `v`, a kernel input read as it is.
std::optional<unsigned> paramOf(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    if (isa<KernelOp>(arg.getOwner()->getParentOp()))
      return arg.getArgNumber();
  return std::nullopt;
}

/// A matrix operand's maps: (cols, rows[, batch]) per part, K-major where
/// k is contiguous; its rows must span multiples of 16 bytes.
std::optional<WgmmaOperand> matrixOperand(const GemmOperandLayout &layout) {
  int64_t cols = layout.cols(), bytes = layout.elementBytes;
  if (cols * bytes % 16)
    return std::nullopt;
  WgmmaOperand op;
  op.kMajor = layout.kContiguous;
  // The operand, or the parts of merged linear weights joined along their
  // rows.
  SmallVector<std::tuple<Value, int64_t, int64_t>> parts;
  if (layout.parts.empty())
    parts.emplace_back(layout.tensor, 0, layout.rows());
  for (auto [part, start] : layout.parts)
    parts.emplace_back(part, start, shapeOf(part)[layout.partsAxis]);
  for (auto [tensor, start, rows] : parts) {
    std::optional<unsigned> param = paramOf(tensor);
    if (!param)
      return std::nullopt;
    op.parts.push_back({*param, start, {cols, rows}});
  }
  op.strides.push_back(cols * bytes);
  op.batchShape = layout.batchShape;
  int64_t batches = product(op.batchShape);
  if (batches > 1) {
    op.parts[0].dims.push_back(batches);
    op.strides.push_back(layout.rows() * cols * bytes);
  } else {
    op.batchShape.clear();
  }
  return op;
}

/// The TMA view of a GEMM's operands, derived from their layouts, where TMA
/// can read them.
std::optional<WgmmaOperands> wgmmaOperands(const GemmOperandLayout &a,
                                           const GemmOperandLayout &b) {
  WgmmaOperands ops;
  if (a.kind == GemmOperandLayout::Kind::Matrix) {
    std::optional<WgmmaOperand> aOp = matrixOperand(a);
    std::optional<WgmmaOperand> bOp = matrixOperand(b);
    if (!aOp || !bOp)
      return std::nullopt;
    ops.a = *aOp;
    ops.b = *bOp;
    ops.batchShape = a.gemmBatchShape;
    return ops;
  }
  GemmConvGeometry g = *a.conv;
  bool transpose = g.pass == GemmConvGeometry::Pass::Transpose;
  bool filterGrad = g.pass == GemmConvGeometry::Pass::FilterGrad;
  if (!g.nhwc() || g.groups != 1 || g.strides[0] != 1 || g.strides[1] != 1)
    return std::nullopt;
  // A filter gradient's A is the output gradient, its B the input.
  std::optional<unsigned> xp = paramOf(filterGrad ? b.tensor : a.tensor);
  std::optional<unsigned> wp = paramOf(filterGrad ? a.tensor : b.tensor);
  int64_t ci = g.ci, co = g.co, kh = g.kh, kw = g.kw;
  int64_t bytes = a.elementBytes;
  if (!xp || !wp || ci * bytes % 16 ||
      ((transpose || filterGrad) && co * bytes % 16))
    return std::nullopt;
  // Panels of 128 bytes of B's columns (taps x input channels) must not
  // straddle two taps.
  if (filterGrad && ci * bytes % 128)
    return std::nullopt;
  if (transpose) {
    // A stride-1 transpose is the convolution of its input with the
    // flipped filter and the padding that gives its output size.
    int64_t spanH = (kh - 1) * g.dilation[0], spanW = (kw - 1) * g.dilation[1];
    int64_t top = spanH - g.pads[0], left = spanW - g.pads[2];
    g.pads = {top, g.ho - g.h - top + spanH, left, g.wo - g.w - left + spanW};
  }
  // A 1x1 convolution without padding is a linear layer over the pixels.
  if (!filterGrad && kh == 1 && kw == 1 &&
      llvm::all_of(g.pads, [](int64_t p) { return !p; })) {
    ops.a.parts.push_back({*xp, 0, {ci, product(a.shape) / ci}});
    ops.a.strides.push_back(ci * bytes);
    if (transpose) {
      // The filter [Ci, Co]: B MN-major.
      ops.b.parts.push_back({*wp, 0, {co, ci}});
      ops.b.strides.push_back(co * bytes);
      ops.b.kMajor = false;
      return ops;
    }
    ops.b.parts.push_back({*wp, 0, {ci, co}});
    ops.b.strides.push_back(ci * bytes);
    return ops;
  }
  // Otherwise an implicit GEMM: the input's im2col map walks each image's
  // output pixels, its bounding box [-pad, H + pad - span) shifted over the
  // taps; TMA's rank-4 corners lie in [-128, 127].
  WgmmaOperand::Conv geometry{
      kh,        kw,   g.dilation[0], g.dilation[1], g.pads[0],
      g.pads[2], g.ho, g.wo,          g.n,           ci};
  int64_t lowerW = -g.pads[2], lowerH = -g.pads[0];
  int64_t upperW = g.pads[3] - (kw - 1) * g.dilation[1];
  int64_t upperH = g.pads[1] - (kh - 1) * g.dilation[0];
  if (llvm::any_of(
          std::initializer_list<int64_t>{lowerW, lowerH, upperW, upperH},
          [](int64_t c) { return c < -128 || c > 127; }))
    return std::nullopt;
  int64_t h = g.h, w = g.w;
  if (filterGrad) {
    // k runs over the batch's output pixels. A, the output gradient
    // [pixels, Co], is MN-major; B, the input through the im2col map, is
    // read in panels of 128 bytes of one tap's channels by bk pixels:
    // MN-major too.
    ops.a.parts.push_back({*wp, 0, {co, g.n * g.ho * g.wo}});
    ops.a.strides.push_back(co * bytes);
    ops.a.kMajor = false;
    ops.b.parts.push_back({*xp, 0, {ci, w, h, g.n}});
    ops.b.strides = {ci * bytes, w * ci * bytes, h * w * ci * bytes};
    ops.b.conv = geometry;
    ops.b.im2col = true;
    ops.b.kMajor = false;
    return ops;
  }
  ops.a.parts.push_back({*xp, 0, {ci, w, h, g.n}});
  ops.a.strides = {ci * bytes, w * ci * bytes, h * w * ci * bytes};
  ops.a.conv = geometry;
  ops.a.im2col = true;
  ops.b.conv = geometry;
  if (transpose) {
    // The filter [Ci, kh, kw, Co], output channels innermost.
    ops.b.parts.push_back({*wp, 0, {co, kw, kh, ci}});
    ops.b.strides = {co * bytes, kw * co * bytes, kh * kw * co * bytes};
    ops.b.kMajor = false;
    ops.b.conv->flipped = true;
    return ops;
  }
  ops.b.parts.push_back({*wp, 0, {ci, kw, kh, co}});
  ops.b.strides = {ci * bytes, kw * ci * bytes, kh * kw * ci * bytes};
  return ops;
}

/// The TMA view of a GEMM anchor's operands.
std::optional<WgmmaOperands> wgmmaOperands(Operation *anchor) {
  if (!isa<Conv2dOp, ConvTranspose2dOp, Conv2dFilterGradOp, LinearOp, MatmulOp>(
          anchor))
    return std::nullopt;
  GemmOperandLayouts layouts = getGemmOperandLayouts(anchor);
  return wgmmaOperands(layouts.a, layouts.b);
}

/// Whether tiles `extent` wide keep within one part of the operand (one
/// tensor map per copy).
bool partsAligned(const WgmmaOperand &operand, int64_t extent) {
  return llvm::all_of(operand.parts, [&](const WgmmaOperand::Part &part) {
    return part.start % extent == 0;
  });
}

/// Warpgroups computing the tile: 64 rows each.
int64_t consumersOf(const GemmTile &tile) { return tile.bm / 64; }

/// Shared memory of one pipeline stage: a bm x bk tile of A, bn x bk of B.
int64_t stageBytes(const GemmTile &tile, int64_t bytes) {
  return (tile.bm + tile.bn) * tile.bk * bytes;
}

/// Shared memory of `stages` stages of `tile` and their two mbarriers each.
int64_t sharedBytesOf(const GemmTile &tile, int64_t bytes, int64_t stages) {
  return stages * stageBytes(tile, bytes) + 16 * stages;
}

/// Registers the producer warpgroup keeps (setmaxnreg.dec).
constexpr int64_t kProducerRegisters = 40;

/// Registers per thread a block of `resident` per SM starts with, as ptxas
/// allots them under nvvm.minctasm (multiples of 8, at most 255).
int64_t launchRegisters(const GemmTile &tile, const TargetDescription &target,
                        int64_t resident) {
  int64_t threads = 128 * (1 + consumersOf(tile));
  return std::min<int64_t>(target.registersPerSM / (resident * threads), 255) /
         8 * 8;
}

/// Registers of each consumer thread once the producer gave its own away:
/// what the block started with, at most 232 (CUTLASS's pick).
int64_t consumerRegisters(const GemmTile &tile, const TargetDescription &target,
                          int64_t resident) {
  int64_t consumers = consumersOf(tile);
  int64_t pool = (1 + consumers) * launchRegisters(tile, target, resident);
  return std::min<int64_t>((pool - kProducerRegisters) / consumers / 8 * 8,
                           232);
}

/// Blocks per SM: two where two pipelines fit the SM's shared memory (1
/// KiB each reserved) and the registers under two hold the accumulators
/// (bn / 2 a thread) with room to spare, both the consumers' after
/// setmaxnreg and the launch's (ptxas compiles the whole kernel, wgmma
/// included, within the latter: a 64 x 256 tile at two blocks fails with
/// C7602 "insufficient registers"); one otherwise. Narrow tiles (bn 64)
/// read shared memory the most per flop: two blocks keep their loads in
/// flight while the other's wgmma run.
int64_t residentOf(const GemmTile &tile, int64_t bytes,
                   const TargetDescription &target) {
  int64_t shared = sharedBytesOf(tile, bytes, tile.stages) + 1024;
  int64_t needed = tile.bn / 2 + 48;
  bool twoFit = 2 * shared <= target.sharedBytesPerSM &&
                needed <= consumerRegisters(tile, target, 2) &&
                needed <= launchRegisters(tile, target, 2);
  return twoFit ? 2 : 1;
}

/// Shared memory a block may take with `resident` blocks to an SM.
int64_t blockSharedBudget(const TargetDescription &target, int64_t resident) {
  return std::min(target.sharedBytesPerBlockOptIn,
                  target.sharedBytesPerSM / resident - 1024);
}

/// Passes of the staged epilogue a persistent block may take (more kept
/// the accumulators live across them: a 128 x 256 tile of 4 stages, 4
/// passes, spilled 208 bytes and ran 10% slower than with 3 stages and 2).
constexpr int64_t kPersistentPasses = 2;

/// Shared memory the staged epilogue of a persistent block takes beside the
/// pipeline, alignment included (none for the fragment epilogue).
int64_t persistentStagingBytes(const GemmShape &shape, const GemmTile &tile) {
  if (!canStageEpilogue(shape, tile.bn, 128 * consumersOf(tile)))
    return 0;
  return stagingBytesPerPass(tile.bm, tile.bn, 1, kPersistentPasses) + 128;
}

/// The most k-tiles (of k, as a product sees it; a convolution's taps pad
/// each to whole channel blocks) a persistent kernel's tile has.
constexpr int64_t kPersistentKTiles = 24;

/// Whether the kernel is persistent, each block walking several output
/// tiles: more tiles than blocks at once, no split-K, and few k-tiles a
/// tile, where the pipeline's fill and the epilogue weigh the most. On the
/// transformers' linear layers (H200, bench/sweep.py) it ran 4-7% faster at
/// 12 k-tiles and no faster from 48.
bool isPersistent(const GemmShape &shape, const GemmTile &tile, int64_t bytes,
                  const TargetDescription &target, int64_t splits) {
  int64_t resident = residentOf(tile, bytes, target);
  return splits == 1 && ceilDiv(shape.k, tile.bk) <= kPersistentKTiles &&
         GemmSchedule::of(shape, tile).tiles() > target.smCount * resident &&
         sharedBytesOf(tile, bytes, tile.stages) +
                 persistentStagingBytes(shape, tile) <=
             blockSharedBudget(target, resident);
}

class GemmWgmmaKernel : public GemmKernel {
public:
  GemmWgmmaKernel(KernelOp kernel, gpu::GPUModuleOp module,
                  const TargetDescription &target, GemmTile tile)
      : GemmKernel(kernel, module, target, tile) {}

private:
  FailureOr<LaunchConfig> emitGemm(const GemmProblem &problem) override;

  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, b.getI32Type(), v);
  }
  Value toI32(Value index) {
    return arith::IndexCastOp::create(b, b.getI32Type(), index);
  }
  /// Issues the TMA copies of k-tile `kt` of `operand` (tile rows from
  /// `i0`) into the stage at shared address `dst`, completing on `full`.
  void copyTile(const WgmmaOperand &operand, ArrayRef<Value> maps,
                int64_t extent, Value i0, Value kt, Value batchCoord,
                Value dst, Value full);

  /// Issues an im2col copy of channels c0.. into `dst`: consecutive output
  /// pixels from `pixel` (n, ho, wo), each reading its window's pixel at
  /// tap (r, s) (the pixel offsets) from the bounding box's corner (ho -
  /// top, wo - left).
  void copyIm2col(const WgmmaOperand::Conv &c, Value map, ArrayRef<Value> pixel,
                  Value c0, Value r, Value s, Value dst, Value full);

  WgmmaOperands operands;
  /// Bytes per element of the operands.
  int64_t bytes = 2;
};

} // namespace

//===----------------------------------------------------------------------===//
// Configuration
//===----------------------------------------------------------------------===//

bool fusec::tiling::isWgmmaGemm(Operation *anchor, const GemmShape &shape,
                                const TargetDescription &target) {
  if (target.tensorCores != fusec::TensorCores::Wgmma ||
      !(shape.elementType.isF16() || shape.elementType.isBF16()))
    return false;
  std::optional<WgmmaOperands> ops = wgmmaOperands(anchor);
  // Merged weights need a tile width (64 at least) that no tile of B
  // straddles two of them with.
  if (!ops || !partsAligned(ops->b, 64))
    return false;
  for (const WgmmaOperand *operand : {&ops->a, &ops->b})
    for (const WgmmaOperand::Part &part : operand->parts)
      if (!wgmma::tmaAddressable(part.dims))
        return false;
  return true;
}

LogicalResult fusec::tiling::verifyWgmmaTile(KernelOp kernel,
                                             Operation *anchor,
                                             const GemmShape &shape,
                                             const GemmTile &tile,
                                             const TargetDescription &target,
                                             bool quiet) {
  int64_t bytes = shape.elementType.getIntOrFloatBitWidth() / 8;
  std::optional<WgmmaOperands> ops = wgmmaOperands(anchor);
  int64_t shared = sharedBytesOf(tile, bytes, tile.stages);
  bool ok = ops && (tile.bm == 64 || tile.bm == 128) && tile.bn % 64 == 0 &&
            tile.bn >= 64 && tile.bn <= 256 && tile.bk * bytes == 128 &&
            tile.warpsM == 4 * consumersOf(tile) && tile.warpsN == 1 &&
            tile.kGroups() == 1 && tile.stages >= 2 && tile.stages <= 8 &&
            partsAligned(ops->b, tile.bn) &&
            shared <= target.sharedBytesPerBlockOptIn;
  if (ok || quiet)
    return success(ok);
  return unsuitableTile(kernel, tile, "the warpgroup GEMM")
         << "it needs bm 64 or 128 with warps_m = bm / 16 and warps_n = 1 (a "
            "warpgroup per 64 rows), bn "
            "a multiple of 64 up to 256 (and of every merged weight's rows), "
            "bk "
         << 128 / bytes << " (128 bytes), 2 to 8 stages, and at most "
         << target.sharedBytesPerBlockOptIn
         << " bytes of shared memory; this one needs " << shared;
}

GemmTile fusec::tiling::chooseWgmmaTile(Operation *anchor,
                                        const GemmShape &shape,
                                        const TargetDescription &target) {
  int64_t bytes = shape.elementType.getIntOrFloatBitWidth() / 8;
  std::optional<WgmmaOperands> ops = wgmmaOperands(anchor);
  int64_t bk = 128 / bytes;
  // Candidates with an efficiency relative to the widest tile (the shared
  // memory a wgmma reads per flop falls with n), like the mma.sync
  // heuristic's; each with as many stages as fit, up to 4 and no more than
  // its k-tiles (at least 2): a 1x1 convolution of 64 channels has one,
  // and its 128 x 256 tile ran 5% faster with two stages than with four
  // (bench/results/2026-11-27-forward-results).
  struct Candidate {
    int64_t bm, bn;
    double efficiency;
  };
  SmallVector<Candidate> candidates = {
      {128, 256, 1.0}, {128, 192, 0.95}, {128, 128, 0.85}, {64, 256, 0.7},
      {128, 64, 0.6},  {64, 128, 0.6},   {64, 64, 0.4}};
  // A filter gradient's n is 9 x 64 at ResNet's first stage: three tiles.
  if (shape.splitK)
    candidates.push_back({64, 192, 0.75});
  TileRanking ranking;
  for (const Candidate &c : candidates) {
    GemmTile t;
    t.bm = c.bm;
    t.bn = c.bn;
    t.bk = bk;
    t.warpsM = 4 * consumersOf(t);
    t.warpsN = 1;
    int64_t deepest = std::clamp<int64_t>(ceilDiv(shape.k, bk), 2, 4);
    t.stages = fitStages(
        deepest, 2, target.sharedBytesPerBlockOptIn,
        [&](int64_t stages) { return sharedBytesOf(t, bytes, stages); });
    // A persistent kernel's epilogue stages through memory of its own: a
    // stage fewer where that makes it one (isPersistent).
    if (!shape.splitK && !isPersistent(shape, t, bytes, target, 1)) {
      GemmTile shallower = t;
      shallower.stages = t.stages - 1;
      if (shallower.stages >= 2 &&
          isPersistent(shape, shallower, bytes, target, 1))
        t = shallower;
    }
    if (!ops || !partsAligned(ops->b, t.bn) || isMostlyPadding(shape, t))
      continue;
    double time =
        static_cast<double>(GemmSchedule::of(shape, t).tilesPerSM(target)) *
        t.bm * t.bn / c.efficiency;
    if (shape.splitK) {
      // In flops of the whole GPU: the busiest SM's blocks, each its share
      // of the k-tiles, times the SMs; then the splits' f32 sums written
      // and read back (8 bytes an element a split) at about 300 flops a
      // byte, the tensor cores' rate over HBM's. Fewer, longer splits won
      // where the reduction was a third of the time: 26.5 us for 128x128
      // against 34.7 for 128x256 on ResNet-50's 256-channel layer at batch
      // 32 (H200, bench/results/2026-11-27-wgmma-wgrad).
      constexpr double kFlopsPerByte = 300;
      int64_t splits = splitKOf(shape, t, target, residentOf(t, bytes, target));
      int64_t perSM =
          ceilDiv(GemmSchedule::of(shape, t).tiles() * splits, target.smCount);
      int64_t kTiles = ceilDiv(ceilDiv(shape.k, t.bk), splits);
      time = static_cast<double>(perSM) * target.smCount * 2 * t.bm * t.bn *
             t.bk * kTiles / c.efficiency;
      if (splits > 1)
        time += kFlopsPerByte * 8 * splits * shape.batch * shape.m * shape.n;
    }
    ranking.consider(t, time);
  }
  // Only merged weights whose parts no tile width divides: the narrowest.
  return ranking.winner().value_or(GemmTile{128, 64, bk, 0, 0, 8, 1, 4});
}

std::vector<GemmTile> fusec::tiling::wgmmaTuningTiles(Operation *anchor,
                                                      const GemmShape &shape,
                                                      const TargetDescription &target) {
  int64_t bytes = shape.elementType.getIntOrFloatBitWidth() / 8;
  std::vector<GemmTile> tiles;
  for (int64_t bm : {64, 128})
    for (int64_t bn : {64, 128, 192, 256}) {
      GemmTile t{bm, bn, 128 / bytes, 0, 0, 4 * (bm / 64), 1, 0};
      // The deepest pipeline that fits (up to 6), and 3.
      int64_t deepest =
          fitStages(6, 2, target.sharedBytesPerBlockOptIn, [&](int64_t stages) {
            return sharedBytesOf(t, bytes, stages);
          });
      SmallVector<int64_t> depths{deepest};
      if (deepest > 3)
        depths.push_back(3);
      for (int64_t stages : depths) {
        t.stages = stages;
        if (succeeded(verifyWgmmaTile(KernelOp(), anchor, shape, t, target,
                                      /*quiet=*/true)))
          tiles.push_back(t);
      }
    }
  return tiles;
}

std::unique_ptr<KernelBuilder>
fusec::tiling::makeGemmWgmmaKernel(KernelOp kernel, gpu::GPUModuleOp module,
                                   const TargetDescription &target,
                                   const GemmTile &tile) {
  return std::make_unique<GemmWgmmaKernel>(kernel, module, target, tile);
}

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

void GemmWgmmaKernel::copyIm2col(const WgmmaOperand::Conv &c, Value map,
                                 ArrayRef<Value> pixel, Value c0, Value r,
                                 Value s, Value dst, Value full) {
  auto i16 = [&](Value v) {
    return arith::IndexCastOp::create(b, b.getI16Type(), v);
  };
  wgmma::copyBox(b, dst, map,
                 ValueRange{c0, toI32(subi(pixel[2], idx(c.left))),
                            toI32(subi(pixel[1], idx(c.top))), toI32(pixel[0])},
                 full,
                 ValueRange{i16(muli(s, idx(c.dw))), i16(muli(r, idx(c.dh)))});
}

void GemmWgmmaKernel::copyTile(const WgmmaOperand &operand,
                               ArrayRef<Value> maps, int64_t extent, Value i0,
                               Value kt, Value batchCoord, Value dst,
                               Value full) {
  if (operand.im2col && !operand.kMajor) {
    // A filter gradient's input: k-tile kt is bk output pixels from kt * bk,
    // each panel of 64 columns one tap's channels c0.. (past the last tap,
    // columns no store reads: the last tap's again).
    const WgmmaOperand::Conv &c = *operand.conv;
    int64_t panelCols = 128 / bytes;
    SmallVector<Value> p =
        delinearize(muli(kt, idx(tile.bk)), {c.n, c.ho, c.wo});
    for (int64_t q = 0; q < extent / panelCols; ++q) {
      Value col = addi(i0, idx(q * panelCols));
      Value tap = mini(divi(col, c.ci), idx(c.kh * c.kw - 1));
      Value c0 = toI32(remi(col, c.ci));
      // One statement each: C++ leaves the order of arguments open.
      Value r = divi(tap, c.kw);
      Value s = remi(tap, c.kw);
      Value panel = wgmma::offset(b, dst, q * panelCols * tile.bk * bytes);
      copyIm2col(c, maps[0], p, c0, r, s, panel, full);
    }
    return;
  }
  if (operand.conv) {
    // k-tile kt is channels c0.. of filter tap (r, s).
    const WgmmaOperand::Conv &c = *operand.conv;
    int64_t blocks = ceilDiv(c.ci, tile.bk);
    Value tap = divi(kt, blocks);
    Value c0 = toI32(muli(remi(kt, blocks), idx(tile.bk)));
    Value r = divi(tap, c.kw), s = remi(tap, c.kw);
    if (!operand.im2col && c.flipped) {
      // A transpose's filter as [Co, kw, kh, Ci], taps reversed: panels of
      // 64 outputs x bk channels, one box each.
      Value fs = toI32(subi(idx(c.kw - 1), s)), fr = toI32(subi(idx(c.kh - 1), r));
      for (int64_t p = 0; p < extent / 64; ++p)
        wgmma::copyBox(b, wgmma::offset(b, dst, p * 64 * tile.bk * bytes),
                       maps[0],
                       ValueRange{toI32(addi(i0, idx(p * 64))), fs, fr, c0},
                       full);
      return;
    }
    if (!operand.im2col) {
      // The filter as [Ci, kw, kh, Co]: a box of channels x bn outputs.
      wgmma::copyBox(b, dst, maps[0],
                     ValueRange{c0, toI32(s), toI32(r), toI32(i0)}, full);
      return;
    }
    // The input: bm consecutive output pixels from i0.
    SmallVector<Value> pixel = delinearize(i0, {c.n, c.ho, c.wo});
    copyIm2col(c, maps[0], pixel, c0, r, s, dst, full);
    return;
  }
  Value k0 = toI32(muli(kt, idx(tile.bk)));
  // The part holding rows i0.. (partsAligned), and i0 within it.
  auto issue = [&](Value map, Value i) {
    auto coords = [&](Value first, Value second) {
      SmallVector<Value> c{first, second};
      if (batchCoord)
        c.push_back(batchCoord);
      return c;
    };
    if (operand.kMajor) {
      // One box of bk x extent: rows of 128 bytes of k.
      wgmma::copyBox(b, dst, map, coords(k0, toI32(i)), full);
      return;
    }
    // Panels of 64 i x bk k, one box each.
    for (int64_t p = 0; p < extent / 64; ++p)
      wgmma::copyBox(b, wgmma::offset(b, dst, p * 64 * tile.bk * bytes), map,
                     coords(toI32(addi(i, idx(p * 64))), k0), full);
  };
  if (maps.size() == 1) {
    issue(maps[0], i0);
    return;
  }
  // Merged weights: a branch per part, the tile lying in one.
  std::function<void(size_t)> from = [&](size_t p) {
    Value local = subi(i0, idx(operand.parts[p].start));
    if (p + 1 == maps.size())
      return issue(maps[p], local);
    auto ifOp = scf::IfOp::create(b, TypeRange(),
                                  ltc(i0, operand.parts[p + 1].start), true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    issue(maps[p], local);
    b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
    from(p + 1);
  };
  from(0);
}

FailureOr<LaunchConfig>
GemmWgmmaKernel::emitGemm(const GemmProblem &problem) {
  const GemmTile &t = tile;
  const GemmShape &shape = problem.shape;
  operands = *wgmmaOperands(problem.a.layout, problem.b.layout);
  bytes = shape.elementType.getIntOrFloatBitWidth() / 8;
  int64_t consumers = consumersOf(t);
  int64_t threads = 128 * (1 + consumers);
  int64_t aBytes = t.bm * t.bk * bytes, bBytes = t.bn * t.bk * bytes;
  int64_t stage = aBytes + bBytes;

  // The tensor maps: one per operand part, boxes of 128 bytes of the
  // contiguous axis by the tile's extent (K-major) or by bk (MN-major).
  auto mapsOf = [&](const WgmmaOperand &operand, int64_t extent) {
    SmallVector<Value> maps;
    for (const WgmmaOperand::Part &part : operand.parts) {
      TensorMapParam map;
      map.memref = part.memref;
      map.dims = part.dims;
      map.strides = operand.strides;
      map.box = {128 / bytes, operand.kMajor ? extent : t.bk};
      // Outer axes (a batch, a filter tap) one at a time.
      map.box.resize(operand.im2col ? 2 : part.dims.size(), 1);
      if (operand.conv && !operand.im2col)
        map.box = {128 / bytes, 1, 1, operand.kMajor ? extent : t.bk};
      if (operand.im2col) {
        const WgmmaOperand::Conv &c = *operand.conv;
        int64_t h = part.dims[2], w = part.dims[1];
        // Each image's bounding box spans ho x wo window corners.
        map.im2colLower = {-c.left, -c.top};
        map.im2colUpper = {c.wo - w - c.left, c.ho - h - c.top};
      }
      maps.push_back(addTensorMap(map));
    }
    return maps;
  };
  SmallVector<Value> aMaps = mapsOf(operands.a, t.bm);
  SmallVector<Value> bMaps = mapsOf(operands.b, t.bn);

  // Shared memory: the stages (A tiles, then B tiles), then a full and an
  // empty mbarrier per stage. One TMA transaction (A and B) completes a
  // full one; each consumer warpgroup's release, an empty one.
  TmaPipeline::Config pipe = {t.stages, /*loads=*/1, /*once=*/0, consumers,
                              /*arrayIndexed=*/true};
  Value aSmem = allocShared({t.stages * aBytes}, b.getI8Type(), 1024);
  Value bSmem = allocShared({t.stages * bBytes}, b.getI8Type(), 1024);
  Value barrierSmem =
      allocShared({TmaPipeline::barrierCount(pipe)}, b.getI64Type(), 8);
  Value aBase = wgmma::sharedAddress(b, aSmem);
  Value bBase = wgmma::sharedAddress(b, bSmem);
  TmaPipeline pipeline(b, wgmma::sharedAddress(b, barrierSmem), pipe);

  Value tid = threadId();
  // Convolutions walk the taps, then blocks of channels (TMA's zero fill
  // pads the last block).
  int64_t numK = operands.a.conv ? operands.a.conv->kh * operands.a.conv->kw *
                                       ceilDiv(operands.a.conv->ci, t.bk)
                                 : ceilDiv(shape.k, t.bk);
  // Split-K (filter gradients): block z runs k-tiles [z * numK', (z + 1) *
  // numK'), past k TMA's zero fill.
  int64_t resident = residentOf(t, bytes, target);
  int64_t splits = splitKOf(shape, t, target, resident);
  Value split = splits > 1 ? blockId(gpu::Dimension::z) : Value();
  if (splits > 1)
    numK = ceilDiv(numK, splits);
  Value kBase = splits > 1 ? muli(split, idx(numK)) : Value();

  // More tiles than blocks at once: each block walks tiles x, x + grid, ...
  // (CUTLASS's persistent kernels), so that the producer loads the next
  // tile's first k-tiles while the consumers run the epilogue, and no block
  // starts with an empty pipeline. The staged epilogue then needs shared
  // memory of its own.
  GemmSchedule schedule = GemmSchedule::of(shape, t);
  int64_t blocks = target.smCount * resident;
  bool staged = canStageEpilogue(shape, t.bn, 128 * consumers);
  bool persistent = isPersistent(shape, t, bytes, target, splits);
  int64_t stagingBytes = 0;
  if (persistent && staged) {
    int64_t spare = blockSharedBudget(target, resident) -
                    sharedBytesOf(t, bytes, t.stages) - 128;
    stagingBytes = stagingBytesPerPass(
        t.bm, t.bn, 1, stagingPasses(t.bm, t.bn, 4 * consumers, 1, spare));
  }
  // After the pipeline's buffers (the epilogue's view extends the launch's
  // shared memory).
  int64_t staging = persistent ? llvm::alignTo(sharedBytes, 128) : 0;

  // Runs `body` on each tile of this block: its origin, batch and first
  // pipeline iteration.
  auto forEachTile = [&](function_ref<void(Value, Value, Value, Value)> body) {
    if (!persistent) {
      Value tileM, tileN;
      std::tie(tileM, tileN) = emitTileOrigin(shape, t);
      body(tileM, tileN, blockId(gpu::Dimension::y), idx(0));
      return;
    }
    Value first = blockId(gpu::Dimension::x);
    loop(first, idx(schedule.tiles()), idx(blocks), {},
         [&](Value w, ValueRange) -> SmallVector<Value> {
           Value tileM, tileN;
           std::tie(tileM, tileN) = emitTileOrigin(
               shape, t, remi(w, schedule.tilesPerBatch()));
           Value round = divi(subi(w, first), blocks);
           body(tileM, tileN, divi(w, schedule.tilesPerBatch()),
                muli(round, idx(numK)));
           return {};
         });
  };
  // Each operand's own batch coordinate (broadcast from the GEMM's).
  auto batchCoord = [&](const WgmmaOperand &operand, Value batch) -> Value {
    if (operand.batchShape.empty())
      return Value();
    SmallVector<Value> coords = broadcastCoords(
        delinearize(batch, operands.batchShape), operand.batchShape);
    Value linear = idx(0);
    for (auto [c, d] : llvm::zip_equal(coords, operand.batchShape))
      linear = addi(muli(linear, idx(d)), c);
    return toI32(linear);
  };

  ifThen(cmpi(arith::CmpIPredicate::eq, tid, idx(0)), [&] { pipeline.init(); });
  gpu::BarrierOp::create(b);

  // The producer gives up registers, and its thread 0 streams the k-tiles.
  OpBuilder::InsertionGuard guard(b);
  auto producer = [&] {
    forEachTile([&](Value tileM, Value tileN, Value batch, Value base) {
      Value aBatch = batchCoord(operands.a, batch);
      Value bBatch = batchCoord(operands.b, batch);
      loop(0, numK, [&](Value kt) {
        // The stage is free once its previous round's consumers released
        // it.
        PipelineState state = pipeline.producerState(addi(base, kt));
        pipeline.producerAcquire(state);
        Value s = state.stage;
        Value k = kBase ? addi(kBase, kt) : kt;
        pipeline.expectBytes(pipeline.full(s), stage);
        copyTile(operands.a, aMaps, t.bm, tileM, k, aBatch,
                 wgmma::offset(b, aBase, s, aBytes), pipeline.full(s));
        copyTile(operands.b, bMaps, t.bn, tileN, k, bBatch,
                 wgmma::offset(b, bBase, s, bBytes), pipeline.full(s));
      });
    });
  };
  // Also for one consumer: without setmaxnreg, ptxas serialised its wgmma
  // ("WG.AR in divergent path", C7520).
  WarpgroupRegisters registers{kProducerRegisters,
                               consumerRegisters(t, target, resident)};
  ConsumerThread thread = splitWarpgroups(b, tid, registers, producer);
  Value ctid = thread.tid, consumer = thread.warpgroup;

  bool aK = operands.a.kMajor, bK = operands.b.kMajor;
  // Descriptor steps per k16: 32 bytes along a K-major row, 16 rows of 128
  // bytes down an MN-major panel.
  int64_t aStep = aK ? 32 : 16 * 128, bStep = bK ? 32 : 16 * 128;
  int64_t panel = t.bk * 128;
  // Register 4j + r of warp w (of the warpgroup) holds C[16w + g + 8(r/2)]
  // [8j + 2t + r%2]: an m16n8 fragment per j, the consumers' warps a
  // column of warpsM x 1.
  AccumulatorLayout layout;
  layout.bm = t.bm;
  layout.bn = t.bn;
  layout.warpsM = 4 * consumers;
  layout.threads = 128 * consumers;
  layout.tid = ctid;
  layout.lane = remi(ctid, 32);
  layout.warpM = divi(ctid, 32);
  layout.warpN = idx(0);
  layout.warpK = idx(0);
  layout.stagingBytes = persistent ? stagingBytes : t.stages * stage;
  layout.stagingOffset = staging;
  // The consumers alone: the producer warpgroup has left.
  layout.barrier = [&] { wgmma::namedBarrier(b, 1, layout.threads); };
  // ptxas gives each thread the registers `resident` blocks leave, which
  // setmaxnreg then moves (launchRegisters).
  func->setAttr("nvvm.minctasm", b.getI32IntegerAttr(resident));
  LaunchConfig config{{schedule.tilesPerBatch(), shape.batch, splits},
                      {threads, 1, 1}};
  if (persistent)
    config.grid = {blocks, 1, 1};
  std::optional<LaunchConfig> reduction;
  forEachTile([&](Value tileM, Value tileN, Value batch, Value base) {
    // This warpgroup's 64 rows of A: 64 rows of 128 bytes (K-major), or
    // its own panel (MN-major); the same offset either way.
    Value acc = loop(idx(0), idx(numK), idx(1),
                     {wgmma::zeroAccumulators(b, t.bn)},
                     [&](Value kt, ValueRange iter) -> SmallVector<Value> {
                       Value i = addi(base, kt);
                       PipelineState state = pipeline.consumerState(i);
                       pipeline.consumerWait(state);
                       Value s = state.stage;
                       Value aTile = wgmma::offset(
                           b, wgmma::offset(b, aBase, s, aBytes), consumer,
                           64 * 128);
                       Value bTile = wgmma::offset(b, bBase, s, bBytes);
                       NVVM::WgmmaFenceAlignedOp::create(b);
                       Value d = iter[0];
                       for (int64_t ks = 0; ks < t.bk / 16; ++ks)
                         d = wgmma::mmaSS(
                             b, d,
                             wgmma::descriptor(
                                 b, wgmma::offset(b, aTile, ks * aStep), aK,
                                 panel),
                             wgmma::descriptor(
                                 b, wgmma::offset(b, bTile, ks * bStep), bK,
                                 panel),
                             t.bn, shape.elementType, aK, bK);
                       NVVM::WgmmaGroupSyncAlignedOp::create(b);
                       // The previous k-tile's wgmma are done: its stage is
                       // free.
                       NVVM::WgmmaWaitGroupSyncOp::create(b, 1);
                       ifThen(andi(thread.leader,
                                   cmpi(arith::CmpIPredicate::sgt, kt, idx(0))),
                              [&] {
                                Value prev = remi(addi(i, idx(t.stages - 1)),
                                                  t.stages);
                                pipeline.consumerRelease(prev);
                              });
                       return {d};
                     })[0];
    NVVM::WgmmaWaitGroupSyncOp::create(b, 0);
    // The producer is already filling the stages for the next tile: the
    // last one's is free too.
    if (persistent)
      ifThen(thread.leader, [&] {
        pipeline.consumerRelease(
            remi(addi(base, idx(numK - 1)), t.stages));
      });

    SmallVector<Value> values = wgmma::accumulatorValues(b, acc);
    if (splits > 1) {
      // The mainloop becomes the first launch; the reduction, this kernel.
      reduction = finishSplitK(problem, layout, values, tileM, tileN, batch,
                               split, splits, config);
      func->removeAttr("nvvm.minctasm");
      return;
    }
    if (staged)
      emitStagedEpilogue(problem, layout, values, tileM, tileN, batch);
    else
      emitFragmentEpilogue(problem, layout, values, tileM, tileN, batch);
  });
  return reduction ? *reduction : config;
}
