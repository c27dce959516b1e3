//===- FuseOps.cpp - Shape inference and verification of fuse ops ---------===//
//
// Every op whose result follows from its operands checks its operands in
// inferReturnTypes: the parser calls it for the custom assembly form and the
// verifier calls it for every op, so one function gives both inference and
// located error messages. Messages name the operand or attribute and say what
// was expected and what was found.
//
//===----------------------------------------------------------------------===//

#include "Fuse/FuseOps.h"
#include "Checker.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fuse;
using namespace mlir::fuse::detail;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::array<int64_t, 4> mlir::fuse::expandPadding(ArrayRef<int64_t> padding) {
  if (padding.size() == 2)
    return {padding[0], padding[0], padding[1], padding[1]};
  if (padding.size() == 4)
    return {padding[0], padding[1], padding[2], padding[3]};
  return {0, 0, 0, 0};
}

int64_t mlir::fuse::channelAxis(Layout layout, int64_t rank) {
  return layout == Layout::NCHW ? 1 : rank - 1;
}

std::string fuse::shapeProblem(RankedTensorType type) {
  if (type.getRank() > kMaxRank)
    return "has rank " + std::to_string(type.getRank()) +
           "; fusec tensors have at most " + std::to_string(kMaxRank) +
           " dimensions";
  if (llvm::is_contained(type.getShape(), 0))
    return "has a zero-size dimension; fusec tensors are not empty";
  int64_t bytes = type.getElementTypeBitWidth() / 8;
  for (int64_t d : type.getShape())
    if (d < 0 || llvm::MulOverflow(bytes, d, bytes))
      return "has 2^63 bytes or more";
  return "";
}

//===----------------------------------------------------------------------===//
// Conv2dOp
//===----------------------------------------------------------------------===//

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<Conv2dOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  Layout layout = adaptor.getLayout();
  bool nhwc = layout == Layout::NHWC;
  auto in = c.tensorOfRank(adaptor.getInput(), "input", 4,
                           nhwc ? " [N, H, W, C] for layout nhwc"
                                : " [N, C, H, W] for layout nchw");
  if (failed(in))
    return failure();
  auto filter = c.tensorOfRank(adaptor.getFilter(), "filter", 4,
                               nhwc ? " [Co, Kh, Kw, Ci/groups] for layout nhwc"
                                    : " [Co, Ci/groups, Kh, Kw] for layout nchw");
  if (failed(filter) || failed(c.sameElementType(*in, "input", *filter, "filter")))
    return failure();
  if (failed(c.positivePair(adaptor.getStrides(), "strides")) ||
      failed(c.positivePair(adaptor.getDilation(), "dilation")) ||
      failed(c.padding(adaptor.getPadding())))
    return failure();
  int64_t groups = adaptor.getGroups();
  if (groups < 1)
    return c.fail("attribute 'groups' must be positive, found ", groups);

  ArrayRef<int64_t> x = in->getShape(), w = filter->getShape();
  int64_t n = x[0], ci = nhwc ? x[3] : x[1], h = nhwc ? x[1] : x[2],
          wd = nhwc ? x[2] : x[3];
  int64_t co = w[0], kh = nhwc ? w[1] : w[2], kw = nhwc ? w[2] : w[3],
          cig = nhwc ? w[3] : w[1];
  if (ci % groups != 0)
    return c.fail("input channels (", ci, ") are not divisible by groups (",
                  groups, ")");
  if (co % groups != 0)
    return c.fail("output channels (filter dimension 0 = ", co,
                  ") are not divisible by groups (", groups, ")");
  if (cig != ci / groups)
    return c.fail("operand 'filter' ", shapeStr(w), " has ", cig,
                  " input channels per group (dimension ", nhwc ? 3 : 1,
                  ") but the input has ", ci, " channels and groups = ",
                  groups, ": expected ", ci / groups);
  if (Value bias = adaptor.getBias()) {
    auto b = c.tensor(bias, "bias");
    if (failed(b) || failed(c.sameElementType(*in, "input", *b, "bias")) ||
        failed(c.hasShape(*b, "bias", {co}, "one value per output channel")))
      return failure();
  }
  std::array<int64_t, 4> pads = expandPadding(adaptor.getPadding());
  ArrayRef<int64_t> s = adaptor.getStrides(), d = adaptor.getDilation();
  // (k - 1) * dilation + 1, unless that overflows.
  auto dilated = [](int64_t k, int64_t dil) {
    std::optional<int64_t> span = llvm::checkedMul(k - 1, dil);
    return span ? llvm::checkedAdd(*span, int64_t(1)) : span;
  };
  auto ho = windowOutput(c, h, pads[0], pads[1], dilated(kh, d[0]), s[0],
                         "dilated kernel height:");
  if (failed(ho))
    return failure();
  auto wo = windowOutput(c, wd, pads[2], pads[3], dilated(kw, d[1]), s[1],
                         "dilated kernel width:");
  if (failed(wo))
    return failure();
  if (nhwc)
    setResult(results, {n, *ho, *wo, co}, in->getElementType());
  else
    setResult(results, {n, co, *ho, *wo}, in->getElementType());
  return success();
}

