//===- AttentionDirect.cpp - Attention, one thread per output ---------------===//
//
// The direct form of fuse.attention: each thread computes one output
// element with an online softmax over the keys. Correct for every shape and
// mask, but slow; the FlashAttention-style family replaces it.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {
class AttentionDirectKernel : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

private:
  FailureOr<LaunchConfig> emitBody() override {
    return emitAttention(cast<AttentionOp>(anchor));
  }
  FailureOr<LaunchConfig> emitAttention(AttentionOp op);
};
} // namespace

std::unique_ptr<KernelBuilder>
fusec::tiling::makeAttentionDirectKernel(KernelOp kernel,
                                         gpu::GPUModuleOp module,
                                         const TargetDescription &target) {
  return std::make_unique<AttentionDirectKernel>(kernel, module, target);
}

FailureOr<LaunchConfig> AttentionDirectKernel::emitAttention(AttentionOp op) {
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  ArrayRef<int64_t> ks = shapeOf(op.getKey());
  int64_t hq = outShape[1], hkv = ks[1], nk = ks[2], dim = ks[3];
  int64_t groupSize = hq / hkv;
  double scale = op.getEffectiveScale();
  bool causal = op.getCausal();
  // Q, K and V may come through transposes and a rope (isAnchorView).
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  Value mask = op.getMask() ? argOf.lookup(op.getMask()) : Value();
  SplitResults rowResults;
  FailureOr<EpilogueEvaluator *> out = splitFamilyResults("row", rowResults);
  if (failed(out))
    return failure();
  Value lseOut = op.getLse() && rowResults.resultAt[1] >= 0
                     ? outputs[rowResults.resultAt[1]]
                     : Value();
  // One thread per output element, online softmax over the keys.
  return perElement(product(outShape), [&](Value linear) {
    SmallVector<Value> c = delinearize(linear, outShape);
    Value bi = c[0], h = c[1], i = c[2], dv = c[3];
    Value hk = divi(h, groupSize);
    Value end = causal ? mini(addi(i, idx(1)), idx(nk)) : idx(nk);
    SmallVector<Value> init = {f32(-INFINITY), f32(0), f32(0)};
    SmallVector<Value> state = loop(
        idx(0), end, idx(1), init,
        [&](Value j, ValueRange args) -> SmallVector<Value> {
          Value dot = loop(
              idx(0), idx(dim), idx(1), {f32(0)},
              [&](Value e, ValueRange acc) -> SmallVector<Value> {
                return {fma(views.loadThroughViews(q, {bi, h, i, e}),
                            views.loadThroughViews(k, {bi, hk, j, e}), acc[0])};
              })[0];
          Value s = mulf(dot, f32(scale));
          if (mask)
            s = addf(s, load(mask, broadcastCoords({bi, h, i, j},
                                                   shapeOf(op.getMask()))));
          // A -inf score adds nothing; skipping it keeps exp(-inf - -inf)
          // out of the running sums.
          Value live = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, s,
                                             f32(-INFINITY));
          Value m = args[0], l = args[1], acc = args[2];
          Value mNew = select(live, maxf(m, s), m);
          Value alpha = exp(subf(m, mNew));
          Value p = select(live, exp(subf(s, mNew)), f32(0));
          Value vv = views.loadThroughViews(v, {bi, hk, j, dv});
          // alpha is NaN only while m and mNew are both -inf: nothing yet.
          Value keep = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT,
                                             mNew, f32(-INFINITY));
          alpha = select(keep, alpha, f32(0));
          return {mNew, fma(l, alpha, p), fma(acc, alpha, mulf(p, vv))};
        });
    Value l = state[1];
    Value nonEmpty =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, l, f32(0));
    // The first column's thread stores the row's log-sum-exp (-inf where
    // no key was seen: m is -inf, log(0) too).
    if (lseOut)
      ifThen(ltc(dv, 1), [&] {
        store(addf(state[0], math::LogOp::create(b, l)), lseOut, {bi, h, i});
      });
    (*out)->storeResults(views.storedCoords(c),
                         select(nonEmpty, divf(state[2], l), f32(0)));
  });
}
