//===- EpilogueEvaluator.cpp - The fused epilogue at one element ----------===//

#include "EpilogueEvaluator.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec::tiling;

//===----------------------------------------------------------------------===//
// Scopes
//===----------------------------------------------------------------------===//

void EpilogueEvaluator::clearElement() {
  cache.clear();
  preloaded.clear();
  channelLane = 0;
}

EpilogueEvaluator::ElementScope::ElementScope(EpilogueEvaluator &evaluator)
    : evaluator(evaluator) {
  assert(!evaluator.inElement && "element scopes do not nest");
  evaluator.inElement = true;
  evaluator.clearElement();
}

EpilogueEvaluator::ElementScope::ElementScope(
    EpilogueEvaluator &evaluator,
    ArrayRef<std::pair<BlockArgument, Value>> full, int64_t lane)
    : ElementScope(evaluator) {
  for (auto [arg, vec] : full)
    evaluator.preloaded[arg] =
        evaluator.toF32(vector::ExtractOp::create(evaluator.b, vec, lane));
  // One map per lane, or one for all.
  evaluator.channelLane = evaluator.channelValues.size() > 1 ? lane : 0;
}

EpilogueEvaluator::ElementScope::~ElementScope() {
  evaluator.clearElement();
  evaluator.inElement = false;
}

EpilogueEvaluator::ChannelScope::ChannelScope(EpilogueEvaluator &evaluator,
                                              int64_t axis,
                                              ArrayRef<ChannelValues> values)
    : evaluator(evaluator), savedAxis(evaluator.channelAxis),
      savedValues(evaluator.channelValues) {
  evaluator.channelAxis = axis;
  evaluator.channelValues = values;
}

EpilogueEvaluator::ChannelScope::~ChannelScope() {
  evaluator.channelAxis = savedAxis;
  evaluator.channelValues = savedValues;
}

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

/// Calls `fn(operand, axis)` for each per-channel operand in `kernel`.
static void forEachChannelOperand(KernelOp kernel,
                                  function_ref<void(Value, int64_t)> fn) {
  kernel.getBody().walk([&](Operation *op) {
    llvm::TypeSwitch<Operation *>(op)
        .Case([&](BiasAddOp o) {
          auto axis = static_cast<int64_t>(o.getAxis());
          fn(o.getBias(), axis < 0 ? axis + o.getType().getRank() : axis);
        })
        .Case([&](ScaleShiftOp o) {
          fn(o.getScale(), o.getChannelAxis());
          fn(o.getShift(), o.getChannelAxis());
        })
        .Case([&](BatchNormOp o) {
          for (Value v :
               {o.getMean(), o.getVariance(), o.getScale(), o.getShift()})
            fn(v, o.getChannelAxis());
        });
  });
}

SmallVector<Value> EpilogueEvaluator::channelOperands(int64_t axis) {
  llvm::SetVector<Value> operands;
  forEachChannelOperand(kernel, [&](Value v, int64_t a) {
    if (a == axis)
      operands.insert(v);
  });
  return operands.takeVector();
}

EpilogueEvaluator::ChannelValues EpilogueEvaluator::evalChannel(int64_t axis,
                                                                Value c) {
  ChannelValues values;
  ElementScope element(*this);
  for (Value v : channelOperands(axis))
    values[v] = evalAt(v, {c});
  return values;
}

SmallVector<Value> EpilogueEvaluator::evalResults(ArrayRef<Value> coords,
                                                  Value anchorValue) {
  anchorScalar = anchorValue;
  SmallVector<Value> values;
  for (Value value : yield().getValues())
    values.push_back(evalAt(value, coords));
  return values;
}

void EpilogueEvaluator::storeResults(ArrayRef<Value> coords,
                                     Value anchorValue) {
  ElementScope element(*this);
  for (auto [value, out] :
       llvm::zip_equal(evalResults(coords, anchorValue), outputs))
    store(value, out, coords);
}

