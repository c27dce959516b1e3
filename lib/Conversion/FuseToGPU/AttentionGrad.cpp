//===- AttentionGrad.cpp - What the attention backward's families share --===//
//
// See AttentionGrad.h.
//
//===----------------------------------------------------------------------===//

#include "AttentionGrad.h"
#include "Families.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec::tiling;

LogicalResult AttentionGradKernel::readAnchor() {
  op = cast<AttentionGradOp>(anchor);
  for (Value operand : anchor->getOperands())
    if (!isa<BlockArgument>(operand))
      return kernel.emitOpError("reads ")
             << anchor->getName()
             << "'s operands from memory, but one is computed in the kernel";
  resultAt.assign(4, -1);
  for (auto [index, value] : llvm::enumerate(yield().getValues())) {
    auto result = dyn_cast<OpResult>(value);
    if (!result || result.getOwner() != anchor)
      return kernel.emitOpError("result #")
             << index << " is not a gradient " << anchor->getName()
             << " computes, which its family stores as they are";
    resultAt[result.getResultNumber()] = index;
  }
  ArrayRef<int64_t> qs = shapeOf(op.getQuery()), vs = shapeOf(op.getValue());
  batch = qs[0];
  hq = qs[1];
  nq = qs[2];
  d = qs[3];
  hkv = vs[1];
  nk = vs[2];
  dv = vs[3];
  group = hq / hkv;
  scale = op.getEffectiveScale();
  causal = op.getCausal();
  q = argOf.lookup(op.getQuery());
  k = argOf.lookup(op.getKey());
  v = argOf.lookup(op.getValue());
  o = argOf.lookup(op.getOutput());
  dO = argOf.lookup(op.getOutputGrad());
  lse = argOf.lookup(op.getLse());
  mask = op.getMask() ? argOf.lookup(op.getMask()) : Value();
  return success();
}

LaunchConfig AttentionGradKernel::emitRowsPre(Value delta, Value dqAcc,
                                              Value lse2, int64_t rows,
                                              Value semaphores) {
  // 16-byte accesses: a lane reads 8 elements of O and dO (head dims are
  // multiples of 8 on tensor cores) and zeroes 8 of dQ's, a row taking as
  // many lanes as that needs (up to a warp): a warp a row left 24 of 32
  // lanes idle at d 64 (48 us at 16 x 16 x 1024, 2.8 TB/s).
  constexpr int64_t kThreads = 256;
  int64_t group = std::min<int64_t>(
      32, llvm::PowerOf2Ceil(std::max(ceilDiv(dv, 8), ceilDiv(d, 8))));
  Value tid = threadId(), lane = remi(tid, group);
  int64_t total = batch * hq * rows;
  Value row = addi(muli(blockId(gpu::Dimension::x), idx(kThreads / group)),
                   divi(tid, group));
  // Every lane runs the shuffles (a warp's rows may pass the last one, or
  // nq into the padding): a clamped row, stores only for the real one.
  Value real = ltc(row, total);
  SmallVector<Value> c =
      delinearize(mini(row, idx(total - 1)), {batch, hq, rows});
  Value first = andi(real, ltc(lane, 1));
  Value query = ltc(c[2], nq);
  if (semaphores) {
    ArrayRef<int64_t> shape = shapeOf(semaphores);
    int64_t tileRows = rows / shape[2];
    ifThen(andi(andi(real, cmpi(arith::CmpIPredicate::eq, remi(c[2], tileRows),
                                idx(0))),
                ltc(lane, shape[3])),
           [&] {
             memref::StoreOp::create(
                 b, arith::ConstantIntOp::create(b, b.getI32Type(), 0),
                 semaphores,
                 ValueRange{c[0], c[1], divi(c[2], tileRows), lane});
           });
  }
  // delta = rowsum(dO * O), 0 on the padding rows past nq.
  Value partial =
      loop(muli(lane, idx(8)), select(query, idx(dv), idx(0)), idx(group * 8),
           {f32(0)}, [&](Value e, ValueRange acc) -> SmallVector<Value> {
             SmallVector<Value> at = {c[0], c[1], c[2], e};
             Value ov = loadVector(o, at, 8), dov = loadVector(dO, at, 8);
             Value sum = acc[0];
             for (int64_t i = 0; i < 8; ++i)
               sum = fma(toF32(vector::ExtractOp::create(b, ov, i)),
                         toF32(vector::ExtractOp::create(b, dov, i)), sum);
             return {sum};
           })[0];
  Value sum = shuffleReduce(partial, group);
  ifThen(first, [&] {
    store(sum, delta, c);
    if (!lse2)
      return;
    // +inf past nq and where a row saw no key (lse -inf): P = 0 there.
    Value scaled = ifElse(
        query,
        [&] {
          Value rowLse = load(lse, c);
          Value none = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                             rowLse, f32(-INFINITY));
          return select(none, f32(INFINITY), mulf(rowLse, f32(M_LOG2E)));
        },
        [&] { return f32(INFINITY); });
    store(scaled, lse2, c);
  });
  if (resultAt[3] >= 0 && causal)
    ifThen(andi(real, query),
           [&] { zeroScoreGradAbove(c[0], c[1], c[2], lane, group); });
  if (dqAcc) {
    Value zeros = arith::ConstantOp::create(
        b, DenseElementsAttr::get(vectorOf(dqAcc, 4), 0.0f));
    (void)loop(muli(lane, idx(8)), select(real, idx(d), idx(0)), idx(group * 8),
               {}, [&](Value e, ValueRange) -> SmallVector<Value> {
                 for (int64_t half = 0; half < 2; ++half)
                   vector::StoreOp::create(
                       b, zeros, dqAcc,
                       ValueRange{c[0], c[1], c[2], addi(e, idx(4 * half))},
                       /*nontemporal=*/false, alignOf(dqAcc, 4));
                 return {};
               });
  }
  return LaunchConfig{{ceilDiv(total, kThreads / group), 1, 1},
                      {kThreads, 1, 1}};
}

