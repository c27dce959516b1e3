//===- Kernels.cpp - CPU reference kernels for fuse ops -------------------===//
//
// Plain loops over float64 data. Speed does not matter here; every kernel is
// written so that it can be checked by reading it against the definition in
// Kernels.h.
//
//===----------------------------------------------------------------------===//

#include "fusec/Reference/Kernels.h"

#include "KernelHelpers.h"

#include "fusec/Support/Float16.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <utility>

using namespace fusec;
using namespace fusec::ref;
using namespace fusec::ref::detail;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = 3.14159265358979323846;
} // namespace

/// Product of shape[begin, end).
int64_t ref::detail::product(const std::vector<int64_t> &shape, size_t begin,
                             size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i)
    n *= shape[i];
  return n;
}

int64_t ref::detail::product(const std::vector<int64_t> &shape) {
  return product(shape, 0, shape.size());
}

namespace {

/// NumPy broadcast of two shapes (aligned on the right).
std::vector<int64_t> broadcastShapes(const std::vector<int64_t> &a,
                                     const std::vector<int64_t> &b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Missing leading dimensions behave as 1.
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    assert((da == db || da == 1 || db == 1) && "shapes do not broadcast");
    result[i] = da == 1 ? db : da;
  }
  return result;
}

} // namespace

void ref::detail::unravel(int64_t linear, const std::vector<int64_t> &shape,
                          std::vector<int64_t> &index) {
  index.resize(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = linear % shape[i];
    linear /= shape[i];
  }
}

namespace {} // namespace

int64_t ref::detail::broadcastOffset(const std::vector<int64_t> &index,
                                     const std::vector<int64_t> &shape) {
  assert(index.size() >= shape.size());
  const size_t lead = index.size() - shape.size();
  int64_t offset = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t pos = shape[i] == 1 ? 0 : index[lead + i];
    assert(pos < shape[i]);
    offset = offset * shape[i] + pos;
  }
  return offset;
}

Dims4 ref::detail::activationDims(const Tensor &t, Layout layout) {
  assert(t.rank() == 4 && "expected a 4-D activation");
  const auto &s = t.shape;
  if (layout == Layout::NCHW)
    return {s[0], s[1], s[2], s[3]};
  return {s[0], s[3], s[1], s[2]};
}

std::vector<int64_t> ref::detail::activationShape(const Dims4 &d,
                                                  Layout layout) {
  if (layout == Layout::NCHW)
    return {d.n, d.c, d.h, d.w};
  return {d.n, d.h, d.w, d.c};
}

int64_t ref::detail::activationIndex(const Dims4 &d, Layout layout, int64_t n,
                                     int64_t c, int64_t h, int64_t w) {
  if (layout == Layout::NCHW)
    return ((n * d.c + c) * d.h + h) * d.w + w;
  return ((n * d.h + h) * d.w + w) * d.c + c;
}

AxisView ref::detail::axisView(const Tensor &x, int64_t axis) {
  assert(axis >= 0 && axis < x.rank() && "axis out of range");
  return {product(x.shape, 0, axis), x.shape[axis],
          product(x.shape, axis + 1, x.shape.size())};
}

namespace {

/// Number of trailing elements normalised by layerNorm / rmsNorm, after
/// checking that an optional affine tensor has the trailing shape.
int64_t normInner(const Tensor &x, const Tensor *affine, int64_t normRank) {
  assert(normRank >= 1 && normRank <= x.rank() && "bad normRank");
  const size_t first = x.shape.size() - normRank;
  if (affine) {
    assert(std::equal(affine->shape.begin(), affine->shape.end(),
                      x.shape.begin() + first, x.shape.end()) &&
           affine->rank() == normRank && "affine tensor has the wrong shape");
  }
  return product(x.shape, first, x.shape.size());
}

} // namespace

//===----------------------------------------------------------------------===//
// Tensor and rounding
//===----------------------------------------------------------------------===//

double ref::roundTo(DType dt, double v) {
  switch (dt) {
  case DType::F32:
    // IEEE double -> float conversion already rounds to nearest even.
    return static_cast<double>(static_cast<float>(v));
  case DType::F16:
    return halfBitsToDouble(doubleToHalfBits(v));
  case DType::BF16:
    return bf16BitsToDouble(doubleToBF16Bits(v));
  }
  assert(false && "unknown dtype");
  return v;
}

