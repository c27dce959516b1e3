//===- Simplify.cpp - fusec-simplify --------------------------------------===//
//
// Rewrites that leave fewer and simpler ops for fusion: batch norm becomes a
// per-channel scale/shift, biases and scale/shifts on the same axis merge,
// and data-movement no-ops fold away (the ops' own folders).
//
//===----------------------------------------------------------------------===//

#include "fusec/Transforms/Passes.h"

#include "Fuse/FuseOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace fusec {
#define GEN_PASS_DEF_FUSESIMPLIFY
#include "fusec/Transforms/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace mlir::fuse;

static int64_t normalisedAxis(int64_t axis, Value v) {
  return axis < 0 ? axis + cast<RankedTensorType>(v.getType()).getRank()
                  : axis;
}

static Value mul(PatternRewriter &rewriter, Location loc, Value a, Value b) {
  return MulOp::create(rewriter, loc, a, b);
}

static Value add(PatternRewriter &rewriter, Location loc, Value a, Value b) {
  return AddOp::create(rewriter, loc, a, b);
}

namespace {

/// batch_norm(x) -> scale_shift(x, batch_norm_coefficients(...)).
struct BatchNormToScaleShift : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getMean().getType();
    auto coeffs = BatchNormCoefficientsOp::create(
        rewriter, op.getLoc(), type, type, op.getMean(), op.getVariance(),
        op.getScale(), op.getShift(), op.getEpsilonAttr());
    rewriter.replaceOpWithNewOp<ScaleShiftOp>(
        op, op.getInput(), coeffs.getResultScale(), coeffs.getResultShift(),
        op.getChannelAxis());
    return success();
  }
};

/// bias_add(conv2d(x, w), b) -> conv2d(x, w, b) on the channel axis.
struct FoldBiasIntoConv : OpRewritePattern<BiasAddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BiasAddOp op,
                                PatternRewriter &rewriter) const override {
    auto conv = op.getInput().getDefiningOp<Conv2dOp>();
    if (!conv || conv.getBias() || !conv->hasOneUse())
      return failure();
    if (normalisedAxis(op.getAxis(), op.getInput()) !=
        channelAxis(conv.getLayout(), 4))
      return failure();
    rewriter.modifyOpInPlace(
        conv, [&] { conv.getBiasMutable().assign(op.getBias()); });
    rewriter.replaceOp(op, conv.getResult());
    return success();
  }
};

/// bias_add(linear(x, w), b) -> linear(x, w, b) on the last axis.
struct FoldBiasIntoLinear : OpRewritePattern<BiasAddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BiasAddOp op,
                                PatternRewriter &rewriter) const override {
    auto linear = op.getInput().getDefiningOp<LinearOp>();
    if (!linear || linear.getBias() || !linear->hasOneUse())
      return failure();
    auto type = cast<RankedTensorType>(op.getInput().getType());
    if (normalisedAxis(op.getAxis(), op.getInput()) != type.getRank() - 1)
      return failure();
    rewriter.modifyOpInPlace(
        linear, [&] { linear.getBiasMutable().assign(op.getBias()); });
    rewriter.replaceOp(op, linear.getResult());
    return success();
  }
};

/// scale_shift(scale_shift(x, s1, t1), s2, t2)
///   -> scale_shift(x, s1 * s2, t1 * s2 + t2).
struct MergeScaleShifts : OpRewritePattern<ScaleShiftOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScaleShiftOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ScaleShiftOp>();
    if (!inner || !inner->hasOneUse() ||
        inner.getChannelAxis() != op.getChannelAxis())
      return failure();
    Location loc = op.getLoc();
    Value scale = mul(rewriter, loc, inner.getScale(), op.getScale());
    Value shift = add(rewriter, loc,
                      mul(rewriter, loc, inner.getShift(), op.getScale()),
                      op.getShift());
    rewriter.replaceOpWithNewOp<ScaleShiftOp>(op, inner.getInput(), scale,
                                              shift, op.getChannelAxis());
    return success();
  }
};

