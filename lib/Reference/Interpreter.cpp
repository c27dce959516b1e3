//===- Interpreter.cpp - CPU reference interpreter for fuse graphs --------===//

#include "fusec/Reference/Interpreter.h"
#include "fusec/Reference/TrainingKernels.h"

#include "Fuse/FuseOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

#include <unistd.h>

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec;
using namespace fusec::ref;

std::optional<DType> fusec::ref::getDType(Type elementType) {
  if (elementType.isF32())
    return DType::F32;
  if (elementType.isF16())
    return DType::F16;
  if (elementType.isBF16())
    return DType::BF16;
  return std::nullopt;
}

static ref::Layout toRef(fuse::Layout layout) {
  return layout == fuse::Layout::NCHW ? ref::Layout::NCHW : ref::Layout::NHWC;
}

template <size_t N>
static std::array<int64_t, N> toArray(ArrayRef<int64_t> values) {
  std::array<int64_t, N> result{};
  std::copy_n(values.begin(), N, result.begin());
  return result;
}

static int64_t normaliseAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

namespace {
/// Values computed so far, keyed by SSA value.
class Evaluator {
public:
  const Tensor &get(Value v) const { return env.find(v)->second; }
  const Tensor *getOptional(Value v) const { return v ? &get(v) : nullptr; }
  void set(Value v, Tensor t) { env[v] = std::move(t); }

  /// Evaluates one fuse op; fails with an error at `op` for anything else.
  FailureOr<Tensor> evaluate(Operation *op);

private:
  llvm::DenseMap<Value, Tensor> env;
};
} // namespace

/// The parameters of fuse.upsample (or its gradient, `op`) from an input of
/// `inShape` to an output of `outShape`.
template <typename OpTy>
static UpsampleParams upsampleParams(OpTy op, ArrayRef<int64_t> inShape,
                                     ArrayRef<int64_t> outShape) {
  bool nhwc = op.getLayout() == fuse::Layout::NHWC;
  int64_t h = inShape[nhwc ? 1 : 2], w = inShape[nhwc ? 2 : 3];
  UpsampleParams p;
  p.mode = op.getMode() == fuse::UpsampleMode::Bilinear ? ref::UpsampleMode::Bilinear
                                                  : ref::UpsampleMode::Nearest;
  p.outSize = {outShape[nhwc ? 1 : 2], outShape[nhwc ? 2 : 3]};
  if (std::optional<ArrayRef<double>> scale = op.getScale())
    p.coordScale = {1.0 / (*scale)[0], 1.0 / (*scale)[1]};
  else
    p.coordScale = {static_cast<double>(h) / p.outSize[0],
                    static_cast<double>(w) / p.outSize[1]};
  p.alignCorners = op.getAlignCorners();
  p.layout = toRef(op.getLayout());
  return p;
}

static Tensor evalUpsample(const Evaluator &ev, UpsampleOp op) {
  const Tensor &x = ev.get(op.getInput());
  return upsample(
      x, upsampleParams(op, x.shape, op.getResult().getType().getShape()));
}

template <typename OpTy> static Conv2dParams convParams(OpTy op) {
  Conv2dParams p;
  p.strides = toArray<2>(op.getStrides());
  p.pads = op.getPads();
  p.dilation = toArray<2>(op.getDilation());
  p.groups = op.getGroups();
  p.layout = toRef(op.getLayout());
  return p;
}

template <typename OpTy> static Pool2dParams poolParams(OpTy op) {
  Pool2dParams p;
  p.kernel = toArray<2>(op.getKernel());
  p.strides = toArray<2>(op.getEffectiveStrides());
  p.pads = op.getPads();
  p.layout = toRef(op.getLayout());
  if constexpr (std::is_same_v<OpTy, AvgPool2dOp> ||
                std::is_same_v<OpTy, AvgPool2dGradOp>)
    p.countIncludePad = op.getCountIncludePad();
  return p;
}

