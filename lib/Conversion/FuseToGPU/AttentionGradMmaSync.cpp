//===- AttentionGradMmaSync.cpp - Attention backward on tensor cores ------===//
//
// fuse.attention_grad as FlashAttention-2 computes it, on mma.sync (f16 and
// bf16, head dims up to 128), in three launches:
//
//  1. `<kernel>_pre`, lanes per query row: delta = rowsum(dO * O) into a
//     workspace, and the row of the f32 dQ accumulator zeroed;
//  2. `<kernel>_main`, a block per tile of kBc = 128 keys of a (batch, key
//     head), each of its 8 warps owning 16 keys. K and V stay in shared
//     memory; the block walks the query tiles of every query head of the
//     group (causal: from the tile of its first key on), the next tile's Q,
//     dO, log-sum-exp and delta landing in a second stage while this one is
//     computed on (8 warps and the prefetch took d128 from 0.74 to 0.49 ms,
//     bench/results/2026-11-28-h200-attention-grad). Per tile of kBr = 64
//     queries, each warp
//     computes S^T = K Q^T, P^T = exp2(S^T c - lse) (the scale, log2(e) and
//     the mask folded in; nothing past the keys, queries or the diagonal),
//     dP^T = V dO^T and dS^T = P^T (dP^T - delta); dV += P^T dO and
//     dK += dS^T Q accumulate in registers (P and dS reused as the A
//     operands, as the forward reuses P), and dS goes to shared memory,
//     from which the block adds dS K into the dQ accumulator by atomics
//     (each warp a pair of 8-column fragments of the head dims);
//  3. the kernel itself, a thread per element: dQ = scale * accumulator.
//
// dK and dV are each one warp's sum in a fixed order; dQ's atomics make its
// last bits depend on timing.
//
//===----------------------------------------------------------------------===//

#include "AttentionGrad.h"
#include "ExtraLaunches.h"
#include "Families.h"
#include "MmaSync.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

static constexpr double kLog2e = 1.4426950408889634;

bool fusec::tiling::isMmaSyncAttentionGrad(AttentionGradOp op) {
  Type element = getElementTypeOrSelf(op.getQuery().getType());
  ArrayRef<int64_t> q = op.getQuery().getType().getShape();
  ArrayRef<int64_t> v = op.getValue().getType().getShape();
  return (element.isF16() || element.isBF16()) && q[3] % 8 == 0 &&
         v[3] % 8 == 0 && q[3] <= 128 && v[3] <= 128;
}

namespace {
class AttentionGradMmaSyncKernel : public AttentionGradKernel {
public:
  using AttentionGradKernel::AttentionGradKernel;

private:
  FailureOr<LaunchConfig> emitBody() override;
  /// Launch 2 (see the file comment).
  LaunchConfig emitMain();

  /// cp.async of `rows` rows from row0 of (batch, head) of `src` [B, H, N,
  /// width] into `dst`, zero past n rows and past width columns.
  void copyRows(Value dst, int64_t rows, Value src, Value head, Value row0,
                int64_t n, int64_t width, Value stage = {});
  /// ldmatrix (4 matrices) from `stage` of `buffer` at (row, col),
  /// swizzled.
  SmallVector<Value> ldmatrix(Value buffer, Value row, Value col,
                              bool transpose, Value stage = {}) {
    int64_t cols = cast<MemRefType>(buffer.getType()).getShape()[2];
    return emitLdmatrix(
        b, type, buffer,
        {stage ? stage : idx(0), row, swizzleColumn(b, type, cols, row, col)},
        4, transpose);
  }
  /// acc[f..f+1] += a x (two n8 fragments of bRegs).
  void mmaPair(SmallVectorImpl<Value> &acc, int64_t f, ArrayRef<Value> a,
               ArrayRef<Value> bRegs) {
    for (int64_t h = 0; h < 2; ++h) {
      SmallVector<Value> out =
          emitMma(b, type, a, {bRegs[2 * h], bRegs[2 * h + 1]},
                  ArrayRef<Value>(acc).slice((f + h) * 4, 4));
      llvm::copy(out, acc.begin() + (f + h) * 4);
    }
  }
  static constexpr int64_t kWarps = 8, kBc = 16 * kWarps, kBr = 64;

  Type elementType;
  MmaType type;
  Value delta, dqAcc;
  /// The thread, its lane, and the block's batch index (emitMain).
  Value tid, lane, bi;
};
} // namespace