/// scale_shift(bias_add(x, b), s, t) -> scale_shift(x, s, b * s + t).
struct MergeBiasIntoScaleShift : OpRewritePattern<ScaleShiftOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScaleShiftOp op,
                                PatternRewriter &rewriter) const override {
    auto bias = op.getInput().getDefiningOp<BiasAddOp>();
    if (!bias || !bias->hasOneUse() ||
        normalisedAxis(bias.getAxis(), bias.getInput()) !=
            op.getChannelAxis())
      return failure();
    Location loc = op.getLoc();
    Value shift = add(rewriter, loc,
                      mul(rewriter, loc, bias.getBias(), op.getScale()),
                      op.getShift());
    rewriter.replaceOpWithNewOp<ScaleShiftOp>(
        op, bias.getInput(), op.getScale(), shift, op.getChannelAxis());
    return success();
  }
};

/// bias_add(scale_shift(x, s, t), b) -> scale_shift(x, s, t + b).
struct MergeScaleShiftIntoBias : OpRewritePattern<BiasAddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BiasAddOp op,
                                PatternRewriter &rewriter) const override {
    auto ss = op.getInput().getDefiningOp<ScaleShiftOp>();
    if (!ss || !ss->hasOneUse() ||
        normalisedAxis(op.getAxis(), op.getInput()) != ss.getChannelAxis())
      return failure();
    Value shift = add(rewriter, op.getLoc(), ss.getShift(), op.getBias());
    rewriter.replaceOpWithNewOp<ScaleShiftOp>(
        op, ss.getInput(), ss.getScale(), shift, ss.getChannelAxis());
    return success();
  }
};

/// bias_add(bias_add(x, b1), b2) -> bias_add(x, b1 + b2).
struct MergeBiases : OpRewritePattern<BiasAddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BiasAddOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<BiasAddOp>();
    if (!inner || !inner->hasOneUse() ||
        normalisedAxis(op.getAxis(), op.getInput()) !=
            normalisedAxis(inner.getAxis(), inner.getInput()))
      return failure();
    Value bias = add(rewriter, op.getLoc(), inner.getBias(), op.getBias());
    rewriter.replaceOpWithNewOp<BiasAddOp>(op, inner.getInput(), bias,
                                           inner.getAxis());
    return success();
  }
};

/// split(x) -> one slice per result, which fusion reads through.
struct SplitToSlices : OpRewritePattern<SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SplitOp op,
                                PatternRewriter &rewriter) const override {
    int64_t axis = op.getNormalizedAxis();
    SmallVector<int64_t> offsets(op.getInput().getType().getRank(), 0);
    SmallVector<Value> slices;
    for (Value result : op.getResults()) {
      ArrayRef<int64_t> sizes =
          cast<RankedTensorType>(result.getType()).getShape();
      slices.push_back(SliceOp::create(rewriter, op.getLoc(), op.getInput(),
                                       offsets, sizes));
      offsets[axis] += sizes[axis];
    }
    rewriter.replaceOp(op, slices);
    return success();
  }
};