Value EpilogueEvaluator::evalUnary(Operation *op, Value x) {
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](ReluOp) { return maxf(x, f32(0)); })
      .Case([&](Relu6Op) { return minf(maxf(x, f32(0)), f32(6)); })
      .Case([&](ClampOp o) {
        return minf(maxf(x, f32(o.getMin().convertToDouble())),
                    f32(o.getMax().convertToDouble()));
      })
      .Case([&](LeakyReluOp o) {
        Value neg = mulf(x, f32(o.getAlpha().convertToDouble()));
        return select(
            arith::CmpFOp::create(b, arith::CmpFPredicate::OGE, x, f32(0)), x,
            neg);
      })
      .Case([&](GeluOp o) {
        Value half = mulf(x, f32(0.5));
        if (o.getApproximate() == GeluApproximation::Tanh) {
          Value x3 = mulf(mulf(x, x), x);
          Value inner =
              mulf(f32(std::sqrt(2.0 / M_PI)), fma(x3, f32(0.044715), x));
          return mulf(half, addf(f32(1), math::TanhOp::create(b, inner)));
        }
        Value erf = math::ErfOp::create(b, mulf(x, f32(M_SQRT1_2)));
        return mulf(half, addf(f32(1), erf));
      })
      .Case([&](SiluOp) {
        return approxDivf(x, addf(f32(1), exp(arith::NegFOp::create(b, x))));
      })
      .Case([&](SigmoidOp) {
        return approxDivf(f32(1),
                          addf(f32(1), exp(arith::NegFOp::create(b, x))));
      })
      .Case([&](TanhOp) { return math::TanhOp::create(b, x); })
      .Case([&](NegOp) { return arith::NegFOp::create(b, x).getResult(); })
      .Case([&](HardSwishOp) {
        Value r6 = minf(maxf(addf(x, f32(3)), f32(0)), f32(6));
        return mulf(x, mulf(r6, f32(1.0 / 6.0)));
      })
      .Case([&](CastOp o) {
        // The operand holds a value of its own type, which the epilogue's
        // f32 may not be yet (a bf16 product before an upcast): round to
        // it first, as the graph does (an f16 past 65504 is inf).
        Type from = o.getInput().getType().getElementType();
        Type to = o.getType().getElementType();
        if (!from.isF32())
          x = toF32(arith::TruncFOp::create(b, from, x));
        if (to.isF32())
          return x;
        return toF32(arith::TruncFOp::create(b, to, x));
      })
      .Default([](Operation *) { return Value(); });
}

/// fuse.activation_grad of `dy` given the activation's `v` (the result or
/// the input, as the op says), built with `bld` on `b`.
static Value activationGrad(Builders &bld, ImplicitLocOpBuilder &b,
                            ActivationGradOp op, Value dy, Value v) {
  auto f32 = [&](double c) { return bld.f32(c); };
  auto mulf = [&](Value x, Value y) { return bld.mulf(x, y); };
  auto addf = [&](Value x, Value y) { return bld.addf(x, y); };
  auto subf = [&](Value x, Value y) { return bld.subf(x, y); };
  auto fma = [&](Value x, Value y, Value z) { return bld.fma(x, y, z); };
  auto exp = [&](Value x) { return bld.exp(x); };
  auto andi = [&](Value x, Value y) { return bld.andi(x, y); };
  auto select = [&](Value c, Value x, Value y) { return bld.select(c, x, y); };
  auto cmp = [&](arith::CmpFPredicate p, Value x, double c) {
    return arith::CmpFOp::create(b, p, x, f32(c)).getResult();
  };
  using P = arith::CmpFPredicate;
  // Where the derivative is 0 or 1, a select: the gradient is dy or 0
  // exactly, as PyTorch's threshold backwards give (a NaN dy does not leak
  // through a closed gate).
  auto gate = [&](Value open) { return select(open, dy, f32(0)); };
  switch (op.getActivation()) {
  case Activation::Relu:
    return gate(cmp(P::OGT, v, 0));
  case Activation::Relu6:
    return gate(andi(cmp(P::OGT, v, 0), cmp(P::OLT, v, 6)));
  case Activation::Clamp:
    return gate(andi(cmp(P::OGT, v, op.getMin()->convertToDouble()),
                     cmp(P::OLT, v, op.getMax()->convertToDouble())));
  case Activation::LeakyRelu:
    return select(cmp(P::OGT, v, 0), dy,
                  mulf(dy, f32(op.getAlpha().convertToDouble())));
  case Activation::Sigmoid:
    return mulf(dy, mulf(v, subf(f32(1), v)));
  case Activation::Tanh:
    return mulf(dy, fma(arith::NegFOp::create(b, v), v, f32(1)));
  case Activation::Gelu: {
    // Phi(x) + x phi(x).
    Value cdf = mulf(f32(0.5), addf(f32(1), math::ErfOp::create(
                                                b, mulf(v, f32(M_SQRT1_2)))));
    Value pdf = mulf(f32(0.5 * M_2_SQRTPI * M_SQRT1_2),
                     exp(mulf(mulf(v, v), f32(-0.5))));
    return mulf(dy, fma(v, pdf, cdf));
  }
  case Activation::GeluTanh: {
    // d/dx of 0.5 x (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2 / pi).
    double k = std::sqrt(2.0 / M_PI), kappa = 0.044715;
    Value x2 = mulf(v, v);
    Value t = math::TanhOp::create(
        b, mulf(f32(k), fma(mulf(x2, v), f32(kappa), v)));
    Value left = mulf(f32(0.5), addf(f32(1), t));
    Value right = mulf(mulf(mulf(f32(0.5), v), fma(arith::NegFOp::create(b, t),
                                                   t, f32(1))),
                       mulf(f32(k), fma(x2, f32(3 * kappa), f32(1))));
    return mulf(dy, addf(left, right));
  }
  case Activation::Silu: {
    Value s = bld.approxDivf(f32(1),
                             addf(f32(1), exp(arith::NegFOp::create(b, v))));
    return mulf(dy, mulf(s, fma(v, subf(f32(1), s), f32(1))));
  }
  case Activation::HardSwish: {
    Value mid = mulf(dy, fma(v, f32(1.0 / 3.0), f32(0.5)));
    return select(cmp(P::OLT, v, -3), f32(0),
                  select(cmp(P::OGT, v, 3), dy, mid));
  }
  }
  llvm_unreachable("an activation without a derivative");
}

