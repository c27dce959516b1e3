//===- GemmMmaSync.cpp - The GEMM family on tensor cores (sm_80+) ---------===//
//
// f16 and bf16 convolutions, linear layers and matrix products, and f32 ones
// as TF32, on mma.sync with f32 accumulators:
//
//  - a block of warpsM x warpsN warps computes a bm x bn tile of C, each
//    warp a (bm/warpsM) x (bn/warpsN) part of m16n8 accumulator fragments;
//    with warpsK groups of such warps ("sliced k"), each group takes its
//    share of every k-tile, and the groups' parts are summed at the end;
//  - A and B tiles, bk deep, flow through `stages` shared-memory buffers:
//    cp.async copies 16 bytes per thread (zero-filled outside the operand)
//    where the operand has aligned 16-byte runs, otherwise the tile goes
//    element by element through registers, loaded while the tensor cores
//    work on an earlier stage;
//  - the 16-byte chunks of every shared-memory row are XOR-swizzled, so
//    that neither the copies nor ldmatrix, which feeds the fragments, meet
//    bank conflicts;
//  - the fused epilogue runs on the accumulator fragments in registers and
//    stores neighbouring columns as one vector.
//
// The instructions themselves are in MmaSync.cpp, shared with attention.
//
//===----------------------------------------------------------------------===//

#include "Families.h"
#include "GemmSchedule.h"
#include "MmaSync.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {

class GemmMmaSyncKernel : public GemmKernel {
public:
  GemmMmaSyncKernel(KernelOp kernel, gpu::GPUModuleOp module,
                    const TargetDescription &target, GemmTile tile,
                    MmaType type, const TilingOptions &options)
      : GemmKernel(kernel, module, target, tile), type(type),
        options(options) {}

private:
  /// One operand's tiles in shared memory: `stages` buffers of rows x cols,
  /// k along cols (kMajor) or along rows.
  struct SmemTile {
    const GemmOperand *operand;
    Value buffer;
    /// The operand's extent in the block tile (bm for A, bn for B).
    int64_t extent;
    int64_t rows, cols;
    bool kMajor;
    /// Filled by cp.async of 16-byte chunks; else element by element
    /// through registers.
    bool async;
  };

  FailureOr<LaunchConfig> emitGemm(const GemmProblem &problem) override;

  SmemTile makeTile(const GemmOperand &operand, int64_t extent);
  /// The swizzled column of element `col` of row `row` of `tile`.
  Value swizzle(const SmemTile &tile, Value row, Value col) {
    return swizzleColumn(b, type, tile.cols, row, col);
  }
  /// Issues the cp.async copies of k-tile `kTile` into `stage`.
  void copyAsync(const SmemTile &tile, Value tile0, Value kTile, Value stage);
  /// Loads k-tile `kTile` element by element into registers, and stores
  /// such registers into `stage`.
  SmallVector<Value> loadElements(const SmemTile &tile, Value tile0,
                                  Value kTile);
  void storeElements(const SmemTile &tile, ArrayRef<Value> values,
                     Value stage);
  /// The (row, col) of the r-th element a thread moves in storeElements /
  /// loadElements: consecutive threads take consecutive elements along the
  /// operand's contiguous axis in memory.
  std::pair<Value, Value> elementPos(const SmemTile &tile, int64_t r);
  int64_t elementsPerThread(const SmemTile &tile) {
    return ceilDiv(tile.rows * tile.cols, threads);
  }
  /// The operand element (i, k) of this block's batch, i being m or n.
  GemmAddress addressOf(const SmemTile &tile, Value tile0, Value kTile,
                        Value row, Value col);

