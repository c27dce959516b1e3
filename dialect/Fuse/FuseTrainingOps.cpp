//===- FuseTrainingOps.cpp - Shape inference of the training ops ----------===//
//
// As FuseOps.cpp: inferReturnTypes checks the operands with located
// messages. Ops whose result shape does not follow from their operands (the
// adjoints of pooling, resampling and slicing) write it out, and their
// verifiers run the forward op's inference on it to check that the forward
// maps it onto the gradient's shape.
//
//===----------------------------------------------------------------------===//

#include "Checker.h"
#include "Fuse/FuseOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::fuse;
using namespace mlir::fuse::detail;

static StringRef activationDims(bool nhwc) {
  return nhwc ? " [N, H, W, C] for layout nhwc" : " [N, C, H, W] for layout nchw";
}

//===----------------------------------------------------------------------===//
// Batch norm
//===----------------------------------------------------------------------===//

/// Checks `input` (rank 2 or more) and the per-channel `vectors`, which have
/// one element type, f32 or the input's, and shape [C]. Returns the input.
static FailureOr<RankedTensorType>
checkBatchNorm(Checker &c, Value input, Layout layout,
               ArrayRef<std::pair<Value, StringRef>> vectors) {
  auto in = c.tensor(input, "input");
  if (failed(in))
    return failure();
  if (in->getRank() < 2) {
    (void)c.fail("operand 'input' must have rank 2 or more, found rank ",
                 in->getRank());
    return failure();
  }
  int64_t axis = channelAxis(layout, in->getRank());
  std::string why = "channels are axis " + std::to_string(axis) +
                    " for layout " + layoutName(layout);
  Type paramType;
  for (auto [value, name] : vectors) {
    auto t = c.tensor(value, name);
    if (failed(t) ||
        failed(c.hasShape(*t, name, {in->getDimSize(axis)}, why)))
      return failure();
    Type e = t->getElementType();
    if (!e.isF32() && e != in->getElementType()) {
      (void)c.fail("operand '", name, "' has element type ", e,
                   "; per-channel operands are f32 or the input's type (",
                   in->getElementType(), ")");
      return failure();
    }
    if (paramType && e != paramType) {
      (void)c.fail("operand '", name, "' has element type ", e, " but '",
                   vectors.front().second, "' has ", paramType,
                   "; per-channel operands share one type");
      return failure();
    }
    paramType = e;
  }
  return in;
}

LogicalResult BatchNormTrainOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<BatchNormTrainOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  auto in = checkBatchNorm(c, adaptor.getInput(), adaptor.getLayout(),
                           {{adaptor.getRunningMean(), "running_mean"},
                            {adaptor.getRunningVar(), "running_var"},
                            {adaptor.getScale(), "scale"},
                            {adaptor.getShift(), "shift"}});
  if (failed(in))
    return failure();
  if (adaptor.getEpsilon().convertToDouble() < 0)
    return c.fail("attribute 'epsilon' must be non-negative, found ",
                  adaptor.getEpsilon().convertToDouble());
  double momentum = adaptor.getMomentum().convertToDouble();
  if (momentum < 0 || momentum > 1)
    return c.fail("attribute 'momentum' must be in [0, 1], found ", momentum);
  auto param = cast<RankedTensorType>(adaptor.getScale().getType());
  if (Value tracked = adaptor.getBatchesTracked()) {
    if (!adaptor.getCumulative())
      return c.fail("operand 'batches_tracked' is only read with "
                    "'cumulative' (a cumulative moving average)");
    auto t = c.tensor(tracked, "batches_tracked");
    if (failed(t) ||
        failed(c.hasShape(*t, "batches_tracked", {1}, "one count")) ||
        failed(c.sameElementType(param, "scale", *t, "batches_tracked")))
      return failure();
  } else if (adaptor.getCumulative()) {
    return c.fail("'cumulative' needs the operand 'batches_tracked' (the "
                  "number of batches seen, this one included)");
  }
  int64_t axis = channelAxis(adaptor.getLayout(), in->getRank());
  int64_t perChannel = in->getNumElements() / in->getDimSize(axis);
  if (perChannel < 2)
    return c.fail("input ", shapeStr(in->getShape()),
                  " has 1 value per channel; batch statistics need 2 or "
                  "more (the unbiased variance divides by M - 1)");
  results.push_back(*in);
  results.append(4, param);
  return success();
}