Tensor::Tensor(std::vector<int64_t> dims, double fill)
    : shape(std::move(dims)) {
  data.assign(numel(), fill);
}

Tensor::Tensor(std::vector<int64_t> dims, std::vector<double> values)
    : shape(std::move(dims)), data(std::move(values)) {
  assert(static_cast<int64_t>(data.size()) == numel() &&
         "data size does not match the shape");
}

int64_t Tensor::numel() const {
  assert(std::all_of(shape.begin(), shape.end(),
                     [](int64_t d) { return d >= 0; }) &&
         "negative dimension");
  return product(shape);
}

//===----------------------------------------------------------------------===//
// Convolution and normalisation
//===----------------------------------------------------------------------===//

Tensor ref::conv2d(const Tensor &input, const Tensor &filter,
                   const Tensor *bias, const Conv2dParams &p) {
  const Layout layout = p.layout;
  const bool nchw = layout == Layout::NCHW;
  const Dims4 in = activationDims(input, layout);
  assert(filter.rank() == 4 && "expected a 4-D filter");
  // OIHW for NCHW, OHWI for NHWC.
  const int64_t co = filter.shape[0];
  const int64_t ciPerGroup = nchw ? filter.shape[1] : filter.shape[3];
  const int64_t kh = nchw ? filter.shape[2] : filter.shape[1];
  const int64_t kw = nchw ? filter.shape[3] : filter.shape[2];
  const int64_t groups = p.groups;
  assert(groups >= 1 && in.c % groups == 0 && co % groups == 0 &&
         ciPerGroup == in.c / groups && "bad group configuration");
  assert((!bias || (bias->rank() == 1 && bias->shape[0] == co)) &&
         "bias must have shape [Co]");

  const int64_t sh = p.strides[0], sw = p.strides[1];
  const int64_t padTop = p.pads[0], padBottom = p.pads[1];
  const int64_t padLeft = p.pads[2], padRight = p.pads[3];
  const int64_t dh = p.dilation[0], dw = p.dilation[1];
  assert(sh >= 1 && sw >= 1 && dh >= 1 && dw >= 1);
  const int64_t spanH = in.h + padTop + padBottom - dh * (kh - 1) - 1;
  const int64_t spanW = in.w + padLeft + padRight - dw * (kw - 1) - 1;
  assert(spanH >= 0 && spanW >= 0 && "kernel larger than the padded input");
  const Dims4 out{in.n, co, spanH / sh + 1, spanW / sw + 1};

  auto filterIndex = [&](int64_t o, int64_t i, int64_t y, int64_t x) {
    if (nchw)
      return ((o * ciPerGroup + i) * kh + y) * kw + x;
    return ((o * kh + y) * kw + x) * ciPerGroup + i;
  };

  Tensor result(activationShape(out, layout));
  const int64_t coPerGroup = co / groups;
  for (int64_t n = 0; n < out.n; ++n)
    for (int64_t o = 0; o < co; ++o) {
      const int64_t firstChannel = (o / coPerGroup) * ciPerGroup;
      for (int64_t oy = 0; oy < out.h; ++oy)
        for (int64_t ox = 0; ox < out.w; ++ox) {
          double acc = 0.0;
          for (int64_t i = 0; i < ciPerGroup; ++i)
            for (int64_t ky = 0; ky < kh; ++ky) {
              const int64_t iy = oy * sh - padTop + ky * dh;
              if (iy < 0 || iy >= in.h)
                continue; // zero padding
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t ix = ox * sw - padLeft + kx * dw;
                if (ix < 0 || ix >= in.w)
                  continue;
                acc += input.data[activationIndex(in, layout, n,
                                                  firstChannel + i, iy, ix)] *
                       filter.data[filterIndex(o, i, ky, kx)];
              }
            }
          if (bias)
            acc += bias->data[o];
          result.data[activationIndex(out, layout, n, o, oy, ox)] = acc;
        }
    }
  return result;
}