  /// Fragments of A for m16 tile `fm` and the k-step at column `k0` of the
  /// tile: 4 registers.
  SmallVector<Value> loadFragmentA(const SmemTile &tile, Value stage,
                                   int64_t fm, Value k0);
  /// Fragments of B for n8 tiles `fn` and, with `pair`, `fn + 1`: 2
  /// registers per tile.
  SmallVector<Value> loadFragmentB(const SmemTile &tile, Value stage,
                                   int64_t fn, Value k0, bool pair);
  /// ldmatrix of `tiles` 8x8 matrices whose rows lane l addresses at
  /// (row(l), col(l)) of `stage`, as 32-bit registers.
  SmallVector<Value> ldmatrix(const SmemTile &tile, Value stage, Value row,
                              Value col, int64_t tiles, bool transpose) {
    return emitLdmatrix(b, type, tile.buffer,
                        {stage, row, swizzle(tile, row, col)}, tiles,
                        transpose);
  }
  /// acc += A x B on one m16n8 fragment.
  SmallVector<Value> mma(ArrayRef<Value> a, ArrayRef<Value> bRegs,
                         ArrayRef<Value> acc) {
    return emitMma(b, type, a, bRegs, acc);
  }

  MmaType type;
  TilingOptions options;
  Type elementType;
  int64_t threads = 0;
  Value tid, lane, warpM, warpN, warpK, batch;
};

} // namespace

//===----------------------------------------------------------------------===//
// Configuration
//===----------------------------------------------------------------------===//

bool fusec::tiling::isMmaSyncGemm(const GemmShape &shape,
                                  const TilingOptions &options) {
  return mmaTypeOf(shape.elementType, options.fp32Math).has_value();
}

/// Shared memory of `tile`'s pipeline, in bytes.
static int64_t pipelineBytes(const GemmTile &tile, int64_t bytes) {
  return tile.stages * (tile.bm + tile.bn) * tile.bk * bytes;
}

/// Passes of whole warp rows in which the staged epilogue moves the
/// accumulators of `tile` through the pipeline's shared memory.
static int64_t stagingPasses(const GemmTile &tile, int64_t bytes) {
  return stagingPasses(tile.bm, tile.bn, tile.warpsM, tile.kGroups(),
                       pipelineBytes(tile, bytes));
}

/// Whether the epilogue of `tile` goes through shared memory.
static bool stagedEpilogue(const GemmShape &shape, const GemmTile &tile) {
  return canStageEpilogue(shape, tile.bn,
                          32 * tile.warpsM * tile.warpsN * tile.kGroups());
}

/// Shared memory of `tile`: its pipeline, or its epilogue's staging if more.
static int64_t sharedBytesOf(const GemmTile &tile, int64_t bytes) {
  return std::max(pipelineBytes(tile, bytes),
                  stagingBytesPerPass(tile.bm, tile.bn, tile.kGroups(),
                                      stagingPasses(tile, bytes)));
}

/// `tile` with `stages` pipeline stages.
static GemmTile withStages(GemmTile tile, int64_t stages) {
  tile.stages = stages;
  return tile;
}

/// Estimated registers per thread of `tile`: the accumulators, the A and B
/// fragments of one k-step, addressing and the epilogue.
static int64_t estimatedRegisters(const GemmTile &tile) {
  int64_t fragsM = tile.bm / tile.warpsM / 16, fragsN = tile.bn / tile.warpsN / 8;
  return 4 * fragsM * fragsN + 4 * fragsM + 2 * fragsN + 64;
}

/// Blocks of `tile` an SM holds at once, by shared memory, threads and
/// estimated registers.
static int64_t residentBlocks(const GemmTile &tile, int64_t bytes,
                              const TargetDescription &target) {
  int64_t threads = 32 * tile.warpsM * tile.warpsN * tile.kGroups();
  return std::min({target.sharedBytesPerSM / sharedBytesOf(tile, bytes),
                   target.maxThreadsPerSM / threads,
                   target.registersPerSM /
                       (estimatedRegisters(tile) * threads)});
}