static std::vector<int64_t> shapeOf(Value v) {
  auto shape = cast<RankedTensorType>(v.getType()).getShape();
  return {shape.begin(), shape.end()};
}

/// The kernel of fuse.activation_grad's activation and its parameters.
static Tensor evalActivationGrad(const Evaluator &ev, ActivationGradOp op) {
  UnaryKind kind = UnaryKind::Relu;
  double a = 0, b = 0;
  switch (op.getActivation()) {
  case Activation::Relu:
    kind = UnaryKind::Relu;
    break;
  case Activation::Relu6:
    kind = UnaryKind::Relu6;
    break;
  case Activation::Clamp:
    kind = UnaryKind::Clamp;
    a = op.getMin()->convertToDouble();
    b = op.getMax()->convertToDouble();
    break;
  case Activation::LeakyRelu:
    kind = UnaryKind::LeakyRelu;
    a = op.getAlpha().convertToDouble();
    break;
  case Activation::Gelu:
    kind = UnaryKind::Gelu;
    break;
  case Activation::GeluTanh:
    kind = UnaryKind::GeluTanh;
    break;
  case Activation::Silu:
    kind = UnaryKind::Silu;
    break;
  case Activation::Sigmoid:
    kind = UnaryKind::Sigmoid;
    break;
  case Activation::Tanh:
    kind = UnaryKind::Tanh;
    break;
  case Activation::HardSwish:
    kind = UnaryKind::HardSwish;
    break;
  }
  return activationGrad(kind, ev.get(op.getOutputGrad()), ev.get(op.getValue()),
                        a, b);
}

