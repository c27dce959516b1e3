//===- TrainingKernels.cpp - CPU reference kernels of training ops --------===//
//
// Plain loops over float64 data, as Kernels.cpp; each kernel reads against
// its definition in TrainingKernels.h. The adjoints share the window and tap
// helpers of their forward kernels (KernelHelpers.h).
//
//===----------------------------------------------------------------------===//

#include "fusec/Reference/TrainingKernels.h"

#include "KernelHelpers.h"

#include <algorithm>
#include <cassert>
#include <cmath>

using namespace fusec;
using namespace fusec::ref;
using namespace fusec::ref::detail;

//===----------------------------------------------------------------------===//
// Batch norm
//===----------------------------------------------------------------------===//

static void assertPerChannel(std::initializer_list<const Tensor *> vectors,
                             int64_t channels) {
  for (const Tensor *t : vectors) {
    assert(t->rank() == 1 && t->shape[0] == channels &&
           "per-channel operands must have shape [C]");
    (void)t;
    (void)channels;
  }
}

BatchNormTrainResults
ref::batchNormTrain(const Tensor &x, const Tensor &runningMean,
                    const Tensor &runningVar, const Tensor &scale,
                    const Tensor &shift, const BatchNormTrainParams &p) {
  const AxisView v = axisView(x, p.channelAxis);
  assertPerChannel({&runningMean, &runningVar, &scale, &shift}, v.len);
  const int64_t m = v.outer * v.inner;
  assert(m >= 2 && "batch statistics need 2 values a channel or more");
  const std::vector<int64_t> cshape = {v.len};
  BatchNormTrainResults r{Tensor(x.shape), Tensor(cshape), Tensor(cshape),
                          Tensor(cshape), Tensor(cshape)};
  const double f = p.factor;
  for (int64_t c = 0; c < v.len; ++c) {
    auto at = [&](int64_t o, int64_t i) {
      return (o * v.len + c) * v.inner + i;
    };
    // Two passes: the variance of the centred values.
    double sum = 0.0;
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i)
        sum += x.data[at(o, i)];
    const double mean = sum / static_cast<double>(m);
    double sq = 0.0;
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        const double d = x.data[at(o, i)] - mean;
        sq += d * d;
      }
    const double var = sq / static_cast<double>(m);
    const double invstd = 1.0 / std::sqrt(var + p.epsilon);
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i)
        r.result.data[at(o, i)] =
            (x.data[at(o, i)] - mean) * invstd * scale.data[c] + shift.data[c];
    r.savedMean.data[c] = mean;
    r.savedInvstd.data[c] = invstd;
    r.runningMean.data[c] = (1.0 - f) * runningMean.data[c] + f * mean;
    r.runningVar.data[c] = (1.0 - f) * runningVar.data[c] +
                           f * (sq / static_cast<double>(m - 1)); // unbiased
  }
  return r;
}

BatchNormGradResults ref::normGrad(const Tensor &dy, const Tensor &x,
                                   const Tensor *scale, int64_t normRank,
                                   double epsilon, bool rms) {
  assert(dy.shape == x.shape && "output_grad has the input's shape");
  assert(normRank >= 1 && normRank <= x.rank() && "bad normRank");
  const std::vector<int64_t> rowShape(x.shape.end() - normRank, x.shape.end());
  int64_t d = 1;
  for (int64_t size : rowShape)
    d *= size;
  assert((!scale || scale->shape == rowShape) && "scale has the row's shape");
  BatchNormGradResults r{Tensor(x.shape), Tensor(rowShape), Tensor(rowShape)};
  if (d == 0)
    return r;
  const int64_t rows = x.numel() / d;
  std::vector<double> xhat(d), g(d);
  for (int64_t row = 0; row < rows; ++row) {
    const double *xr = &x.data[row * d], *dyr = &dy.data[row * d];
    double mean = 0.0, second = 0.0;
    if (!rms) {
      for (int64_t j = 0; j < d; ++j)
        mean += xr[j];
      mean /= d;
    }
    for (int64_t j = 0; j < d; ++j)
      second += (xr[j] - mean) * (xr[j] - mean);
    const double rstd = 1.0 / std::sqrt(second / d + epsilon);
    double meanG = 0.0, meanGX = 0.0;
    for (int64_t j = 0; j < d; ++j) {
      xhat[j] = (xr[j] - mean) * rstd;
      g[j] = dyr[j] * (scale ? scale->data[j] : 1.0);
      meanG += g[j];
      meanGX += g[j] * xhat[j];
      r.scale.data[j] += dyr[j] * xhat[j];
      r.shift.data[j] += dyr[j];
    }
    meanG = rms ? 0.0 : meanG / d;
    meanGX /= d;
    for (int64_t j = 0; j < d; ++j)
      r.input.data[row * d + j] = rstd * (g[j] - meanG - xhat[j] * meanGX);
  }
  return r;
}