Tensor ref::batchNorm(const Tensor &x, const Tensor &mean, const Tensor &var,
                      const Tensor &scale, const Tensor &shift, double eps,
                      int64_t channelAxis) {
  const AxisView v = axisView(x, channelAxis);
  for (const Tensor *t : {&mean, &var, &scale, &shift}) {
    assert(t->rank() == 1 && t->shape[0] == v.len &&
           "batch norm parameters must have shape [C]");
    (void)t;
  }
  Tensor result(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / v.inner) % v.len;
    result.data[i] = (x.data[i] - mean.data[c]) / std::sqrt(var.data[c] + eps) *
                         scale.data[c] +
                     shift.data[c];
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Tensor ref::binary(BinaryKind kind, const Tensor &lhs, const Tensor &rhs) {
  Tensor result(broadcastShapes(lhs.shape, rhs.shape));
  std::vector<int64_t> index;
  for (int64_t i = 0; i < result.numel(); ++i) {
    unravel(i, result.shape, index);
    const double a = lhs.data[broadcastOffset(index, lhs.shape)];
    const double b = rhs.data[broadcastOffset(index, rhs.shape)];
    double r = 0.0;
    switch (kind) {
    case BinaryKind::Add:
      r = a + b;
      break;
    case BinaryKind::Sub:
      r = a - b;
      break;
    case BinaryKind::Mul:
      r = a * b;
      break;
    case BinaryKind::Div:
      r = a / b;
      break;
    }
    result.data[i] = r;
  }
  return result;
}

Tensor ref::biasAdd(const Tensor &x, const Tensor &bias, int64_t axis) {
  const AxisView v = axisView(x, axis);
  assert(bias.rank() == 1 && bias.shape[0] == v.len &&
         "bias must have shape [x.shape[axis]]");
  Tensor result(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    result.data[i] = x.data[i] + bias.data[(i / v.inner) % v.len];
  return result;
}

Tensor ref::scaleShift(const Tensor &x, const Tensor &scale,
                       const Tensor &shift, int64_t axis) {
  const AxisView v = axisView(x, axis);
  assert(scale.rank() == 1 && scale.shape[0] == v.len && shift.rank() == 1 &&
         shift.shape[0] == v.len && "scale/shift must have shape [C]");
  Tensor result(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / v.inner) % v.len;
    result.data[i] = x.data[i] * scale.data[c] + shift.data[c];
  }
  return result;
}

std::pair<Tensor, Tensor> ref::batchNormCoefficients(const Tensor &mean,
                                                     const Tensor &var,
                                                     const Tensor &scale,
                                                     const Tensor &shift,
                                                     double eps) {
  Tensor s(mean.shape), t(mean.shape);
  for (int64_t c = 0; c < mean.numel(); ++c) {
    s.data[c] = scale.data[c] / std::sqrt(var.data[c] + eps);
    t.data[c] = shift.data[c] - mean.data[c] * s.data[c];
  }
  return {s, t};
}

/// Clamps to [lo, hi] but lets NaN through, as the frameworks do.
static double clampNaN(double x, double lo, double hi) {
  if (x < lo)
    return lo;
  if (x > hi)
    return hi;
  return x;
}

static double applyUnary(UnaryKind kind, double x, double a, double b) {
  switch (kind) {
  case UnaryKind::Relu:
    return x < 0.0 ? 0.0 : x;
  case UnaryKind::Relu6:
    return clampNaN(x, 0.0, 6.0);
  case UnaryKind::Clamp:
    return clampNaN(x, a, b);
  case UnaryKind::LeakyRelu:
    return x >= 0.0 ? x : a * x;
  case UnaryKind::Gelu:
    return x * 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
  case UnaryKind::GeluTanh: {
    const double k = std::sqrt(2.0 / kPi);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
  }
  case UnaryKind::Silu:
    return x / (1.0 + std::exp(-x));
  case UnaryKind::Sigmoid:
    return 1.0 / (1.0 + std::exp(-x));
  case UnaryKind::Tanh:
    return std::tanh(x);
  case UnaryKind::HardSwish:
    return x * clampNaN(x + 3.0, 0.0, 6.0) / 6.0;
  case UnaryKind::Neg:
    return -x;
  }
  assert(false && "unknown unary kind");
  return x;
}

Tensor ref::unary(UnaryKind kind, const Tensor &x, double a, double b) {
  Tensor result(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    result.data[i] = applyUnary(kind, x.data[i], a, b);
  return result;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

Tensor ref::matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
                   bool transposeRhs) {
  assert(lhs.rank() >= 2 && rhs.rank() >= 2 && "matmul needs rank >= 2");
  const size_t lr = lhs.shape.size(), rr = rhs.shape.size();
  const int64_t m = transposeLhs ? lhs.shape[lr - 1] : lhs.shape[lr - 2];
  const int64_t k = transposeLhs ? lhs.shape[lr - 2] : lhs.shape[lr - 1];
  const int64_t n = transposeRhs ? rhs.shape[rr - 2] : rhs.shape[rr - 1];
  assert(k == (transposeRhs ? rhs.shape[rr - 1] : rhs.shape[rr - 2]) &&
         "contraction sizes differ");

  const std::vector<int64_t> lhsBatch(lhs.shape.begin(), lhs.shape.end() - 2);
  const std::vector<int64_t> rhsBatch(rhs.shape.begin(), rhs.shape.end() - 2);
  const std::vector<int64_t> batch = broadcastShapes(lhsBatch, rhsBatch);
  std::vector<int64_t> shape = batch;
  shape.push_back(m);
  shape.push_back(n);
  Tensor result(shape);

  std::vector<int64_t> index;
  for (int64_t bi = 0; bi < product(batch); ++bi) {
    unravel(bi, batch, index);
    const int64_t lhsBase = broadcastOffset(index, lhsBatch) * m * k;
    const int64_t rhsBase = broadcastOffset(index, rhsBatch) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double a =
              lhs.data[lhsBase + (transposeLhs ? kk * m + i : i * k + kk)];
          const double b =
              rhs.data[rhsBase + (transposeRhs ? j * k + kk : kk * n + j)];
          acc += a * b;
        }
        result.data[(bi * m + i) * n + j] = acc;
      }
  }
  return result;
}

