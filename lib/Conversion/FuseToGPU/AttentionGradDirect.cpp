//===- AttentionGradDirect.cpp - Attention backward, a warp per row
//--------===//
//
// The direct form of fuse.attention_grad, correct for every shape, type,
// mask and head count; the tensor-core backward replaces it where it
// applies. Two launches, each a warp per row, the scores recomputed from
// Q, K and the log-sum-exp (P = exp(S - lse)), dot products over the head
// dims by lanes then shuffles:
//  - `<kernel>_rows`, a warp per query row: delta = rowsum(dO * O) (kept in
//    a workspace for the second launch) and dQ = scale * sum_j dS_ij K_j;
//  - the kernel itself, a warp per key row: dV = sum_i P_ij dO_i and
//    dK = scale * sum_i dS_ij Q_i over the query heads sharing the key
//    head, so that nothing is accumulated by atomics: each gradient is one
//    warp's ordered sum, the same run to run.
// A lane keeps up to kPerLane columns of its row's gradient; wider heads
// take several column chunks, each recomputing the scores.
//
//===----------------------------------------------------------------------===//

#include "AttentionGrad.h"
#include "ExtraLaunches.h"
#include "Families.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {
class AttentionGradDirectKernel : public AttentionGradKernel {
public:
  using AttentionGradKernel::AttentionGradKernel;

private:
  FailureOr<LaunchConfig> emitBody() override;

  /// The warp's sum over e < n of x(e) * y(e), lanes taking every 32nd e.
  Value warpDot(int64_t n, function_ref<Value(Value)> x,
                function_ref<Value(Value)> y);
  /// P_ij and dS_ij of query row i of (batch, head) and key row j of its
  /// key head `kvHead`, given the row's log-sum-exp (+inf for a row that
  /// sees no key: P = 0) and delta.
  std::pair<Value, Value> probabilities(Value batch, Value head, Value kvHead,
                                        Value i, Value j, Value lse,
                                        Value delta);
  /// The row's log-sum-exp, +inf where it is -inf (no key seen), so that
  /// exp(S - lse) is 0 there.
  Value rowLse(Value batch, Value head, Value i);
  /// Runs `body(row)` on warp `row` of `rows` (4 warps a block).
  LaunchConfig perWarp(int64_t rows, function_ref<void(Value)> body);
  /// Column l of chunk `chunk` a lane keeps: lane + 32 l from the chunk's
  /// first, l < perLane.
  Value column(int64_t chunk, int64_t l) {
    return addi(lane, idx(chunk * 32 * perLane + 32 * l));
  }
  /// Element `col` of `memref` at `lead` coordinates, 0 where col >= n.
  Value loadColumn(Value memref, ArrayRef<Value> lead, Value col, int64_t n);
  /// Stores `value` at `lead` coordinates and `col` of result `result`
  /// (if the kernel yields it) where col < n.
  void storeColumn(int64_t result, ArrayRef<Value> lead, Value col, int64_t n,
                   Value value);

  static constexpr int64_t kWarps = 4, kPerLane = 8;
  /// Columns a lane keeps: kPerLane, or fewer for narrow heads.
  int64_t perLane = kPerLane;

  Value delta, lane;
};
} // namespace

std::unique_ptr<KernelBuilder> fusec::tiling::makeAttentionGradDirectKernel(
    KernelOp kernel, gpu::GPUModuleOp module, const TargetDescription &target) {
  return std::make_unique<AttentionGradDirectKernel>(kernel, module, target);
}

Value AttentionGradDirectKernel::warpDot(int64_t n,
                                         function_ref<Value(Value)> x,
                                         function_ref<Value(Value)> y) {
  Value partial = loop(lane, idx(n), idx(32), {f32(0)},
                       [&](Value e, ValueRange acc) -> SmallVector<Value> {
                         return {fma(x(e), y(e), acc[0])};
                       })[0];
  return shuffleReduce(partial, 32);
}

Value AttentionGradDirectKernel::rowLse(Value bi, Value h, Value i) {
  Value l = load(lse, {bi, h, i});
  Value none =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, l, f32(-INFINITY));
  return select(none, f32(INFINITY), l);
}

std::pair<Value, Value>
AttentionGradDirectKernel::probabilities(Value bi, Value h, Value hk, Value i,
                                         Value j, Value rowLse,
                                         Value rowDelta) {
  Value s = mulf(warpDot(
                     d,
                     [&](Value e) {
                       return load(q, {bi, h, i, e});
                     },
                     [&](Value e) {
                       return load(k, {bi, hk, j, e});
                     }),
                 f32(scale));
  if (mask)
    s = addf(s,
             load(mask, broadcastCoords({bi, h, i, j}, shapeOf(op.getMask()))));
  // Causal keys past the row are skipped by the loops' bounds; a -inf mask
  // gives exp(-inf) = 0.
  Value p = exp(subf(s, rowLse));
  Value dp = warpDot(
      dv,
      [&](Value e) {
        return load(dO, {bi, h, i, e});
      },
      [&](Value e) {
        return load(v, {bi, hk, j, e});
      });
  return {p, mulf(p, subf(dp, rowDelta))};
}

LaunchConfig
AttentionGradDirectKernel::perWarp(int64_t rows,
                                   function_ref<void(Value)> body) {
  Value tid = threadId();
  lane = remi(tid, 32);
  Value row =
      addi(muli(blockId(gpu::Dimension::x), idx(kWarps)), divi(tid, 32));
  // Whole warps take or skip a row: the shuffles see every lane.
  ifThen(ltc(row, rows), [&] { body(row); });
  return LaunchConfig{{ceilDiv(rows, kWarps), 1, 1}, {32 * kWarps, 1, 1}};
}

