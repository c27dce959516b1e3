//===- Attention.cpp - What the tensor-core attentions share --------------===//
//
// See Attention.h. Every piece emits the IR the two families emitted
// before they shared it, in the same order.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "Families.h"
#include "fusec/Transforms/FusionPolicy.h"

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec::tiling;

static constexpr double kLog2e = 1.4426950408889634;

AttentionShape AttentionShape::of(AttentionOp op) {
  ArrayRef<int64_t> q = shapeOf(op.getQuery()), v = shapeOf(op.getValue());
  return {q[0], q[1], v[1], q[2], v[2], q[3], v[3]};
}

bool fusec::tiling::isMmaSyncAttention(AttentionOp op) {
  Type element = getElementTypeOrSelf(op.getQuery().getType());
  AttentionShape s = AttentionShape::of(op);
  // 16-byte chunks of the head dims for cp.async; f32 stays on the direct
  // kernel (exact in IEEE, which TF32 attention would not be).
  return (element.isF16() || element.isBF16()) &&
         getElementTypeOrSelf(op.getKey().getType()) == element &&
         getElementTypeOrSelf(op.getValue().getType()) == element &&
         s.d % 8 == 0 && s.dv % 8 == 0 && s.d <= 256 && s.dv <= 256 &&
         fusec::policy::loadsThroughCopyChunks(op);
}

FailureOr<LaunchConfig> AttentionKernel::emitBody() {
  op = cast<AttentionOp>(anchor);
  shape = AttentionShape::of(op);
  elementType = getElementTypeOrSelf(op.getQuery().getType());
  type = *mmaTypeOf(elementType, Fp32Math::IEEE);
  causal = op.getCausal();
  mask = op.getMask() ? argOf.lookup(op.getMask()) : Value();
  scaleLog2 = op.getEffectiveScale() * kLog2e;
  prescale = mask || scaleLog2 <= 0;
  mult = f32(prescale ? 1.0 : scaleLog2);
  negInf = f32(-INFINITY);
  zero = f32(0);
  FailureOr<EpilogueEvaluator *> evaluator =
      splitFamilyResults("row", rowResults);
  if (failed(evaluator))
    return failure();
  out = *evaluator;
  if (op.getLse() && rowResults.resultAt[1] >= 0)
    lseOut = outputs[rowResults.resultAt[1]];
  return emitAttention();
}

//===----------------------------------------------------------------------===//
// The schedule
//===----------------------------------------------------------------------===//

void AttentionKernel::scheduleBlock(int64_t br) {
  Value qTile = blockId(gpu::Dimension::x);
  if (causal)
    qTile = subi(idx(ceilDiv(shape.nq, br) - 1), qTile);
  Value bh = blockId(gpu::Dimension::y);
  batchIndex = divi(bh, shape.hq);
  head = remi(bh, shape.hq);
  kvHead = divi(head, shape.hq / shape.hkv);
  q0 = muli(qTile, idx(br));
}

Value AttentionKernel::keyTiles(int64_t br, int64_t bc) {
  Value tiles = idx(ceilDiv(shape.nk, bc));
  if (causal) {
    int64_t lastRow = std::min<int64_t>(shape.nq, shape.nk) - 1;
    Value last = mini(addi(q0, idx(br - 1)), idx(lastRow));
    tiles = addi(divi(last, bc), idx(1));
  }
  return tiles;
}

//===----------------------------------------------------------------------===//
// One key tile
//===----------------------------------------------------------------------===//

Value AttentionKernel::quadReduce(Value x, bool max) {
  for (int32_t offset : {1, 2}) {
    Value other =
        gpu::ShuffleOp::create(b, x, offset, 32, gpu::ShuffleMode::XOR)
            .getShuffleResult();
    x = max ? maxf(x, other) : addf(x, other);
  }
  return x;
}