std::vector<GemmTile>
fusec::tiling::mmaSyncTuningTiles(const GemmShape &shape,
                                  const TargetDescription &target,
                                  const TilingOptions &options) {
  int64_t bytes = mmaTypeOf(shape.elementType, options.fp32Math)->bytes;
  int64_t k64 = 64 / bytes, k128 = 128 / bytes;
  GemmTile tiles[] = {{128, 256, k128, 0, 0, 2, 4, 3},
                      {128, 128, k64, 0, 0, 2, 2, 4},
                      {128, 64, k64, 0, 0, 2, 2, 4},
                      {64, 128, k64, 0, 0, 2, 2, 4},
                      {64, 64, k128, 0, 0, 2, 2, 4},
                      {64, 64, k128, 0, 0, 2, 2, 4, 2}};
  std::vector<GemmTile> out;
  for (GemmTile t : tiles) {
    t.stages = fitStages(t.stages, 2, target.sharedBytesPerBlockOptIn,
                         [&](int64_t stages) {
                           return sharedBytesOf(withStages(t, stages), bytes);
                         });
    if (sharedBytesOf(t, bytes) <= target.sharedBytesPerBlockOptIn)
      out.push_back(t);
  }
  return out;
}

GemmTile fusec::tiling::chooseMmaSyncTile(const GemmShape &shape,
                                          const TargetDescription &target,
                                          const TilingOptions &options) {
  int64_t bytes = mmaTypeOf(shape.elementType, options.fp32Math)->bytes;
  // A filter gradient (k may split) takes the 64x64 tile: where k splits,
  // every candidate fills the SMs through its splits and the smallest tile
  // holds the most blocks per SM. On an H200 it ran ResNet-50's 3x3 filter
  // gradients at batch 32 fastest: 37 us against 48-100 for the other
  // candidates at 64 channels, 48 against 52-68 at 256, and unsplit at 512
  // channels 37 against the ranking's pick at 55 (bench/results/
  // 2026-11-27-h200-splitk, tiles.txt).
  if (shape.splitK) {
    GemmTile small{64, 64, 128 / bytes, 0, 0, 2, 2, 4};
    small.stages = fitStages(small.stages, 2, target.sharedBytesPerBlockOptIn,
                             [&](int64_t stages) {
                               return sharedBytesOf(withStages(small, stages),
                                                    bytes);
                             });
    if (residentBlocks(small, bytes, target) >= 1 &&
        !isMostlyPadding(shape, small))
      return small;
  }
  // Warp tiles of 64 x 64, 64 x 32 or 32 x 32 accumulators; bk such that a
  // warp issues at least 32 mma.sync between two barriers. Each candidate
  // has an efficiency relative to the largest warp tile (fewer fragment
  // loads and tile copies per mma.sync).
  struct Candidate {
    GemmTile tile;
    double efficiency;
  };
  // Calibrated against bench/sweep.py on an H100 (bench/results): 64-byte
  // k-tiles suit the mid-sized tiles (more blocks fit per SM), 128-byte ones
  // the largest tiles and the smallest. Warp groups along k (warps_k) won on
  // one TF32 layer in one sweep and lost in the next; no candidate uses them.
  int64_t k64 = 64 / bytes, k128 = 128 / bytes;
  Candidate candidates[] = {
      {{128, 256, k128, 0, 0, 2, 4, 3}, 1.1},
      {{128, 128, k64, 0, 0, 2, 2, 4}, 1.0},
      {{128, 64, k64, 0, 0, 2, 2, 4}, 0.9},
      {{64, 128, k64, 0, 0, 2, 2, 4}, 0.9},
      {{64, 64, k128, 0, 0, 2, 2, 4}, 0.8},
  };
  // The estimated time of each: rounds of tiles over the SMs (the busiest
  // SM's share), times a tile's work over its efficiency, slowed where the
  // busiest SM holds too few warps to hide latency.
  TileRanking ranking;
  for (Candidate &c : candidates) {
    GemmTile &t = c.tile;
    t.stages = fitStages(t.stages, 2, target.sharedBytesPerBlockOptIn,
                         [&](int64_t stages) {
                           return pipelineBytes(withStages(t, stages), bytes);
                         });
    if (isMostlyPadding(shape, t))
      continue;
    int64_t threads = 32 * t.warpsM * t.warpsN * t.kGroups();
    int64_t resident = residentBlocks(t, bytes, target);
    if (resident < 1)
      continue;
    // Blocks of a split k each take a share of the tile's reduction.
    int64_t splits = splitKOf(shape, t, target, resident);
    int64_t perSM = ceilDiv(GemmSchedule::of(shape, t).tiles() * splits,
                            target.smCount);
    // A short reduction leaves little to overlap within a block: its copies
    // and epilogue hide behind other blocks only.
    int64_t warps = std::min(perSM, resident) * threads / 32;
    int64_t wantWarps = ceilDiv(shape.k, t.bk * splits) < 8 ? 16 : 8;
    double latency = std::min(1.0, static_cast<double>(warps) / wantWarps);
    double time = static_cast<double>(perSM) * t.bm * t.bn /
                  (splits * c.efficiency * latency);
    ranking.consider(t, time);
  }
  return ranking.winner().value_or(candidates[std::size(candidates) - 1].tile);
}