Tensor ref::linear(const Tensor &x, const Tensor &weight, const Tensor *bias) {
  assert(x.rank() >= 1 && weight.rank() == 2 && "bad linear operands");
  const int64_t k = x.shape.back();
  const int64_t n = weight.shape[0];
  assert(weight.shape[1] == k && "weight must have shape [N, K]");
  assert((!bias || (bias->rank() == 1 && bias->shape[0] == n)) &&
         "bias must have shape [N]");
  std::vector<int64_t> shape = x.shape;
  shape.back() = n;
  Tensor result(shape);
  const int64_t rows = product(x.shape, 0, x.shape.size() - 1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t kk = 0; kk < k; ++kk)
        acc += x.data[r * k + kk] * weight.data[j * k + kk];
      if (bias)
        acc += bias->data[j];
      result.data[r * n + j] = acc;
    }
  return result;
}

Tensor ref::layerNorm(const Tensor &x, const Tensor *scale, const Tensor *shift,
                      int64_t normRank, double eps) {
  const int64_t inner = normInner(x, scale, normRank);
  normInner(x, shift, normRank);
  Tensor result(x.shape);
  if (inner == 0)
    return result;
  const int64_t rows = x.numel() / inner;
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = &x.data[r * inner];
    double mean = 0.0;
    for (int64_t j = 0; j < inner; ++j)
      mean += row[j];
    mean /= inner;
    // Two passes: the variance of the centred values (biased, divide by n).
    double var = 0.0;
    for (int64_t j = 0; j < inner; ++j)
      var += (row[j] - mean) * (row[j] - mean);
    var /= inner;
    const double invStd = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < inner; ++j) {
      double y = (row[j] - mean) * invStd;
      if (scale)
        y *= scale->data[j];
      if (shift)
        y += shift->data[j];
      result.data[r * inner + j] = y;
    }
  }
  return result;
}

Tensor ref::rmsNorm(const Tensor &x, const Tensor *scale, int64_t normRank,
                    double eps) {
  const int64_t inner = normInner(x, scale, normRank);
  Tensor result(x.shape);
  if (inner == 0)
    return result;
  const int64_t rows = x.numel() / inner;
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = &x.data[r * inner];
    double meanSquare = 0.0;
    for (int64_t j = 0; j < inner; ++j)
      meanSquare += row[j] * row[j];
    meanSquare /= inner;
    const double denom = std::sqrt(meanSquare + eps);
    for (int64_t j = 0; j < inner; ++j) {
      double y = row[j] / denom;
      if (scale)
        y *= scale->data[j];
      result.data[r * inner + j] = y;
    }
  }
  return result;
}

Tensor ref::softmax(const Tensor &x, int64_t axis) {
  const AxisView v = axisView(x, axis);
  Tensor result(x.shape);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      auto at = [&](int64_t a) { return (o * v.len + a) * v.inner + i; };
      double maxVal = -kInf;
      for (int64_t a = 0; a < v.len; ++a)
        maxVal = std::max(maxVal, x.data[at(a)]);
      double sum = 0.0;
      for (int64_t a = 0; a < v.len; ++a)
        sum += std::exp(x.data[at(a)] - maxVal);
      for (int64_t a = 0; a < v.len; ++a)
        result.data[at(a)] = std::exp(x.data[at(a)] - maxVal) / sum;
    }
  return result;
}

