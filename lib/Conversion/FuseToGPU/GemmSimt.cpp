//===- GemmSimt.cpp - The GEMM family on CUDA cores -----------------------===//
//
// f32 (IEEE) convolutions, linear layers and matrix products: each block
// computes a bm x bn tile of C with (bm/tm) * (bn/tn) threads, each owning a
// tm x tn register tile of FMAs. The reduction runs bk at a time through two
// shared-memory buffers: the next slices are loaded into registers while the
// current ones feed the FMAs, then stored into the other buffer.
//
//===----------------------------------------------------------------------===//

#include "Families.h"
#include "GemmSchedule.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {
class GemmSimtKernel : public GemmKernel {
public:
  using GemmKernel::GemmKernel;

private:
  FailureOr<LaunchConfig> emitGemm(const GemmProblem &problem) override;
};
} // namespace

GemmTile fusec::tiling::chooseSimtTile(const GemmShape &shape,
                                       const TargetDescription &target) {
  // The largest register tile (most FMAs per shared-memory load) that still
  // gives every SM a block.
  static const GemmTile candidates[] = {{128, 128, 16, 8, 8},
                                        {128, 64, 16, 8, 4},
                                        {64, 64, 16, 4, 4}};
  for (const GemmTile &t : candidates) {
    // A tile wider than the problem computes mostly padding.
    if ((t.bn > 64 && t.bn > shape.n) || (t.bm > 64 && t.bm > shape.m))
      continue;
    if (GemmSchedule::of(shape, t).tiles() >= target.smCount)
      return t;
  }
  return candidates[2];
}

LogicalResult fusec::tiling::verifySimtTile(KernelOp kernel,
                                            const GemmTile &tile,
                                            const TargetDescription &target) {
  int64_t threads = tile.tm && tile.tn
                        ? (tile.bm / tile.tm) * (tile.bn / tile.tn)
                        : 0;
  int64_t sharedBytes = 2 * tile.bk * (tile.bm + tile.bn) * 4;
  if (!tile.tm || !tile.tn || tile.bm % tile.tm || tile.bn % tile.tn ||
      threads > 1024 || threads % 32 ||
      sharedBytes > target.sharedBytesPerBlock)
    return unsuitableTile(kernel, tile, "the CUDA-core GEMM")
           << "it needs tm and tn, bm/tm and bn/tn must divide exactly and "
              "give a multiple of 32 "
              "threads up to 1024, and the two buffers must fit in "
           << target.sharedBytesPerBlock << " bytes of shared memory (needs "
           << sharedBytes << ")";
  return success();
}

std::unique_ptr<KernelBuilder>
fusec::tiling::makeGemmSimtKernel(KernelOp kernel, gpu::GPUModuleOp module,
                                  const TargetDescription &target,
                                  const GemmTile &tile) {
  return std::make_unique<GemmSimtKernel>(kernel, module, target, tile);
}