FailureOr<Tensor> Evaluator::evaluate(Operation *op) {
  auto unaryOf = [&](Operation *o, UnaryKind kind, double a = 0,
                     double b = 0) {
    return unary(kind, get(o->getOperand(0)), a, b);
  };
  auto binaryOf = [&](Operation *o, BinaryKind kind) {
    return binary(kind, get(o->getOperand(0)), get(o->getOperand(1)));
  };
  return llvm::TypeSwitch<Operation *, FailureOr<Tensor>>(op)
      .Case([&](Conv2dOp o) {
        return conv2d(get(o.getInput()), get(o.getFilter()),
                      getOptional(o.getBias()), convParams(o));
      })
      .Case([&](BatchNormOp o) {
        return batchNorm(get(o.getInput()), get(o.getMean()),
                         get(o.getVariance()), get(o.getScale()),
                         get(o.getShift()), o.getEpsilon().convertToDouble(),
                         o.getChannelAxis());
      })
      .Case([&](ScaleShiftOp o) {
        return scaleShift(get(o.getInput()), get(o.getScale()),
                          get(o.getShift()), o.getChannelAxis());
      })
      .Case([&](AddOp o) { return binaryOf(o, BinaryKind::Add); })
      .Case([&](SubOp o) { return binaryOf(o, BinaryKind::Sub); })
      .Case([&](MulOp o) { return binaryOf(o, BinaryKind::Mul); })
      .Case([&](DivOp o) { return binaryOf(o, BinaryKind::Div); })
      .Case([&](BiasAddOp o) {
        const Tensor &x = get(o.getInput());
        return biasAdd(x, get(o.getBias()),
                       normaliseAxis(o.getAxis(), x.rank()));
      })
      .Case([&](ReluOp o) { return unaryOf(o, UnaryKind::Relu); })
      .Case([&](Relu6Op o) { return unaryOf(o, UnaryKind::Relu6); })
      .Case([&](ClampOp o) {
        return unaryOf(o, UnaryKind::Clamp, o.getMin().convertToDouble(),
                       o.getMax().convertToDouble());
      })
      .Case([&](LeakyReluOp o) {
        return unaryOf(o, UnaryKind::LeakyRelu,
                       o.getAlpha().convertToDouble());
      })
      .Case([&](GeluOp o) {
        return unaryOf(o, o.getApproximate() == GeluApproximation::Tanh
                              ? UnaryKind::GeluTanh
                              : UnaryKind::Gelu);
      })
      .Case([&](SiluOp o) { return unaryOf(o, UnaryKind::Silu); })
      .Case([&](SigmoidOp o) { return unaryOf(o, UnaryKind::Sigmoid); })
      .Case([&](TanhOp o) { return unaryOf(o, UnaryKind::Tanh); })
      .Case([&](HardSwishOp o) { return unaryOf(o, UnaryKind::HardSwish); })
      .Case([&](MatmulOp o) {
        return matmul(get(o.getLhs()), get(o.getRhs()), o.getTransposeLhs(),
                      o.getTransposeRhs());
      })
      .Case([&](LinearOp o) {
        return linear(get(o.getInput()), get(o.getWeight()),
                      getOptional(o.getBias()));
      })
      .Case([&](LayerNormOp o) {
        return layerNorm(get(o.getInput()), getOptional(o.getScale()),
                         getOptional(o.getShift()), o.getNormalizedRank(),
                         o.getEpsilon().convertToDouble());
      })
      .Case([&](RmsNormOp o) {
        return rmsNorm(get(o.getInput()), getOptional(o.getScale()),
                       o.getNormalizedRank(),
                       o.getEpsilon().convertToDouble());
      })
      .Case([&](SoftmaxOp o) {
        const Tensor &x = get(o.getInput());
        return softmax(x, normaliseAxis(o.getAxis(), x.rank()));
      })
      .Case([&](RopeOp o) {
        return rope(get(o.getInput()), get(o.getCos()), get(o.getSin()),
                    o.getInterleaved());
      })
      .Case([&](MaxPool2dOp o) {
        return maxPool2d(get(o.getInput()), poolParams(o));
      })
      .Case([&](AvgPool2dOp o) {
        return avgPool2d(get(o.getInput()), poolParams(o));
      })
      .Case([&](GlobalAvgPoolOp o) {
        return globalAvgPool(get(o.getInput()), toRef(o.getLayout()));
      })
      .Case([&](UpsampleOp o) { return evalUpsample(*this, o); })
      .Case([&](CastOp o) {
        return castTo(get(o.getInput()),
                      *getDType(o.getResult().getType().getElementType()));
      })
      .Case([&](ReshapeOp o) {
        auto shape = o.getResult().getType().getShape();
        return reshape(get(o.getInput()), {shape.begin(), shape.end()});
      })
      .Case([&](TransposeOp o) {
        auto perm = o.getPermutation();
        return transpose(get(o.getInput()), {perm.begin(), perm.end()});
      })
      .Case([&](SliceOp o) {
        auto offsets = o.getOffsets(), sizes = o.getSizes();
        return slice(get(o.getInput()), {offsets.begin(), offsets.end()},
                     {sizes.begin(), sizes.end()});
      })
      .Case([&](ConcatOp o) {
        std::vector<const Tensor *> inputs;
        for (Value v : o.getInputs())
          inputs.push_back(&get(v));
        return concat(inputs,
                      normaliseAxis(o.getAxis(), o.getType().getRank()));
      })
      // Training ops (FuseTrainingOps.td); the multi-result batch norms
      // are evaluated in evaluateBlock.
      .Case([&](ConvTranspose2dOp o) {
        return convTranspose2d(get(o.getInput()), get(o.getFilter()),
                               getOptional(o.getBias()), convParams(o),
                               toArray<2>(o.getOutputPadding()));
      })
      .Case([&](Conv2dFilterGradOp o) {
        return conv2dFilterGrad(get(o.getInput()), get(o.getOutputGrad()),
                                toArray<2>(o.getKernel()), convParams(o));
      })
      .Case([&](ReduceSumOp o) {
        int64_t rank = o.getInput().getType().getRank();
        std::vector<int64_t> axes;
        for (int64_t a : o.getAxes())
          axes.push_back(normaliseAxis(a, rank));
        return reduceSum(get(o.getInput()), axes, o.getKeepDims());
      })
      .Case([&](ActivationGradOp o) { return evalActivationGrad(*this, o); })
      .Case([&](NegOp o) { return unaryOf(o, UnaryKind::Neg); })
      .Case([&](MaxPool2dGradOp o) {
        return maxPool2dGrad(get(o.getInput()), get(o.getOutputGrad()),
                             poolParams(o));
      })
      .Case([&](AvgPool2dGradOp o) {
        return avgPool2dGrad(get(o.getOutputGrad()), shapeOf(o.getResult()),
                             poolParams(o));
      })
      .Case([&](UpsampleGradOp o) {
        std::vector<int64_t> in = shapeOf(o.getResult());
        return upsampleGrad(get(o.getOutputGrad()), in,
                            upsampleParams(o, in, shapeOf(o.getOutputGrad())));
      })
      .Case([&](SliceGradOp o) {
        auto offsets = o.getOffsets();
        return sliceGrad(get(o.getOutputGrad()),
                         {offsets.begin(), offsets.end()},
                         shapeOf(o.getResult()));
      })
      .Default([](Operation *o) -> FailureOr<Tensor> {
        return o->emitOpError("is not supported by the reference interpreter");
      });
}