double ref::detail::attentionScore(const Tensor &q, const Tensor &k,
                                   const Tensor *mask, double scale,
                                   bool causal, int64_t b, int64_t h, int64_t i,
                                   int64_t j) {
  if (causal && j > i)
    return -kInf;
  const int64_t hq = q.shape[1], nq = q.shape[2], d = q.shape[3];
  const int64_t hkv = k.shape[1], nk = k.shape[2];
  const double *qRow = &q.data[((b * hq + h) * nq + i) * d];
  const double *kRow = &k.data[((b * hkv + h / (hq / hkv)) * nk + j) * d];
  double dot = 0.0;
  for (int64_t e = 0; e < d; ++e)
    dot += qRow[e] * kRow[e];
  double s = scale * dot;
  if (mask)
    s += mask->data[broadcastOffset({b, h, i, j}, mask->shape)];
  return s;
}

Tensor ref::attention(const Tensor &q, const Tensor &k, const Tensor &v,
                      const Tensor *mask, double scale, bool causal,
                      Tensor *lse) {
  assert(q.rank() == 4 && k.rank() == 4 && v.rank() == 4 &&
         "attention operands must be 4-D");
  const int64_t batch = q.shape[0], hq = q.shape[1], nq = q.shape[2],
                d = q.shape[3];
  const int64_t hkv = k.shape[1], nk = k.shape[2], dv = v.shape[3];
  assert(k.shape[0] == batch && k.shape[3] == d && "bad key shape");
  assert(v.shape[0] == batch && v.shape[1] == hkv && v.shape[2] == nk &&
         "bad value shape");
  assert(hkv >= 1 && hq % hkv == 0 && "Hq must be a multiple of Hkv");
  const std::vector<int64_t> scoreShape = {batch, hq, nq, nk};
  if (mask) {
    assert(mask->rank() >= 2 && mask->rank() <= 4 && "bad mask rank");
    assert(broadcastShapes(scoreShape, mask->shape) == scoreShape &&
           "mask does not broadcast to [B, Hq, Nq, Nk]");
  }
  const int64_t groupSize = hq / hkv;

  Tensor result({batch, hq, nq, dv});
  if (lse)
    *lse = Tensor({batch, hq, nq});
  std::vector<double> scores(nk);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t kvHead = h / groupSize;
      const double *vBase = &v.data[(b * hkv + kvHead) * nk * dv];
      for (int64_t i = 0; i < nq; ++i) {
        double maxScore = -kInf;
        for (int64_t j = 0; j < nk; ++j) {
          scores[j] = attentionScore(q, k, mask, scale, causal, b, h, i, j);
          maxScore = std::max(maxScore, scores[j]);
        }
        double *out = &result.data[((b * hq + h) * nq + i) * dv];
        double *rowLse = lse ? &lse->data[(b * hq + h) * nq + i] : nullptr;
        // Fully masked row: no visible key, the output stays zero.
        if (maxScore == -kInf) {
          if (rowLse)
            *rowLse = -kInf;
          continue;
        }
        double sum = 0.0;
        for (int64_t j = 0; j < nk; ++j) {
          scores[j] = std::exp(scores[j] - maxScore);
          sum += scores[j];
        }
        if (rowLse)
          *rowLse = maxScore + std::log(sum);
        for (int64_t j = 0; j < nk; ++j) {
          const double weight = scores[j] / sum;
          for (int64_t e = 0; e < dv; ++e)
            out[e] += weight * vBase[j * dv + e];
        }
      }
    }
  return result;
}

//===----------------------------------------------------------------------===//
// Pooling and resampling
//===----------------------------------------------------------------------===//

Dims4 ref::detail::poolOutput(const Dims4 &in, const Pool2dParams &p) {
  const int64_t spanH = in.h + p.pads[0] + p.pads[1] - p.kernel[0];
  const int64_t spanW = in.w + p.pads[2] + p.pads[3] - p.kernel[1];
  assert(p.strides[0] >= 1 && p.strides[1] >= 1);
  assert(spanH >= 0 && spanW >= 0 && "window larger than the padded input");
  return {in.n, in.c, spanH / p.strides[0] + 1, spanW / p.strides[1] + 1};
}