BatchNormGradResults
ref::batchNormGrad(const Tensor &dy, const Tensor &x, const Tensor &mean,
                   const Tensor &invstd, const Tensor &scale,
                   std::optional<double> evalEpsilon, int64_t channelAxis) {
  assert(dy.shape == x.shape && "output_grad has the input's shape");
  const AxisView v = axisView(x, channelAxis);
  assertPerChannel({&mean, &invstd, &scale}, v.len);
  const double m = static_cast<double>(v.outer * v.inner);
  const std::vector<int64_t> cshape = {v.len};
  BatchNormGradResults r{Tensor(x.shape), Tensor(cshape), Tensor(cshape)};
  for (int64_t c = 0; c < v.len; ++c) {
    auto at = [&](int64_t o, int64_t i) {
      return (o * v.len + c) * v.inner + i;
    };
    const double is = evalEpsilon
                          ? 1.0 / std::sqrt(invstd.data[c] + *evalEpsilon)
                          : invstd.data[c];
    double sumDy = 0.0, sumDyXhat = 0.0;
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        const double g = dy.data[at(o, i)];
        sumDy += g;
        sumDyXhat += g * (x.data[at(o, i)] - mean.data[c]) * is;
      }
    r.shift.data[c] = sumDy;
    r.scale.data[c] = sumDyXhat;
    const double k = scale.data[c] * is;
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        const double g = dy.data[at(o, i)];
        if (evalEpsilon) {
          r.input.data[at(o, i)] = g * k;
          continue;
        }
        // The batch statistics depend on x: their gradients subtract the
        // mean of dy and the projection of dy on x^.
        const double xhat = (x.data[at(o, i)] - mean.data[c]) * is;
        r.input.data[at(o, i)] = k * (g - sumDy / m - xhat * sumDyXhat / m);
      }
  }
  return r;
}

//===----------------------------------------------------------------------===//
// Convolution gradients
//===----------------------------------------------------------------------===//