LaunchConfig AttentionGradKernel::emitScaleDq(Value dqAcc) {
  SmallVector<int64_t> shape = {batch, hq, nq, d};
  return perElement(product(shape), [&](Value linear) {
    SmallVector<Value> c = delinearize(linear, shape);
    store(mulf(memref::LoadOp::create(b, dqAcc, c), f32(scale)),
          outputs[resultAt[0]], c);
  });
}

LaunchConfig AttentionGradKernel::finishLaunches(
    ArrayRef<MemRefType> workspaces, ExtraLaunch pre, LaunchConfig main,
    bool storesDq, function_ref<LaunchConfig()> scaleDq) {
  SmallVector<ExtraLaunch> launches = {std::move(pre)};
  main.sharedBytes = sharedBytes;
  if (!storesDq) {
    recordExtraLaunches(func, workspaces, launches);
    return main;
  }
  launches.push_back(splitOffFirstLaunch("_main", main));
  recordExtraLaunches(func, workspaces, launches);
  return scaleDq();
}

void AttentionGradKernel::storeScoreGrad(Value ds, Value bi, Value h, Value qi,
                                         Value key) {
  if (resultAt[3] < 0)
    return;
  ifThen(andi(ltc(qi, nq), ltc(key, nk)), [&] {
    store(ds, outputs[resultAt[3]], {bi, h, qi, key});
  });
}

void AttentionGradKernel::zeroScoreGradAbove(Value bi, Value h, Value qi,
                                             Value lane, int64_t lanes) {
  if (resultAt[3] < 0 || !causal)
    return;
  Value out = outputs[resultAt[3]];
  Value zero = arith::ConstantOp::create(
      b, b.getZeroAttr(cast<MemRefType>(out.getType()).getElementType()));
  (void)loop(addi(addi(qi, idx(1)), lane), idx(nk), idx(lanes), {},
             [&](Value j, ValueRange) -> SmallVector<Value> {
               memref::StoreOp::create(b, zero, out, ValueRange{bi, h, qi, j});
               return {};
             });
}

Value AttentionGradKernel::probability(Value score, Value lse2, Value bi,
                                       Value h, Value qi, Value key) {
  Value log2e = f32(M_LOG2E);
  Value x = fma(score, f32(scale * M_LOG2E), arith::NegFOp::create(b, lse2));
  if (mask) {
    Value qc = mini(qi, idx(nq - 1));
    Value kc = mini(key, idx(nk - 1));
    x = fma(load(mask, broadcastCoords({bi, h, qc, kc}, shapeOf(op.getMask()))),
            log2e, x);
  }
  // Queries past the end have lse2 +inf (P = 0); keys past the end and
  // (causal) after the query are masked here.
  Value ok = ltc(key, nk);
  if (causal)
    ok = andi(ok, cmpi(arith::CmpIPredicate::sle, key, qi));
  return select(ok, math::Exp2Op::create(b, x), f32(0));
}

AttentionGradKernel::QueryWalk AttentionGradKernel::walkQueries(Value kv0,
                                                                Value hk,
                                                                int64_t br,
                                                                bool ordered) {
  int64_t tiles = ceilDiv(nq, br);
  QueryWalk walk{hk,      causal ? mini(divi(kv0, br), idx(tiles)) : idx(0),
                 Value(), Value(),
                 br,      ordered};
  walk.span = subi(idx(tiles), walk.first);
  walk.steps = muli(walk.span, idx(group));
  return walk;
}

Value AttentionGradKernel::headAt(const QueryWalk &walk, Value it) {
  Value local = walk.ordered
                    ? arith::RemUIOp::create(b, it, idx(group)).getResult()
                    : arith::DivUIOp::create(b, it, walk.span).getResult();
  return addi(muli(walk.hk, idx(group)), local);
}

Value AttentionGradKernel::rowAt(const QueryWalk &walk, Value it) {
  if (!walk.ordered)
    return muli(
        addi(walk.first, arith::RemUIOp::create(b, it, walk.span).getResult()),
        idx(walk.br));
  // Every block of keys reaches a tile at the same step: the last tile first
  // (causal: the one every block walks), the heads of the group in turn.
  Value step = arith::DivUIOp::create(b, it, idx(group)).getResult();
  Value tile = causal ? subi(idx(ceilDiv(nq, walk.br) - 1), step)
                      : addi(walk.first, step);
  return muli(tile, idx(walk.br));
}