//===----------------------------------------------------------------------===//
// BatchNormOp
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<BatchNormOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  auto in = c.tensor(adaptor.getInput(), "input");
  if (failed(in))
    return failure();
  if (in->getRank() < 2)
    return c.fail("operand 'input' must have rank 2 or more, found rank ",
                  in->getRank());
  if (adaptor.getEpsilon().convertToDouble() < 0)
    return c.fail("attribute 'epsilon' must be non-negative, found ",
                  adaptor.getEpsilon().convertToDouble());
  int64_t axis = channelAxis(adaptor.getLayout(), in->getRank());
  int64_t channels = in->getDimSize(axis);
  std::string why = std::string("channels are axis ") + std::to_string(axis) +
                    " for layout " + layoutName(adaptor.getLayout());
  for (auto [value, name] :
       {std::pair{adaptor.getMean(), "mean"},
        std::pair{adaptor.getVariance(), "variance"},
        std::pair{adaptor.getScale(), "scale"},
        std::pair{adaptor.getShift(), "shift"}}) {
    auto t = c.tensor(value, name);
    if (failed(t) || failed(c.sameElementType(*in, "input", *t, name)) ||
        failed(c.hasShape(*t, name, {channels}, why)))
      return failure();
  }
  results.push_back(*in);
  return success();
}

LogicalResult ScaleShiftOp::inferReturnTypes(MLIRContext *ctx,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<ScaleShiftOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  auto inAxis = c.inputAndAxis(adaptor.getInput(), adaptor.getAxis());
  if (failed(inAxis))
    return failure();
  auto [in, axis] = *inAxis;
  std::string why = "the size of input axis " + std::to_string(axis);
  for (auto [value, name] : {std::pair{adaptor.getScale(), "scale"},
                             std::pair{adaptor.getShift(), "shift"}}) {
    auto t = c.tensor(value, name);
    if (failed(t) || failed(c.sameElementType(in, "input", *t, name)) ||
        failed(c.hasShape(*t, name, {in.getDimSize(axis)}, why)))
      return failure();
  }
  results.push_back(in);
  return success();
}

LogicalResult BatchNormCoefficientsOp::verify() {
  if (getMean().getType().getRank() != 1)
    return emitOpError("operands must have rank 1 [C], found ")
           << getMean().getType();
  if (getEpsilon().convertToDouble() < 0)
    return emitOpError("attribute 'epsilon' must be non-negative, found ")
           << getEpsilon().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// Binary ops and bias_add
//===----------------------------------------------------------------------===//

template <typename Adaptor>
static LogicalResult inferBinary(StringRef opName, std::optional<Location> loc,
                                 Adaptor adaptor,
                                 SmallVectorImpl<Type> &results) {
  Checker c(loc, opName);
  auto lhs = c.tensor(adaptor.getLhs(), "lhs");
  if (failed(lhs))
    return failure();
  auto rhs = c.tensor(adaptor.getRhs(), "rhs");
  if (failed(rhs) || failed(c.sameElementType(*lhs, "lhs", *rhs, "rhs")))
    return failure();
  auto shape = c.broadcast(lhs->getShape(), "lhs", rhs->getShape(), "rhs");
  if (failed(shape))
    return failure();
  setResult(results, *shape, lhs->getElementType());
  return success();
}

#define FUSE_BINARY_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &results) {         \
    return inferBinary(getOperationName(), loc, adaptor, results);             \
  }
FUSE_BINARY_INFER(AddOp)
FUSE_BINARY_INFER(SubOp)
FUSE_BINARY_INFER(MulOp)
FUSE_BINARY_INFER(DivOp)
#undef FUSE_BINARY_INFER

LogicalResult BiasAddOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<BiasAddOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  auto inAxis = c.inputAndAxis(adaptor.getInput(), adaptor.getAxis());
  if (failed(inAxis))
    return failure();
  auto [in, axis] = *inAxis;
  auto bias = c.tensor(adaptor.getBias(), "bias");
  if (failed(bias) || failed(c.sameElementType(in, "input", *bias, "bias")) ||
      failed(c.hasShape(*bias, "bias", {in.getDimSize(axis)},
                        "the size of input axis " + std::to_string(axis))))
    return failure();
  results.push_back(in);
  return success();
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