LogicalResult BatchNormGradOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<BatchNormGradOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  auto in = checkBatchNorm(c, adaptor.getInput(), adaptor.getLayout(),
                           {{adaptor.getMean(), "mean"},
                            {adaptor.getInvstd(), "invstd"},
                            {adaptor.getScale(), "scale"}});
  if (failed(in))
    return failure();
  auto dy = c.tensor(adaptor.getOutputGrad(), "output_grad");
  if (failed(dy) ||
      failed(c.sameElementType(*in, "input", *dy, "output_grad")) ||
      failed(c.hasShape(*dy, "output_grad", in->getShape(),
                        "the input's shape")))
    return failure();
  if (auto eps = adaptor.getEpsilon(); eps && eps->convertToDouble() < 0)
    return c.fail("attribute 'epsilon' must be non-negative, found ",
                  eps->convertToDouble());
  auto param = cast<RankedTensorType>(adaptor.getScale().getType());
  results.push_back(*in);
  results.append(2, param);
  return success();
}

int64_t NormGradOp::getRowLength() {
  ArrayRef<int64_t> shape = getInput().getType().getShape();
  int64_t length = 1;
  for (int64_t size : shape.take_back(getNormalizedRank()))
    length *= size;
  return length;
}

LogicalResult NormGradOp::inferReturnTypes(MLIRContext *ctx,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<NormGradOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  auto in = c.tensor(adaptor.getInput(), "input");
  auto dy = c.tensor(adaptor.getOutputGrad(), "output_grad");
  if (failed(in) || failed(dy) ||
      failed(c.sameElementType(*in, "input", *dy, "output_grad")) ||
      failed(
          c.hasShape(*dy, "output_grad", in->getShape(), "the input's shape")))
    return failure();
  int64_t normRank = adaptor.getNormalizedRank();
  if (normRank < 1 || normRank > in->getRank())
    return c.fail("attribute 'normalized_rank' = ", normRank,
                  " must be between 1 and the input rank (", in->getRank(),
                  ")");
  if (adaptor.getEpsilon().convertToDouble() < 0)
    return c.fail("attribute 'epsilon' must be non-negative, found ",
                  adaptor.getEpsilon().convertToDouble());
  ArrayRef<int64_t> trailing = in->getShape().take_back(normRank);
  if (Value scale = adaptor.getScale()) {
    auto t = c.tensor(scale, "scale");
    if (failed(t) || failed(c.sameElementType(*in, "input", *t, "scale")) ||
        failed(
            c.hasShape(*t, "scale", trailing, "the normalised trailing axes")))
      return failure();
  }
  auto param = RankedTensorType::get(trailing, in->getElementType());
  results.push_back(*in);
  results.append(2, param);
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution gradients
//===----------------------------------------------------------------------===//

/// The window attributes a convolution and its gradients share.
static LogicalResult checkWindow(Checker &c, ArrayRef<int64_t> strides,
                                 ArrayRef<int64_t> dilation,
                                 ArrayRef<int64_t> padding, int64_t groups) {
  if (failed(c.positivePair(strides, "strides")) ||
      failed(c.positivePair(dilation, "dilation")) ||
      failed(c.padding(padding)))
    return failure();
  if (groups < 1)
    return c.fail("attribute 'groups' must be positive, found ", groups);
  return success();
}

LogicalResult ConvTranspose2dOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<ConvTranspose2dOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  bool nhwc = adaptor.getLayout() == Layout::NHWC;
  auto in = c.tensorOfRank(adaptor.getInput(), "input", 4,
                           activationDims(nhwc));
  if (failed(in))
    return failure();
  auto filter = c.tensorOfRank(
      adaptor.getFilter(), "filter", 4,
      nhwc ? " [Ci, Kh, Kw, Co/groups] for layout nhwc"
           : " [Ci, Co/groups, Kh, Kw] for layout nchw");
  if (failed(filter) ||
      failed(c.sameElementType(*in, "input", *filter, "filter")))
    return failure();
  ArrayRef<int64_t> s = adaptor.getStrides(), d = adaptor.getDilation(),
                    op = adaptor.getOutputPadding();
  int64_t groups = adaptor.getGroups();
  if (failed(checkWindow(c, s, d, adaptor.getPadding(), groups)))
    return failure();
  if (op.size() != 2 || op[0] < 0 || op[1] < 0)
    return c.fail("attribute 'output_padding' must be 2 non-negative "
                  "values, found ",
                  shapeStr(op));
  for (int i = 0; i < 2; ++i)
    if (op[i] >= std::max(s[i], d[i]))
      return c.fail("attribute 'output_padding' ", shapeStr(op),
                    " must be smaller than the stride or the dilation (",
                    shapeStr(s), ", ", shapeStr(d), ")");

  ArrayRef<int64_t> x = in->getShape(), w = filter->getShape();
  int64_t n = x[0], ci = nhwc ? x[3] : x[1], h = nhwc ? x[1] : x[2],
          wd = nhwc ? x[2] : x[3];
  int64_t fci = w[0], kh = nhwc ? w[1] : w[2], kw = nhwc ? w[2] : w[3],
          cog = nhwc ? w[3] : w[1];
  if (fci != ci)
    return c.fail("operand 'filter' ", shapeStr(w), " has ", fci,
                  " input channels (dimension 0) but the input has ", ci);
  if (ci % groups != 0)
    return c.fail("input channels (", ci, ") are not divisible by groups (",
                  groups, ")");
  int64_t co = cog * groups;
  if (Value bias = adaptor.getBias()) {
    auto b = c.tensor(bias, "bias");
    if (failed(b) || failed(c.sameElementType(*in, "input", *b, "bias")) ||
        failed(c.hasShape(*b, "bias", {co}, "one value per output channel")))
      return failure();
  }
  std::array<int64_t, 4> pads = expandPadding(adaptor.getPadding());
  auto extent = [&](int64_t in, int64_t stride, int64_t dil, int64_t k,
                    int64_t lo, int64_t hi, int64_t extra) {
    // Small enough operands (checked by shapeProblem) keep this in int64
    // but for absurd attributes; those are refused below.
    __int128 e = (__int128)(in - 1) * stride - lo - hi +
                 (__int128)dil * (k - 1) + extra + 1;
    return e;
  };
  __int128 ho = extent(h, s[0], d[0], kh, pads[0], pads[1], op[0]);
  __int128 wo = extent(wd, s[1], d[1], kw, pads[2], pads[3], op[1]);
  if (ho < 1 || wo < 1)
    return c.fail("the output would be empty (", (int64_t)ho, " x ",
                  (int64_t)wo, "): the padding exceeds the dilated kernel");
  if (ho > INT64_MAX / 2 || wo > INT64_MAX / 2)
    return c.fail("the output extent overflows int64");
  if (nhwc)
    setResult(results, {n, (int64_t)ho, (int64_t)wo, co},
              in->getElementType());
  else
    setResult(results, {n, co, (int64_t)ho, (int64_t)wo},
              in->getElementType());
  return success();
}

