//===- FuseGradients.cpp - Gradient rules of fuse ops ---------------------===//
//
// Each op's GradientOpInterface implementation: given the gradients of its
// results (GradientBuilder::gradient), it builds the gradients of the
// operands the pass asks for, in the backward function, from forward values
// it reads through GradientBuilder::forward (the pass saves or recomputes
// them). docs/Gradients.md lists the rules; test/gradcheck checks each one
// by finite differences.
//
//===----------------------------------------------------------------------===//

#include "Fuse/FuseOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::fuse;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Value mlir::fuse::sumToShape(OpBuilder &b, Location loc, Value grad,
                             RankedTensorType type) {
  auto gradType = cast<RankedTensorType>(grad.getType());
  if (gradType.getShape() == type.getShape())
    return grad;
  // NumPy aligns shapes on the right: the leading axes the operand lacks,
  // and its size-1 axes the result expanded, were broadcast.
  int64_t lead = gradType.getRank() - type.getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < gradType.getRank(); ++i)
    if (i < lead ||
        (type.getDimSize(i - lead) == 1 && gradType.getDimSize(i) != 1))
      axes.push_back(i);
  Value sum = grad;
  if (!axes.empty())
    sum = ReduceSumOp::create(b, loc, grad, b.getDenseI64ArrayAttr(axes))
              .getResult();
  auto shaped =
      RankedTensorType::get(type.getShape(), gradType.getElementType());
  if (sum.getType() != shaped)
    sum = ReshapeOp::create(b, loc, shaped, sum).getResult();
  return sum;
}

namespace {
/// Attributes of the ops a rule builds, by name.
struct Attrs {
  explicit Attrs(OpBuilder &b) : b(b) {}
  Attrs &add(StringRef name, Attribute value) {
    if (value)
      list.push_back(b.getNamedAttr(name, value));
    return *this;
  }
  Attrs &ints(StringRef name, ArrayRef<int64_t> value) {
    return add(name, b.getDenseI64ArrayAttr(value));
  }
  Attrs &flag(StringRef name, bool on) {
    return on ? add(name, b.getUnitAttr()) : *this;
  }
  OpBuilder &b;
  SmallVector<NamedAttribute> list;
};
} // namespace

/// Builds an `OpTy`, of result type `type` or the one it infers.
template <typename OpTy>
static Operation *make(GradientBuilder &gb, ValueRange operands,
                       const Attrs &attrs, Type type = {}) {
  if constexpr (OpTy::template hasTrait<InferTypeOpInterface::Trait>())
    if (!type)
      return OpTy::create(gb.builder(), gb.loc(), operands, attrs.list);
  return OpTy::create(gb.builder(), gb.loc(), TypeRange{type}, operands,
                      attrs.list);
}

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// `grad` summed over every axis but `axis`: the gradient of a vector
/// broadcast along the other axes (a bias, a per-channel scale).
static Value sumAllBut(GradientBuilder &gb, Value grad, int64_t axis) {
  int64_t rank = typeOf(grad).getRank();
  if (rank == 1)
    return grad;
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis)
      axes.push_back(i);
  return ReduceSumOp::create(gb.builder(), gb.loc(), grad,
                             gb.builder().getDenseI64ArrayAttr(axes))
      .getResult();
}

static Value neg(GradientBuilder &gb, Value v) {
  return NegOp::create(gb.builder(), gb.loc(), v).getResult();
}
static Value mul(GradientBuilder &gb, Value l, Value r) {
  return MulOp::create(gb.builder(), gb.loc(), l, r).getResult();
}
static Value div(GradientBuilder &gb, Value l, Value r) {
  return DivOp::create(gb.builder(), gb.loc(), l, r).getResult();
}