LogicalResult ClampOp::verify() {
  double lo = getMin().convertToDouble(), hi = getMax().convertToDouble();
  if (std::isnan(lo) || std::isnan(hi) || lo > hi)
    return emitOpError("attribute 'min' (")
           << lo << ") must not exceed attribute 'max' (" << hi << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp and LinearOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<MatmulOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  auto lhs = c.tensor(adaptor.getLhs(), "lhs");
  if (failed(lhs))
    return failure();
  auto rhs = c.tensor(adaptor.getRhs(), "rhs");
  if (failed(rhs) || failed(c.sameElementType(*lhs, "lhs", *rhs, "rhs")))
    return failure();
  if (lhs->getRank() < 2 || rhs->getRank() < 2)
    return c.fail("operands must have rank 2 or more, found ranks ",
                  lhs->getRank(), " and ", rhs->getRank());
  ArrayRef<int64_t> a = lhs->getShape(), b = rhs->getShape();
  int64_t ra = a.size(), rb = b.size();
  bool ta = adaptor.getTransposeLhs(), tb = adaptor.getTransposeRhs();
  int64_t m = ta ? a[ra - 1] : a[ra - 2], ka = ta ? a[ra - 2] : a[ra - 1];
  int64_t kb = tb ? b[rb - 1] : b[rb - 2], n = tb ? b[rb - 2] : b[rb - 1];
  if (ka != kb)
    return c.fail("contraction sizes differ: 'lhs' ", shapeStr(a), " has K = ",
                  ka, " (dimension ", ta ? ra - 2 : ra - 1, ") but 'rhs' ",
                  shapeStr(b), " has K = ", kb, " (dimension ",
                  tb ? rb - 1 : rb - 2, ")");
  auto batch = c.broadcast(a.drop_back(2), "lhs batch", b.drop_back(2),
                           "rhs batch");
  if (failed(batch))
    return failure();
  SmallVector<int64_t> shape = *batch;
  shape.append({m, n});
  setResult(results, shape, lhs->getElementType());
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Checker c(loc, getOperationName());
  auto in = c.tensor(adaptor.getInput(), "input");
  if (failed(in))
    return failure();
  if (in->getRank() < 1)
    return c.fail("operand 'input' must have rank 1 or more, found rank 0");
  auto w = c.tensorOfRank(adaptor.getWeight(), "weight", 2, " [N, K]");
  if (failed(w) || failed(c.sameElementType(*in, "input", *w, "weight")))
    return failure();
  int64_t k = in->getShape().back(), n = w->getDimSize(0);
  if (w->getDimSize(1) != k)
    return c.fail("operand 'weight' ", shapeStr(w->getShape()), " has K = ",
                  w->getDimSize(1), " (dimension 1) but 'input' ",
                  shapeStr(in->getShape()), " has K = ", k,
                  " (last dimension)");
  if (Value bias = adaptor.getBias()) {
    auto b = c.tensor(bias, "bias");
    if (failed(b) || failed(c.sameElementType(*in, "input", *b, "bias")) ||
        failed(c.hasShape(*b, "bias", {n}, "one value per output feature")))
      return failure();
  }
  SmallVector<int64_t> shape(in->getShape());
  shape.back() = n;
  setResult(results, shape, in->getElementType());
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation and softmax
//===----------------------------------------------------------------------===//

/// Checks input, normalized_rank, epsilon and the optional affine operands of
/// layer_norm and rms_norm.
static LogicalResult inferNorm(Checker &c, Value input, int64_t normRank,
                               double epsilon,
                               ArrayRef<std::pair<Value, const char *>> affine,
                               SmallVectorImpl<Type> &results) {
  auto in = c.tensor(input, "input");
  if (failed(in))
    return failure();
  if (normRank < 1 || normRank > in->getRank())
    return c.fail("attribute 'normalized_rank' = ", normRank,
                  " must be between 1 and the input rank (", in->getRank(),
                  ")");
  if (epsilon < 0)
    return c.fail("attribute 'epsilon' must be non-negative, found ", epsilon);
  ArrayRef<int64_t> trailing = in->getShape().take_back(normRank);
  for (auto [value, name] : affine) {
    if (!value)
      continue;
    auto t = c.tensor(value, name);
    if (failed(t) || failed(c.sameElementType(*in, "input", *t, name)) ||
        failed(c.hasShape(*t, name, trailing, "the normalised trailing axes")))
      return failure();
  }
  results.push_back(*in);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<LayerNormOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  return inferNorm(c, adaptor.getInput(), adaptor.getNormalizedRank(),
                   adaptor.getEpsilon().convertToDouble(),
                   {{adaptor.getScale(), "scale"}, {adaptor.getShift(), "shift"}},
                   results);
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<RmsNormOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  return inferNorm(c, adaptor.getInput(), adaptor.getNormalizedRank(),
                   adaptor.getEpsilon().convertToDouble(),
                   {{adaptor.getScale(), "scale"}}, results);
}

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<SoftmaxOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  auto in = c.tensor(adaptor.getInput(), "input");
  if (failed(in))
    return failure();
  if (in->getRank() < 1)
    return c.fail("operand 'input' must have rank 1 or more, found rank 0");
  if (failed(c.axis(adaptor.getAxis(), in->getRank(), "axis")))
    return failure();
  results.push_back(*in);
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp and RopeOp
//===----------------------------------------------------------------------===//

FailureOr<RankedTensorType>
mlir::fuse::detail::checkAttention(Checker &c, Value query, Value key,
                                   Value value, Value mask) {
  auto q = c.tensorOfRank(query, "query", 4, " [B, Hq, Nq, D]");
  if (failed(q))
    return failure();
  auto k = c.tensorOfRank(key, "key", 4, " [B, Hkv, Nk, D]");
  if (failed(k) || failed(c.sameElementType(*q, "query", *k, "key")))
    return failure();
  auto v = c.tensorOfRank(value, "value", 4, " [B, Hkv, Nk, Dv]");
  if (failed(v) || failed(c.sameElementType(*q, "query", *v, "value")))
    return failure();
  ArrayRef<int64_t> qs = q->getShape(), ks = k->getShape(), vs = v->getShape();
  if (ks[0] != qs[0] || ks[3] != qs[3])
    return c.fail("operand 'key' ", shapeStr(ks), " must match 'query' ",
                  shapeStr(qs),
                  " in batch (dimension 0) and head size (dimension 3)");
  if (vs[0] != ks[0] || vs[1] != ks[1] || vs[2] != ks[2])
    return c.fail("operand 'value' ", shapeStr(vs), " must match 'key' ",
                  shapeStr(ks), " in dimensions 0 to 2 [B, Hkv, Nk]");
  if (qs[1] % ks[1] != 0)
    return c.fail("query heads (", qs[1],
                  ") must be a multiple of key/value heads (", ks[1], ")");
  if (mask) {
    // Any of the float types, whatever the query's: an f32 mask over f16
    // queries keeps large negative values exact.
    auto m = c.tensor(mask, "mask");
    if (failed(m))
      return failure();
    SmallVector<int64_t> scores = {qs[0], qs[1], qs[2], ks[2]};
    ArrayRef<int64_t> ms = m->getShape();
    bool fits = ms.size() >= 2 && ms.size() <= 4;
    for (size_t i = 0; fits && i < ms.size(); ++i) {
      int64_t target = scores[4 - ms.size() + i];
      fits = ms[i] == target || ms[i] == 1;
    }
    if (!fits)
      return c.fail("operand 'mask' ", shapeStr(ms),
                    " must have rank 2 to 4 and broadcast to the scores ",
                    shapeStr(scores), " [B, Hq, Nq, Nk]");
  }
  return RankedTensorType::get({qs[0], qs[1], qs[2], vs[3]},
                               q->getElementType());
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<AttentionOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  FailureOr<RankedTensorType> out =
      checkAttention(c, adaptor.getQuery(), adaptor.getKey(),
                     adaptor.getValue(), adaptor.getMask());
  if (failed(out))
    return failure();
  results.push_back(*out);
  if (adaptor.getReturnLse())
    results.push_back(RankedTensorType::get(out->getShape().drop_back(),
                                            Float32Type::get(ctx)));
  return success();
}

double mlir::fuse::detail::attentionScale(std::optional<APFloat> scale,
                                          RankedTensorType query) {
  if (scale)
    return scale->convertToDouble();
  return 1.0 / std::sqrt(static_cast<double>(query.getDimSize(3)));
}

double AttentionOp::getEffectiveScale() {
  return attentionScale(getScale(), getQuery().getType());
}

LogicalResult RopeOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  Checker c(loc, getOperationName());
  auto in = c.tensor(adaptor.getInput(), "input");
  if (failed(in))
    return failure();
  if (in->getRank() < 2)
    return c.fail("operand 'input' must have rank 2 or more [..., N, D], "
                  "found rank ",
                  in->getRank());
  int64_t n = in->getShape().end()[-2], d = in->getShape().back();
  if (d % 2 != 0)
    return c.fail("the feature size D of operand 'input' (last dimension) "
                  "must be even, found ",
                  d);
  for (auto [value, name] : {std::pair{adaptor.getCos(), "cos"},
                             std::pair{adaptor.getSin(), "sin"}}) {
    auto t = c.tensor(value, name);
    if (failed(t) || failed(c.sameElementType(*in, "input", *t, name)) ||
        failed(c.hasShape(*t, name, {n, d / 2},
                          "[N, D/2]: one row of angles per position")))
      return failure();
  }
  results.push_back(*in);
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling and resampling
//===----------------------------------------------------------------------===//

/// Shared by max_pool2d and avg_pool2d.
template <typename Adaptor>
static LogicalResult inferPool(StringRef opName, std::optional<Location> loc,
                               Adaptor adaptor,
                               SmallVectorImpl<Type> &results) {
  Checker c(loc, opName);
  bool nhwc = adaptor.getLayout() == Layout::NHWC;
  auto in = c.tensorOfRank(adaptor.getInput(), "input", 4,
                           nhwc ? " [N, H, W, C] for layout nhwc"
                                : " [N, C, H, W] for layout nchw");
  if (failed(in))
    return failure();
  if (!adaptor.getKernelAttr())
    return c.fail("requires attribute 'kernel'");
  if (failed(c.positivePair(adaptor.getKernel(), "kernel")) ||
      failed(c.padding(adaptor.getPadding())))
    return failure();
  ArrayRef<int64_t> kernel = adaptor.getKernel();
  ArrayRef<int64_t> strides = kernel;
  if (adaptor.getStrides()) {
    strides = *adaptor.getStrides();
    if (failed(c.positivePair(strides, "strides")))
      return failure();
  }
  std::array<int64_t, 4> pads = expandPadding(adaptor.getPadding());
  static const char *sides[] = {"top", "bottom", "left", "right"};
  for (int i = 0; i < 4; ++i)
    if (pads[i] > kernel[i / 2] / 2)
      return c.fail("padding ", sides[i], " = ", pads[i],
                    " exceeds half the kernel ", i < 2 ? "height" : "width",
                    " (", kernel[i / 2], ")");
  ArrayRef<int64_t> x = in->getShape();
  int64_t h = nhwc ? x[1] : x[2], w = nhwc ? x[2] : x[3];
  auto ho = windowOutput(c, h, pads[0], pads[1], kernel[0], strides[0],
                         "kernel height:");
  if (failed(ho))
    return failure();
  auto wo = windowOutput(c, w, pads[2], pads[3], kernel[1], strides[1],
                         "kernel width:");
  if (failed(wo))
    return failure();
  if (nhwc)
    setResult(results, {x[0], *ho, *wo, x[3]}, in->getElementType());
  else
    setResult(results, {x[0], x[1], *ho, *wo}, in->getElementType());
  return success();
}

LogicalResult MaxPool2dOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<MaxPool2dOp>(ctx, loc, adaptor)))
    return failure();
  return inferPool(getOperationName(), loc, adaptor, results);
}