Value AttentionGradDirectKernel::loadColumn(Value memref, ArrayRef<Value> lead,
                                            Value col, int64_t n) {
  SmallVector<Value> at(lead);
  at.push_back(mini(col, idx(n - 1)));
  return select(ltc(col, n), load(memref, at), f32(0));
}

void AttentionGradDirectKernel::storeColumn(int64_t result,
                                            ArrayRef<Value> lead, Value col,
                                            int64_t n, Value value) {
  if (resultAt[result] < 0)
    return;
  ifThen(ltc(col, n), [&] {
    SmallVector<Value> at(lead);
    at.push_back(col);
    store(value, outputs[resultAt[result]], at);
  });
}

FailureOr<LaunchConfig> AttentionGradDirectKernel::emitBody() {
  if (failed(readAnchor()))
    return failure();
  // dS is stored by the key rows' launch.
  bool keys = resultAt[1] >= 0 || resultAt[2] >= 0 || resultAt[3] >= 0;
  perLane = std::min<int64_t>(kPerLane, ceilDiv(std::max(d, dv), 32));

  SmallVector<MemRefType> workspaces;
  if (keys) {
    workspaces.push_back(MemRefType::get({batch, hq, nq}, b.getF32Type()));
    delta = addWorkspaceArgument(workspaces.back());
  }

  // Query rows: delta and dQ.
  LaunchConfig rowsLaunch = perWarp(batch * hq * nq, [&](Value row) {
    SmallVector<Value> c = delinearize(row, {batch, hq, nq});
    Value bi = c[0], h = c[1], i = c[2], hk = divi(h, group);
    Value rowDelta = warpDot(
        dv,
        [&](Value e) {
          return load(o, {bi, h, i, e});
        },
        [&](Value e) {
          return load(dO, {bi, h, i, e});
        });
    if (keys)
      ifThen(ltc(lane, 1), [&] { store(rowDelta, delta, {bi, h, i}); });
    zeroScoreGradAbove(bi, h, i, lane, 32);
    if (resultAt[0] < 0)
      return;
    Value l = rowLse(bi, h, i);
    Value end = causal ? mini(addi(i, idx(1)), idx(nk)) : idx(nk);
    for (int64_t chunk = 0; chunk < ceilDiv(d, 32 * perLane); ++chunk) {
      SmallVector<Value> acc =
          loop(idx(0), end, idx(1), SmallVector<Value>(perLane, f32(0)),
               [&](Value j, ValueRange args) -> SmallVector<Value> {
                 Value ds = probabilities(bi, h, hk, i, j, l, rowDelta).second;
                 SmallVector<Value> next(args);
                 for (int64_t e = 0; e < perLane; ++e)
                   next[e] =
                       fma(ds, loadColumn(k, {bi, hk, j}, column(chunk, e), d),
                           next[e]);
                 return next;
               });
      for (int64_t e = 0; e < perLane; ++e)
        storeColumn(0, {bi, h, i}, column(chunk, e), d,
                    mulf(acc[e], f32(scale)));
    }
  });
  if (!keys)
    return rowsLaunch;
  ExtraLaunch first = splitOffFirstLaunch("_rows", rowsLaunch);
  recordExtraLaunches(func, workspaces, {first});

  // Key rows: dK and dV over the query heads of the group.
  return perWarp(batch * hkv * nk, [&](Value row) {
    SmallVector<Value> c = delinearize(row, {batch, hkv, nk});
    Value bi = c[0], hk = c[1], j = c[2];
    // Query i sees key j when j <= i (causal).
    Value start = causal ? mini(j, idx(nq)) : idx(0);
    for (int64_t chunk = 0; chunk < ceilDiv(std::max(d, dv), 32 * perLane);
         ++chunk) {
      SmallVector<Value> init(2 * perLane, f32(0));
      SmallVector<Value> acc = loop(
          idx(0), idx(group), idx(1), init,
          [&](Value g, ValueRange byHead) -> SmallVector<Value> {
            Value h = addi(muli(hk, idx(group)), g);
            return loop(start, idx(nq), idx(1), SmallVector<Value>(byHead),
                        [&](Value i, ValueRange args) -> SmallVector<Value> {
                          Value rowDelta = load(delta, {bi, h, i});
                          auto [p, ds] = probabilities(
                              bi, h, hk, i, j, rowLse(bi, h, i), rowDelta);
                          if (chunk == 0)
                            ifThen(ltc(lane, 1),
                                   [&] { storeScoreGrad(ds, bi, h, i, j); });
                          SmallVector<Value> next(args);
                          for (int64_t e = 0; e < perLane; ++e) {
                            Value col = column(chunk, e);
                            next[e] = fma(ds, loadColumn(q, {bi, h, i}, col, d),
                                          next[e]);
                            next[perLane + e] =
                                fma(p, loadColumn(dO, {bi, h, i}, col, dv),
                                    next[perLane + e]);
                          }
                          return next;
                        });
          });
      for (int64_t e = 0; e < perLane; ++e) {
        Value col = column(chunk, e);
        storeColumn(1, {bi, hk, j}, col, d, mulf(acc[e], f32(scale)));
        storeColumn(2, {bi, hk, j}, col, dv, acc[perLane + e]);
      }
    }
  });
}