LogicalResult Conv2dFilterGradOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<Conv2dFilterGradOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  bool nhwc = adaptor.getLayout() == Layout::NHWC;
  auto in = c.tensorOfRank(adaptor.getInput(), "input", 4,
                           activationDims(nhwc));
  if (failed(in))
    return failure();
  auto dy = c.tensorOfRank(adaptor.getOutputGrad(), "output_grad", 4,
                           activationDims(nhwc));
  if (failed(dy) ||
      failed(c.sameElementType(*in, "input", *dy, "output_grad")))
    return failure();
  if (!adaptor.getKernelAttr())
    return c.fail("requires attribute 'kernel'");
  if (failed(c.positivePair(adaptor.getKernel(), "kernel")))
    return failure();
  int64_t groups = adaptor.getGroups();
  if (failed(checkWindow(c, adaptor.getStrides(), adaptor.getDilation(),
                         adaptor.getPadding(), groups)))
    return failure();
  ArrayRef<int64_t> x = in->getShape(), g = dy->getShape();
  int64_t ci = nhwc ? x[3] : x[1], co = nhwc ? g[3] : g[1];
  if (ci % groups != 0 || co % groups != 0)
    return c.fail("channels (input ", ci, ", output_grad ", co,
                  ") are not divisible by groups (", groups, ")");
  ArrayRef<int64_t> k = adaptor.getKernel();
  SmallVector<int64_t> filter =
      nhwc ? SmallVector<int64_t>{co, k[0], k[1], ci / groups}
           : SmallVector<int64_t>{co, ci / groups, k[0], k[1]};
  // The forward convolution this is the gradient of must map the input
  // onto output_grad.
  auto filterType = RankedTensorType::get(filter, in->getElementType());
  std::array<int64_t, 4> pads = expandPadding(adaptor.getPadding());
  ArrayRef<int64_t> s = adaptor.getStrides(), d = adaptor.getDilation();
  int64_t h = nhwc ? x[1] : x[2], w = nhwc ? x[2] : x[3];
  auto ho = windowOutput(c, h, pads[0], pads[1], d[0] * (k[0] - 1) + 1, s[0],
                         "dilated kernel height:");
  if (failed(ho))
    return failure();
  auto wo = windowOutput(c, w, pads[2], pads[3], d[1] * (k[1] - 1) + 1, s[1],
                         "dilated kernel width:");
  if (failed(wo))
    return failure();
  SmallVector<int64_t> expected =
      nhwc ? SmallVector<int64_t>{x[0], *ho, *wo, co}
           : SmallVector<int64_t>{x[0], co, *ho, *wo};
  if (failed(c.hasShape(*dy, "output_grad", expected,
                        "the convolution's output for this input, kernel "
                        "and window")))
    return failure();
  results.push_back(filterType);
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and elementwise derivatives
//===----------------------------------------------------------------------===//