LogicalResult AvgPool2dOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<AvgPool2dOp>(ctx, loc, adaptor)))
    return failure();
  return inferPool(getOperationName(), loc, adaptor, results);
}

LogicalResult GlobalAvgPoolOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<GlobalAvgPoolOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  bool nhwc = adaptor.getLayout() == Layout::NHWC;
  auto in = c.tensorOfRank(adaptor.getInput(), "input", 4,
                           nhwc ? " [N, H, W, C] for layout nhwc"
                                : " [N, C, H, W] for layout nchw");
  if (failed(in))
    return failure();
  ArrayRef<int64_t> x = in->getShape();
  if (nhwc)
    setResult(results, {x[0], 1, 1, x[3]}, in->getElementType());
  else
    setResult(results, {x[0], x[1], 1, 1}, in->getElementType());
  return success();
}

LogicalResult UpsampleOp::inferReturnTypes(MLIRContext *ctx,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<UpsampleOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  bool nhwc = adaptor.getLayout() == Layout::NHWC;
  auto in = c.tensorOfRank(adaptor.getInput(), "input", 4,
                           nhwc ? " [N, H, W, C] for layout nhwc"
                                : " [N, C, H, W] for layout nchw");
  if (failed(in))
    return failure();
  std::optional<ArrayRef<int64_t>> size = adaptor.getSize();
  std::optional<ArrayRef<double>> scale = adaptor.getScale();
  if (size.has_value() == scale.has_value())
    return c.fail("exactly one of the attributes 'size' and 'scale' must be "
                  "given, found ",
                  size ? "both" : "neither");
  if (adaptor.getAlignCorners() &&
      adaptor.getMode() != UpsampleMode::Bilinear)
    return c.fail("attribute 'align_corners' is only valid with mode "
                  "bilinear");
  ArrayRef<int64_t> x = in->getShape();
  int64_t h = nhwc ? x[1] : x[2], w = nhwc ? x[2] : x[3];
  int64_t ho, wo;
  if (size) {
    if (failed(c.positivePair(*size, "size")))
      return failure();
    ho = (*size)[0];
    wo = (*size)[1];
  } else {
    ArrayRef<double> s = *scale;
    if (s.size() != 2)
      return c.fail("attribute 'scale' must have 2 values, found ", s.size());
    if (!(s[0] > 0 && s[1] > 0 && std::isfinite(s[0]) && std::isfinite(s[1])))
      return c.fail("attribute 'scale' must be positive and finite, found [",
                    s[0], ", ", s[1], "]");
    double hf = std::floor(h * s[0]), wf = std::floor(w * s[1]);
    // Converting a double past int64 is undefined; refuse it before the cast.
    if (hf >= 0x1p63 || wf >= 0x1p63)
      return c.fail("attribute 'scale' gives an output extent (", hf, " x ",
                    wf, ") for input ", h, " x ", w, " that overflows int64");
    ho = static_cast<int64_t>(hf);
    wo = static_cast<int64_t>(wf);
    if (ho < 1 || wo < 1)
      return c.fail("attribute 'scale' gives an empty output (", ho, " x ",
                    wo, ") for input ", h, " x ", w);
  }
  if (nhwc)
    setResult(results, {x[0], ho, wo, x[3]}, in->getElementType());
  else
    setResult(results, {x[0], x[1], ho, wo}, in->getElementType());
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = getInput().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("result element type ")
           << out.getElementType() << " differs from input element type "
           << in.getElementType() << "; use fuse.cast to convert";
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("cannot reshape ")
           << shapeStr(in.getShape()) << " (" << in.getNumElements()
           << " elements) to " << shapeStr(out.getShape()) << " ("
           << out.getNumElements() << " elements)";
  return success();
}

