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
               MergeScaleShiftIntoBias, MergeBiases>(patterns.getContext());
}