Tensor ref::convTranspose2d(const Tensor &input, const Tensor &filter,
                            const Tensor *bias, const Conv2dParams &p,
                            std::array<int64_t, 2> outputPadding) {
  const Layout layout = p.layout;
  const bool nchw = layout == Layout::NCHW;
  const Dims4 in = activationDims(input, layout);
  assert(filter.rank() == 4 && filter.shape[0] == in.c &&
         "filter must be [Ci, ...]");
  const int64_t coPerGroup = nchw ? filter.shape[1] : filter.shape[3];
  const int64_t kh = nchw ? filter.shape[2] : filter.shape[1];
  const int64_t kw = nchw ? filter.shape[3] : filter.shape[2];
  const int64_t groups = p.groups;
  assert(groups >= 1 && in.c % groups == 0 && "bad group configuration");
  const int64_t ciPerGroup = in.c / groups;
  const int64_t co = coPerGroup * groups;
  assert((!bias || (bias->rank() == 1 && bias->shape[0] == co)) &&
         "bias must have shape [Co]");
  const int64_t sh = p.strides[0], sw = p.strides[1];
  const int64_t dh = p.dilation[0], dw = p.dilation[1];
  const int64_t padTop = p.pads[0], padLeft = p.pads[2];
  const Dims4 out{in.n, co,
                  (in.h - 1) * sh - p.pads[0] - p.pads[1] + dh * (kh - 1) +
                      outputPadding[0] + 1,
                  (in.w - 1) * sw - p.pads[2] - p.pads[3] + dw * (kw - 1) +
                      outputPadding[1] + 1};
  assert(out.h >= 1 && out.w >= 1 && "empty output");

  auto filterIndex = [&](int64_t i, int64_t o, int64_t y, int64_t x) {
    if (nchw)
      return ((i * coPerGroup + o) * kh + y) * kw + x;
    return ((i * kh + y) * kw + x) * coPerGroup + o;
  };

  Tensor result(activationShape(out, layout));
  for (int64_t n = 0; n < in.n; ++n)
    for (int64_t i = 0; i < in.c; ++i) {
      const int64_t firstChannel = (i / ciPerGroup) * coPerGroup;
      for (int64_t iy = 0; iy < in.h; ++iy)
        for (int64_t ix = 0; ix < in.w; ++ix) {
          const double v =
              input.data[activationIndex(in, layout, n, i, iy, ix)];
          for (int64_t ky = 0; ky < kh; ++ky) {
            const int64_t oy = iy * sh - padTop + ky * dh;
            if (oy < 0 || oy >= out.h)
              continue; // lands in the cropped padding
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t ox = ix * sw - padLeft + kx * dw;
              if (ox < 0 || ox >= out.w)
                continue;
              for (int64_t o = 0; o < coPerGroup; ++o)
                result.data[activationIndex(out, layout, n, firstChannel + o,
                                            oy, ox)] +=
                    v * filter.data[filterIndex(i, o, ky, kx)];
            }
          }
        }
    }
  if (bias)
    for (int64_t n = 0; n < out.n; ++n)
      for (int64_t o = 0; o < co; ++o)
        for (int64_t oy = 0; oy < out.h; ++oy)
          for (int64_t ox = 0; ox < out.w; ++ox)
            result.data[activationIndex(out, layout, n, o, oy, ox)] +=
                bias->data[o];
  return result;
}