/// A cast that widens exactly (f16 or bf16 to f32) loses nothing, so a cast
/// back undoes it.
static bool isExactWidening(Type from, Type to) {
  return (from.isF16() || from.isBF16()) && to.isF32();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<CastOp>())
    if (inner.getInput().getType() == getType() &&
        isExactWidening(getType().getElementType(),
                        inner.getType().getElementType()))
      return inner.getInput();
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  auto isIdentity = [](ArrayRef<int64_t> p) {
    for (auto [i, v] : llvm::enumerate(p))
      if (static_cast<int64_t>(i) != v)
        return false;
    return true;
  };
  if (isIdentity(perm))
    return getInput();
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    // result[i] = inner[perm[i]] = x[innerPerm[perm[i]]].
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(inner.getPermutation()[p]);
    if (isIdentity(composed))
      return inner.getInput();
    setPermutation(composed);
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<TransposeOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  auto in = c.tensor(adaptor.getInput(), "input");
  if (failed(in))
    return failure();
  if (!adaptor.getPermutationAttr())
    return c.fail("requires attribute 'permutation'");
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = in->getRank();
  llvm::SmallBitVector seen(rank);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= rank || seen.test(p)) {
      valid = false;
      break;
    }
    seen.set(p);
  }
  if (!valid)
    return c.fail("attribute 'permutation' ", shapeStr(perm),
                  " is not a permutation of [0, ", rank, ")");
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(in->getDimSize(p));
  setResult(results, shape, in->getElementType());
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *ctx,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<SliceOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  auto in = c.tensor(adaptor.getInput(), "input");
  if (failed(in))
    return failure();
  if (!adaptor.getOffsetsAttr() || !adaptor.getSizesAttr())
    return c.fail("requires attributes 'offsets' and 'sizes'");
  ArrayRef<int64_t> offsets = adaptor.getOffsets(), sizes = adaptor.getSizes();
  int64_t rank = in->getRank();
  if (static_cast<int64_t>(offsets.size()) != rank ||
      static_cast<int64_t>(sizes.size()) != rank)
    return c.fail("attributes 'offsets' ", shapeStr(offsets), " and 'sizes' ",
                  shapeStr(sizes), " must have one value per axis of the input ",
                  shapeStr(in->getShape()));
  for (int64_t i = 0; i < rank; ++i) {
    int64_t dim = in->getDimSize(i);
    // Compared without forming offsets + sizes, which may overflow.
    if (offsets[i] < 0 || sizes[i] < 1 || offsets[i] > dim ||
        sizes[i] > dim - offsets[i])
      return c.fail("axis ", i, ": offset ", offsets[i], " and size ",
                    sizes[i], " do not fit in extent ", dim,
                    " (need 0 <= offset, 1 <= size, offset + size <= extent)");
  }
  setResult(results, sizes, in->getElementType());
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // A slice of a slice is one slice.
  if (auto inner = getInput().getDefiningOp<SliceOp>()) {
    SmallVector<int64_t> offsets(getOffsets());
    for (auto [o, i] : llvm::zip_equal(offsets, inner.getOffsets()))
      o += i;
    setOffsets(offsets);
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  // A slice inside one operand of a concat reads that operand.
  if (auto concat = getInput().getDefiningOp<ConcatOp>()) {
    auto axis = static_cast<int64_t>(concat.getAxis());
    if (axis < 0)
      axis += getType().getRank();
    int64_t start = 0;
    for (Value operand : concat.getInputs()) {
      int64_t extent = cast<RankedTensorType>(operand.getType()).getDimSize(axis);
      int64_t offset = getOffsets()[axis];
      if (offset >= start && offset + getSizes()[axis] <= start + extent) {
        SmallVector<int64_t> offsets(getOffsets());
        offsets[axis] -= start;
        setOffsets(offsets);
        getInputMutable().assign(operand);
        return getInput().getType() == getType() ? getInput() : getResult();
      }
      start += extent;
    }
  }
  return {};
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<ConcatOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  if (adaptor.getInputs().empty())
    return c.fail("needs at least one operand");
  SmallVector<RankedTensorType> types;
  for (auto [i, v] : llvm::enumerate(adaptor.getInputs())) {
    std::string name = "#" + std::to_string(i);
    auto type = c.tensor(v, name);
    if (failed(type))
      return failure();
    types.push_back(*type);
  }
  RankedTensorType first = types.front();
  if (first.getRank() < 1)
    return c.fail("operands must have rank 1 or more, found rank 0");
  if (!adaptor.getAxisAttr())
    return c.fail("requires attribute 'axis'");
  auto axis = c.axis(adaptor.getAxis(), first.getRank(), "axis");
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, type] : llvm::enumerate(types)) {
    if (i == 0)
      continue;
    std::string name = "#" + std::to_string(i);
    if (failed(c.sameElementType(first, "#0", type, name)))
      return failure();
    bool fits = type.getRank() == first.getRank();
    for (int64_t d = 0; fits && d < first.getRank(); ++d)
      fits = d == *axis || type.getDimSize(d) == first.getDimSize(d);
    if (!fits)
      return c.fail("operand '", name, "' has shape ",
                    shapeStr(type.getShape()), " but '#0' has ",
                    shapeStr(first.getShape()),
                    "; they may differ only along axis ", *axis);
    if (shape[*axis] > (int64_t(1) << 62) - type.getDimSize(*axis))
      return c.fail("the result's extent along axis ", *axis,
                    " overflows 64 bits");
    shape[*axis] += type.getDimSize(*axis);
  }
  setResult(results, shape, first.getElementType());
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  return {};
}