LogicalResult fusec::tiling::verifyMmaSyncTile(KernelOp kernel,
                                               const GemmShape &shape,
                                               const GemmTile &tile,
                                               const TargetDescription &target,
                                               const TilingOptions &options) {
  int64_t bytes = mmaTypeOf(shape.elementType, options.fp32Math)->bytes;
  int64_t warps = tile.warpsM * tile.warpsN * tile.kGroups();
  int64_t rowBytes = tile.bk * bytes;
  int64_t kSteps = tile.bk / (32 / bytes);
  // Sliced k sums the groups' parts in the staged epilogue, which stores
  // rows of 16-byte vectors.
  bool staged = stagedEpilogue(shape, tile);
  bool ok = warps && tile.stages >= 2 && warps <= 32 &&
            kSteps % tile.kGroups() == 0 &&
            (tile.kGroups() == 1 || staged) &&
            tile.bm % (16 * std::max<int64_t>(tile.warpsM, 1)) == 0 &&
            tile.bn % (8 * std::max<int64_t>(tile.warpsN, 1)) == 0 &&
            rowBytes % 32 == 0 && (rowBytes <= 128 || rowBytes % 128 == 0) &&
            llvm::isPowerOf2_64(tile.bm) && llvm::isPowerOf2_64(tile.bn);
  int64_t shared = ok ? sharedBytesOf(tile, bytes) : 0;
  if (ok && shared <= target.sharedBytesPerBlockOptIn)
    return success();
  return unsuitableTile(kernel, tile, "the tensor-core GEMM")
         << "it needs warps_m, warps_n (at most 32 warps) and stages >= 2, bm "
            "and bn powers of two "
            "that are multiples of 16 * warps_m and 8 * warps_n, and bk a "
            "multiple of "
         << 32 / bytes << " (" << 128 / bytes
         << " beyond that); its pipeline needs " << shared
         << " bytes of shared memory, and " << target.chip
         << " gives a block at most " << target.sharedBytesPerBlockOptIn;
}

std::unique_ptr<KernelBuilder> fusec::tiling::makeGemmMmaSyncKernel(
    KernelOp kernel, gpu::GPUModuleOp module, const TargetDescription &target,
    const GemmTile &tile, const GemmShape &shape,
    const TilingOptions &options) {
  return std::make_unique<GemmMmaSyncKernel>(
      kernel, module, target, tile,
      *mmaTypeOf(shape.elementType, options.fp32Math), options);
}

//===----------------------------------------------------------------------===//
// Shared-memory tiles
//===----------------------------------------------------------------------===//