std::unique_ptr<KernelBuilder> fusec::tiling::makeAttentionGradMmaSyncKernel(
    KernelOp kernel, gpu::GPUModuleOp module, const TargetDescription &target) {
  return std::make_unique<AttentionGradMmaSyncKernel>(kernel, module, target);
}

void AttentionGradMmaSyncKernel::copyRows(Value dst, int64_t rows, Value src,
                                          Value head, Value row0, int64_t n,
                                          int64_t width, Value stage) {
  int64_t vec = type.chunk(), chunks = ceilDiv(width, 16) * 16 / vec;
  int64_t cols = cast<MemRefType>(dst.getType()).getShape()[2];
  int64_t items = rows * chunks, threads = 32 * kWarps;
  for (int64_t r = 0; r < ceilDiv(items, threads); ++r) {
    Value e = addi(tid, idx(r * threads));
    auto copy = [&] {
      Value row = divi(e, chunks), col = muli(remi(e, chunks), idx(vec));
      Value srcRow = addi(row0, row);
      Value inBounds = andi(ltc(srcRow, n), ltc(col, width));
      emitCopyChunk(
          b, type, dst,
          {stage ? stage : idx(0), row, swizzleColumn(b, type, cols, row, col)},
          src, {bi, head, srcRow, col}, inBounds);
    };
    if ((r + 1) * threads <= items)
      copy();
    else
      ifThen(ltc(e, items), copy);
  }
}