int64_t SplitOp::getNormalizedAxis() {
  int64_t axis = static_cast<int64_t>(getAxis());
  return axis < 0 ? axis + getInput().getType().getRank() : axis;
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *ctx,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  if (failed(completeAdaptor<SplitOp>(ctx, loc, adaptor)))
    return failure();
  Checker c(loc, getOperationName());
  auto inAndAxis = c.inputAndAxis(adaptor.getInput(), adaptor.getAxis());
  if (failed(inAndAxis))
    return failure();
  auto [in, axis] = *inAndAxis;
  if (!adaptor.getSizesAttr())
    return c.fail("requires attribute 'sizes'");
  ArrayRef<int64_t> sizes = adaptor.getSizes();
  if (sizes.empty())
    return c.fail("attribute 'sizes' must have at least one value");
  int64_t dim = in.getDimSize(axis), left = dim;
  for (int64_t size : sizes) {
    if (size < 1 || size > left)
      return c.fail("attribute 'sizes' ", shapeStr(sizes),
                    " must be positive and sum to extent ", dim, " of axis ",
                    axis);
    left -= size;
  }
  if (left != 0)
    return c.fail("attribute 'sizes' ", shapeStr(sizes), " sums to ",
                  dim - left, ", not to extent ", dim, " of axis ", axis);
  for (int64_t size : sizes) {
    SmallVector<int64_t> shape(in.getShape());
    shape[axis] = size;
    results.push_back(RankedTensorType::get(shape, in.getElementType()));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

void KernelOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                     TypeRange results, ValueRange inputs) {
  state.addAttribute(getNameAttrName(state.name), builder.getStringAttr(name));
  state.addOperands(inputs);
  state.addTypes(results);
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Value input : inputs)
    block->addArgument(input.getType(), input.getLoc());
}