static bool isGraphTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() &&
         getDType(tensor.getElementType()).has_value();
}

LogicalResult fusec::ref::verifyGraph(func::FuncOp func) {
  // A declaration beside the graph (a private helper: a graph calls
  // nothing) is no graph to check; selectEntry never picks one.
  if (func.isDeclaration())
    return success();
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    if (!isGraphTensor(type))
      return emitError(func.getArgument(i).getLoc())
             << "argument #" << i << " of @" << func.getSymName()
             << " has type " << type
             << "; graph arguments must be statically shaped tensors of "
                "f32, f16 or bf16";
    std::string problem = shapeProblem(cast<RankedTensorType>(type));
    if (!problem.empty())
      return emitError(func.getArgument(i).getLoc())
             << "argument #" << i << " of @" << func.getSymName() << " ("
             << type << ") " << problem;
  }
  if (func.getNumResults() == 0)
    return func.emitOpError("returns nothing; a graph returns at least one "
                            "tensor");
  for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
    if (!isGraphTensor(type))
      return func.emitOpError("result #")
             << i << " has type " << type
             << "; graph results must be statically shaped tensors of f32, "
                "f16 or bf16";
    std::string problem = shapeProblem(cast<RankedTensorType>(type));
    if (!problem.empty())
      return func.emitOpError("result #") << i << " (" << type << ") "
                                          << problem;
  }
  for (Operation &op : func.getBody().getOps())
    if (!isa<func::ReturnOp>(op) && !isa<FuseDialect>(op.getDialect()))
      return op.emitOpError("is not a fuse op; a graph may only contain fuse "
                            "ops and a return");
  return success();
}