/// reshape(slice(x)) -> slice(reshape(x)) when the reshape only splits one
/// axis into [f, inner...] and the inner extents divide the slice's offset
/// and the full extent there, so that the slice keeps reading a block of
/// the reshaped x. Splitting heads out of a slice of a fused QKV projection
/// then stays a view.
struct SliceBeforeReshape : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto slice = op.getInput().getDefiningOp<SliceOp>();
    if (!slice)
      return failure();
    ArrayRef<int64_t> from = slice.getType().getShape();
    ArrayRef<int64_t> to = op.getType().getShape();
    ArrayRef<int64_t> full = slice.getInput().getType().getShape();
    int64_t extra = static_cast<int64_t>(to.size()) - from.size();
    if (extra < 1)
      return failure();
    // The one axis `a` of `from` that becomes to[a .. a + extra].
    int64_t a = 0;
    while (a < static_cast<int64_t>(from.size()) && from[a] == to[a])
      ++a;
    if (a == static_cast<int64_t>(from.size()))
      return failure();
    for (int64_t i = a + 1; i < static_cast<int64_t>(from.size()); ++i)
      if (from[i] != to[i + extra])
        return failure();
    int64_t inner = 1;
    for (int64_t i = a + 1; i <= a + extra; ++i)
      inner *= to[i];
    if (to[a] * inner != from[a] || slice.getOffsets()[a] % inner ||
        full[a] % inner)
      return failure();
    SmallVector<int64_t> shape, offsets, sizes;
    for (int64_t i = 0; i < static_cast<int64_t>(from.size()); ++i) {
      if (i != a) {
        shape.push_back(full[i]);
        offsets.push_back(slice.getOffsets()[i]);
        sizes.push_back(from[i]);
        continue;
      }
      shape.push_back(full[a] / inner);
      offsets.push_back(slice.getOffsets()[a] / inner);
      sizes.push_back(to[a]);
      for (int64_t j = a + 1; j <= a + extra; ++j) {
        shape.push_back(to[j]);
        offsets.push_back(0);
        sizes.push_back(to[j]);
      }
    }
    auto reshaped = ReshapeOp::create(
        rewriter, op.getLoc(),
        RankedTensorType::get(shape, op.getType().getElementType()),
        slice.getInput());
    rewriter.replaceOpWithNewOp<SliceOp>(op, reshaped, offsets, sizes);
    return success();
  }
};

/// Whether the users of `v` read it through a slice at `offset` of its
/// last axis without a copy: elementwise ops (which fusion reads through
/// views), attention (through slices, transposes and ropes), and reshapes
/// that split the last axis into pieces the offset respects.
static bool readsThroughSlice(Value v, int64_t offset) {
  return llvm::all_of(v.getUsers(), [&](Operation *user) {
    if (isElementwise(user) || isa<AttentionOp>(user))
      return true;
    if (isa<TransposeOp, RopeOp>(user))
      return readsThroughSlice(user->getResult(0), offset);
    if (auto reshape = dyn_cast<ReshapeOp>(user)) {
      ArrayRef<int64_t> from = reshape.getInput().getType().getShape();
      ArrayRef<int64_t> to = reshape.getType().getShape();
      if (to.size() <= from.size() ||
          to.take_front(from.size() - 1) != from.drop_back())
        return false;
      int64_t inner = 1;
      for (int64_t d : to.drop_front(from.size()))
        inner *= d;
      return offset % inner == 0 && readsThroughSlice(reshape, 0);
    }
    return false;
  });
}

/// The elementwise ops computed from `v`, transitively.
static SmallVector<Operation *> elementwiseUsers(Value v) {
  SmallVector<Operation *> found;
  SmallVector<Value> work{v};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Value at = work.pop_back_val();
    for (Operation *user : at.getUsers())
      if (isElementwise(user) && seen.insert(user).second) {
        found.push_back(user);
        llvm::append_range(work, user->getResults());
      }
  }
  return found;
}

/// unary(reshape(x)) -> reshape(unary(x)) for an elementwise op of one
/// operand (an activation, a cast): a kernel ends at a reshape, so the op
/// after it would start one more pass over memory; moved above, it joins
/// the epilogue of the kernel that produces x (a GEMM's GELU).
struct UnaryBeforeReshape : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    if (!op->hasOneUse())
      return failure();
    Operation *user = *op->user_begin();
    if (!isElementwise(user) || user->getNumOperands() != 1 ||
        user->getNumResults() != 1 || user->getNumRegions() != 0)
      return failure();
    auto resultType = dyn_cast<RankedTensorType>(user->getResult(0).getType());
    if (!resultType)
      return failure();
    ArrayRef<int64_t> shape = op.getInput().getType().getShape();
    rewriter.setInsertionPoint(user);
    Operation *moved = rewriter.clone(*user);
    moved->setOperand(0, op.getInput());
    moved->getResult(0).setType(
        RankedTensorType::get(shape, resultType.getElementType()));
    rewriter.replaceOpWithNewOp<ReshapeOp>(user, resultType,
                                           moved->getResult(0));
    return success();
  }
};