int64_t ref::detail::maxPoolArgmax(const Tensor &x, const Dims4 &in,
                                   const Pool2dParams &p, int64_t n, int64_t c,
                                   int64_t oy, int64_t ox) {
  int64_t arg = -1;
  double best = -kInf;
  for (int64_t ky = 0; ky < p.kernel[0]; ++ky) {
    const int64_t iy = oy * p.strides[0] - p.pads[0] + ky;
    if (iy < 0 || iy >= in.h)
      continue; // padding acts as -inf
    for (int64_t kx = 0; kx < p.kernel[1]; ++kx) {
      const int64_t ix = ox * p.strides[1] - p.pads[2] + kx;
      if (ix < 0 || ix >= in.w)
        continue;
      const int64_t at = activationIndex(in, p.layout, n, c, iy, ix);
      const double val = x.data[at];
      // The first element stands until beaten (so an all -inf window picks
      // it); NaN propagates, as in PyTorch.
      if (arg < 0 || val > best || std::isnan(val)) {
        arg = at;
        best = val;
      }
    }
  }
  return arg;
}

Tensor ref::maxPool2d(const Tensor &x, const Pool2dParams &p) {
  const Dims4 in = activationDims(x, p.layout);
  const Dims4 out = poolOutput(in, p);
  Tensor result(activationShape(out, p.layout));
  for (int64_t n = 0; n < out.n; ++n)
    for (int64_t c = 0; c < out.c; ++c)
      for (int64_t oy = 0; oy < out.h; ++oy)
        for (int64_t ox = 0; ox < out.w; ++ox) {
          const int64_t arg = maxPoolArgmax(x, in, p, n, c, oy, ox);
          result.data[activationIndex(out, p.layout, n, c, oy, ox)] =
              arg < 0 ? -kInf : x.data[arg];
        }
  return result;
}

int64_t ref::detail::avgPoolDivisor(const Dims4 &in, const Pool2dParams &p,
                                    int64_t oy, int64_t ox) {
  const int64_t padTop = p.pads[0], padBottom = p.pads[1];
  const int64_t padLeft = p.pads[2], padRight = p.pads[3];
  // Window [y0, y1) x [x0, x1) in input coordinates.
  const int64_t y0 = oy * p.strides[0] - padTop;
  const int64_t x0 = ox * p.strides[1] - padLeft;
  const int64_t y1 = y0 + p.kernel[0], x1 = x0 + p.kernel[1];
  if (p.countIncludePad) {
    // Clipped to the padded input, as PyTorch does.
    return (std::min(y1, in.h + padBottom) - std::max(y0, -padTop)) *
           (std::min(x1, in.w + padRight) - std::max(x0, -padLeft));
  }
  const int64_t rows =
      std::max<int64_t>(std::min(y1, in.h) - std::max<int64_t>(y0, 0), 0);
  const int64_t cols =
      std::max<int64_t>(std::min(x1, in.w) - std::max<int64_t>(x0, 0), 0);
  return rows * cols;
}

Tensor ref::avgPool2d(const Tensor &x, const Pool2dParams &p) {
  const Dims4 in = activationDims(x, p.layout);
  const Dims4 out = poolOutput(in, p);
  Tensor result(activationShape(out, p.layout));
  for (int64_t n = 0; n < out.n; ++n)
    for (int64_t c = 0; c < out.c; ++c)
      for (int64_t oy = 0; oy < out.h; ++oy)
        for (int64_t ox = 0; ox < out.w; ++ox) {
          // Window [y0, y1) x [x0, x1) in input coordinates.
          const int64_t y0 = oy * p.strides[0] - p.pads[0];
          const int64_t x0 = ox * p.strides[1] - p.pads[2];
          const int64_t y1 = y0 + p.kernel[0], x1 = x0 + p.kernel[1];
          double sum = 0.0;
          for (int64_t iy = std::max<int64_t>(y0, 0); iy < std::min(y1, in.h);
               ++iy)
            for (int64_t ix = std::max<int64_t>(x0, 0); ix < std::min(x1, in.w);
                 ++ix)
              sum += x.data[activationIndex(in, p.layout, n, c, iy, ix)];
          const int64_t count = avgPoolDivisor(in, p, oy, ox);
          result.data[activationIndex(out, p.layout, n, c, oy, ox)] =
              count == 0 ? 0.0 : sum / static_cast<double>(count);
        }
  return result;
}