LaunchConfig AttentionGradMmaSyncKernel::emitMain() {
  int64_t dSteps = ceilDiv(d, 16), vSteps = ceilDiv(dv, 16);
  int64_t dFrags = 2 * dSteps, vFrags = 2 * vSteps;
  // S^T and dP^T: the warp's 16 keys x kBr queries.
  int64_t sFrags = kBr / 8, pSteps = kBr / 16;
  tid = threadId();
  lane = remi(tid, 32);
  Value warp = divi(tid, 32), g = divi(lane, 4), t = remi(lane, 4);
  Value kv0 = muli(blockId(gpu::Dimension::x), idx(kBc));
  Value bh = blockId(gpu::Dimension::y);
  bi = divi(bh, hkv);
  Value hk = remi(bh, hkv);

  Value ks = allocShared({1, kBc, paddedTileWidth(d)}, elementType, 1024);
  Value vs = allocShared({1, kBc, paddedTileWidth(dv)}, elementType, 1024);
  // Two stages of Q, dO, the log-sum-exp and delta: the next query tile
  // lands while this one is computed on.
  Value qs = allocShared({2, kBr, paddedTileWidth(d)}, elementType, 1024);
  Value dos = allocShared({2, kBr, paddedTileWidth(dv)}, elementType, 1024);
  Value dss = allocShared({1, kBr, paddedTileWidth(kBc)}, elementType, 1024);
  int64_t dsCols = paddedTileWidth(kBc);
  Value lseS = allocShared({2, kBr}, b.getF32Type(), 16);
  Value deltaS = allocShared({2, kBr}, b.getF32Type(), 16);

  copyRows(ks, kBc, k, hk, kv0, nk, d);
  copyRows(vs, kBc, v, hk, kv0, nk, dv);
  NVVM::CpAsyncCommitGroupOp::create(b);

  QueryWalk walk = walkQueries(kv0, hk, kBr);
  Value steps = walk.steps;
  // The thread's keys: rows g and g + 8 of its warp's 16.
  Value key0 = addi(kv0, addi(muli(warp, idx(16)), g));
  Value keys[2] = {key0, addi(key0, idx(8))};
  Value log2e = f32(kLog2e);

  // Issues the copies of step `it`'s Q and dO tiles into `stage`, and
  // stores its log-sum-exp (times log2(e); +inf past the queries and where
  // a row saw no key, so that P = 0) and delta there.
  auto issue = [&](Value it, Value stage) {
    Value h = headAt(walk, it), q0 = rowAt(walk, it);
    copyRows(qs, kBr, q, h, q0, nq, d, stage);
    copyRows(dos, kBr, dO, h, q0, nq, dv, stage);
    ifThen(ltc(tid, kBr), [&] {
      Value qi = addi(q0, tid), qc = mini(qi, idx(nq - 1));
      Value rowLse = load(lse, {bi, h, qc});
      Value none = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, rowLse,
                                         f32(-INFINITY));
      Value off = arith::OrIOp::create(
          b, none, cmpi(arith::CmpIPredicate::sge, qi, idx(nq)));
      memref::StoreOp::create(b,
                              select(off, f32(INFINITY), mulf(rowLse, log2e)),
                              lseS, ValueRange{stage, tid});
      memref::StoreOp::create(b, load(delta, {bi, h, qc}), deltaS,
                              ValueRange{stage, tid});
    });
  };
  ifThen(lt(idx(0), steps), [&] { issue(idx(0), idx(0)); });
  NVVM::CpAsyncCommitGroupOp::create(b);

  SmallVector<Value> init((dFrags + vFrags) * 4, f32(0));
  SmallVector<Value> acc = loop(
      idx(0), steps, idx(1), init,
      [&](Value it, ValueRange args) -> SmallVector<Value> {
        SmallVector<Value> dk(args.begin(), args.begin() + dFrags * 4);
        SmallVector<Value> dvAcc(args.begin() + dFrags * 4, args.end());
        Value h = headAt(walk, it), q0 = rowAt(walk, it);
        Value stage = remi(it, 2);
        // This step's tiles landed (with K and V on the first), and every
        // warp is done with the stage the next copies overwrite (the
        // barrier ending the body).
        NVVM::CpAsyncWaitGroupOp::create(b, 0);
        gpu::BarrierOp::create(b);
        Value nextIt = addi(it, idx(1));
        ifThen(lt(nextIt, steps), [&] { issue(nextIt, subi(idx(1), stage)); });
        NVVM::CpAsyncCommitGroupOp::create(b);

        // Rows (keys) of the warp as A, queries as B: S^T = K Q^T and
        // dP^T = V dO^T.
        Value aRow = addi(muli(warp, idx(16)), remi(lane, 16));
        Value aCol = muli(divi(lane, 16), idx(8));
        Value bRow = addi(muli(divi(lane, 16), idx(8)), remi(lane, 8));
        Value bCol = muli(remi(divi(lane, 8), 2), idx(8));
        auto rowProduct = [&](Value rowsTile, Value colsTile, int64_t steps) {
          SmallVector<Value> out(sFrags * 4, f32(0));
          for (int64_t step = 0; step < steps; ++step) {
            SmallVector<Value> a =
                ldmatrix(rowsTile, aRow, addi(aCol, idx(16 * step)), false);
            for (int64_t f = 0; f < sFrags; f += 2)
              mmaPair(out, f, a,
                      ldmatrix(colsTile, addi(idx(f * 8), bRow),
                               addi(bCol, idx(16 * step)), false, stage));
          }
          return out;
        };
        SmallVector<Value> p = rowProduct(ks, qs, dSteps);
        SmallVector<Value> dp = rowProduct(vs, dos, vSteps);

        // P^T and dS^T, element (key, query) of fragment f: query column
        // 8f + 2t + e % 2, key row e / 2. The tile's log-sum-exp and delta
        // come from shared memory, one read per column.
        SmallVector<Value> ds(sFrags * 4);
        for (int64_t f = 0; f < sFrags; ++f) {
          Value local[2], colLse[2], colDelta[2];
          for (int64_t c = 0; c < 2; ++c) {
            local[c] = addi(idx(8 * f + c), muli(t, idx(2)));
            colLse[c] =
                memref::LoadOp::create(b, lseS, ValueRange{stage, local[c]});
            colDelta[c] =
                memref::LoadOp::create(b, deltaS, ValueRange{stage, local[c]});
          }
          for (int64_t e = 0; e < 4; ++e) {
            Value pe = probability(p[f * 4 + e], colLse[e % 2], bi, h,
                                   addi(q0, local[e % 2]), keys[e / 2]);
            p[f * 4 + e] = pe;
            ds[f * 4 + e] = mulf(pe, subf(dp[f * 4 + e], colDelta[e % 2]));
            storeScoreGrad(ds[f * 4 + e], bi, h, addi(q0, local[e % 2]),
                           keys[e / 2]);
          }
        }

        // dV += P^T dO and dK += dS^T Q: queries are the k dim, dO and Q
        // transposed by ldmatrix.
        auto accumulate = [&](SmallVectorImpl<Value> &into, ArrayRef<Value> a,
                              Value tile, int64_t frags) {
          for (int64_t step = 0; step < pSteps; ++step) {
            SmallVector<Value> aRegs =
                packAccumulatorsAsA(b, type, elementType, a, step);
            for (int64_t f = 0; f < frags; f += 2)
              mmaPair(into, f, aRegs,
                      ldmatrix(tile, addi(idx(16 * step), remi(lane, 16)),
                               addi(idx(8 * f), muli(divi(lane, 16), idx(8))),
                               true, stage));
          }
        };
        accumulate(dvAcc, p, dos, vFrags);
        accumulate(dk, ds, qs, dFrags);

        // dS (queries x keys) to shared memory for dQ += dS K.
        for (int64_t f = 0; f < sFrags; ++f)
          for (int64_t e = 0; e < 4; ++e) {
            Value row = addi(idx(8 * f + e % 2), muli(t, idx(2)));
            Value col = subi(keys[e / 2], kv0);
            store(ds[f * 4 + e], dss,
                  {idx(0), row, swizzleColumn(b, type, dsCols, row, col)});
          }
        gpu::BarrierOp::create(b);

        // dQ: warp w takes the head dims' 16-column pairs w, w + 4, ...
        if (dqAcc)
          for (int64_t pair0 = 0; pair0 < dSteps; pair0 += kWarps) {
            Value pair = addi(warp, idx(pair0));
            ifThen(ltc(pair, dSteps), [&] {
              for (int64_t mt = 0; mt < kBr / 16; ++mt) {
                SmallVector<Value> dq(8, f32(0));
                for (int64_t step = 0; step < kBc / 16; ++step) {
                  SmallVector<Value> a = ldmatrix(
                      dss, addi(idx(16 * mt), remi(lane, 16)),
                      addi(idx(16 * step), muli(divi(lane, 16), idx(8))),
                      false);
                  mmaPair(dq, 0, a,
                          ldmatrix(ks, addi(idx(16 * step), remi(lane, 16)),
                                   addi(muli(pair, idx(16)),
                                        muli(divi(lane, 16), idx(8))),
                                   true));
                }
                for (int64_t f = 0; f < 2; ++f)
                  for (int64_t e = 0; e < 4; ++e) {
                    Value row = addi(q0, addi(idx(16 * mt + 8 * (e / 2)), g));
                    Value col = addi(addi(muli(pair, idx(16)), idx(8 * f)),
                                     addi(muli(t, idx(2)), idx(e % 2)));
                    ifThen(andi(ltc(row, nq), ltc(col, d)), [&] {
                      memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addf,
                                                  dq[f * 4 + e], dqAcc,
                                                  ValueRange{bi, h, row, col});
                    });
                  }
              }
            });
          }
        // Every warp is done with this tile's Q, dO and dS.
        gpu::BarrierOp::create(b);
        SmallVector<Value> next(dk);
        llvm::append_range(next, dvAcc);
        return next;
      });
  NVVM::CpAsyncWaitGroupOp::create(b, 0);

  // dK = scale * the sum, dV the sum, two columns of a fragment at a time.
  auto storeRows = [&](int64_t result, ArrayRef<Value> values, int64_t frags,
                       int64_t width, double factor) {
    if (resultAt[result] < 0)
      return;
    for (int64_t f = 0; f < frags; ++f)
      for (int64_t e = 0; e < 4; ++e) {
        Value col = addi(idx(8 * f + e % 2), muli(t, idx(2)));
        ifThen(andi(ltc(keys[e / 2], nk), ltc(col, width)), [&] {
          store(mulf(values[f * 4 + e], f32(factor)), outputs[resultAt[result]],
                {bi, hk, keys[e / 2], col});
        });
      }
  };
  storeRows(1, ArrayRef<Value>(acc).take_front(dFrags * 4), dFrags, d, scale);
  storeRows(2, ArrayRef<Value>(acc).drop_front(dFrags * 4), vFrags, dv, 1.0);
  return LaunchConfig{{ceilDiv(nk, kBc), batch * hkv, 1}, {32 * kWarps, 1, 1}};
}

FailureOr<LaunchConfig> AttentionGradMmaSyncKernel::emitBody() {
  if (failed(readAnchor()))
    return failure();
  elementType = getElementTypeOrSelf(op.getQuery().getType());
  type = *mmaTypeOf(elementType, Fp32Math::IEEE);

  SmallVector<MemRefType> workspaces = {
      MemRefType::get({batch, hq, nq}, b.getF32Type())};
  delta = addWorkspaceArgument(workspaces.back());
  if (resultAt[0] >= 0) {
    workspaces.push_back(MemRefType::get({batch, hq, nq, d}, b.getF32Type()));
    dqAcc = addWorkspaceArgument(workspaces.back());
  }
  ExtraLaunch pre =
      splitOffFirstLaunch("_pre", emitRowsPre(delta, dqAcc, Value(), nq));
  return finishLaunches(workspaces, std::move(pre), emitMain(), bool(dqAcc),
                        [&] { return emitScaleDq(dqAcc); });
}