Value EpilogueEvaluator::evalConcat(ConcatOp op, ArrayRef<Value> coords) {
  auto axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0)
    axis += coords.size();
  // Only the operand holding the element is read: a branch per boundary.
  // Values computed inside a branch do not dominate what follows it, so
  // the cache is restored after each.
  std::function<Value(size_t, int64_t)> from = [&](size_t i,
                                                   int64_t start) -> Value {
    Value operand = op.getInputs()[i];
    auto read = [&, operand, start]() -> Value {
      SmallVector<Value> at(coords);
      if (start)
        at[axis] = subi(at[axis], idx(start));
      llvm::DenseMap<Value, Value> saved = cache;
      Value value = evalAt(operand, at);
      cache = std::move(saved);
      return value;
    };
    if (i + 1 == op.getInputs().size())
      return read();
    int64_t end = start + shapeOf(operand)[axis];
    return ifElse(ltc(coords[axis], end), read,
                  [&] { return from(i + 1, end); });
  };
  return from(0, 0);
}

Value EpilogueEvaluator::evalAt(Value v, ArrayRef<Value> coords) {
  if (v == anchorResult)
    return anchorScalar;
  if (Value known = preloaded.lookup(v))
    return known;
  if (auto arg = dyn_cast<BlockArgument>(v))
    return load(memrefOf.lookup(arg), coords);
  // A value is always read at the same function of the element's
  // coordinates (broadcasting is consistent), so it is computed once per
  // element.
  if (Value hit = cache.lookup(v))
    return hit;
  Operation *op = v.getDefiningOp();
  auto at = [&](Value operand) {
    return evalAt(operand, broadcastCoords(coords, shapeOf(operand)));
  };
  auto channel = [&](Value vec, int64_t axis) {
    if (axis == channelAxis && !channelValues.empty())
      if (Value known = channelValues[channelLane].lookup(vec))
        return known;
    return evalAt(vec, {coords[axis]});
  };
  Value result =
      llvm::TypeSwitch<Operation *, Value>(op)
          .Case([&](SliceOp o) {
            return evalAt(o.getInput(), sliceSourceCoords(o, coords));
          })
          .Case([&](ConcatOp o) { return evalConcat(o, coords); })
          .Case([&](TransposeOp o) {
            // A transpose of the anchor's result (isAnchorView).
            return evalAt(o.getInput(), transposeSourceCoords(o, coords));
          })
          .Case([&](AddOp o) { return addf(at(o.getLhs()), at(o.getRhs())); })
          .Case([&](SubOp o) { return subf(at(o.getLhs()), at(o.getRhs())); })
          .Case([&](MulOp o) { return mulf(at(o.getLhs()), at(o.getRhs())); })
          .Case([&](DivOp o) { return divf(at(o.getLhs()), at(o.getRhs())); })
          .Case([&](ActivationGradOp o) {
            Value dy = at(o.getOutputGrad());
            return activationGrad(*this, b, o, dy, at(o.getValue()));
          })
          .Case([&](BiasAddOp o) {
            int64_t axis = static_cast<int64_t>(o.getAxis());
            if (axis < 0)
              axis += coords.size();
            return addf(evalAt(o.getInput(), coords),
                        channel(o.getBias(), axis));
          })
          .Case([&](ScaleShiftOp o) {
            int64_t axis = o.getChannelAxis();
            return fma(evalAt(o.getInput(), coords),
                       channel(o.getScale(), axis),
                       channel(o.getShift(), axis));
          })
          .Case([&](BatchNormOp o) {
            int64_t axis = o.getChannelAxis();
            Value x = evalAt(o.getInput(), coords);
            Value inv = math::RsqrtOp::create(
                b, addf(channel(o.getVariance(), axis),
                        f32(o.getEpsilon().convertToDouble())));
            Value scale = mulf(inv, channel(o.getScale(), axis));
            return fma(subf(x, channel(o.getMean(), axis)), scale,
                       channel(o.getShift(), axis));
          })
          .Case([&](BatchNormCoefficientsOp o) {
            Value var = evalAt(o.getVariance(), coords);
            Value eps = f32(o.getEpsilon().convertToDouble());
            Value scale = mulf(evalAt(o.getScale(), coords),
                               math::RsqrtOp::create(b, addf(var, eps)));
            if (v == o.getResultScale())
              return scale;
            return subf(evalAt(o.getShift(), coords),
                        mulf(evalAt(o.getMean(), coords), scale));
          })
          .Default([&](Operation *o) {
            return evalUnary(o, evalAt(o->getOperand(0), coords));
          });
  assert(result && "unexpected op in a kernel epilogue");
  cache[v] = result;
  return result;
}