Tensor ref::conv2dFilterGrad(const Tensor &input, const Tensor &outputGrad,
                             std::array<int64_t, 2> kernel,
                             const Conv2dParams &p) {
  const Layout layout = p.layout;
  const bool nchw = layout == Layout::NCHW;
  const Dims4 in = activationDims(input, layout);
  const Dims4 out = activationDims(outputGrad, layout);
  const int64_t groups = p.groups;
  assert(groups >= 1 && in.c % groups == 0 && out.c % groups == 0 &&
         in.n == out.n && "bad group configuration");
  const int64_t ciPerGroup = in.c / groups, coPerGroup = out.c / groups;
  const int64_t kh = kernel[0], kw = kernel[1];
  const int64_t sh = p.strides[0], sw = p.strides[1];
  const int64_t dh = p.dilation[0], dw = p.dilation[1];
  const int64_t padTop = p.pads[0], padLeft = p.pads[2];

  const std::vector<int64_t> shape =
      nchw ? std::vector<int64_t>{out.c, ciPerGroup, kh, kw}
           : std::vector<int64_t>{out.c, kh, kw, ciPerGroup};
  Tensor result(shape);
  for (int64_t o = 0; o < out.c; ++o) {
    const int64_t firstChannel = (o / coPerGroup) * ciPerGroup;
    for (int64_t i = 0; i < ciPerGroup; ++i)
      for (int64_t ky = 0; ky < kh; ++ky)
        for (int64_t kx = 0; kx < kw; ++kx) {
          double acc = 0.0;
          for (int64_t n = 0; n < out.n; ++n)
            for (int64_t oy = 0; oy < out.h; ++oy) {
              const int64_t iy = oy * sh - padTop + ky * dh;
              if (iy < 0 || iy >= in.h)
                continue; // zero padding
              for (int64_t ox = 0; ox < out.w; ++ox) {
                const int64_t ix = ox * sw - padLeft + kx * dw;
                if (ix < 0 || ix >= in.w)
                  continue;
                acc += outputGrad
                           .data[activationIndex(out, layout, n, o, oy, ox)] *
                       input.data[activationIndex(in, layout, n,
                                                  firstChannel + i, iy, ix)];
              }
            }
          const int64_t at = nchw ? ((o * ciPerGroup + i) * kh + ky) * kw + kx
                                  : ((o * kh + ky) * kw + kx) * ciPerGroup + i;
          result.data[at] = acc;
        }
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Reductions and elementwise derivatives
//===----------------------------------------------------------------------===//

Tensor ref::reduceSum(const Tensor &x, const std::vector<int64_t> &axes,
                      bool keepDims) {
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t a : axes) {
    assert(a >= 0 && a < x.rank() && !reduced[a] && "bad reduction axes");
    reduced[a] = true;
  }
  // Sum into the keep-dims shape; dropping the size-1 axes keeps the data.
  std::vector<int64_t> kept = x.shape, dropped;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (reduced[i])
      kept[i] = 1;
    else
      dropped.push_back(kept[i]);
  }
  Tensor result(kept);
  std::vector<int64_t> index;
  for (int64_t i = 0; i < x.numel(); ++i) {
    unravel(i, x.shape, index);
    int64_t offset = 0;
    for (size_t j = 0; j < index.size(); ++j)
      offset = offset * kept[j] + (reduced[j] ? 0 : index[j]);
    result.data[offset] += x.data[i];
  }
  if (!keepDims)
    result.shape = dropped;
  return result;
}

static double activationDerivative(UnaryKind kind, double v, double a,
                                   double b) {
  constexpr double kPi = 3.14159265358979323846;
  switch (kind) {
  // From the result y.
  case UnaryKind::Relu:
    return v > 0.0 ? 1.0 : 0.0;
  case UnaryKind::Relu6:
    return v > 0.0 && v < 6.0 ? 1.0 : 0.0;
  case UnaryKind::Clamp:
    return v > a && v < b ? 1.0 : 0.0;
  case UnaryKind::Sigmoid:
    return v * (1.0 - v);
  case UnaryKind::Tanh:
    return 1.0 - v * v;
  // From the input x.
  case UnaryKind::LeakyRelu:
    return v > 0.0 ? 1.0 : a;
  case UnaryKind::Gelu: {
    const double cdf = 0.5 * (1.0 + std::erf(v / std::sqrt(2.0)));
    const double pdf = std::exp(-0.5 * v * v) / std::sqrt(2.0 * kPi);
    return cdf + v * pdf;
  }
  case UnaryKind::GeluTanh: {
    const double k = std::sqrt(2.0 / kPi);
    const double t = std::tanh(k * (v + 0.044715 * v * v * v));
    return 0.5 * (1.0 + t) +
           0.5 * v * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * v * v);
  }
  case UnaryKind::Silu: {
    const double s = 1.0 / (1.0 + std::exp(-v));
    return s * (1.0 + v * (1.0 - s));
  }
  case UnaryKind::HardSwish:
    if (v < -3.0)
      return 0.0;
    if (v > 3.0)
      return 1.0;
    return (2.0 * v + 3.0) / 6.0;
  case UnaryKind::Neg:
    break;
  }
  assert(false && "no activation derivative for this kind");
  return 0.0;
}