/// The reduced axes of `axes` for `rank`, or an error.
static FailureOr<llvm::SmallBitVector>
reducedAxes(Checker &c, ArrayRef<int64_t> axes, int64_t rank) {
  llvm::SmallBitVector reduced(rank);
  for (int64_t a : axes) {
    auto axis = c.axis(a, rank, "axes");
    if (failed(axis))
      return failure();
    if (reduced.test(*axis)) {
      (void)c.fail("attribute 'axes' ", shapeStr(axes), " names axis ",
                   *axis, " twice");
      return failure();
    }
    reduced.set(*axis);
  }
  return reduced;
}

LogicalResult ReduceSumOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<ReduceSumOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  auto in = c.tensor(adaptor.getInput(), "input");
  if (failed(in))
    return failure();
  if (adaptor.getAxes().empty())
    return c.fail("attribute 'axes' must name at least one axis");
  auto reduced = reducedAxes(c, adaptor.getAxes(), in->getRank());
  if (failed(reduced))
    return failure();
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(in->getShape())) {
    if (!reduced->test(i))
      shape.push_back(d);
    else if (adaptor.getKeepDims())
      shape.push_back(1);
  }
  setResult(results, shape, in->getElementType());
  return success();
}

bool ReduceSumOp::isReduced(int64_t axis) {
  int64_t rank = getInput().getType().getRank();
  return llvm::any_of(getAxes(), [&](int64_t a) {
    return (a < 0 ? a + rank : a) == axis;
  });
}