//===----------------------------------------------------------------------===//
// Vectors
//===----------------------------------------------------------------------===//

EpilogueEvaluator::FullInputs
EpilogueEvaluator::loadFullInputs(ArrayRef<Value> coords, int64_t width) {
  FullInputs full;
  for (BlockArgument arg : fullInputs())
    full.emplace_back(arg, loadVector(memrefOf.lookup(arg), coords, width));
  return full;
}

SmallVector<BlockArgument> EpilogueEvaluator::fullInputs() {
  ArrayRef<int64_t> shape = shapeOf(yield().getValues()[0]);
  SmallVector<BlockArgument> args;
  for (BlockArgument arg : kernel.getBody().getArguments())
    // An argument read through a view is read at other coordinates.
    if (shapeOf(arg) == shape && !arg.use_empty() &&
        llvm::none_of(arg.getUsers(), isView))
      args.push_back(arg);
  return args;
}

void EpilogueEvaluator::storeVectorResults(ArrayRef<Value> coords,
                                           int64_t width,
                                           ArrayRef<Value> anchorValues,
                                           const FullInputs *loaded) {
  auto full = loaded ? *loaded : loadFullInputs(coords, width);
  SmallVector<SmallVector<Value>> lanes(outputs.size());
  for (int64_t i = 0; i < width; ++i) {
    SmallVector<Value> at(coords);
    at.back() = addi(coords.back(), idx(i));
    ElementScope element(*this, full, i);
    Value anchorValue = anchorValues.empty() ? Value() : anchorValues[i];
    for (auto [k, value] : llvm::enumerate(evalResults(at, anchorValue))) {
      Type type = cast<MemRefType>(outputs[k].getType()).getElementType();
      lanes[k].push_back(
          value.getType() == type
              ? value
              : arith::TruncFOp::create(b, type, value).getResult());
    }
  }
  for (auto [out, values] : llvm::zip_equal(outputs, lanes))
    vector::StoreOp::create(
        b, vector::FromElementsOp::create(b, vectorOf(out, width), values), out,
        coords, /*nontemporal=*/false, alignOf(out, width));
}