FailureOr<LaunchConfig>
GemmSimtKernel::emitGemm(const GemmProblem &problem) {
  const GemmTile &t = tile;
  const GemmShape &shape = problem.shape;
  int64_t threadsM = t.bm / t.tm, threadsN = t.bn / t.tn;
  int64_t threads = threadsM * threadsN;
  // Two buffers of each operand tile, k-major so that a thread's TM (or TN)
  // values for one k sit side by side.
  Value aTile = allocShared({2, t.bk, t.bm}, b.getF32Type());
  Value bTile = allocShared({2, t.bk, t.bn}, b.getF32Type());

  Value tid = threadId();
  Value tileM = muli(blockId(gpu::Dimension::x), idx(t.bm));
  Value tileN = muli(blockId(gpu::Dimension::y), idx(t.bn));
  Value batch = blockId(gpu::Dimension::z);
  // A thread's register rows (and columns) come in runs of 4, one run per
  // quarter of its tile, so that a warp's shared-memory reads of one run are
  // contiguous 16-byte vectors; with tm (tn) not a multiple of 4, one run.
  Value ty = divi(tid, threadsN), tx = remi(tid, threadsN);
  auto regIndex = [&](Value thread, int64_t i, int64_t perThread,
                      int64_t threadsAlong) -> Value {
    if (perThread % 4 != 0)
      return addi(muli(thread, idx(perThread)), idx(i));
    return addi(muli(thread, idx(4)),
                idx((i / 4) * threadsAlong * 4 + i % 4));
  };
  auto readRegs = [&](Value tileBuf, Value buf, int64_t kk, Value thread,
                      int64_t perThread, int64_t threadsAlong) {
    SmallVector<Value> regs;
    if (perThread % 4 != 0) {
      for (int64_t i = 0; i < perThread; ++i)
        regs.push_back(memref::LoadOp::create(
            b, tileBuf,
            ValueRange{buf, idx(kk),
                       regIndex(thread, i, perThread, threadsAlong)}));
      return regs;
    }
    auto vecType = VectorType::get({4}, b.getF32Type());
    for (int64_t i = 0; i < perThread; i += 4) {
      Value v = vector::LoadOp::create(
          b, vecType, tileBuf,
          ValueRange{buf, idx(kk),
                     regIndex(thread, i, perThread, threadsAlong)},
          /*nontemporal=*/false, llvm::MaybeAlign(16));
      for (int64_t l = 0; l < 4; ++l)
        regs.push_back(vector::ExtractOp::create(b, v, l));
    }
    return regs;
  };

  // Each thread loads items of its operand tiles: runs of `width`
  // consecutive k (one vector), or single elements. Consecutive threads take
  // consecutive k where k is contiguous in memory.
  struct Operand {
    const GemmOperand *gemm;
    Value tile;
    int64_t extent, width, items, perThread;
    bool kContiguous;
  };
  auto operand = [&](const GemmOperand &gemm, Value tile, int64_t extent) {
    int64_t width = gemm.layout.vector;
    bool kContiguous = gemm.layout.kContiguous;
    if (!kContiguous || t.bk % width != 0)
      width = 1;
    int64_t items = (t.bk / width) * extent;
    return Operand{&gemm,      tile,  extent,
                   width,      items, ceilDiv(items, threads),
                   kContiguous};
  };
  Operand opA = operand(problem.a, aTile, t.bm);
  Operand opB = operand(problem.b, bTile, t.bn);
  // The (k, m) or (k, n) tile position of the r-th item a thread loads.
  auto itemPos = [&](const Operand &op, int64_t r) {
    Value e = addi(tid, idx(r * threads));
    int64_t runs = t.bk / op.width;
    if (op.kContiguous)
      return std::pair(muli(remi(e, runs), idx(op.width)), divi(e, runs));
    return std::pair(divi(e, op.extent), remi(e, op.extent));
  };
  auto loadItem = [&](const Operand &op, Value i, Value k,
                      SmallVector<Value> &regs) {
    GemmAddress address = op.gemm->address(batch, i, k);
    if (!op.gemm->parts.empty()) {
      // Merged weights: element by element, each from its part.
      for (int64_t lane = 0; lane < op.width; ++lane)
        regs.push_back(ifElse(
            address.inBounds,
            [&] {
              SmallVector<Value> at = address.indices();
              at.back() = addi(at.back(), idx(lane));
              return accessOperand(
                  *op.gemm, at, b.getF32Type(),
                  [&](Value memref, SmallVector<Value> indices) {
                    return load(memref, indices);
                  });
            },
            [&] { return f32(0.0); }));
      return;
    }
    if (op.width > 1)
      llvm::append_range(regs, loadVectorOrZero(address.inBounds,
                                                op.gemm->memref,
                                                address.indices, op.width));
    else
      regs.push_back(
          loadOrZero(address.inBounds, op.gemm->memref, address.indices));
  };
  auto loadTiles = [&](Value k0) {
    SmallVector<Value> regs;
    for (int64_t r = 0; r < opA.perThread; ++r) {
      auto [k, m] = itemPos(opA, r);
      Value kk = addi(k0, k);
      loadItem(opA, addi(tileM, m), kk, regs);
    }
    for (int64_t r = 0; r < opB.perThread; ++r) {
      auto [k, n] = itemPos(opB, r);
      Value nn = addi(tileN, n);
      loadItem(opB, nn, addi(k0, k), regs);
    }
    return regs;
  };
  auto storeTiles = [&](ArrayRef<Value> regs, Value buf) {
    size_t next = 0;
    for (const Operand &op : {opA, opB}) {
      for (int64_t r = 0; r < op.perThread; ++r) {
        auto [k, o] = itemPos(op, r);
        ArrayRef<Value> values = regs.slice(next, op.width);
        next += op.width;
        ifThen(ltc(addi(tid, idx(r * threads)), op.items), [&] {
          for (int64_t i = 0; i < op.width; ++i)
            memref::StoreOp::create(b, values[i], op.tile,
                                    ValueRange{buf, addi(k, idx(i)), o});
        });
      }
    }
  };

  storeTiles(loadTiles(idx(0)), idx(0));
  gpu::BarrierOp::create(b);
  int64_t numK = ceilDiv(shape.k, t.bk);
  SmallVector<Value> zeros(t.tm * t.tn, f32(0));
  SmallVector<Value> acc = loop(
      idx(0), idx(numK), idx(1), zeros,
      [&](Value kt, ValueRange accIn) -> SmallVector<Value> {
        Value buf = remi(kt, 2);
        // Prefetch the next slice into registers while this one computes;
        // past the end the guarded loads read nothing.
        SmallVector<Value> next =
            loadTiles(muli(addi(kt, idx(1)), idx(t.bk)));
        SmallVector<Value> accOut(accIn.begin(), accIn.end());
        for (int64_t kk = 0; kk < t.bk; ++kk) {
          SmallVector<Value> av = readRegs(aTile, buf, kk, ty, t.tm, threadsM);
          SmallVector<Value> bv = readRegs(bTile, buf, kk, tx, t.tn, threadsN);
          for (int64_t i = 0; i < t.tm; ++i)
            for (int64_t j = 0; j < t.tn; ++j)
              accOut[i * t.tn + j] = fma(av[i], bv[j], accOut[i * t.tn + j]);
        }
        storeTiles(next, subi(idx(1), buf));
        gpu::BarrierOp::create(b);
        return accOut;
      });

  // A thread's columns are fixed: their per-channel values are computed
  // once, then each row is stored.
  SmallVector<Value> ns;
  SmallVector<GemmColumns> columns;
  for (int64_t j = 0; j < t.tn; ++j) {
    ns.push_back(addi(tileN, regIndex(tx, j, t.tn, threadsN)));
    columns.push_back(problem.columns(batch, ns.back(), 1));
  }
  for (int64_t i = 0; i < t.tm; ++i) {
    Value m = addi(tileM, regIndex(ty, i, t.tm, threadsM));
    ifThen(ltc(m, shape.m), [&] {
      GemmRowStore store = problem.epilogue(batch, m);
      for (int64_t j = 0; j < t.tn; ++j)
        ifThen(ltc(ns[j], shape.n),
               [&] { store(columns[j], {acc[i * t.tn + j]}); });
    });
  }
  GemmSchedule schedule = GemmSchedule::of(shape, t);
  return LaunchConfig{{schedule.tilesM, schedule.tilesN, shape.batch},
                      {threads, 1, 1}};
}