/// Evaluates the ops of `block` after its arguments were bound, returning
/// the operands of its terminator.
static FailureOr<std::vector<Tensor>> evaluateBlock(Evaluator &ev,
                                                   Block &block) {
  for (Operation &op : block) {
    if (isa<func::ReturnOp, YieldOp>(op)) {
      std::vector<Tensor> results;
      for (Value v : op.getOperands())
        results.push_back(ev.get(v));
      return results;
    }
    if (auto coeffs = dyn_cast<BatchNormCoefficientsOp>(op)) {
      auto [s, t] = batchNormCoefficients(
          ev.get(coeffs.getMean()), ev.get(coeffs.getVariance()),
          ev.get(coeffs.getScale()), ev.get(coeffs.getShift()),
          coeffs.getEpsilon().convertToDouble());
      ev.set(coeffs.getResultScale(), std::move(s));
      ev.set(coeffs.getResultShift(), std::move(t));
      continue;
    }
    if (auto bn = dyn_cast<BatchNormTrainOp>(op)) {
      BatchNormTrainParams p;
      p.epsilon = bn.getEpsilon().convertToDouble();
      // PyTorch's momentum=None: a cumulative average over the batches
      // tracked, this one included.
      p.factor = bn.getCumulative()
                     ? 1.0 / ev.get(bn.getBatchesTracked()).data[0]
                     : bn.getMomentum().convertToDouble();
      p.channelAxis = bn.getChannelAxis();
      BatchNormTrainResults r =
          batchNormTrain(ev.get(bn.getInput()), ev.get(bn.getRunningMean()),
                         ev.get(bn.getRunningVar()), ev.get(bn.getScale()),
                         ev.get(bn.getShift()), p);
      ev.set(bn.getResult(), std::move(r.result));
      ev.set(bn.getSavedMean(), std::move(r.savedMean));
      ev.set(bn.getSavedInvstd(), std::move(r.savedInvstd));
      ev.set(bn.getNewRunningMean(), std::move(r.runningMean));
      ev.set(bn.getNewRunningVar(), std::move(r.runningVar));
      continue;
    }
    if (auto bn = dyn_cast<BatchNormGradOp>(op)) {
      std::optional<double> eps;
      if (std::optional<APFloat> e = bn.getEpsilon())
        eps = e->convertToDouble();
      BatchNormGradResults r =
          batchNormGrad(ev.get(bn.getOutputGrad()), ev.get(bn.getInput()),
                        ev.get(bn.getMean()), ev.get(bn.getInvstd()),
                        ev.get(bn.getScale()), eps, bn.getChannelAxis());
      ev.set(bn.getInputGrad(), std::move(r.input));
      ev.set(bn.getScaleGrad(), std::move(r.scale));
      ev.set(bn.getShiftGrad(), std::move(r.shift));
      continue;
    }
    if (auto att = dyn_cast<AttentionOp>(op)) {
      Tensor lse;
      ev.set(att.getResult(),
             attention(ev.get(att.getQuery()), ev.get(att.getKey()),
                       ev.get(att.getValue()),
                       att.getMask() ? &ev.get(att.getMask()) : nullptr,
                       att.getEffectiveScale(), att.getCausal(),
                       att.getLse() ? &lse : nullptr));
      if (att.getLse())
        ev.set(att.getLse(), std::move(lse));
      continue;
    }
    if (auto grad = dyn_cast<AttentionGradOp>(op)) {
      AttentionGradResults r =
          attentionGrad(ev.get(grad.getQuery()), ev.get(grad.getKey()),
                        ev.get(grad.getValue()), ev.get(grad.getOutput()),
                        ev.get(grad.getOutputGrad()), ev.get(grad.getLse()),
                        grad.getMask() ? &ev.get(grad.getMask()) : nullptr,
                        grad.getEffectiveScale(), grad.getCausal());
      ev.set(grad.getQueryGrad(), std::move(r.query));
      ev.set(grad.getKeyGrad(), std::move(r.key));
      ev.set(grad.getValueGrad(), std::move(r.value));
      if (grad.getScoreGrad())
        ev.set(grad.getScoreGrad(), std::move(r.score));
      continue;
    }
    if (auto norm = dyn_cast<NormGradOp>(op)) {
      const Tensor *scale =
          norm.getScale() ? &ev.get(norm.getScale()) : nullptr;
      BatchNormGradResults r =
          normGrad(ev.get(norm.getOutputGrad()), ev.get(norm.getInput()), scale,
                   norm.getNormalizedRank(),
                   norm.getEpsilon().convertToDouble(), norm.getRms());
      ev.set(norm.getInputGrad(), std::move(r.input));
      ev.set(norm.getScaleGrad(), std::move(r.scale));
      ev.set(norm.getShiftGrad(), std::move(r.shift));
      continue;
    }
    if (auto split = dyn_cast<SplitOp>(op)) {
      const Tensor &x = ev.get(split.getInput());
      int64_t axis = split.getNormalizedAxis();
      std::vector<int64_t> offsets(x.rank(), 0);
      for (Value result : split.getResults()) {
        auto shape = cast<RankedTensorType>(result.getType()).getShape();
        ev.set(result, slice(x, offsets, {shape.begin(), shape.end()}));
        offsets[axis] += shape[axis];
      }
      continue;
    }
    if (auto kernel = dyn_cast<KernelOp>(op)) {
      Evaluator inner;
      Block &body = kernel.getBody().front();
      for (auto [arg, input] :
           llvm::zip_equal(body.getArguments(), kernel.getInputs()))
        inner.set(arg, ev.get(input));
      FailureOr<std::vector<Tensor>> results = evaluateBlock(inner, body);
      if (failed(results))
        return failure();
      for (auto [value, t] : llvm::zip_equal(kernel.getResults(), *results))
        ev.set(value, std::move(t));
      continue;
    }
    if (op.getNumResults() != 1 || op.getNumRegions() != 0)
      return op.emitOpError("is not supported by the reference interpreter");
    FailureOr<Tensor> result = ev.evaluate(&op);
    if (failed(result))
      return failure();
    ev.set(op.getResult(0), std::move(*result));
  }
  return block.getParentOp()->emitOpError("has no terminator");
}