Tensor ref::globalAvgPool(const Tensor &x, Layout layout) {
  const Dims4 in = activationDims(x, layout);
  const Dims4 out{in.n, in.c, 1, 1};
  Tensor result(activationShape(out, layout));
  for (int64_t n = 0; n < in.n; ++n)
    for (int64_t c = 0; c < in.c; ++c) {
      double sum = 0.0;
      for (int64_t h = 0; h < in.h; ++h)
        for (int64_t w = 0; w < in.w; ++w)
          sum += x.data[activationIndex(in, layout, n, c, h, w)];
      result.data[activationIndex(out, layout, n, c, 0, 0)] =
          sum / static_cast<double>(in.h * in.w);
    }
  return result;
}

/// Computed exactly as PyTorch's CPU kernel does (nearest_idx): the
/// same-size and exact 2x cases are shortcuts, everything else runs in
/// float32 arithmetic. Index selection is discontinuous, so doing this in
/// double could pick another pixel when dst * coordScale lands next to an
/// integer.
int64_t ref::detail::nearestSource(int64_t dst, int64_t inSize, int64_t outSize,
                                   double coordScale) {
  if (outSize == inSize)
    return dst;
  if (outSize == 2 * inSize)
    return dst >> 1;
  const float scale = static_cast<float>(coordScale);
  const float src = std::floor(static_cast<float>(dst) * scale);
  return std::min(static_cast<int64_t>(src), inSize - 1);
}

LinearTaps ref::detail::linearSource(int64_t dst, int64_t inSize,
                                     int64_t outSize, double coordScale,
                                     bool alignCorners) {
  // PyTorch copies when the sizes match, whatever the scale factor.
  if (outSize == inSize)
    return {dst, dst, 0.0};
  double src;
  if (alignCorners)
    src = outSize > 1 ? static_cast<double>(dst * (inSize - 1)) /
                            static_cast<double>(outSize - 1)
                      : 0.0;
  else
    src = std::max((static_cast<double>(dst) + 0.5) * coordScale - 0.5, 0.0);
  const int64_t i0 =
      std::min(static_cast<int64_t>(std::floor(src)), inSize - 1);
  const int64_t i1 = std::min(i0 + 1, inSize - 1);
  const double lambda =
      std::min(std::max(src - static_cast<double>(i0), 0.0), 1.0);
  return {i0, i1, lambda};
}

Tensor ref::upsample(const Tensor &x, const UpsampleParams &p) {
  const Dims4 in = activationDims(x, p.layout);
  const Dims4 out{in.n, in.c, p.outSize[0], p.outSize[1]};
  assert(out.h >= 1 && out.w >= 1 && "bad output size");
  Tensor result(activationShape(out, p.layout));
  auto at = [&](int64_t n, int64_t c, int64_t h, int64_t w) {
    return x.data[activationIndex(in, p.layout, n, c, h, w)];
  };
  for (int64_t n = 0; n < out.n; ++n)
    for (int64_t c = 0; c < out.c; ++c)
      for (int64_t oy = 0; oy < out.h; ++oy)
        for (int64_t ox = 0; ox < out.w; ++ox) {
          double val;
          if (p.mode == UpsampleMode::Nearest) {
            const int64_t iy = nearestSource(oy, in.h, out.h, p.coordScale[0]);
            const int64_t ix = nearestSource(ox, in.w, out.w, p.coordScale[1]);
            val = at(n, c, iy, ix);
          } else {
            const LinearTaps ty =
                linearSource(oy, in.h, out.h, p.coordScale[0], p.alignCorners);
            const LinearTaps tx =
                linearSource(ox, in.w, out.w, p.coordScale[1], p.alignCorners);
            const double top = (1.0 - tx.lambda) * at(n, c, ty.i0, tx.i0) +
                               tx.lambda * at(n, c, ty.i0, tx.i1);
            const double bottom = (1.0 - tx.lambda) * at(n, c, ty.i1, tx.i0) +
                                  tx.lambda * at(n, c, ty.i1, tx.i1);
            val = (1.0 - ty.lambda) * top + ty.lambda * bottom;
          }
          result.data[activationIndex(out, p.layout, n, c, oy, ox)] = val;
        }
  return result;
}

