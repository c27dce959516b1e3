//===- TrainingKernels.h - CPU reference kernels of training ops -*- C++
//-*-===//
//
// Plain-loop float64 implementations of the ops of training graphs
// (dialect/Fuse/FuseTrainingOps.td): batch norm with batch statistics and
// its backward, the gradients of convolutions, pooling, resampling and
// slicing, the derivatives of the activations, and the sum that undoes a
// broadcast. The conventions of Kernels.h hold: row-major float64 tensors,
// float64 accumulation, no rounding, shapes checked by the verifiers and
// only asserted here.
//
// The adjoints walk the windows and taps of their forward kernels through
// the same helpers, so each is the exact transpose of its forward op.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_REFERENCE_TRAININGKERNELS_H
#define FUSEC_REFERENCE_TRAININGKERNELS_H

#include "fusec/Reference/Kernels.h"

#include <optional>

namespace fusec::ref {

struct BatchNormTrainParams {
  double epsilon = 1e-5;
  /// The running-statistics factor f: the momentum (PyTorch's default 0.1),
  /// or, with a cumulative average, 1 / batches tracked (this batch
  /// included).
  double factor = 0.1;
  int64_t channelAxis = 0;
};

struct BatchNormTrainResults {
  Tensor result, savedMean, savedInvstd, runningMean, runningVar;
};

/// Batch norm with the batch's statistics over every axis but
/// `channelAxis` (M values a channel, M >= 2): the biased variance
/// normalises; the running variance takes the unbiased one, var * M / (M-1):
///   running = (1 - f) * running + f * statistic.
BatchNormTrainResults batchNormTrain(const Tensor &x, const Tensor &runningMean,
                                     const Tensor &runningVar,
                                     const Tensor &scale, const Tensor &shift,
                                     const BatchNormTrainParams &p);

struct BatchNormGradResults {
  Tensor input, scale, shift;
};

/// The backward of a batch norm, x^ = (x - mean) * invstd:
/// shift = sum(dy), scale = sum(dy * x^) per channel, and
///  - training (evalEpsilon empty): `invstd` the saved inverse std,
///    input = scale * invstd * (dy - shift / M - x^ * scale / M);
///  - evaluation: `invstd` holds the running variance, the inverse std is
///    1 / sqrt(variance + *evalEpsilon) and input = dy * scale * invstd.
BatchNormGradResults batchNormGrad(const Tensor &dy, const Tensor &x,
                                   const Tensor &mean, const Tensor &invstd,
                                   const Tensor &scale,
                                   std::optional<double> evalEpsilon,
                                   int64_t channelAxis);

/// The backward of a layer norm (or, with `rms`, an RMS norm) over rows of
/// the trailing `normRank` axes, the row statistics recomputed from `x`:
/// with x^ the normalised row, g = dy * scale (1 without one) and rstd the
/// inverse std (root mean square):
///   input = rstd * (g - mean(g) - x^ * mean(g * x^))   (layer norm),
///   input = rstd * (g - x^ * mean(g * x^))             (RMS norm),
///   scale = sum over rows of dy * x^, shift = sum over rows of dy.
/// The same struct as the batch norm's gradients.
BatchNormGradResults normGrad(const Tensor &dy, const Tensor &x,
                              const Tensor *scale, int64_t normRank,
                              double epsilon, bool rms);

struct AttentionGradResults {
  Tensor query, key, value;
  /// dS, [B, Hq, Nq, Nk] (0 where P is 0).
  Tensor score;
};

/// The backward of attention(q, k, v, mask, scale, causal) given its output
/// `o`, the output's gradient `dO` and the row log-sum-exp `lse`: with
/// P = exp(S - lse) (0 where lse is -inf), dP = dO V^T and
/// dS = P * (dP - rowsum(dO * O)): query = scale * dS K,
/// key = scale * dS^T Q and value = P^T dO, the last two summed over the
/// query heads that share a key/value head; score = dS.
AttentionGradResults attentionGrad(const Tensor &q, const Tensor &k,
                                   const Tensor &v, const Tensor &o,
                                   const Tensor &dO, const Tensor &lse,
                                   const Tensor *mask, double scale,
                                   bool causal);

/// Transposed convolution, the adjoint of conv2d with the same window:
/// result[n, h * sh - top + kh * dh, w * sw - left + kw * dw, g * Cog + o]
///   += input[n, h, w, ci] * filter[ci, kh, kw, o],  g = ci / (Ci / groups).
/// Filters are [Ci, Kh, Kw, Co/g] for NHWC and [Ci, Co/g, Kh, Kw] for NCHW
/// (conv2d's filters with the channel axes exchanged). The output extent is
/// (H - 1) * sh - top - bottom + dh * (Kh - 1) + outputPadding + 1.
Tensor convTranspose2d(const Tensor &input, const Tensor &filter,
                       const Tensor *bias, const Conv2dParams &p,
                       std::array<int64_t, 2> outputPadding);

/// The filter gradient of conv2d(input, filter of extent `kernel`) given
/// the gradient of its result: a filter-shaped sum over N, Ho and Wo.
Tensor conv2dFilterGrad(const Tensor &input, const Tensor &outputGrad,
                        std::array<int64_t, 2> kernel, const Conv2dParams &p);

/// Sum over `axes` (each normalised to [0, rank), distinct); the reduced
/// axes are dropped, or kept with extent 1.
Tensor reduceSum(const Tensor &x, const std::vector<int64_t> &axes,
                 bool keepDims);

/// dy * f'(value) for the activation `kind` (Neg excluded). `value` is the
/// result y for Relu, Relu6, Clamp, Sigmoid and Tanh, and the input x for
/// the others (see fuse.activation_grad). `a`, `b`: as for unary().
Tensor activationGrad(UnaryKind kind, const Tensor &dy, const Tensor &value,
                      double a = 0.0, double b = 0.0);

/// Gradient of maxPool2d(x, p): each element of dy goes to its window's
/// winner (maxPoolArgmax's rule), summed where windows share one.
Tensor maxPool2dGrad(const Tensor &x, const Tensor &dy, const Pool2dParams &p);

/// Gradient of avgPool2d(x, p) for x of `inputShape`: each element of dy,
/// divided by its window's divisor, added to the window's real elements.
Tensor avgPool2dGrad(const Tensor &dy, const std::vector<int64_t> &inputShape,
                     const Pool2dParams &p);

/// Gradient of upsample(x, p) for x of `inputShape` (p.outSize is dy's
/// extent): dy scattered back through upsample's taps and weights.
Tensor upsampleGrad(const Tensor &dy, const std::vector<int64_t> &inputShape,
                    const UpsampleParams &p);

/// Zeros of `shape` with dy placed at `offsets` (the adjoint of slice).
Tensor sliceGrad(const Tensor &dy, const std::vector<int64_t> &offsets,
                 const std::vector<int64_t> &shape);

} // namespace fusec::ref

#endif // FUSEC_REFERENCE_TRAININGKERNELS_H