double fusec::ref::hostMemoryBytes(func::FuncOp func) {
  // Sizes in doubles, saturating: shapes are verified below 2^63 bytes each,
  // but their sum may not be.
  double bytes = 0;
  auto add = [&](Type type) {
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      bytes += 8.0 * tensor.getNumElements();
  };
  for (Type type : func.getArgumentTypes())
    add(type);
  func.walk([&](Operation *op) {
    if (!isa<KernelOp>(op))
      llvm::for_each(op->getResultTypes(), add);
  });
  return bytes;
}

LogicalResult fusec::ref::checkHostMemory(func::FuncOp func) {
  double bytes = hostMemoryBytes(func);
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  double physical = pages > 0 && pageSize > 0 ? double(pages) * pageSize : 0;
  if (physical == 0 || bytes <= physical)
    return success();
  return func.emitOpError("needs ")
         << llvm::formatv("{0:e2}", bytes)
         << " bytes of host memory for the float64 reference interpreter "
            "(its arguments and op results), more than this machine's "
         << llvm::formatv("{0:e2}", physical) << " bytes";
}

FailureOr<std::vector<Tensor>> fusec::ref::evaluate(func::FuncOp func,
                                                    ArrayRef<Tensor> inputs,
                                                    bool roundResults) {
  if (func.isDeclaration())
    return func.emitOpError("is a declaration; a graph needs a body");
  if (failed(verifyGraph(func)) || failed(checkHostMemory(func)))
    return failure();
  Block &body = func.getBody().front();
  if (inputs.size() != body.getNumArguments())
    return func.emitOpError("takes ")
           << body.getNumArguments() << " arguments but " << inputs.size()
           << " inputs were given";
  Evaluator ev;
  for (auto [arg, input] : llvm::zip_equal(body.getArguments(), inputs))
    ev.set(arg, input);
  FailureOr<std::vector<Tensor>> results = evaluateBlock(ev, body);
  if (failed(results))
    return failure();
  if (!roundResults)
    return results;
  for (auto [t, type] : llvm::zip_equal(*results, func.getResultTypes()))
    t = castTo(t, *getDType(cast<RankedTensorType>(type).getElementType()));
  return results;
}

double fusec::ref::relativeError(llvm::ArrayRef<double> x,
                                 llvm::ArrayRef<double> reference) {
  double err = 0, norm = 0;
  for (auto [a, b] : llvm::zip_equal(x, reference)) {
    err += (a - b) * (a - b);
    norm += b * b;
  }
  return std::sqrt(err) / (norm > 0 ? std::sqrt(norm) : 1.0);
}

double fusec::ref::tolerance(DType dtype, bool tf32) {
  switch (dtype) {
  case DType::F16:
    return 5e-3;
  case DType::BF16:
    return 3e-2;
  case DType::F32:
    break;
  }
  return tf32 ? 5e-3 : 1e-4;
}