GemmMmaSyncKernel::SmemTile
GemmMmaSyncKernel::makeTile(const GemmOperand &operand, int64_t extent) {
  SmemTile tile;
  tile.operand = &operand;
  tile.extent = extent;
  // cp.async needs aligned 16-byte runs. Along m or n, ldmatrix can
  // transpose 16-bit elements only; other operands are transposed on their
  // way through registers.
  tile.async = operand.layout.vector == type.chunk() &&
               (operand.layout.kContiguous || type.bytes == 2);
  tile.kMajor = operand.layout.kContiguous || !tile.async;
  tile.rows = tile.kMajor ? extent : this->tile.bk;
  tile.cols = tile.kMajor ? this->tile.bk : extent;
  tile.buffer = allocShared({this->tile.stages, tile.rows, tile.cols},
                            elementType, /*align=*/1024);
  return tile;
}

GemmAddress GemmMmaSyncKernel::addressOf(const SmemTile &tile, Value tile0,
                                         Value kTile, Value row, Value col) {
  Value k0 = muli(kTile, idx(this->tile.bk));
  Value i = tile.kMajor ? row : col, k = tile.kMajor ? col : row;
  return tile.operand->address(batch, addi(tile0, i), addi(k0, k));
}

void GemmMmaSyncKernel::copyAsync(const SmemTile &tile, Value tile0,
                                  Value kTile, Value stage) {
  int64_t v = type.chunk(), chunks = tile.cols / v;
  int64_t items = tile.rows * chunks;
  for (int64_t r = 0; r < ceilDiv(items, threads); ++r) {
    Value e = addi(tid, idx(r * threads));
    auto copy = [&] {
      Value row = divi(e, chunks), col = muli(remi(e, chunks), idx(v));
      GemmAddress address = addressOf(tile, tile0, kTile, row, col);
      SmallVector<Value> dst{stage, row, swizzle(tile, row, col)};
      accessOperand(*tile.operand, address.indices(), Type(),
                    [&](Value memref, SmallVector<Value> indices) {
                      emitCopyChunk(b, type, tile.buffer, dst, memref,
                                    indices, address.inBounds);
                      return Value();
                    });
    };
    if ((r + 1) * threads <= items)
      copy();
    else
      ifThen(ltc(e, items), copy);
  }
}

std::pair<Value, Value> GemmMmaSyncKernel::elementPos(const SmemTile &tile,
                                                      int64_t r) {
  Value e = addi(tid, idx(r * threads));
  // Along k when k is contiguous in memory, else along m or n; the tile is
  // k-major here.
  if (tile.operand->layout.kContiguous)
    return {divi(e, tile.cols), remi(e, tile.cols)};
  return {remi(e, tile.rows), divi(e, tile.rows)};
}

SmallVector<Value> GemmMmaSyncKernel::loadElements(const SmemTile &tile,
                                                   Value tile0, Value kTile) {
  SmallVector<Value> values;
  int64_t items = tile.rows * tile.cols;
  for (int64_t r = 0; r < elementsPerThread(tile); ++r) {
    auto [row, col] = elementPos(tile, r);
    GemmAddress address = addressOf(tile, tile0, kTile, row, col);
    Value inBounds = address.inBounds;
    if ((r + 1) * threads > items)
      inBounds = andi(inBounds, ltc(addi(tid, idx(r * threads)), items));
    values.push_back(ifElse(
        inBounds,
        [&] {
          return accessOperand(
              *tile.operand, address.indices(), elementType,
              [&](Value memref, SmallVector<Value> indices) -> Value {
                return memref::LoadOp::create(b, memref, indices);
              });
        },
        [&] {
          return arith::ConstantOp::create(b, b.getZeroAttr(elementType));
        },
        elementType));
  }
  return values;
}

void GemmMmaSyncKernel::storeElements(const SmemTile &tile,
                                      ArrayRef<Value> values, Value stage) {
  int64_t items = tile.rows * tile.cols;
  for (int64_t r = 0; r < elementsPerThread(tile); ++r) {
    auto store = [&] {
      auto [row, col] = elementPos(tile, r);
      memref::StoreOp::create(b, values[r], tile.buffer,
                              ValueRange{stage, row, swizzle(tile, row, col)});
    };
    if ((r + 1) * threads <= items)
      store();
    else
      ifThen(ltc(addi(tid, idx(r * threads)), items), store);
  }
}