LogicalResult ActivationGradOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<ActivationGradOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  auto dy = c.tensor(adaptor.getOutputGrad(), "output_grad");
  auto v = c.tensor(adaptor.getValue(), "value");
  if (failed(dy) || failed(v))
    return failure();
  if (*dy != *v)
    return c.fail("operands 'output_grad' (", Type(*dy), ") and 'value' (",
                  Type(*v), ") must have one type");
  bool isClamp = adaptor.getActivation() == Activation::Clamp;
  if (isClamp != (adaptor.getMin() && adaptor.getMax()) ||
      (!isClamp && (adaptor.getMin() || adaptor.getMax())))
    return c.fail("attributes 'min' and 'max' are ",
                  isClamp ? "required by" : "only valid with",
                  " activation clamp");
  if (isClamp &&
      adaptor.getMin()->convertToDouble() > adaptor.getMax()->convertToDouble())
    return c.fail("attribute 'min' (", adaptor.getMin()->convertToDouble(),
                  ") exceeds 'max' (", adaptor.getMax()->convertToDouble(),
                  ")");
  results.push_back(*dy);
  return success();
}

//===----------------------------------------------------------------------===//
// Adjoints of pooling, resampling and slicing
//===----------------------------------------------------------------------===//

/// Fails with `op`'s error unless `forward` (the shapes the forward op
/// infers for the gradient's result type) is `grad`'s shape.
static LogicalResult checkForwardShape(Operation *op,
                                       ArrayRef<Type> forward,
                                       RankedTensorType grad,
                                       StringRef forwardName) {
  auto out = cast<RankedTensorType>(forward.front());
  if (out.getShape() == grad.getShape())
    return success();
  return op->emitOpError("operand 'output_grad' has shape ")
         << shapeStr(grad.getShape()) << " but " << forwardName
         << " of the result type " << op->getResult(0).getType()
         << " gives " << shapeStr(out.getShape());
}

LogicalResult MaxPool2dGradOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<MaxPool2dGradOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  // The forward's own inference checks the input and the window.
  SmallVector<Type> forward;
  MaxPool2dOp::Properties props;
  props.kernel = adaptor.getKernelAttr();
  props.strides = adaptor.getStridesAttr();
  props.padding = adaptor.getPaddingAttr();
  props.layout = adaptor.getLayoutAttr();
  MaxPool2dOp::Adaptor pool(ValueRange{adaptor.getInput()}, nullptr, props);
  if (failed(MaxPool2dOp::inferReturnTypes(ctx, loc, pool, forward)))
    return failure();
  auto dy = c.tensor(adaptor.getOutputGrad(), "output_grad");
  if (failed(dy))
    return failure();
  auto out = cast<RankedTensorType>(forward.front());
  if (failed(c.hasShape(*dy, "output_grad", out.getShape(),
                        "the pooled input's shape")) ||
      failed(c.sameElementType(out, "input", *dy, "output_grad")))
    return failure();
  results.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult AvgPool2dGradOp::verify() {
  auto dy = getOutputGrad().getType();
  RankedTensorType x = getResult().getType();
  if (dy.getElementType() != x.getElementType())
    return emitOpError("result element type ")
           << x.getElementType() << " differs from 'output_grad''s "
           << dy.getElementType();
  // The forward pool of a tensor shaped like the result.
  OpBuilder b(getContext());
  auto placeholder =
      b.create<UnrealizedConversionCastOp>(getLoc(), TypeRange{x}, ValueRange{});
  AvgPool2dOp::Properties props;
  props.kernel = getKernelAttr();
  props.strides = getStridesAttr();
  props.padding = getPaddingAttr();
  props.count_include_pad = getCountIncludePadAttr();
  props.layout = getLayoutAttr();
  AvgPool2dOp::Adaptor pool(placeholder.getResults(), nullptr, props);
  SmallVector<Type> forward;
  LogicalResult inferred =
      AvgPool2dOp::inferReturnTypes(getContext(), getLoc(), pool, forward);
  placeholder.erase();
  if (failed(inferred))
    return failure();
  return checkForwardShape(*this, forward, dy, "fuse.avg_pool2d");
}