/// Accumulates `grad` into `operand` summed to its shape (broadcasting).
static void accumulateBroadcast(GradientBuilder &gb, Value operand,
                                Value grad) {
  gb.accumulate(operand,
                sumToShape(gb.builder(), gb.loc(), grad, typeOf(operand)));
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildGradient(GradientBuilder &gb) {
  Value dy = gb.gradient(getResult());
  for (Value v : {getLhs(), getRhs()})
    if (gb.wanted(v))
      accumulateBroadcast(gb, v, dy);
  return success();
}

LogicalResult SubOp::buildGradient(GradientBuilder &gb) {
  Value dy = gb.gradient(getResult());
  if (gb.wanted(getLhs()))
    accumulateBroadcast(gb, getLhs(), dy);
  if (gb.wanted(getRhs()))
    accumulateBroadcast(gb, getRhs(), neg(gb, dy));
  return success();
}

LogicalResult MulOp::buildGradient(GradientBuilder &gb) {
  Value dy = gb.gradient(getResult());
  if (gb.wanted(getLhs()))
    accumulateBroadcast(gb, getLhs(), mul(gb, dy, gb.forward(getRhs())));
  if (gb.wanted(getRhs()))
    accumulateBroadcast(gb, getRhs(), mul(gb, dy, gb.forward(getLhs())));
  return success();
}

LogicalResult DivOp::buildGradient(GradientBuilder &gb) {
  Value dy = gb.gradient(getResult());
  Value rhs = gb.forward(getRhs());
  if (gb.wanted(getLhs()))
    accumulateBroadcast(gb, getLhs(), div(gb, dy, rhs));
  // d(l / r)/dr = -(l / r) / r: the result, which the backward recomputes
  // from what it has.
  if (gb.wanted(getRhs()))
    accumulateBroadcast(
        gb, getRhs(),
        neg(gb, mul(gb, dy, div(gb, gb.forward(getResult()), rhs))));
  return success();
}

LogicalResult NegOp::buildGradient(GradientBuilder &gb) {
  gb.accumulate(getInput(), neg(gb, gb.gradient(getResult())));
  return success();
}

LogicalResult BiasAddOp::buildGradient(GradientBuilder &gb) {
  Value dy = gb.gradient(getResult());
  if (gb.wanted(getInput()))
    gb.accumulate(getInput(), dy);
  if (gb.wanted(getBias())) {
    int64_t rank = typeOf(dy).getRank();
    auto axis = static_cast<int64_t>(getAxis());
    axis = axis < 0 ? axis + rank : axis;
    gb.accumulate(getBias(), sumAllBut(gb, dy, axis));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Activations: fuse.activation_grad, from the result or the input as its
// table says
//===----------------------------------------------------------------------===//

static LogicalResult activationGradient(Operation *op, GradientBuilder &gb,
                                        Activation kind, bool fromResult,
                                        Attrs attrs) {
  Value dy = gb.gradient(op->getResult(0));
  Value value = gb.forward(fromResult ? op->getResult(0) : op->getOperand(0));
  attrs.add("activation", ActivationAttr::get(op->getContext(), kind));
  gb.accumulate(op->getOperand(0),
                make<ActivationGradOp>(gb, {dy, value}, attrs)->getResult(0));
  return success();
}

LogicalResult ReluOp::buildGradient(GradientBuilder &gb) {
  return activationGradient(*this, gb, Activation::Relu, true,
                            Attrs(gb.builder()));
}
LogicalResult Relu6Op::buildGradient(GradientBuilder &gb) {
  return activationGradient(*this, gb, Activation::Relu6, true,
                            Attrs(gb.builder()));
}
LogicalResult ClampOp::buildGradient(GradientBuilder &gb) {
  return activationGradient(
      *this, gb, Activation::Clamp, true,
      Attrs(gb.builder()).add("min", getMinAttr()).add("max", getMaxAttr()));
}
LogicalResult SigmoidOp::buildGradient(GradientBuilder &gb) {
  return activationGradient(*this, gb, Activation::Sigmoid, true,
                            Attrs(gb.builder()));
}
LogicalResult TanhOp::buildGradient(GradientBuilder &gb) {
  return activationGradient(*this, gb, Activation::Tanh, true,
                            Attrs(gb.builder()));
}
LogicalResult LeakyReluOp::buildGradient(GradientBuilder &gb) {
  return activationGradient(*this, gb, Activation::LeakyRelu, false,
                            Attrs(gb.builder()).add("alpha", getAlphaAttr()));
}
LogicalResult GeluOp::buildGradient(GradientBuilder &gb) {
  return activationGradient(*this, gb,
                            getApproximate() == GeluApproximation::Tanh
                                ? Activation::GeluTanh
                                : Activation::Gelu,
                            false, Attrs(gb.builder()));
}
LogicalResult SiluOp::buildGradient(GradientBuilder &gb) {
  return activationGradient(*this, gb, Activation::Silu, false,
                            Attrs(gb.builder()));
}
LogicalResult HardSwishOp::buildGradient(GradientBuilder &gb) {
  return activationGradient(*this, gb, Activation::HardSwish, false,
                            Attrs(gb.builder()));
}

//===----------------------------------------------------------------------===//
// Data movement and casts
//===----------------------------------------------------------------------===//

LogicalResult CastOp::buildGradient(GradientBuilder &gb) {
  gb.accumulate(getInput(),
                CastOp::create(gb.builder(), gb.loc(), getInput().getType(),
                               gb.gradient(getResult()))
                    .getResult());
  return success();
}

LogicalResult ReshapeOp::buildGradient(GradientBuilder &gb) {
  gb.accumulate(getInput(),
                ReshapeOp::create(gb.builder(), gb.loc(), getInput().getType(),
                                  gb.gradient(getResult()))
                    .getResult());
  return success();
}

LogicalResult TransposeOp::buildGradient(GradientBuilder &gb) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  gb.accumulate(
      getInput(),
      make<TransposeOp>(gb, gb.gradient(getResult()),
                        Attrs(gb.builder()).ints("permutation", inverse))
          ->getResult(0));
  return success();
}

LogicalResult SliceOp::buildGradient(GradientBuilder &gb) {
  gb.accumulate(
      getInput(),
      make<SliceGradOp>(gb, gb.gradient(getResult()),
                        Attrs(gb.builder()).ints("offsets", getOffsets()),
                        getInput().getType())
          ->getResult(0));
  return success();
}

LogicalResult ConcatOp::buildGradient(GradientBuilder &gb) {
  Value dy = gb.gradient(getResult());
  int64_t rank = typeOf(dy).getRank();
  auto axis = static_cast<int64_t>(getAxis());
  axis = axis < 0 ? axis + rank : axis;
  SmallVector<int64_t> offsets(rank, 0);
  for (Value input : getInputs()) {
    ArrayRef<int64_t> sizes = typeOf(input).getShape();
    if (gb.wanted(input))
      gb.accumulate(
          input,
          make<SliceOp>(
              gb, dy,
              Attrs(gb.builder()).ints("offsets", offsets).ints("sizes", sizes))
              ->getResult(0));
    offsets[axis] += sizes[axis];
  }
  return success();
}

LogicalResult SplitOp::buildGradient(GradientBuilder &gb) {
  int64_t axis = getNormalizedAxis();
  SmallVector<Value> grads;
  for (Value r : getResults())
    grads.push_back(gb.gradient(r));
  // Every piece has a gradient: they join back. Otherwise each one that has
  // is placed into zeros at its offset and the pieces are summed, which
  // needs no zero tensor.
  if (llvm::all_of(grads, [](Value g) { return g; })) {
    gb.accumulate(
        getInput(),
        make<ConcatOp>(gb, grads,
                       Attrs(gb.builder())
                           .add("axis", gb.builder().getI64IntegerAttr(axis)))
            ->getResult(0));
    return success();
  }
  SmallVector<int64_t> offsets(typeOf(getInput()).getRank(), 0);
  for (auto [r, g] : llvm::zip(getResults(), grads)) {
    if (g)
      gb.accumulate(
          getInput(),
          make<SliceGradOp>(gb, g, Attrs(gb.builder()).ints("offsets", offsets),
                            getInput().getType())
              ->getResult(0));
    offsets[axis] += typeOf(r).getDimSize(axis);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::buildGradient(GradientBuilder &gb) {
  // With A = op(lhs) [M, K], B = op(rhs) [K, N]: dA = dy B^T, dB = A^T dy.
  // The transposes are the products' flags; broadcast batch axes sum.
  Value dy = gb.gradient(getResult());
  bool tl = getTransposeLhs(), tr = getTransposeRhs();
  auto matmul = [&](Value l, Value r, bool tLhs, bool tRhs) {
    return make<MatmulOp>(gb, {l, r},
                          Attrs(gb.builder())
                              .flag("transpose_lhs", tLhs)
                              .flag("transpose_rhs", tRhs))
        ->getResult(0);
  };
  if (gb.wanted(getLhs())) {
    Value rhs = gb.forward(getRhs());
    // lhs is A, or A^T = B dy^T with transpose_lhs.
    Value g = tl ? matmul(rhs, dy, tr, true) : matmul(dy, rhs, false, !tr);
    accumulateBroadcast(gb, getLhs(), g);
  }
  if (gb.wanted(getRhs())) {
    Value lhs = gb.forward(getLhs());
    // rhs is B, or B^T = dy^T A with transpose_rhs.
    Value g = tr ? matmul(dy, lhs, true, tl) : matmul(lhs, dy, !tl, false);
    accumulateBroadcast(gb, getRhs(), g);
  }
  return success();
}

LogicalResult LinearOp::buildGradient(GradientBuilder &gb) {
  // y = x W^T + b over x [..., K], W [N, K].
  Value dy = gb.gradient(getResult());
  OpBuilder &b = gb.builder();
  if (gb.wanted(getInput()))
    gb.accumulate(getInput(),
                  make<MatmulOp>(gb, {dy, gb.forward(getWeight())}, Attrs(b))
                      ->getResult(0));
  if (gb.wanted(getWeight())) {
    // dW = dy^T x over the rows of every leading axis, as 2-D matrices.
    auto rows = [&](Value v) -> Value {
      RankedTensorType type = typeOf(v);
      int64_t n = type.getDimSize(type.getRank() - 1);
      auto flat = RankedTensorType::get({type.getNumElements() / n, n},
                                        type.getElementType());
      return flat == type ? v
                          : ReshapeOp::create(b, gb.loc(), flat, v).getResult();
    };
    gb.accumulate(getWeight(),
                  make<MatmulOp>(gb, {rows(dy), rows(gb.forward(getInput()))},
                                 Attrs(b).flag("transpose_lhs", true))
                      ->getResult(0));
  }
  if (getBias() && gb.wanted(getBias()))
    gb.accumulate(getBias(), sumAllBut(gb, dy, typeOf(dy).getRank() - 1));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

/// The attributes a convolution shares with its gradients.
template <typename ConvOp> static Attrs convAttrs(ConvOp op, OpBuilder &b) {
  Attrs attrs(b);
  attrs.ints("strides", op.getStrides())
      .ints("padding", op.getPadding())
      .ints("dilation", op.getDilation())
      .add("groups", op.getGroupsAttr())
      .add("layout", op.getLayoutAttr());
  return attrs;
}

/// The filter's [Kh, Kw] in `layout` (OHWI / IHWO for nhwc, OIHW / IOHW for
/// nchw).
static SmallVector<int64_t> kernelOf(Value filter, Layout layout) {
  ArrayRef<int64_t> shape = typeOf(filter).getShape();
  return layout == Layout::NHWC ? SmallVector<int64_t>{shape[1], shape[2]}
                                : SmallVector<int64_t>{shape[2], shape[3]};
}

/// The spatial axes [H, W] of an activation in `layout`.
static std::array<int64_t, 2> spatialAxes(Layout layout) {
  return layout == Layout::NHWC ? std::array<int64_t, 2>{1, 2}
                                : std::array<int64_t, 2>{2, 3};
}

LogicalResult Conv2dOp::buildGradient(GradientBuilder &gb) {
  Value dy = gb.gradient(getResult());
  OpBuilder &b = gb.builder();
  Layout layout = getLayout();
  SmallVector<int64_t> kernel = kernelOf(getFilter(), layout);
  if (gb.wanted(getInput())) {
    // The data gradient is the transposed convolution with the filter as
    // is; output_padding restores the rows and columns a strided
    // convolution's floor dropped, so the shape is the input's exactly.
    std::array<int64_t, 4> pads = getPads();
    ArrayRef<int64_t> strides = getStrides(), dilation = getDilation();
    auto in = typeOf(getInput()).getShape();
    auto out = typeOf(dy).getShape();
    SmallVector<int64_t> outputPadding;
    for (auto [i, axis] : llvm::enumerate(spatialAxes(layout)))
      outputPadding.push_back(in[axis] - ((out[axis] - 1) * strides[i] -
                                          pads[2 * i] - pads[2 * i + 1] +
                                          dilation[i] * (kernel[i] - 1) + 1));
    Attrs attrs = convAttrs(*this, b);
    if (llvm::any_of(outputPadding, [](int64_t p) { return p != 0; }))
      attrs.ints("output_padding", outputPadding);
    gb.accumulate(getInput(), make<ConvTranspose2dOp>(
                                  gb, {dy, gb.forward(getFilter())}, attrs)
                                  ->getResult(0));
  }
  if (gb.wanted(getFilter()))
    gb.accumulate(getFilter(), make<Conv2dFilterGradOp>(
                                   gb, {gb.forward(getInput()), dy},
                                   convAttrs(*this, b).ints("kernel", kernel))
                                   ->getResult(0));
  if (getBias() && gb.wanted(getBias()))
    gb.accumulate(getBias(),
                  sumAllBut(gb, dy, channelAxis(layout, typeOf(dy).getRank())));
  return success();
}

LogicalResult ConvTranspose2dOp::buildGradient(GradientBuilder &gb) {
  // y = C_w^T x, the adjoint of the convolution C_w with the same filter:
  // dx = C_w dy, and dw pairs dy (the convolution's input) with x (its
  // output's gradient).
  Value dy = gb.gradient(getResult());
  OpBuilder &b = gb.builder();
  Layout layout = getLayout();
  if (gb.wanted(getInput())) {
    Operation *dx =
        make<Conv2dOp>(gb, {dy, gb.forward(getFilter())}, convAttrs(*this, b));
    if (dx->getResult(0).getType() != getInput().getType())
      return emitError() << "fusec-autodiff: no gradient rule for an "
                            "output_padding not below the stride";
    gb.accumulate(getInput(), dx->getResult(0));
  }
  if (gb.wanted(getFilter()))
    gb.accumulate(getFilter(), make<Conv2dFilterGradOp>(
                                   gb, {dy, gb.forward(getInput())},
                                   convAttrs(*this, b).ints(
                                       "kernel", kernelOf(getFilter(), layout)))
                                   ->getResult(0));
  if (getBias() && gb.wanted(getBias()))
    gb.accumulate(getBias(),
                  sumAllBut(gb, dy, channelAxis(layout, typeOf(dy).getRank())));
  return success();
}

//===----------------------------------------------------------------------===//
// Batch norm
//===----------------------------------------------------------------------===//

/// Accumulates the three gradients of a fuse.batch_norm_grad.
static void accumulateBatchNorm(GradientBuilder &gb, Operation *grad,
                                Value input, Value scale, Value shift) {
  Value operands[] = {input, scale, shift};
  for (auto [operand, g] : llvm::zip(operands, grad->getResults()))
    if (gb.wanted(operand))
      gb.accumulate(operand, g);
}

bool BatchNormOp::isDifferentiableOperand(unsigned index) {
  // The running statistics are buffers.
  return index != 1 && index != 2;
}

LogicalResult BatchNormOp::buildGradient(GradientBuilder &gb) {
  // The evaluation form of batch_norm_grad: constant statistics.
  Operation *grad = make<BatchNormGradOp>(
      gb,
      {gb.gradient(getResult()), gb.forward(getInput()), gb.forward(getMean()),
       gb.forward(getVariance()), gb.forward(getScale())},
      Attrs(gb.builder())
          .add("epsilon", getEpsilonAttr())
          .add("layout", getLayoutAttr()));
  accumulateBatchNorm(gb, grad, getInput(), getScale(), getShift());
  return success();
}

bool BatchNormTrainOp::isDifferentiableResult(unsigned index) {
  // The saved and running statistics carry no gradient.
  return index == 0;
}

bool BatchNormTrainOp::isDifferentiableOperand(unsigned index) {
  // input, scale and shift; not the running statistics nor the count.
  return index == 0 || index == 3 || index == 4;
}

LogicalResult BatchNormTrainOp::buildGradient(GradientBuilder &gb) {
  Operation *grad = make<BatchNormGradOp>(
      gb,
      {gb.gradient(getResult()), gb.forward(getInput()),
       gb.forward(getSavedMean()), gb.forward(getSavedInvstd()),
       gb.forward(getScale())},
      Attrs(gb.builder()).add("layout", getLayoutAttr()));
  accumulateBatchNorm(gb, grad, getInput(), getScale(), getShift());
  return success();
}

/// fuse.norm_grad for a layer or RMS norm: the input's gradient and the
/// affine parameters' (the row statistics recomputed from the input).
static void buildNormGradient(GradientBuilder &gb, Operation *op, Value input,
                              Value scale, Value shift, int64_t normRank,
                              FloatAttr epsilon, bool rms) {
  SmallVector<Value> operands = {gb.gradient(op->getResult(0)),
                                 gb.forward(input)};
  if (scale)
    operands.push_back(gb.forward(scale));
  Operation *grad = make<NormGradOp>(
      gb, operands,
      Attrs(gb.builder())
          .add("normalized_rank", gb.builder().getI64IntegerAttr(normRank))
          .add("epsilon", epsilon)
          .flag("rms", rms));
  if (gb.wanted(input))
    gb.accumulate(input, grad->getResult(0));
  if (scale && gb.wanted(scale))
    gb.accumulate(scale, grad->getResult(1));
  if (shift && gb.wanted(shift))
    gb.accumulate(shift, grad->getResult(2));
}

LogicalResult LayerNormOp::buildGradient(GradientBuilder &gb) {
  buildNormGradient(gb, *this, getInput(), getScale(), getShift(),
                    getNormalizedRank(), getEpsilonAttr(), /*rms=*/false);
  return success();
}

LogicalResult RmsNormOp::buildGradient(GradientBuilder &gb) {
  buildNormGradient(gb, *this, getInput(), getScale(), Value(),
                    getNormalizedRank(), getEpsilonAttr(), /*rms=*/true);
  return success();
}

/// dx = y * (dy - sum(dy * y)) along the axis, from the forward's result.
LogicalResult SoftmaxOp::buildGradient(GradientBuilder &gb) {
  OpBuilder &b = gb.builder();
  Value y = gb.forward(getResult()), dy = gb.gradient(getResult());
  int64_t rank = typeOf(y).getRank(), axis = getAxis();
  if (axis < 0)
    axis += rank;
  Value dot =
      make<ReduceSumOp>(gb, {mul(gb, dy, y)},
                        Attrs(b).ints("axes", {axis}).flag("keep_dims", true))
          ->getResult(0);
  Value diff = SubOp::create(b, gb.loc(), dy, dot).getResult();
  gb.accumulate(getInput(), mul(gb, y, diff));
  return success();
}

/// The log-sum-exp result is a statistic. The mask's gradient is that of
/// the scores (attention_grad's score_grad) summed to its shape.
bool AttentionOp::isDifferentiableResult(unsigned index) { return index == 0; }
bool AttentionOp::isDifferentiableOperand(unsigned) { return true; }

/// The backward reads the row log-sum-exp instead of recomputing the
/// scores' statistics: the forward returns it.
Operation *AttentionOp::prepareForGradient() {
  if (getReturnLse())
    return *this;
  OpBuilder b(*this);
  NamedAttrList attrs((*this)->getAttrs());
  attrs.set(getReturnLseAttrName(), b.getUnitAttr());
  auto withLse =
      AttentionOp::create(b, getLoc(), getOperands(), attrs.getAttrs());
  getResult().replaceAllUsesWith(withLse.getResult());
  erase();
  return withLse;
}

LogicalResult AttentionOp::buildGradient(GradientBuilder &gb) {
  if (!getLse())
    return emitOpError("has no log-sum-exp result to differentiate with "
                       "(prepareForGradient adds it)");
  SmallVector<Value> operands = {
      gb.forward(getQuery()),  gb.forward(getKey()),     gb.forward(getValue()),
      gb.forward(getResult()), gb.gradient(getResult()), gb.forward(getLse())};
  Value mask = getMask();
  bool maskGrad = mask && gb.wanted(mask);
  if (mask)
    operands.push_back(gb.forward(mask));
  Operation *grad =
      make<AttentionGradOp>(gb, operands,
                            Attrs(gb.builder())
                                .add("scale", getScaleAttr())
                                .flag("causal", getCausal())
                                .flag("deterministic", gb.deterministic())
                                .flag("return_score_grad", maskGrad));
  Value inputs[] = {getQuery(), getKey(), getValue()};
  for (auto [operand, result] : llvm::zip(inputs, grad->getResults()))
    if (gb.wanted(operand))
      gb.accumulate(operand, result);
  if (maskGrad) {
    // dS is stored whole before its sum: say what that costs.
    auto scores = typeOf(grad->getResult(3));
    int64_t bytes =
        scores.getNumElements() * scores.getElementTypeBitWidth() / 8;
    emitRemark() << "the mask's gradient stores the scores' gradient " << scores
                 << " (" << bytes
                 << " bytes) before summing it to the mask's shape";
    accumulateBroadcast(gb, mask, grad->getResult(3));
  }
  return success();
}

/// The rotation's adjoint is the rotation by minus the angle: the same
/// tables with the sines negated. The tables are constants of the
/// positions: they carry no gradient.
bool RopeOp::isDifferentiableOperand(unsigned index) { return index == 0; }

LogicalResult RopeOp::buildGradient(GradientBuilder &gb) {
  Value sin = neg(gb, gb.forward(getSin()));
  gb.accumulate(
      getInput(),
      make<RopeOp>(gb, {gb.gradient(getResult()), gb.forward(getCos()), sin},
                   Attrs(gb.builder()).flag("interleaved", getInterleaved()))
          ->getResult(0));
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling and resampling
//===----------------------------------------------------------------------===//

LogicalResult MaxPool2dOp::buildGradient(GradientBuilder &gb) {
  gb.accumulate(getInput(),
                make<MaxPool2dGradOp>(
                    gb, {gb.forward(getInput()), gb.gradient(getResult())},
                    Attrs(gb.builder())
                        .add("kernel", getKernelAttr())
                        .add("strides", getStridesAttr())
                        .add("padding", getPaddingAttr())
                        .add("layout", getLayoutAttr()))
                    ->getResult(0));
  return success();
}

LogicalResult AvgPool2dOp::buildGradient(GradientBuilder &gb) {
  gb.accumulate(getInput(),
                make<AvgPool2dGradOp>(
                    gb, gb.gradient(getResult()),
                    Attrs(gb.builder())
                        .add("kernel", getKernelAttr())
                        .add("strides", getStridesAttr())
                        .add("padding", getPaddingAttr())
                        .add("count_include_pad", getCountIncludePadAttr())
                        .add("layout", getLayoutAttr()),
                    getInput().getType())
                    ->getResult(0));
  return success();
}

LogicalResult GlobalAvgPoolOp::buildGradient(GradientBuilder &gb) {
  // An average pooling whose window is the whole image.
  auto shape = typeOf(getInput()).getShape();
  auto [h, w] = spatialAxes(getLayout());
  gb.accumulate(getInput(),
                make<AvgPool2dGradOp>(
                    gb, gb.gradient(getResult()),
                    Attrs(gb.builder())
                        .ints("kernel", ArrayRef<int64_t>{shape[h], shape[w]})
                        .add("layout", getLayoutAttr()),
                    getInput().getType())
                    ->getResult(0));
  return success();
}

LogicalResult UpsampleOp::buildGradient(GradientBuilder &gb) {
  gb.accumulate(getInput(), make<UpsampleGradOp>(
                                gb, gb.gradient(getResult()),
                                Attrs(gb.builder())
                                    .add("mode", getModeAttr())
                                    .add("size", getSizeAttr())
                                    .add("scale", getScaleAttr())
                                    .flag("align_corners", getAlignCorners())
                                    .add("layout", getLayoutAttr()),
                                getInput().getType())
                                ->getResult(0));
  return success();
}