/// linear(x, w1), linear(x, w2), ... -> slices of linear(x, concat(w1, w2,
/// ...)): projections of one input (Q, K and V; gate and up) become one
/// GEMM, which reads the weights in place, as long as all are graph
/// parameters, all or none have a bias, and every result is read through
/// its slice without a copy.
struct MergeSharedInputLinears : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    auto isParameter = [&](Value v) {
      auto arg = dyn_cast<BlockArgument>(v);
      return arg && arg.getOwner() == op->getBlock();
    };
    // Each layer once: one that reads the input as its weight too is a user
    // twice (merging it twice freed it twice).
    llvm::SmallSetVector<LinearOp, 4> candidates;
    for (Operation *user : op.getInput().getUsers()) {
      auto linear = dyn_cast<LinearOp>(user);
      if (linear && linear.getInput() == op.getInput() &&
          linear->getBlock() == op->getBlock() &&
          isParameter(linear.getWeight()) &&
          !linear.getBias() == !op.getBias() &&
          (!linear.getBias() || isParameter(linear.getBias())))
        candidates.insert(linear);
    }
    SmallVector<LinearOp> ordered = candidates.takeVector();
    llvm::sort(ordered,
               [](LinearOp a, LinearOp b) { return a->isBeforeInBlock(b); });
    // In program order, the layers whose results can be read in place and
    // meet no earlier member's in an elementwise op: kept apart, the later
    // layer's epilogue computes that op (SiLU gating), while merged, it
    // would take a kernel and two more passes over both results.
    SmallVector<LinearOp> group;
    llvm::SmallPtrSet<Operation *, 16> reached;
    int64_t offset = 0;
    for (LinearOp linear : ordered) {
      if (!readsThroughSlice(linear.getResult(), offset))
        continue;
      SmallVector<Operation *> chain = elementwiseUsers(linear.getResult());
      if (llvm::any_of(chain, [&](Operation *u) { return reached.count(u); }))
        continue;
      reached.insert(chain.begin(), chain.end());
      group.push_back(linear);
      offset += linear.getType().getShape().back();
    }
    // Once per group, from its first layer.
    if (group.size() < 2 || group.front() != op)
      return failure();
    SmallVector<Value> weights, biases;
    for (LinearOp linear : group) {
      weights.push_back(linear.getWeight());
      if (linear.getBias())
        biases.push_back(linear.getBias());
    }
    Location loc = op.getLoc();
    Value weight = ConcatOp::create(rewriter, loc, weights, 0);
    Value bias = biases.empty() ? Value()
                                : ConcatOp::create(rewriter, loc, biases, 0);
    auto merged = LinearOp::create(rewriter, loc, op.getInput(), weight, bias);
    emitRemark(op->getLoc())
        << "merged " << group.size()
        << " fuse.linear ops reading the same input into one "
           "GEMM, which reads their weights in place";
    ArrayRef<int64_t> shape = merged.getType().getShape();
    offset = 0;
    for (LinearOp linear : group) {
      SmallVector<int64_t> offsets(shape.size(), 0);
      offsets.back() = offset;
      ArrayRef<int64_t> sizes = linear.getType().getShape();
      offset += sizes.back();
      rewriter.replaceOpWithNewOp<SliceOp>(linear, merged, offsets, sizes);
    }
    return success();
  }
};

struct FuseSimplifyPass
    : fusec::impl::FuseSimplifyBase<FuseSimplifyPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    fusec::populateFuseSimplifyPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void fusec::populateFuseSimplifyPatterns(RewritePatternSet &patterns) {
  patterns.add<BatchNormToScaleShift, FoldBiasIntoConv, FoldBiasIntoLinear,
               MergeScaleShifts, MergeBiasIntoScaleShift,
               MergeScaleShiftIntoBias, MergeBiases, SplitToSlices,
               SliceBeforeReshape, UnaryBeforeReshape,
               MergeSharedInputLinears>(patterns.getContext());
}