LogicalResult KernelOp::verify() {
  Block &block = getBody().front();
  if (block.getNumArguments() != getInputs().size())
    return emitOpError("body has ")
           << block.getNumArguments() << " arguments but the kernel has "
           << getInputs().size() << " inputs";
  for (auto [i, arg, input] :
       llvm::enumerate(block.getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError("body argument #")
             << i << " has type " << arg.getType() << " but input #" << i
             << " has type " << input.getType();
  auto yield = cast<YieldOp>(block.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getValues().getTypes() << " but the kernel returns "
           << getResultTypes();
  // The name becomes a PTX function name.
  StringRef name = getName();
  if (name.empty() || !(llvm::isAlpha(name[0]) || name[0] == '_') ||
      name == "_" ||
      !llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
    return emitOpError("name '")
           << name
           << "' is not a PTX identifier: use a letter or '_', then letters, "
              "digits and '_'";
  Operation *anchor = nullptr;
  for (Operation &op : block.without_terminator()) {
    if (isa<KernelOp>(op))
      return op.emitOpError("is nested in fuse.kernel '")
             << name << "'; kernels do not nest";
    if (!isAnchor(&op) && !isElementwise(&op) && !isView(&op))
      return op.emitOpError("cannot be part of fuse.kernel '")
             << name << "': it is neither an anchor, elementwise nor a view";
    if (!isAnchor(&op) || isAnchorView(&op))
      continue;
    if (anchor) {
      InFlightDiagnostic diag = op.emitOpError("is a second anchor in fuse.kernel '")
                                << name << "'; a kernel has at most one";
      diag.attachNote(anchor->getLoc()) << "the first anchor is here";
      return diag;
    }
    anchor = &op;
  }
  return success();
}

LogicalResult
TileAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t bm,
                 int64_t bn, int64_t bk, int64_t tm, int64_t tn,
                 int64_t warpsM, int64_t warpsN, int64_t stages,
                 int64_t warpsK) {
  // Bounds that keep every size computed from the tile far from overflow;
  // whether the tile suits a kernel is checked when it is tiled.
  for (auto [name, value, lo, hi] :
       {std::tuple{"bm", bm, 1, 1024}, std::tuple{"bn", bn, 1, 1024},
        std::tuple{"bk", bk, 1, 1024}, std::tuple{"tm", tm, 0, 64},
        std::tuple{"tn", tn, 0, 64}, std::tuple{"warps_m", warpsM, 0, 32},
        std::tuple{"warps_n", warpsN, 0, 32},
        std::tuple{"stages", stages, 0, 16},
        std::tuple{"warps_k", warpsK, 0, 8}})
    if (value < lo || value > hi)
      return emitError() << "tile " << name << " = " << value
                         << " is out of range [" << lo << ", " << hi << "]";
  return success();
}

#define GET_OP_CLASSES
#include "Fuse/FuseOps.cpp.inc"

LogicalResult TensorMapOp::verify() {
  if (!isa<LLVM::LLVMPointerType>(getMap().getType()))
    return emitOpError("result must be !llvm.ptr, the kernel parameter that "
                       "holds the map, not ")
           << getMap().getType();
  ArrayRef<int64_t> dims = getDims(), strides = getStrides(), box = getBox();
  int64_t rank = dims.size();
  if (rank < 1 || rank > 5)
    return emitOpError("views a tensor of rank ")
           << rank << "; a TMA tensor map has rank 1 to 5";
  std::optional<ArrayRef<int64_t>> lower = getIm2colLower(),
                                   upper = getIm2colUpper();
  if (lower.has_value() != upper.has_value())
    return emitOpError("needs both im2col corners or neither");
  bool im2col = lower.has_value();
  int64_t boxes = im2col ? 2 : rank;
  if (static_cast<int64_t>(strides.size()) != rank - 1 ||
      static_cast<int64_t>(box.size()) != boxes)
    return emitOpError("has ")
           << strides.size() << " strides and " << box.size()
           << " box extents for " << rank
           << " dims; it needs one stride per dim but the innermost, and "
           << (im2col ? "two box extents (channels, pixels)"
                      : "one box extent per dim");
  if (im2col) {
    // cuTensorMapEncodeIm2col's limits on the corners, by rank.
    int64_t bound = rank == 3 ? 32768 : rank == 4 ? 128 : 16;
    if (rank < 3 || static_cast<int64_t>(lower->size()) != rank - 2 ||
        static_cast<int64_t>(upper->size()) != rank - 2)
      return emitOpError("im2col maps have rank 3 to 5 and a corner "
                         "coordinate per spatial dim");
    for (int64_t c : llvm::concat<const int64_t>(*lower, *upper))
      if (c < -bound || c >= bound)
        return emitOpError("im2col corner ")
               << c << " is outside [" << -bound << ", " << bound - 1
               << "] for rank " << rank;
    if (box[1] < 1 || box[1] > 1024)
      return emitOpError("im2col copies 1 to 1024 pixels, not ") << box[1];
  }
  auto type = cast<MemRefType>(getBuffer().getType());
  int64_t bytes = type.getElementTypeBitWidth() / 8;
  int64_t swizzle = getSwizzle(), offset = getOffset();
  if (!llvm::is_contained({0, 32, 64, 128}, swizzle))
    return emitOpError("swizzle is ")
           << swizzle << " bytes; expected 0, 32, 64 or 128";
  // The last byte the view reaches, with overflow checks on the way.
  int64_t end = offset, extent;
  if (offset < 0 || offset % 16)
    return emitOpError("offset ") << offset
                                  << " is not a non-negative multiple of 16";
  for (int64_t i = 0; i < rank; ++i) {
    if (dims[i] < 1 || dims[i] > (int64_t(1) << 32))
      return emitOpError("dims[") << i << "] = " << dims[i]
                                  << " is outside [1, 2^32]";
    if (i < boxes && (box[i] < 1 || box[i] > 256) && !(im2col && i == 1))
      return emitOpError("box[") << i << "] = " << box[i]
                                 << " is outside [1, 256]";
    int64_t stride = i ? strides[i - 1] : bytes;
    if (i && (stride < 16 || stride % 16))
      return emitOpError("strides[")
             << i - 1 << "] = " << stride
             << " is not a positive multiple of 16 bytes";
    if (llvm::MulOverflow(dims[i] - 1, stride, extent) ||
        llvm::AddOverflow(end, extent, end))
      return emitOpError("views more bytes than an int64 counts");
  }
  if (box[0] * bytes % 16 || (swizzle && box[0] * bytes > swizzle))
    return emitOpError("box[0] spans ")
           << box[0] * bytes << " bytes; it must span a multiple of 16 bytes"
           << (swizzle ? ", at most the swizzle's " + std::to_string(swizzle)
                       : std::string());
  int64_t size = type.getNumElements() * bytes;
  if (end + bytes > size)
    return emitOpError("views bytes up to ")
           << end + bytes << " of a buffer of " << size << " bytes";
  return success();
}

bool mlir::fuse::keepsLastAxis(TransposeOp op) {
  ArrayRef<int64_t> perm = op.getPermutation();
  return perm.back() == static_cast<int64_t>(perm.size()) - 1;
}

bool mlir::fuse::isAnchorView(Operation *op,
                              function_ref<bool(SliceOp)> canLoadThrough) {
  auto transpose = dyn_cast<TransposeOp>(op);
  auto slice = dyn_cast<SliceOp>(op);
  if (!transpose && !slice && !isa<RopeOp>(op))
    return false;
  if (transpose && !keepsLastAxis(transpose))
    return false;
  if (slice && canLoadThrough && !canLoadThrough(slice))
    return false;
  // A transpose of the attention's result: stored permuted.
  if (transpose && transpose.getInput().getDefiningOp<AttentionOp>())
    return true;
  Value result = op->getResult(0);
  if (result.use_empty())
    return false;
  bool moves = transpose || slice;
  return llvm::all_of(result.getUses(), [&](OpOperand &use) {
    Operation *user = use.getOwner();
    // Q and K may be rotated; V only moved.
    if (isa<AttentionOp>(user))
      return use.getOperandNumber() < (moves ? 3u : 2u);
    // Moves under a rope or another move: the rope comes last, so that it
    // rotates rows of the attention's own positions.
    return moves && isa<TransposeOp, RopeOp, SliceOp>(user) &&
           use.getOperandNumber() == 0 && isAnchorView(user, canLoadThrough);
  });
}