void AttentionKernel::maskScores(SmallVectorImpl<Value> &scores,
                                 const AttentionFragments &frags, Value kv0,
                                 int64_t bc) {
  ArrayRef<Value> rows = frags.rows;
  if (prescale)
    for (Value &x : scores)
      x = mulf(x, f32(scaleLog2));
  int64_t count = scores.size() / 4;
  auto keyOf = [&](int64_t f, int64_t e) {
    return addi(kv0, addi(idx(8 * f + e % 2), muli(frags.t, idx(2))));
  };
  if (mask) {
    ArrayRef<int64_t> maskShape = shapeOf(op.getMask());
    Value log2eV = f32(kLog2e);
    for (int64_t f = 0; f < count; ++f)
      for (int64_t e = 0; e < 4; ++e) {
        // Clamped: rows and keys past the end are never used.
        Value i = mini(rows[e / 2], idx(shape.nq - 1));
        Value key = mini(keyOf(f, e), idx(shape.nk - 1));
        Value m =
            load(mask, broadcastCoords({batchIndex, head, i, key}, maskShape));
        scores[f * 4 + e] = fma(m, log2eV, scores[f * 4 + e]);
      }
  }
  if (!causal && shape.nk % bc == 0)
    return;
  Value edge =
      cmpi(arith::CmpIPredicate::sgt, addi(kv0, idx(bc)), idx(shape.nk));
  if (causal)
    edge = arith::OrIOp::create(
        b, edge, cmpi(arith::CmpIPredicate::sgt, addi(kv0, idx(bc - 1)), q0));
  SmallVector<Type> types(scores.size(), b.getF32Type());
  auto ifOp = scf::IfOp::create(b, types, edge, true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    SmallVector<Value> masked;
    for (int64_t f = 0; f < count; ++f)
      for (int64_t e = 0; e < 4; ++e) {
        Value key = keyOf(f, e);
        Value ok = ltc(key, shape.nk);
        if (causal)
          ok = andi(ok, cmpi(arith::CmpIPredicate::sle, key, rows[e / 2]));
        masked.push_back(select(ok, scores[f * 4 + e], negInf));
      }
    scf::YieldOp::create(b, masked);
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, ValueRange(scores));
  }
  scores.assign(ifOp.getResults().begin(), ifOp.getResults().end());
}

void AttentionKernel::softmaxStep(MutableArrayRef<Value> scores,
                                  MutableArrayRef<Value> o,
                                  MutableArrayRef<Value> m,
                                  MutableArrayRef<Value> l) {
  int64_t sFrags = scores.size() / 4, oFrags = o.size() / 4;
  for (int64_t r = 0; r < 2; ++r) {
    Value mx = negInf;
    for (int64_t f = 0; f < sFrags; ++f)
      mx = maxf(mx, maxf(scores[f * 4 + 2 * r], scores[f * 4 + 2 * r + 1]));
    Value mNew = maxf(m[r], quadReduce(mx, /*max=*/true));
    // A row with no key seen yet subtracts 0, keeping -inf - -inf out.
    Value mUse = select(
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mNew, negInf), zero,
        mNew);
    Value alpha = exp2(mulf(subf(m[r], mUse), mult));
    Value offset = arith::NegFOp::create(b, mulf(mUse, mult));
    Value sum = zero;
    for (int64_t f = 0; f < sFrags; ++f)
      for (int64_t e = 2 * r; e < 2 * r + 2; ++e) {
        Value p = exp2(fma(scores[f * 4 + e], mult, offset));
        scores[f * 4 + e] = p;
        sum = addf(sum, p);
      }
    l[r] = fma(l[r], alpha, sum);
    m[r] = mNew;
    for (int64_t f = 0; f < oFrags; ++f)
      for (int64_t e = 2 * r; e < 2 * r + 2; ++e)
        o[f * 4 + e] = mulf(o[f * 4 + e], alpha);
  }
}

SmallVector<Value> AttentionKernel::packP(ArrayRef<Value> p, int64_t step) {
  return packAccumulatorsAsA(b, type, elementType, p, step);
}

void AttentionKernel::normaliseAndStore(ArrayRef<Value> o, ArrayRef<Value> m,
                                        ArrayRef<Value> l,
                                        const AttentionFragments &frags) {
  // O's fragments past the head dims (mma.sync pads them to k-steps of 16)
  // are not stored.
  int64_t count = o.size() / 4;
  for (int64_t r = 0; r < 2; ++r) {
    Value sum = quadReduce(l[r], /*max=*/false);
    Value inv =
        select(arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, sum, zero),
               divf(f32(1), sum), zero);
    ifThen(ltc(frags.rows[r], shape.nq), [&] {
      if (lseOut)
        ifThen(ltc(frags.t, 1), [&] {
          // p = exp2(s * mult - m * mult): the row's log2-sum-exp is
          // m * mult + log2(sum); -inf where no key was seen.
          Value lse2 = addf(mulf(m[r], mult), math::Log2Op::create(b, sum));
          store(mulf(lse2, f32(1.0 / kLog2e)), lseOut,
                {batchIndex, head, frags.rows[r]});
        });
      for (int64_t f = 0; f < count && 8 * f < shape.dv; ++f) {
        Value col = addi(idx(8 * f), muli(frags.t, idx(2)));
        SmallVector<Value> values = {mulf(o[f * 4 + 2 * r], inv),
                                     mulf(o[f * 4 + 2 * r + 1], inv)};
        out->storeVectorResults(
            views.storedCoords({batchIndex, head, frags.rows[r], col}), 2,
            values);
      }
    });
  }
}