//===----------------------------------------------------------------------===//
// Positional encoding and data movement
//===----------------------------------------------------------------------===//

Tensor ref::rope(const Tensor &x, const Tensor &cos, const Tensor &sin,
                 bool interleaved) {
  assert(x.rank() >= 2 && "rope input must be [..., N, D]");
  const int64_t n = x.shape[x.shape.size() - 2];
  const int64_t d = x.shape.back();
  assert(d % 2 == 0 && "rope needs an even head dimension");
  const int64_t half = d / 2;
  const std::vector<int64_t> tableShape = {n, half};
  assert(cos.shape == tableShape && sin.shape == tableShape &&
         "cos/sin tables must have shape [N, D/2]");
  (void)tableShape;

  Tensor result(x.shape);
  const int64_t rows = d == 0 ? 0 : x.numel() / d;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t pos = r % n; // rows are (..., N) flattened
    const double *in = &x.data[r * d];
    double *out = &result.data[r * d];
    for (int64_t i = 0; i < half; ++i) {
      const int64_t a = interleaved ? 2 * i : i;
      const int64_t b = interleaved ? 2 * i + 1 : i + half;
      const double c = cos.data[pos * half + i];
      const double s = sin.data[pos * half + i];
      out[a] = in[a] * c - in[b] * s;
      out[b] = in[b] * c + in[a] * s;
    }
  }
  return result;
}

Tensor ref::castTo(const Tensor &x, DType dt) {
  Tensor result(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    result.data[i] = roundTo(dt, x.data[i]);
  return result;
}

Tensor ref::reshape(const Tensor &x, std::vector<int64_t> shape) {
  // The constructor asserts that the element count is unchanged.
  return Tensor(std::move(shape), x.data);
}

Tensor ref::transpose(const Tensor &x, const std::vector<int64_t> &perm) {
  const size_t rank = x.shape.size();
  assert(perm.size() == rank && "perm must have one entry per dimension");
  std::vector<bool> seen(rank, false);
  for (int64_t axis : perm) {
    assert(axis >= 0 && static_cast<size_t>(axis) < rank && !seen[axis] &&
           "perm is not a permutation");
    seen[axis] = true;
  }

  std::vector<int64_t> inStrides(rank, 1);
  for (size_t i = rank; i-- > 1;)
    inStrides[i - 1] = inStrides[i] * x.shape[i];
  std::vector<int64_t> shape(rank);
  for (size_t i = 0; i < rank; ++i)
    shape[i] = x.shape[perm[i]];

  Tensor result(shape);
  std::vector<int64_t> index;
  for (int64_t i = 0; i < result.numel(); ++i) {
    unravel(i, shape, index);
    int64_t offset = 0;
    for (size_t j = 0; j < rank; ++j)
      offset += index[j] * inStrides[perm[j]];
    result.data[i] = x.data[offset];
  }
  return result;
}

Tensor ref::slice(const Tensor &x, const std::vector<int64_t> &offsets,
                  const std::vector<int64_t> &sizes) {
  const size_t rank = x.shape.size();
  assert(offsets.size() == rank && sizes.size() == rank &&
         "one offset and one size per axis");
  std::vector<int64_t> strides(rank, 1);
  for (size_t i = rank; i-- > 1;)
    strides[i - 1] = strides[i] * x.shape[i];
  Tensor result(sizes);
  std::vector<int64_t> index;
  for (int64_t i = 0; i < result.numel(); ++i) {
    unravel(i, sizes, index);
    int64_t offset = 0;
    for (size_t j = 0; j < rank; ++j) {
      assert(offsets[j] + index[j] < x.shape[j] && "slice out of bounds");
      offset += (offsets[j] + index[j]) * strides[j];
    }
    result.data[i] = x.data[offset];
  }
  return result;
}

Tensor ref::concat(const std::vector<const Tensor *> &inputs, int64_t axis) {
  assert(!inputs.empty() && "concat of nothing");
  std::vector<int64_t> shape = inputs.front()->shape;
  shape[axis] = 0;
  for (const Tensor *t : inputs)
    shape[axis] += t->shape[axis];
  // Rows above `axis` interleave the inputs' blocks below it.
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i)
    inner *= shape[i];
  Tensor result(shape);
  int64_t at = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor *t : inputs) {
      int64_t block = t->shape[axis] * inner;
      for (int64_t k = 0; k < block; ++k)
        result.data[at++] = t->data[o * block + k];
    }
  return result;
}