//===----------------------------------------------------------------------===//
// Fragments
//===----------------------------------------------------------------------===//

SmallVector<Value> GemmMmaSyncKernel::loadFragmentA(const SmemTile &tile,
                                                    Value stage, int64_t fm,
                                                    Value k0) {
  int64_t v = type.chunk();
  Value mBase = addi(muli(warpM, idx(this->tile.bm / this->tile.warpsM)),
                     idx(fm * 16));
  if (tile.kMajor) {
    // Lanes 0-15 address rows 0-15 at k 0-7 (a0, a1), lanes 16-31 the same
    // rows at k 8-15 (a2, a3); 4 x 32-bit elements of k for tf32.
    Value row = addi(mBase, remi(lane, 16));
    Value col = addi(k0, muli(divi(lane, 16), idx(v)));
    return ldmatrix(tile, stage, row, col, 4, /*transpose=*/false);
  }
  // Stored k x m: matrix i = lane / 8 holds m 8(i % 2).. and k 8(i / 2)..,
  // transposed on the way.
  Value matrix = divi(lane, 8);
  Value row = addi(k0, addi(muli(divi(matrix, 2), idx(8)), remi(lane, 8)));
  Value col = addi(mBase, muli(remi(matrix, 2), idx(8)));
  return ldmatrix(tile, stage, row, col, 4, /*transpose=*/true);
}

SmallVector<Value> GemmMmaSyncKernel::loadFragmentB(const SmemTile &tile,
                                                    Value stage, int64_t fn,
                                                    Value k0, bool pair) {
  int64_t v = type.chunk();
  Value nBase = addi(muli(warpN, idx(this->tile.bn / this->tile.warpsN)),
                     idx(fn * 8));
  // With one tile, lanes 16-31 supply no address; keep theirs in range.
  Value l = pair ? lane : remi(lane, 16);
  int64_t tiles = pair ? 4 : 2;
  if (tile.kMajor) {
    // Stored n x k: matrix i holds n tile i / 2 at k half i % 2.
    Value row = addi(nBase, addi(muli(divi(l, 16), idx(8)), remi(l, 8)));
    Value col = addi(k0, muli(remi(divi(l, 8), 2), idx(v)));
    return ldmatrix(tile, stage, row, col, tiles, /*transpose=*/false);
  }
  // Stored k x n: lanes address k rows 0-15 of n tile l / 16, transposed.
  Value row = addi(k0, remi(l, 16));
  Value col = addi(nBase, muli(divi(l, 16), idx(8)));
  return ldmatrix(tile, stage, row, col, tiles, /*transpose=*/true);
}

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