Tensor ref::activationGrad(UnaryKind kind, const Tensor &dy,
                           const Tensor &value, double a, double b) {
  assert(dy.shape == value.shape && "output_grad and value share a shape");
  Tensor result(dy.shape);
  for (int64_t i = 0; i < dy.numel(); ++i) {
    const double d = activationDerivative(kind, value.data[i], a, b);
    // A masked-off element is 0 even where dy is inf or NaN, as a select.
    const bool mask = kind == UnaryKind::Relu || kind == UnaryKind::Relu6 ||
                      kind == UnaryKind::Clamp;
    result.data[i] = mask ? (d != 0.0 ? dy.data[i] : 0.0) : dy.data[i] * d;
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Adjoints of pooling, resampling and slicing
//===----------------------------------------------------------------------===//

Tensor ref::maxPool2dGrad(const Tensor &x, const Tensor &dy,
                          const Pool2dParams &p) {
  const Dims4 in = activationDims(x, p.layout);
  const Dims4 out = poolOutput(in, p);
  assert(dy.shape == activationShape(out, p.layout) &&
         "output_grad has the pooled shape");
  Tensor result(x.shape);
  for (int64_t n = 0; n < out.n; ++n)
    for (int64_t c = 0; c < out.c; ++c)
      for (int64_t oy = 0; oy < out.h; ++oy)
        for (int64_t ox = 0; ox < out.w; ++ox) {
          const int64_t arg = maxPoolArgmax(x, in, p, n, c, oy, ox);
          if (arg >= 0)
            result.data[arg] +=
                dy.data[activationIndex(out, p.layout, n, c, oy, ox)];
        }
  return result;
}

Tensor ref::avgPool2dGrad(const Tensor &dy,
                          const std::vector<int64_t> &inputShape,
                          const Pool2dParams &p) {
  Tensor result(inputShape);
  const Dims4 in = activationDims(result, p.layout);
  const Dims4 out = poolOutput(in, p);
  assert(dy.shape == activationShape(out, p.layout) &&
         "output_grad has the pooled shape");
  for (int64_t n = 0; n < out.n; ++n)
    for (int64_t c = 0; c < out.c; ++c)
      for (int64_t oy = 0; oy < out.h; ++oy)
        for (int64_t ox = 0; ox < out.w; ++ox) {
          const int64_t count = avgPoolDivisor(in, p, oy, ox);
          if (count == 0)
            continue; // the forward wrote 0, whatever the input
          const double g =
              dy.data[activationIndex(out, p.layout, n, c, oy, ox)] /
              static_cast<double>(count);
          const int64_t y0 = oy * p.strides[0] - p.pads[0];
          const int64_t x0 = ox * p.strides[1] - p.pads[2];
          const int64_t y1 = y0 + p.kernel[0], x1 = x0 + p.kernel[1];
          for (int64_t iy = std::max<int64_t>(y0, 0); iy < std::min(y1, in.h);
               ++iy)
            for (int64_t ix = std::max<int64_t>(x0, 0); ix < std::min(x1, in.w);
                 ++ix)
              result.data[activationIndex(in, p.layout, n, c, iy, ix)] += g;
        }
  return result;
}

Tensor ref::upsampleGrad(const Tensor &dy,
                         const std::vector<int64_t> &inputShape,
                         const UpsampleParams &p) {
  Tensor result(inputShape);
  const Dims4 in = activationDims(result, p.layout);
  const Dims4 out{in.n, in.c, p.outSize[0], p.outSize[1]};
  assert(dy.shape == activationShape(out, p.layout) &&
         "output_grad has the upsampled shape");
  auto add = [&](int64_t n, int64_t c, int64_t h, int64_t w, double v) {
    result.data[activationIndex(in, p.layout, n, c, h, w)] += v;
  };
  for (int64_t n = 0; n < out.n; ++n)
    for (int64_t c = 0; c < out.c; ++c)
      for (int64_t oy = 0; oy < out.h; ++oy)
        for (int64_t ox = 0; ox < out.w; ++ox) {
          const double g =
              dy.data[activationIndex(out, p.layout, n, c, oy, ox)];
          if (p.mode == UpsampleMode::Nearest) {
            add(n, c, nearestSource(oy, in.h, out.h, p.coordScale[0]),
                nearestSource(ox, in.w, out.w, p.coordScale[1]), g);
            continue;
          }
          // The weights of upsample(), taps that coincide accumulating.
          const LinearTaps ty =
              linearSource(oy, in.h, out.h, p.coordScale[0], p.alignCorners);
          const LinearTaps tx =
              linearSource(ox, in.w, out.w, p.coordScale[1], p.alignCorners);
          const double top = (1.0 - ty.lambda) * g, bottom = ty.lambda * g;
          add(n, c, ty.i0, tx.i0, (1.0 - tx.lambda) * top);
          add(n, c, ty.i0, tx.i1, tx.lambda * top);
          add(n, c, ty.i1, tx.i0, (1.0 - tx.lambda) * bottom);
          add(n, c, ty.i1, tx.i1, tx.lambda * bottom);
        }
  return result;
}

Tensor ref::sliceGrad(const Tensor &dy, const std::vector<int64_t> &offsets,
                      const std::vector<int64_t> &shape) {
  const size_t rank = shape.size();
  assert(offsets.size() == rank && dy.shape.size() == rank &&
         "one offset per axis, one rank");
  Tensor result(shape);
  std::vector<int64_t> index;
  for (int64_t i = 0; i < dy.numel(); ++i) {
    unravel(i, dy.shape, index);
    int64_t offset = 0;
    for (size_t j = 0; j < rank; ++j) {
      assert(offsets[j] + index[j] < shape[j] && "block out of bounds");
      offset = offset * shape[j] + offsets[j] + index[j];
    }
    result.data[offset] = dy.data[i];
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

AttentionGradResults ref::attentionGrad(const Tensor &q, const Tensor &k,
                                        const Tensor &v, const Tensor &o,
                                        const Tensor &dO, const Tensor &lse,
                                        const Tensor *mask, double scale,
                                        bool causal) {
  const int64_t batch = q.shape[0], hq = q.shape[1], nq = q.shape[2],
                d = q.shape[3];
  const int64_t hkv = k.shape[1], nk = k.shape[2], dv = v.shape[3];
  assert(o.shape == std::vector<int64_t>({batch, hq, nq, dv}) &&
         dO.shape == o.shape && "bad output shape");
  assert(lse.shape == std::vector<int64_t>({batch, hq, nq}) && "bad lse");
  AttentionGradResults r{Tensor(q.shape), Tensor(k.shape), Tensor(v.shape),
                         Tensor({batch, hq, nq, nk})};
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t kv = (b * hkv + h / (hq / hkv)) * nk;
      for (int64_t i = 0; i < nq; ++i) {
        const int64_t row = (b * hq + h) * nq + i;
        const double rowLse = lse.data[row];
        if (std::isinf(rowLse) && rowLse < 0)
          continue;
        const double *oRow = &o.data[row * dv], *dORow = &dO.data[row * dv];
        const double *qRow = &q.data[row * d];
        double delta = 0.0;
        for (int64_t e = 0; e < dv; ++e)
          delta += dORow[e] * oRow[e];
        for (int64_t j = 0; j < nk; ++j) {
          const double s =
              attentionScore(q, k, mask, scale, causal, b, h, i, j);
          const double p = std::exp(s - rowLse);
          if (p == 0.0)
            continue;
          const double *vRow = &v.data[(kv + j) * dv];
          double dp = 0.0;
          for (int64_t e = 0; e < dv; ++e)
            dp += dORow[e] * vRow[e];
          const double ds = p * (dp - delta);
          r.score.data[row * nk + j] = ds;
          const double *kRow = &k.data[(kv + j) * d];
          for (int64_t e = 0; e < d; ++e) {
            r.query.data[row * d + e] += scale * ds * kRow[e];
            r.key.data[(kv + j) * d + e] += scale * ds * qRow[e];
          }
          for (int64_t e = 0; e < dv; ++e)
            r.value.data[(kv + j) * dv + e] += p * dORow[e];
        }
      }
    }
  return r;
}