LogicalResult UpsampleGradOp::verify() {
  auto dy = getOutputGrad().getType();
  RankedTensorType x = getResult().getType();
  if (dy.getElementType() != x.getElementType())
    return emitOpError("result element type ")
           << x.getElementType() << " differs from 'output_grad''s "
           << dy.getElementType();
  OpBuilder b(getContext());
  auto placeholder =
      b.create<UnrealizedConversionCastOp>(getLoc(), TypeRange{x}, ValueRange{});
  UpsampleOp::Properties props;
  props.mode = getModeAttr();
  props.size = getSizeAttr();
  props.scale = getScaleAttr();
  props.align_corners = getAlignCornersAttr();
  props.layout = getLayoutAttr();
  UpsampleOp::Adaptor up(placeholder.getResults(), nullptr, props);
  SmallVector<Type> forward;
  LogicalResult inferred =
      UpsampleOp::inferReturnTypes(getContext(), getLoc(), up, forward);
  placeholder.erase();
  if (failed(inferred))
    return failure();
  return checkForwardShape(*this, forward, dy, "fuse.upsample");
}

LogicalResult SliceGradOp::verify() {
  auto dy = getOutputGrad().getType();
  RankedTensorType x = getResult().getType();
  if (dy.getElementType() != x.getElementType())
    return emitOpError("result element type ")
           << x.getElementType() << " differs from 'output_grad''s "
           << dy.getElementType();
  if (dy.getRank() != x.getRank())
    return emitOpError("result rank ")
           << x.getRank() << " differs from 'output_grad''s rank "
           << dy.getRank();
  ArrayRef<int64_t> offsets = getOffsets();
  if (static_cast<int64_t>(offsets.size()) != x.getRank())
    return emitOpError("attribute 'offsets' must have ")
           << x.getRank() << " values, found " << offsets.size();
  for (int64_t i = 0; i < x.getRank(); ++i)
    if (offsets[i] < 0 || offsets[i] > x.getDimSize(i) - dy.getDimSize(i))
      return emitOpError("'output_grad' ")
             << shapeStr(dy.getShape()) << " at offsets "
             << shapeStr(offsets) << " does not fit in the result "
             << shapeStr(x.getShape()) << " (axis " << i << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// Attention gradient
//===----------------------------------------------------------------------===//

LogicalResult
AttentionGradOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<AttentionGradOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  FailureOr<RankedTensorType> out =
      checkAttention(c, adaptor.getQuery(), adaptor.getKey(),
                     adaptor.getValue(), adaptor.getMask());
  if (failed(out))
    return failure();
  for (auto [value, name] :
       {std::pair{adaptor.getOutput(), "output"},
        std::pair{adaptor.getOutputGrad(), "output_grad"}}) {
    auto t = c.tensor(value, name);
    if (failed(t) || failed(c.sameElementType(*out, "query", *t, name)) ||
        failed(c.hasShape(*t, name, out->getShape(),
                          "the attention's output shape")))
      return failure();
  }
  auto lse = c.tensor(adaptor.getLse(), "lse");
  if (failed(lse) || failed(c.hasShape(*lse, "lse", out->getShape().drop_back(),
                                       "[B, Hq, Nq]: one value per query row")))
    return failure();
  if (!lse->getElementType().isF32())
    return c.fail("operand 'lse' must be f32, found ", lse->getElementType());
  results.push_back(adaptor.getQuery().getType());
  results.push_back(adaptor.getKey().getType());
  results.push_back(adaptor.getValue().getType());
  if (adaptor.getReturnScoreGrad()) {
    SmallVector<int64_t> shape(out->getShape().drop_back());
    shape.push_back(
        cast<RankedTensorType>(adaptor.getKey().getType()).getDimSize(2));
    Type element = adaptor.getMask()
                       ? cast<RankedTensorType>(adaptor.getMask().getType())
                             .getElementType()
                       : out->getElementType();
    results.push_back(RankedTensorType::get(shape, element));
  }
  return success();
}

double AttentionGradOp::getEffectiveScale() {
  return attentionScale(getScale(), getQuery().getType());
}