FailureOr<LaunchConfig>
GemmMmaSyncKernel::emitGemm(const GemmProblem &problem) {
  const GemmTile &t = tile;
  const GemmShape &shape = problem.shape;
  elementType = shape.elementType;
  threads = 32 * t.warpsM * t.warpsN * t.kGroups();
  int64_t fragsM = t.bm / t.warpsM / 16, fragsN = t.bn / t.warpsN / 8;
  // The k-steps of a k-tile that each warp group takes.
  int64_t kSteps = t.bk / type.instK() / t.kGroups();

  SmemTile aTile = makeTile(problem.a, t.bm);
  SmemTile bTile = makeTile(problem.b, t.bn);

  tid = threadId();
  lane = remi(tid, 32);
  Value warp = divi(tid, 32);
  warpK = divi(warp, t.warpsM * t.warpsN);
  warpM = remi(divi(warp, t.warpsN), t.warpsM);
  warpN = remi(warp, t.warpsN);
  Value kGroup0 = muli(warpK, idx(kSteps * type.instK()));
  Value tileM, tileN;
  std::tie(tileM, tileN) = emitTileOrigin(shape, t);
  batch = blockId(gpu::Dimension::y);
  int64_t numK = ceilDiv(shape.k, t.bk);
  // Split-K: block z runs k-tiles [z * numK', (z + 1) * numK') of the tile
  // (past k, the copies fill zeros); `kTile` maps the loop's own count.
  int64_t splits =
      splitKOf(shape, t, target, residentBlocks(t, type.bytes, target));
  Value split = splits > 1 ? blockId(gpu::Dimension::z) : Value();
  if (splits > 1)
    numK = ceilDiv(numK, splits);
  Value kBase = splits > 1 ? muli(split, idx(numK)) : Value();
  auto kTile = [&](Value k) { return kBase ? addi(kBase, k) : k; };

  // Issues (or, element by element, loads and returns) k-tile `kTile` of
  // both operands for `stage`.
  auto fetch = [&](Value kTile, Value stage) {
    SmallVector<Value> pending;
    for (auto [smem, tile0] : {std::pair{&aTile, tileM}, {&bTile, tileN}}) {
      if (smem->async)
        copyAsync(*smem, tile0, kTile, stage);
      else
        llvm::append_range(pending, loadElements(*smem, tile0, kTile));
    }
    return pending;
  };
  auto storePending = [&](ArrayRef<Value> pending, Value stage) {
    for (SmemTile *smem : {&aTile, &bTile}) {
      if (smem->async)
        continue;
      int64_t count = elementsPerThread(*smem);
      storeElements(*smem, pending.take_front(count), stage);
      pending = pending.drop_front(count);
    }
  };

  // The fragments of one k-step: fragsM x 4 registers of A, then
  // fragsN x 2 of B.
  auto loadFragments = [&](Value stage, Value k0) {
    SmallVector<Value> regs;
    for (int64_t fm = 0; fm < fragsM; ++fm)
      llvm::append_range(regs, loadFragmentA(aTile, stage, fm, k0));
    for (int64_t fn = 0; fn < fragsN; fn += 2)
      llvm::append_range(regs,
                         loadFragmentB(bTile, stage, fn, k0, fn + 1 < fragsN));
    return regs;
  };
  auto mmaStep = [&](ArrayRef<Value> frags, MutableArrayRef<Value> accs) {
    ArrayRef<Value> a = frags.take_front(4 * fragsM);
    ArrayRef<Value> bRegs = frags.drop_front(4 * fragsM);
    for (int64_t fm = 0; fm < fragsM; ++fm)
      for (int64_t fn = 0; fn < fragsN; ++fn) {
        MutableArrayRef<Value> c = accs.slice((fm * fragsN + fn) * 4, 4);
        SmallVector<Value> d =
            mma(a.slice(4 * fm, 4), bRegs.slice(2 * fn, 2), c);
        llvm::copy(d, c.begin());
      }
  };
  Value kFirst = kGroup0;
  // Fragments of the next k-step load before this one's mma.sync (carried
  // across iterations for the first step) for warp tiles of 64 x 64: 10%
  // faster on the FFN's GEMMs, while the registers it takes cost smaller
  // tiles their occupancy (0-10% slower on the convolutions; the sweep in
  // bench/results). The element-by-element path already holds a k-tile in
  // registers.
  bool prefetch = options.prefetchFragments && aTile.async && bTile.async &&
                  fragsM * fragsN >= 32;

  // Prologue: k-tiles 0 .. stages-2 in flight, one commit group each; then
  // k-tile 0 landed and the fragments of its first k-step loaded.
  for (int64_t s = 0; s + 1 < t.stages; ++s) {
    storePending(fetch(kTile(idx(s)), idx(s)), idx(s));
    NVVM::CpAsyncCommitGroupOp::create(b);
  }
  NVVM::CpAsyncWaitGroupOp::create(b, t.stages - 2);
  gpu::BarrierOp::create(b);
  SmallVector<Value> init(fragsM * fragsN * 4, f32(0));
  int64_t numAcc = init.size();
  if (prefetch)
    llvm::append_range(init, loadFragments(idx(0), kFirst));

  // Each iteration runs k-tile kt's k-steps, each loading the next step's
  // fragments before its mma.sync. The copies for k-tile kt + stages - 1
  // go out after the first step's loads; before the last step, k-tile
  // kt + 1 has landed (at most stages-2 newer groups pending), a barrier
  // publishes it (and frees the stage the next copies overwrite), and its
  // first fragments load while the last mma.sync of kt run.
  SmallVector<Value> result = loop(
      idx(0), idx(numK), idx(1), init,
      [&](Value kt, ValueRange iterArgs) -> SmallVector<Value> {
        SmallVector<Value> accs(iterArgs.take_front(numAcc));
        SmallVector<Value> frags(iterArgs.drop_front(numAcc));
        Value readStage = remi(kt, t.stages);
        Value next = addi(kt, idx(t.stages - 1));
        Value writeStage = remi(next, t.stages);
        SmallVector<Value> pending;
        for (int64_t ks = 0; ks < kSteps; ++ks) {
          SmallVector<Value> nextFrags;
          if (!prefetch)
            frags = loadFragments(readStage,
                                  addi(kGroup0, idx(ks * type.instK())));
          else if (ks + 1 < kSteps)
            nextFrags = loadFragments(
                readStage, addi(kGroup0, idx((ks + 1) * type.instK())));
          if (ks == 0) {
            // Past the last k-tile the copies would only fill zeros.
            ifThen(ltc(next, numK), [&] {
              for (auto [smem, tile0] :
                   {std::pair{&aTile, tileM}, {&bTile, tileN}})
                if (smem->async)
                  copyAsync(*smem, tile0, kTile(next), writeStage);
            });
            for (auto [smem, tile0] :
                 {std::pair{&aTile, tileM}, {&bTile, tileN}})
              if (!smem->async)
                llvm::append_range(pending,
                                   loadElements(*smem, tile0, kTile(next)));
            NVVM::CpAsyncCommitGroupOp::create(b);
          }
          if (ks + 1 == kSteps) {
            // Element-by-element tiles, loaded while the tensor cores
            // worked, are stored before the barrier publishes them.
            storePending(pending, writeStage);
            NVVM::CpAsyncWaitGroupOp::create(b, t.stages - 2);
            gpu::BarrierOp::create(b);
            if (prefetch)
              nextFrags =
                  loadFragments(remi(addi(kt, idx(1)), t.stages), kFirst);
          }
          mmaStep(frags, accs);
          frags = std::move(nextFrags);
        }
        llvm::append_range(accs, frags);
        return accs;
      });
  SmallVector<Value> acc(ArrayRef<Value>(result).take_front(numAcc));
  // No copies may be in flight when the kernel exits.
  NVVM::CpAsyncWaitGroupOp::create(b, 0);

  AccumulatorLayout layout;
  layout.bm = t.bm;
  layout.bn = t.bn;
  layout.warpsM = t.warpsM;
  layout.warpsN = t.warpsN;
  layout.kGroups = t.kGroups();
  layout.threads = threads;
  layout.tid = tid;
  layout.lane = lane;
  layout.warpM = warpM;
  layout.warpN = warpN;
  layout.warpK = warpK;
  layout.stagingBytes = pipelineBytes(t, type.bytes);
  layout.barrier = [&] { gpu::BarrierOp::create(b); };
  LaunchConfig config{
      {GemmSchedule::of(shape, t).tilesPerBatch(), shape.batch, splits},
      {threads, 1, 1}};
  if (splits > 1)
    return finishSplitK(problem, layout, acc, tileM, tileN, batch, split,
                        splits, config);
  if (stagedEpilogue(shape, t))
    emitStagedEpilogue(problem, layout, acc, tileM, tileN, batch);
  else
    emitFragmentEpilogue(problem, layout, acc, tileM, tileN, batch);
  return config;
}
