//===- ReferenceKernelsTest.cpp - Unit tests for the CPU reference kernels ===//
//
// The reference kernels are the numeric oracle of the project, so these tests
// check them against values computed by hand (the arithmetic is written next
// to every non-obvious expectation). Transcendental constants were evaluated
// with 40-digit arithmetic (mpmath).
//
//===----------------------------------------------------------------------===//

#include "fusec/Reference/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace fusec::ref;

namespace {

constexpr double kTol = 1e-12;
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? "," : "") << shape[i];
  os << "]";
  return os.str();
}

/// Multi-index of flat position `flat` in a row-major tensor of `shape`.
std::string indexStr(const std::vector<int64_t> &shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    int64_t n = shape[d] > 0 ? shape[d] : 1;
    idx[d] = flat % n;
    flat /= n;
  }
  return shapeStr(idx);
}

bool sameValue(double got, double want, double tol) {
  if (std::isnan(want))
    return std::isnan(got);
  if (std::isinf(want))
    return got == want;
  if (std::isnan(got) || std::isinf(got))
    return false;
  // Absolute tolerance for |want| <= 1, relative above.
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

/// Compares shape and every value; reports the first mismatch.
::testing::AssertionResult tensorNear(const Tensor &got,
                                      const std::vector<int64_t> &shape,
                                      const std::vector<double> &want,
                                      double tol = kTol) {
  if (got.shape != shape)
    return ::testing::AssertionFailure()
           << "shape mismatch: got " << shapeStr(got.shape) << ", want "
           << shapeStr(shape);
  if (got.data.size() != want.size())
    return ::testing::AssertionFailure()
           << "data size mismatch: got " << got.data.size() << ", want "
           << want.size();
  for (size_t i = 0; i < want.size(); ++i) {
    if (!sameValue(got.data[i], want[i], tol))
      return ::testing::AssertionFailure()
             << "first mismatch at flat index " << i << " (index "
             << indexStr(shape, static_cast<int64_t>(i)) << "): got "
             << ::testing::PrintToString(got.data[i]) << ", want "
             << ::testing::PrintToString(want[i]);
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult tensorsNear(const Tensor &got, const Tensor &want,
                                       double tol = kTol) {
  return tensorNear(got, want.shape, want.data, tol);
}

/// 0, 1, 2, ... as a tensor of the given shape.
Tensor iota(std::vector<int64_t> shape, double start = 0.0,
            double step = 1.0) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<double> data(n);
  for (int64_t i = 0; i < n; ++i)
    data[i] = start + step * static_cast<double>(i);
  return Tensor(std::move(shape), std::move(data));
}

/// Independent test-side permutation (does not use ref::transpose).
Tensor permute(const Tensor &x, const std::vector<int64_t> &perm) {
  size_t r = x.shape.size();
  std::vector<int64_t> outShape(r), inStrides(r, 1);
  for (size_t i = 0; i < r; ++i)
    outShape[i] = x.shape[perm[i]];
  for (int64_t d = static_cast<int64_t>(r) - 2; d >= 0; --d)
    inStrides[d] = inStrides[d + 1] * x.shape[d + 1];
  Tensor out(outShape, 0.0);
  std::vector<int64_t> idx(r, 0);
  for (size_t flat = 0; flat < out.data.size(); ++flat) {
    int64_t off = 0;
    for (size_t i = 0; i < r; ++i)
      off += idx[i] * inStrides[perm[i]];
    out.data[flat] = x.data[off];
    for (int64_t d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
      if (++idx[d] < outShape[d])
        break;
      idx[d] = 0;
    }
  }
  return out;
}

const std::vector<int64_t> kNchwToNhwc = {0, 2, 3, 1};

} // namespace

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

TEST(RefTensor, ConstructorsRankAndNumel) {
  Tensor a({2, 3}, 1.5);
  EXPECT_EQ(a.rank(), 2);
  EXPECT_EQ(a.numel(), 6);
  ASSERT_EQ(a.data.size(), 6u);
  for (double v : a.data)
    EXPECT_EQ(v, 1.5);

  Tensor b({3}, std::vector<double>{1, 2, 3});
  EXPECT_EQ(b.rank(), 1);
  EXPECT_EQ(b.numel(), 3);
  EXPECT_EQ(b.data, (std::vector<double>{1, 2, 3}));

  Tensor scalar(std::vector<int64_t>{}, 7.0); // rank 0 holds one element
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.numel(), 1);
  ASSERT_EQ(scalar.data.size(), 1u);
  EXPECT_EQ(scalar.data[0], 7.0);

  Tensor empty({2, 0, 3});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_TRUE(empty.data.empty());
}

//===----------------------------------------------------------------------===//
// roundTo / castTo
//===----------------------------------------------------------------------===//

TEST(RefRoundTo, F32KnownValues) {
  // 1/3 in [1/4, 1/2): ulp 2^-25; 2^25/3 = 11184810.67 -> 11184811.
  EXPECT_EQ(roundTo(DType::F32, 1.0 / 3.0), 11184811.0 / 33554432.0);
  EXPECT_EQ(roundTo(DType::F32, -1.0 / 3.0), -11184811.0 / 33554432.0);
  EXPECT_EQ(roundTo(DType::F32, 0.5), 0.5);
  EXPECT_EQ(roundTo(DType::F32, 0.0), 0.0);
  // Ties to even: 1 + 2^-24 is halfway between 1 and 1 + 2^-23 -> 1.
  EXPECT_EQ(roundTo(DType::F32, 1.0 + std::ldexp(1.0, -24)), 1.0);
  // 1 + 3*2^-24 is halfway between 1+2^-23 (odd) and 1+2^-22 (even).
  EXPECT_EQ(roundTo(DType::F32, 1.0 + 3 * std::ldexp(1.0, -24)),
            1.0 + std::ldexp(1.0, -22));
  // Just above the tie rounds up.
  EXPECT_EQ(roundTo(DType::F32, 1.0 + std::ldexp(1.0, -24) +
                                    std::ldexp(1.0, -40)),
            1.0 + std::ldexp(1.0, -23));
  // Subnormals: 2^-149 is the smallest; 2^-150 ties to 0, 3*2^-150 ties to
  // 2^-148 (even mantissa 2).
  EXPECT_EQ(roundTo(DType::F32, std::ldexp(1.0, -149)), std::ldexp(1.0, -149));
  EXPECT_EQ(roundTo(DType::F32, std::ldexp(1.0, -150)), 0.0);
  EXPECT_EQ(roundTo(DType::F32, 3 * std::ldexp(1.0, -150)),
            std::ldexp(1.0, -148));
  // FLT_MAX = (2 - 2^-23) * 2^127 stays; 3.5e38 overflows.
  const double fltMax = (2.0 - std::ldexp(1.0, -23)) * std::ldexp(1.0, 127);
  EXPECT_EQ(roundTo(DType::F32, fltMax), fltMax);
  EXPECT_EQ(roundTo(DType::F32, 3.5e38), kInf);
  EXPECT_EQ(roundTo(DType::F32, -3.5e38), -kInf);
  EXPECT_EQ(roundTo(DType::F32, kInf), kInf);
  EXPECT_EQ(roundTo(DType::F32, -kInf), -kInf);
  EXPECT_TRUE(std::isnan(roundTo(DType::F32, kNaN)));
}

TEST(RefRoundTo, F16KnownValues) {
  // 1/3: ulp in [1/4, 1/2) is 2^-12; 4096/3 = 1365.33 -> 1365/4096.
  EXPECT_EQ(roundTo(DType::F16, 1.0 / 3.0), 0.333251953125);
  EXPECT_EQ(roundTo(DType::F16, -1.0 / 3.0), -0.333251953125);
  // 0.1: ulp in [1/16, 1/8) is 2^-14; 1638.4 -> 1638/16384.
  EXPECT_EQ(roundTo(DType::F16, 0.1), 0.0999755859375);
  EXPECT_EQ(roundTo(DType::F16, 1.0), 1.0);
  // Largest finite is 65504; the ulp there is 32, so the overflow threshold is
  // 65520 (tie between 65504 (odd mantissa) and 65536 -> rounds to inf).
  EXPECT_EQ(roundTo(DType::F16, 65504.0), 65504.0);
  EXPECT_EQ(roundTo(DType::F16, 65519.0), 65504.0);
  EXPECT_EQ(roundTo(DType::F16, 65520.0), kInf);
  EXPECT_EQ(roundTo(DType::F16, -65519.0), -65504.0);
  EXPECT_EQ(roundTo(DType::F16, -65520.0), -kInf);
  EXPECT_EQ(roundTo(DType::F16, 1e6), kInf);
  // Ties to even at 1: ulp 2^-10.
  EXPECT_EQ(roundTo(DType::F16, 1.0 + std::ldexp(1.0, -11)), 1.0);
  EXPECT_EQ(roundTo(DType::F16, 1.0 + 3 * std::ldexp(1.0, -11)),
            1.0 + std::ldexp(1.0, -9));
  // 2049 is a tie between 2048 and 2050 (ulp 2 in [2048, 4096)) -> 2048;
  // 2051 -> 2052.
  EXPECT_EQ(roundTo(DType::F16, 2049.0), 2048.0);
  EXPECT_EQ(roundTo(DType::F16, 2051.0), 2052.0);
  // Subnormals: smallest is 2^-24; 2^-25 ties to 0; 3*2^-25 ties to 2^-23;
  // 0.75 * 2^-24 rounds up to 2^-24; 1e-8 (< 2^-25) flushes to 0.
  EXPECT_EQ(roundTo(DType::F16, std::ldexp(1.0, -24)), std::ldexp(1.0, -24));
  EXPECT_EQ(roundTo(DType::F16, std::ldexp(1.0, -25)), 0.0);
  EXPECT_EQ(roundTo(DType::F16, 3 * std::ldexp(1.0, -25)),
            std::ldexp(1.0, -23));
  EXPECT_EQ(roundTo(DType::F16, 3 * std::ldexp(1.0, -26)),
            std::ldexp(1.0, -24));
  EXPECT_EQ(roundTo(DType::F16, 1e-8), 0.0);
  // Largest subnormal 1023 * 2^-24 and smallest normal 2^-14 are exact.
  EXPECT_EQ(roundTo(DType::F16, 1023 * std::ldexp(1.0, -24)),
            1023 * std::ldexp(1.0, -24));
  EXPECT_EQ(roundTo(DType::F16, std::ldexp(1.0, -14)), std::ldexp(1.0, -14));
  EXPECT_EQ(roundTo(DType::F16, kInf), kInf);
  EXPECT_EQ(roundTo(DType::F16, -kInf), -kInf);
  EXPECT_TRUE(std::isnan(roundTo(DType::F16, kNaN)));
}

TEST(RefRoundTo, BF16KnownValues) {
  // bf16 has 7 explicit mantissa bits: ulp at 1 is 2^-7.
  // 1.00390625 = 1 + 2^-8: tie between 1 (even) and 1 + 2^-7 -> 1.
  EXPECT_EQ(roundTo(DType::BF16, 1.00390625), 1.0);
  // 1.01171875 = 1 + 3*2^-8: tie between 1+2^-7 (odd) and 1+2^-6 -> 1.015625.
  EXPECT_EQ(roundTo(DType::BF16, 1.01171875), 1.015625);
  EXPECT_EQ(roundTo(DType::BF16, -1.01171875), -1.015625);
  // 1/3: ulp 2^-9; 512/3 = 170.67 -> 171/512.
  EXPECT_EQ(roundTo(DType::BF16, 1.0 / 3.0), 0.333984375);
  EXPECT_EQ(roundTo(DType::BF16, 3.0), 3.0);
  // bf16 keeps the f32 exponent range: 1e30 is finite (ulp 2^92 there).
  double r = roundTo(DType::BF16, 1e30);
  EXPECT_TRUE(std::isfinite(r));
  EXPECT_LE(std::fabs(r - 1e30), std::ldexp(1.0, 91));
  // Max finite is (2 - 2^-7) * 2^127; FLT_MAX is beyond the midpoint
  // (2 - 2^-8) * 2^127 and overflows.
  const double bfMax = (2.0 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127);
  const double fltMax = (2.0 - std::ldexp(1.0, -23)) * std::ldexp(1.0, 127);
  EXPECT_EQ(roundTo(DType::BF16, bfMax), bfMax);
  EXPECT_EQ(roundTo(DType::BF16, fltMax), kInf);
  EXPECT_EQ(roundTo(DType::BF16, -fltMax), -kInf);
  // Smallest subnormal 2^-133; 2^-134 ties to 0; 3*2^-134 ties to 2^-132.
  EXPECT_EQ(roundTo(DType::BF16, std::ldexp(1.0, -133)), std::ldexp(1.0, -133));
  EXPECT_EQ(roundTo(DType::BF16, std::ldexp(1.0, -134)), 0.0);
  EXPECT_EQ(roundTo(DType::BF16, 3 * std::ldexp(1.0, -134)),
            std::ldexp(1.0, -132));
  EXPECT_EQ(roundTo(DType::BF16, kInf), kInf);
  EXPECT_TRUE(std::isnan(roundTo(DType::BF16, kNaN)));
}

// "Round to the nearest value representable in dt" means a single rounding of
// the float64 input. Rounding through float32 first would turn a value just
// above a half-way point into an exact tie and then round it the wrong way.
TEST(RefRoundTo, NoDoubleRoundingThroughF32) {
  // 1 + 2^-8 + 2^-30 is above the bf16 midpoint 1 + 2^-8 -> 1 + 2^-7.
  // (float32 would first give exactly 1 + 2^-8, which then ties down to 1.)
  EXPECT_EQ(roundTo(DType::BF16, 1.0 + std::ldexp(1.0, -8) +
                                     std::ldexp(1.0, -30)),
            1.0 + std::ldexp(1.0, -7));
  // Same for f16: 1 + 2^-11 + 2^-40 -> 1 + 2^-10.
  EXPECT_EQ(roundTo(DType::F16, 1.0 + std::ldexp(1.0, -11) +
                                    std::ldexp(1.0, -40)),
            1.0 + std::ldexp(1.0, -10));
  // Just below the f16 overflow threshold: 65520 - 2^-20 -> 65504 (not inf).
  EXPECT_EQ(roundTo(DType::F16, 65520.0 - std::ldexp(1.0, -20)), 65504.0);
}

TEST(RefCastTo, RoundsEveryElementAndKeepsShape) {
  Tensor x({2, 2}, {1.0 / 3.0, 65520.0, -65519.0, 1.01171875});
  EXPECT_TRUE(tensorNear(castTo(x, DType::F16), {2, 2},
                         {0.333251953125, kInf, -65504.0, 1.01171875}, 0.0));
  // 1.01171875 = 1 + 3*2^-8 is exact in f16 (10 mantissa bits) but ties to
  // 1.015625 in bf16. bf16 ulp in [2^15, 2^16) is 2^8 = 256:
  // 65520/256 = 255.94 -> 256*256 = 65536; -65519/256 = -255.93 -> -65536.
  EXPECT_TRUE(tensorNear(castTo(x, DType::BF16), {2, 2},
                         {0.333984375, 65536.0, -65536.0, 1.015625}, 0.0));
  EXPECT_TRUE(tensorNear(castTo(x, DType::F32), {2, 2},
                         {11184811.0 / 33554432.0, 65520.0, -65519.0,
                          1.01171875},
                         0.0));
  Tensor scalar(std::vector<int64_t>{}, std::vector<double>{0.1});
  EXPECT_TRUE(tensorNear(castTo(scalar, DType::F16), {}, {0.0999755859375},
                         0.0));
}

//===----------------------------------------------------------------------===//
// reshape / transpose
//===----------------------------------------------------------------------===//

TEST(RefReshape, KeepsDataChangesShape) {
  Tensor x = iota({2, 3});
  EXPECT_TRUE(tensorNear(reshape(x, {3, 2}), {3, 2}, {0, 1, 2, 3, 4, 5}, 0));
  EXPECT_TRUE(tensorNear(reshape(x, {6}), {6}, {0, 1, 2, 3, 4, 5}, 0));
  EXPECT_TRUE(
      tensorNear(reshape(x, {1, 2, 1, 3}), {1, 2, 1, 3}, {0, 1, 2, 3, 4, 5}, 0));
  Tensor one({1}, std::vector<double>{4.0});
  EXPECT_TRUE(tensorNear(reshape(one, {}), {}, {4.0}, 0));
  Tensor scalar(std::vector<int64_t>{}, std::vector<double>{4.0});
  EXPECT_TRUE(tensorNear(reshape(scalar, {1, 1}), {1, 1}, {4.0}, 0));
}

TEST(RefTranspose, Rank2) {
  // [[0,1,2],[3,4,5]]^T = [[0,3],[1,4],[2,5]].
  EXPECT_TRUE(tensorNear(transpose(iota({2, 3}), {1, 0}), {3, 2},
                         {0, 3, 1, 4, 2, 5}, 0));
  // Identity permutation.
  EXPECT_TRUE(tensorNear(transpose(iota({2, 3}), {0, 1}), {2, 3},
                         {0, 1, 2, 3, 4, 5}, 0));
}

TEST(RefTranspose, Rank3PermAndItsInverseDiffer) {
  // x[a,b,c] = 12a + 4b + c, shape [2,3,4].
  Tensor x = iota({2, 3, 4});
  // perm {2,0,1}: out shape [4,2,3]; out[i,j,k] = x[j,k,i] = 12j + 4k + i.
  {
    std::vector<double> want;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 3; ++k)
          want.push_back(12 * j + 4 * k + i);
    EXPECT_TRUE(tensorNear(transpose(x, {2, 0, 1}), {4, 2, 3}, want, 0));
  }
  // perm {1,2,0}: out shape [3,4,2]; out[i,j,k] = x[k,i,j] = 12k + 4i + j.
  {
    std::vector<double> want;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 2; ++k)
          want.push_back(12 * k + 4 * i + j);
    EXPECT_TRUE(tensorNear(transpose(x, {1, 2, 0}), {3, 4, 2}, want, 0));
  }
}

TEST(RefTranspose, NchwToNhwc) {
  // x [1,2,2,2] NCHW: ch0 = 1..4, ch1 = 10..40.
  Tensor x({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
  EXPECT_TRUE(tensorNear(transpose(x, {0, 2, 3, 1}), {1, 2, 2, 2},
                         {1, 10, 2, 20, 3, 30, 4, 40}, 0));
}

//===----------------------------------------------------------------------===//
// conv2d
//===----------------------------------------------------------------------===//

namespace {
Conv2dParams nchw() {
  Conv2dParams p;
  p.layout = Layout::NCHW;
  return p;
}
} // namespace

TEST(RefConv2d, Plain3x3IsCrossCorrelation) {
  // x[h][w] = 4h + w + 1 (4x4):
  //   1  2  3  4 /  5  6  7  8 /  9 10 11 12 / 13 14 15 16
  // filter [[1,2,0],[0,0,0],[0,0,-1]]:
  //   out[i][j] = x[i][j] + 2 x[i][j+1] - x[i+2][j+2]
  //   out[0][0] = 1 + 4 - 11 = -6     out[0][1] = 2 + 6 - 12 = -4
  //   out[1][0] = 5 + 12 - 15 = 2     out[1][1] = 6 + 14 - 16 = 4
  // (a flipped kernel would give out[0][0] = -1 + 20 + 11 = 30).
  Tensor x = iota({1, 1, 4, 4}, 1.0);
  Tensor w({1, 1, 3, 3}, {1, 2, 0, 0, 0, 0, 0, 0, -1});
  EXPECT_TRUE(tensorNear(conv2d(x, w, nullptr, nchw()), {1, 1, 2, 2},
                         {-6, -4, 2, 4}));
  // Same problem in NHWC (C = 1 so data is identical; filter OHWI [1,3,3,1]).
  Conv2dParams p;
  p.layout = Layout::NHWC;
  Tensor xh = iota({1, 4, 4, 1}, 1.0);
  Tensor wh({1, 3, 3, 1}, {1, 2, 0, 0, 0, 0, 0, 0, -1});
  EXPECT_TRUE(tensorNear(conv2d(xh, wh, nullptr, p), {1, 2, 2, 1},
                         {-6, -4, 2, 4}));
}

TEST(RefConv2d, MultiChannelWithBiasNCHW) {
  // 1x1 conv, N=2. Batch 0: ch0 = [1,2,3,4], ch1 = [10,20,30,40];
  // batch 1 = 2 * batch 0.
  // w[o][i]: o0 = [1, 0.5], o1 = [-1, 2]; bias = [100, -100].
  // batch 0: o0 = x0 + 0.5 x1 + 100 = [106, 112, 118, 124]
  //          o1 = -x0 + 2 x1 - 100 = [-81, -62, -43, -24]
  // batch 1: o0 = 2(x0 + 0.5 x1) + 100 = [112, 124, 136, 148]
  //          o1 = 2(-x0 + 2 x1) - 100 = [-62, -24, 14, 52]
  Tensor x({2, 2, 2, 2},
           {1, 2, 3, 4, 10, 20, 30, 40, 2, 4, 6, 8, 20, 40, 60, 80});
  Tensor w({2, 2, 1, 1}, {1, 0.5, -1, 2});
  Tensor b({2}, {100, -100});
  EXPECT_TRUE(tensorNear(conv2d(x, w, &b, nchw()), {2, 2, 2, 2},
                         {106, 112, 118, 124, -81, -62, -43, -24, 112, 124,
                          136, 148, -62, -24, 14, 52}));
  // Without bias: subtract it back.
  EXPECT_TRUE(tensorNear(conv2d(x, w, nullptr, nchw()), {2, 2, 2, 2},
                         {6, 12, 18, 24, 19, 38, 57, 76, 12, 24, 36, 48, 38,
                          76, 114, 152}));
}

TEST(RefConv2d, MultiChannelWithBiasNHWC) {
  // Same numbers as the NCHW test (batch 0), channels interleaved.
  Tensor x({1, 2, 2, 2}, {1, 10, 2, 20, 3, 30, 4, 40});
  Tensor w({2, 1, 1, 2}, {1, 0.5, -1, 2}); // OHWI
  Tensor b({2}, {100, -100});
  Conv2dParams p;
  p.layout = Layout::NHWC;
  EXPECT_TRUE(tensorNear(conv2d(x, w, &b, p), {1, 2, 2, 2},
                         {106, -81, 112, -62, 118, -43, 124, -24}));
}

TEST(RefConv2d, AsymmetricPaddingPerSide) {
  // x = [[1,2],[3,4]], pads top=1, bottom=0, left=2, right=0 -> padded 3x4:
  //   0 0 0 0
  //   0 0 1 2
  //   0 0 3 4
  // 2x2 filter [[1,10],[100,1000]] -> output 2x3:
  //   out[i][j] = p[i][j] + 10 p[i][j+1] + 100 p[i+1][j] + 1000 p[i+1][j+1]
  //   row 0: 0, 1000*1 = 1000, 100*1 + 1000*2 = 2100
  //   row 1: 0, 10*1 + 1000*3 = 3010, 1 + 20 + 300 + 4000 = 4321
  Tensor x({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w({1, 1, 2, 2}, {1, 10, 100, 1000});
  Conv2dParams p = nchw();
  p.pads = {1, 0, 2, 0};
  EXPECT_TRUE(tensorNear(conv2d(x, w, nullptr, p), {1, 1, 2, 3},
                         {0, 1000, 2100, 0, 3010, 4321}));
  // pads bottom=1, right=1 only -> padded 3x3:
  //   1 2 0 / 3 4 0 / 0 0 0
  //   out[0][0] = 1 + 20 + 300 + 4000 = 4321; out[0][1] = 2 + 0 + 400 + 0 = 402
  //   out[1][0] = 3 + 40 = 43;                out[1][1] = 4
  p.pads = {0, 1, 0, 1};
  EXPECT_TRUE(tensorNear(conv2d(x, w, nullptr, p), {1, 1, 2, 2},
                         {4321, 402, 43, 4}));
}

TEST(RefConv2d, Stride2) {
  // x[h][w] = 5h + w (5x5), 3x3 all-ones filter: the window sum starting at
  // (r, c) is 9 * x[r+1][c+1] (x is affine).
  Tensor x = iota({1, 1, 5, 5});
  Tensor w({1, 1, 3, 3}, 1.0);
  Conv2dParams p = nchw();
  p.strides = {2, 2};
  // out[i][j] = 9 x[2i+1][2j+1]: 9*6, 9*8, 9*16, 9*18.
  EXPECT_TRUE(tensorNear(conv2d(x, w, nullptr, p), {1, 1, 2, 2},
                         {54, 72, 144, 162}));
  // strides {2, 1}: out 2x3, out[i][j] = 9 x[2i+1][j+1]:
  //   row 0: 9*{6,7,8} = 54 63 72; row 1: 9*{16,17,18} = 144 153 162.
  p.strides = {2, 1};
  EXPECT_TRUE(tensorNear(conv2d(x, w, nullptr, p), {1, 1, 2, 3},
                         {54, 63, 72, 144, 153, 162}));
}

TEST(RefConv2d, Dilation2) {
  // x[h][w] = 5h + w =: v (5x5), 2x2 filter [[1,10],[100,1000]].
  // dilation {2,2}: taps at (0,0),(0,2),(2,0),(2,2); out 3x3:
  //   out = v + 10(v+2) + 100(v+10) + 1000(v+12) = 1111 v + 13020
  Tensor x = iota({1, 1, 5, 5});
  Tensor w({1, 1, 2, 2}, {1, 10, 100, 1000});
  Conv2dParams p = nchw();
  p.dilation = {2, 2};
  {
    std::vector<double> want;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        want.push_back(1111.0 * (5 * i + j) + 13020.0);
    // e.g. out[0][0] = 13020, out[2][2] = 1111*12 + 13020 = 26352.
    EXPECT_EQ(want.front(), 13020.0);
    EXPECT_EQ(want.back(), 26352.0);
    EXPECT_TRUE(tensorNear(conv2d(x, w, nullptr, p), {1, 1, 3, 3}, want));
  }
  // dilation {2,1}: taps (0,0),(0,1),(2,0),(2,1); out 3x4:
  //   out = v + 10(v+1) + 100(v+10) + 1000(v+11) = 1111 v + 12010
  p.dilation = {2, 1};
  {
    std::vector<double> want;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j)
        want.push_back(1111.0 * (5 * i + j) + 12010.0);
    EXPECT_TRUE(tensorNear(conv2d(x, w, nullptr, p), {1, 1, 3, 4}, want));
  }
}

TEST(RefConv2d, Groups2) {
  // Ci = 4, Co = 4, groups = 2: output channels 0,1 read input channels 0,1;
  // output channels 2,3 read input channels 2,3. Filter [4, 2, 1, 1].
  // x = [1, 2, 3, 4] (1x1 spatial).
  //   o0 = [1,10]   . [1,2] = 21
  //   o1 = [2,0]    . [1,2] = 2
  //   o2 = [100,1000] . [3,4] = 4300
  //   o3 = [0,-1]   . [3,4] = -4
  Tensor x({1, 4, 1, 1}, {1, 2, 3, 4});
  Tensor w({4, 2, 1, 1}, {1, 10, 2, 0, 100, 1000, 0, -1});
  Conv2dParams p = nchw();
  p.groups = 2;
  EXPECT_TRUE(
      tensorNear(conv2d(x, w, nullptr, p), {1, 4, 1, 1}, {21, 2, 4300, -4}));
  // NHWC: same numbers (1x1 spatial, filter OHWI [4,1,1,2] same data).
  p.layout = Layout::NHWC;
  Tensor xh({1, 1, 1, 4}, {1, 2, 3, 4});
  Tensor wh({4, 1, 1, 2}, {1, 10, 2, 0, 100, 1000, 0, -1});
  EXPECT_TRUE(
      tensorNear(conv2d(xh, wh, nullptr, p), {1, 1, 1, 4}, {21, 2, 4300, -4}));
}

TEST(RefConv2d, DepthwiseGroupsEqualsChannels) {
  // C = 2, groups = 2, filter [2, 1, 3, 3], pads 1 on every side.
  // ch0 = [[1,2,3],[4,5,6],[7,8,9]] with an all-ones kernel -> clipped
  // neighbourhood sums:
  //   12 21 16 / 27 45 33 / 24 39 28
  // ch1 = 10 * ch0 with a kernel whose only tap is centre-right (picks
  // x[i][j+1], 0 past the right edge):
  //   20 30 0 / 50 60 0 / 80 90 0
  Tensor x({1, 2, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30, 40, 50, 60,
                          70, 80, 90});
  Tensor w({2, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0,
                          0});
  Conv2dParams p = nchw();
  p.groups = 2;
  p.pads = {1, 1, 1, 1};
  EXPECT_TRUE(tensorNear(conv2d(x, w, nullptr, p), {1, 2, 3, 3},
                         {12, 21, 16, 27, 45, 33, 24, 39, 28, 20, 30, 0, 50,
                          60, 0, 80, 90, 0}));
}

TEST(RefConv2d, DepthwiseChannelMultiplier) {
  // C = 2, groups = 2, Co = 4: out channels 0,1 from input ch0, 2,3 from ch1.
  // x = [5, 7], w = [1, 2, 3, 4] -> [5, 10, 21, 28]; bias [1,1,1,1].
  Tensor x({1, 2, 1, 1}, {5, 7});
  Tensor w({4, 1, 1, 1}, {1, 2, 3, 4});
  Tensor b({4}, 1.0);
  Conv2dParams p = nchw();
  p.groups = 2;
  EXPECT_TRUE(
      tensorNear(conv2d(x, w, &b, p), {1, 4, 1, 1}, {6, 11, 22, 29}));
}

namespace {
/// Straight-from-the-definition NCHW convolution used to cross-check the
/// kernel on a problem too large to write out by hand.
Tensor naiveConvNCHW(const Tensor &x, const Tensor &w, const Tensor *b,
                     const Conv2dParams &p) {
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t Co = w.shape[0], Cg = w.shape[1], Kh = w.shape[2], Kw = w.shape[3];
  int64_t G = p.groups, CoG = Co / G;
  EXPECT_EQ(Cg * G, C);
  int64_t Ho = (H + p.pads[0] + p.pads[1] - p.dilation[0] * (Kh - 1) - 1) /
                   p.strides[0] +
               1;
  int64_t Wo = (W + p.pads[2] + p.pads[3] - p.dilation[1] * (Kw - 1) - 1) /
                   p.strides[1] +
               1;
  Tensor out({N, Co, Ho, Wo}, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < Co; ++o)
      for (int64_t i = 0; i < Ho; ++i)
        for (int64_t j = 0; j < Wo; ++j) {
          double acc = b ? b->data[o] : 0.0;
          int64_t g = o / CoG;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < Kh; ++kh)
              for (int64_t kw = 0; kw < Kw; ++kw) {
                int64_t h = i * p.strides[0] - p.pads[0] + kh * p.dilation[0];
                int64_t ww = j * p.strides[1] - p.pads[2] + kw * p.dilation[1];
                if (h < 0 || h >= H || ww < 0 || ww >= W)
                  continue;
                acc += x.data[((n * C + g * Cg + c) * H + h) * W + ww] *
                       w.data[((o * Cg + c) * Kh + kh) * Kw + kw];
              }
          out.data[((n * Co + o) * Ho + i) * Wo + j] = acc;
        }
  return out;
}
} // namespace

TEST(RefConv2d, NCHWAndNHWCAgreeOnEveryAttributeCombined) {
  // N=2, C=4, H=5, W=6, Co=6, groups=2, kernel 3x2, strides {2,1},
  // pads {1,0,2,1}, dilation {1,2}, bias. Small integers keep every sum exact.
  Tensor x({2, 4, 5, 6}, 0.0);
  for (size_t i = 0; i < x.data.size(); ++i)
    x.data[i] = static_cast<double>(static_cast<int64_t>(i * 7 % 13) - 6);
  Tensor w({6, 2, 3, 2}, 0.0);
  for (size_t i = 0; i < w.data.size(); ++i)
    w.data[i] = static_cast<double>(static_cast<int64_t>(i * 5 % 11) - 5);
  Tensor b({6}, {1, -2, 3, -4, 5, -6});
  Conv2dParams p = nchw();
  p.groups = 2;
  p.strides = {2, 1};
  p.pads = {1, 0, 2, 1};
  p.dilation = {1, 2};
  // Ho = (5 + 1 - 2 - 1)/2 + 1 = 2; Wo = (6 + 3 - 2 - 1)/1 + 1 = 7.
  Tensor want = naiveConvNCHW(x, w, &b, p);
  ASSERT_EQ(want.shape, (std::vector<int64_t>{2, 6, 2, 7}));
  Tensor gotNchw = conv2d(x, w, &b, p);
  EXPECT_TRUE(tensorsNear(gotNchw, want));

  Conv2dParams ph = p;
  ph.layout = Layout::NHWC;
  Tensor gotNhwc = conv2d(permute(x, kNchwToNhwc), permute(w, kNchwToNhwc),
                          &b, ph);
  EXPECT_TRUE(tensorsNear(gotNhwc, permute(want, kNchwToNhwc)));
}

//===----------------------------------------------------------------------===//
// batchNorm
//===----------------------------------------------------------------------===//

TEST(RefBatchNorm, ChannelAxis1) {
  // x [1,2,1,2]: ch0 = [1,3], ch1 = [10,20]; mean [2,15], var [3,24], eps 1
  // -> sqrt(var + eps) = [2, 5]; scale [2,-1], shift [1,0]:
  //   ch0: (1-2)/2*2+1 = 0, (3-2)/2*2+1 = 2
  //   ch1: (10-15)/5*-1 = 1, (20-15)/5*-1 = -1
  Tensor x({1, 2, 1, 2}, {1, 3, 10, 20});
  Tensor mean({2}, {2, 15}), var({2}, {3, 24}), scale({2}, {2, -1}),
      shift({2}, {1, 0});
  EXPECT_TRUE(tensorNear(batchNorm(x, mean, var, scale, shift, 1.0, 1),
                         {1, 2, 1, 2}, {0, 2, 1, -1}));
}

TEST(RefBatchNorm, ChannelAxisLast) {
  // Same values as ChannelAxis1, NHWC [1,1,2,2]: pixels (1,10), (3,20).
  Tensor x({1, 1, 2, 2}, {1, 10, 3, 20});
  Tensor mean({2}, {2, 15}), var({2}, {3, 24}), scale({2}, {2, -1}),
      shift({2}, {1, 0});
  EXPECT_TRUE(tensorNear(batchNorm(x, mean, var, scale, shift, 1.0, 3),
                         {1, 1, 2, 2}, {0, 1, 2, -1}));
  // Rank 2 [N, C] with eps 0: var [4, 25] -> std [2, 5].
  Tensor x2({2, 2}, {1, 10, 3, 20});
  Tensor var0({2}, {4, 25});
  EXPECT_TRUE(tensorNear(batchNorm(x2, mean, var0, scale, shift, 0.0, 1),
                         {2, 2}, {0, 1, 2, -1}));
}

//===----------------------------------------------------------------------===//
// binary
//===----------------------------------------------------------------------===//

TEST(RefBinary, SameShapeAllKinds) {
  Tensor a({2, 2}, {1, 2, 3, 4}), b({2, 2}, {5, 6, 7, 8});
  EXPECT_TRUE(tensorNear(binary(BinaryKind::Add, a, b), {2, 2}, {6, 8, 10, 12}));
  EXPECT_TRUE(
      tensorNear(binary(BinaryKind::Sub, a, b), {2, 2}, {-4, -4, -4, -4}));
  EXPECT_TRUE(
      tensorNear(binary(BinaryKind::Mul, a, b), {2, 2}, {5, 12, 21, 32}));
  EXPECT_TRUE(tensorNear(binary(BinaryKind::Div, a, b), {2, 2},
                         {1.0 / 5, 2.0 / 6, 3.0 / 7, 4.0 / 8}));
  // Operand order matters for Sub and Div.
  EXPECT_TRUE(tensorNear(binary(BinaryKind::Sub, b, a), {2, 2}, {4, 4, 4, 4}));
  EXPECT_TRUE(tensorNear(binary(BinaryKind::Div, b, a), {2, 2},
                         {5.0, 3.0, 7.0 / 3, 2.0}));
}

TEST(RefBinary, PerChannelVectorAgainstNHWC) {
  // lhs [1,2,2,3] = 0..11, rhs [3] = [10,20,30]: out[i] = i + rhs[i % 3].
  Tensor lhs = iota({1, 2, 2, 3});
  Tensor rhs({3}, {10, 20, 30});
  std::vector<double> want;
  for (int i = 0; i < 12; ++i)
    want.push_back(i + 10.0 * (i % 3 + 1));
  EXPECT_TRUE(tensorNear(binary(BinaryKind::Add, lhs, rhs), {1, 2, 2, 3}, want));
}

TEST(RefBinary, PerChannelC11AgainstNCHW) {
  // lhs [1,3,2,2] = 0..11, rhs [3,1,1] = [100,200,300]:
  // out[i] = i * rhs[i / 4] (4 elements per channel).
  Tensor lhs = iota({1, 3, 2, 2});
  Tensor rhs({3, 1, 1}, {100, 200, 300});
  std::vector<double> want;
  for (int i = 0; i < 12; ++i)
    want.push_back(i * 100.0 * (i / 4 + 1));
  EXPECT_TRUE(tensorNear(binary(BinaryKind::Mul, lhs, rhs), {1, 3, 2, 2}, want));
}

TEST(RefBinary, ScalarRank0OnEitherSide) {
  Tensor x({2, 2}, {1, 2, 3, 4});
  Tensor two(std::vector<int64_t>{}, std::vector<double>{2.0});
  Tensor ten(std::vector<int64_t>{}, std::vector<double>{10.0});
  EXPECT_TRUE(
      tensorNear(binary(BinaryKind::Div, x, two), {2, 2}, {0.5, 1, 1.5, 2}));
  // 10 - x
  EXPECT_TRUE(tensorNear(binary(BinaryKind::Sub, ten, x), {2, 2}, {9, 8, 7, 6}));
  // 2 / x
  EXPECT_TRUE(tensorNear(binary(BinaryKind::Div, two, x), {2, 2},
                         {2, 1, 2.0 / 3, 0.5}));
  // scalar op scalar stays rank 0: 10 - 2 = 8.
  EXPECT_TRUE(tensorNear(binary(BinaryKind::Sub, ten, two), {}, {8}));
}

TEST(RefBinary, RankExpandingBothSides) {
  // [3,1] + [4] -> [3,4]: out[i][j] = lhs[i] + rhs[j].
  Tensor col({3, 1}, {1, 2, 3});
  Tensor row({4}, {10, 20, 30, 40});
  EXPECT_TRUE(tensorNear(binary(BinaryKind::Add, col, row), {3, 4},
                         {11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43}));
  // lhs [2,1,3] (= 3a + c), rhs [4,1] (= 100 b) -> [2,4,3];
  // lhs - rhs = 3a + c - 100 b.
  Tensor lhs = iota({2, 1, 3});
  Tensor rhs({4, 1}, {0, 100, 200, 300});
  std::vector<double> want;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 3; ++c)
        want.push_back(3 * a + c - 100.0 * b);
  EXPECT_TRUE(tensorNear(binary(BinaryKind::Sub, lhs, rhs), {2, 4, 3}, want));
  // Lower-rank lhs: [3] - [2,3] -> [2,3].
  Tensor v({3}, {1, 2, 3});
  Tensor m = iota({2, 3});
  EXPECT_TRUE(tensorNear(binary(BinaryKind::Sub, v, m), {2, 3},
                         {1, 1, 1, -2, -2, -2}));
}

//===----------------------------------------------------------------------===//
// biasAdd
//===----------------------------------------------------------------------===//

TEST(RefBiasAdd, Axis1) {
  // x [2,3,2] = 0..11, bias [10,20,30] along axis 1:
  // out[a,b,c] = 6a + 2b + c + 10(b+1).
  Tensor x = iota({2, 3, 2});
  Tensor b({3}, {10, 20, 30});
  std::vector<double> want;
  for (int a = 0; a < 2; ++a)
    for (int j = 0; j < 3; ++j)
      for (int c = 0; c < 2; ++c)
        want.push_back(6 * a + 2 * j + c + 10.0 * (j + 1));
  EXPECT_TRUE(tensorNear(biasAdd(x, b, 1), {2, 3, 2}, want));
}

TEST(RefBiasAdd, AxisLastAndAxis0) {
  Tensor x = iota({2, 3}); // [[0,1,2],[3,4,5]]
  Tensor bLast({3}, {100, 200, 300});
  EXPECT_TRUE(tensorNear(biasAdd(x, bLast, 1), {2, 3},
                         {100, 201, 302, 103, 204, 305}));
  Tensor b0({2}, {1000, 2000});
  EXPECT_TRUE(tensorNear(biasAdd(x, b0, 0), {2, 3},
                         {1000, 1001, 1002, 2003, 2004, 2005}));
  // NHWC activations, channel last (axis 3).
  Tensor y = iota({1, 2, 1, 2}); // pixels (0,1), (2,3)
  Tensor bc({2}, {10, 20});
  EXPECT_TRUE(tensorNear(biasAdd(y, bc, 3), {1, 2, 1, 2}, {10, 21, 12, 23}));
}

//===----------------------------------------------------------------------===//
// unary
//===----------------------------------------------------------------------===//

namespace {
Tensor vec(std::vector<double> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return Tensor({n}, std::move(v));
}
} // namespace

TEST(RefUnary, ReluFamily) {
  EXPECT_TRUE(tensorNear(unary(UnaryKind::Relu, vec({-2, -0.5, 0, 3})), {4},
                         {0, 0, 0, 3}));
  EXPECT_TRUE(tensorNear(unary(UnaryKind::Relu6, vec({-1, 3, 6, 7.5})), {4},
                         {0, 3, 6, 6}));
  EXPECT_TRUE(tensorNear(
      unary(UnaryKind::Clamp, vec({-3, -1, 0.5, 2, 5}), -1.0, 2.0), {5},
      {-1, -1, 0.5, 2, 2}));
  // LeakyRelu a = 0.1: -2 -> -0.2, -0.5 -> -0.05.
  EXPECT_TRUE(tensorNear(
      unary(UnaryKind::LeakyRelu, vec({-2, -0.5, 0, 3}), 0.1), {4},
      {-0.2, -0.05, 0, 3}));
  // LeakyRelu with a = 0 is Relu; with a = 1 it is the identity.
  EXPECT_TRUE(tensorNear(unary(UnaryKind::LeakyRelu, vec({-2, 3}), 0.0), {2},
                         {0, 3}));
  EXPECT_TRUE(tensorNear(unary(UnaryKind::LeakyRelu, vec({-2, 3}), 1.0), {2},
                         {-2, 3}));
}

TEST(RefUnary, GeluExactVsTanh) {
  // Gelu = x Phi(x):  Phi(1) = 0.841344746068542948...,
  //   -1 * Phi(-1) = -0.158655253931457051..., 2 Phi(2) = 1.954499736103641...
  //   -0.5 Phi(-0.5) = -0.154268769362993448...
  EXPECT_TRUE(tensorNear(unary(UnaryKind::Gelu, vec({1, -1, 2, -0.5, 0})), {5},
                         {0.8413447460685429, -0.15865525393145705,
                          1.9544997361036416, -0.15426876936299345, 0.0}));
  // GeluTanh = 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))).
  EXPECT_TRUE(tensorNear(unary(UnaryKind::GeluTanh, vec({1, -1, 2, -0.5, 0})),
                         {5},
                         {0.8411919906082767, -0.1588080093917233,
                          1.954597694087775, -0.15428599017485608, 0.0}));
  // The two forms differ measurably (by ~1.5e-4 at x = 1).
  double exact = unary(UnaryKind::Gelu, vec({1})).data[0];
  double approx = unary(UnaryKind::GeluTanh, vec({1})).data[0];
  EXPECT_GT(std::fabs(exact - approx), 1e-4);
}

TEST(RefUnary, SigmoidSiluTanh) {
  // sigmoid(1) = 0.731058578630004879..., sigmoid(-1) = 0.268941421369995120...
  // sigmoid(-2) = 0.119202922022117555...
  EXPECT_TRUE(tensorNear(unary(UnaryKind::Sigmoid, vec({0, 1, -1, -2})), {4},
                         {0.5, 0.7310585786300049, 0.2689414213699951,
                          0.11920292202211756}));
  // Saturation without NaN.
  EXPECT_TRUE(tensorNear(unary(UnaryKind::Sigmoid, vec({-800, 800})), {2},
                         {0.0, 1.0}));
  // silu(x) = x sigmoid(x): silu(-2) = -0.238405844044235111...,
  // silu(3) = 2.857722380467299657...
  EXPECT_TRUE(tensorNear(unary(UnaryKind::Silu, vec({0, 1, -1, -2, 3})), {5},
                         {0.0, 0.7310585786300049, -0.2689414213699951,
                          -0.2384058440442351, 2.8577223804673}));
  // tanh(0.5) = 0.462117157260009758...; tanh(2) = 0.964027580075816883...
  EXPECT_TRUE(tensorNear(unary(UnaryKind::Tanh, vec({0, 0.5, -0.5, 2})), {4},
                         {0.0, 0.46211715726000974, -0.46211715726000974,
                          0.9640275800758169}));
}

TEST(RefUnary, HardSwish) {
  // x * min(max(x + 3, 0), 6) / 6:
  //   -4 -> 0, -3 -> 0, -1 -> -1*2/6 = -1/3, 0 -> 0, 1 -> 1*4/6 = 2/3,
  //   3 -> 3, 4 -> 4.
  EXPECT_TRUE(tensorNear(unary(UnaryKind::HardSwish,
                               vec({-4, -3, -1, 0, 1, 3, 4})),
                         {7}, {0, 0, -1.0 / 3, 0, 2.0 / 3, 3, 4}));
}

TEST(RefUnary, KeepsShape) {
  Tensor x({2, 1, 2}, {-1, 2, -3, 4});
  EXPECT_TRUE(
      tensorNear(unary(UnaryKind::Relu, x), {2, 1, 2}, {0, 2, 0, 4}));
  Tensor s(std::vector<int64_t>{}, std::vector<double>{-5});
  EXPECT_TRUE(tensorNear(unary(UnaryKind::Relu6, s), {}, {0}));
}

//===----------------------------------------------------------------------===//
// matmul / linear
//===----------------------------------------------------------------------===//

TEST(RefMatmul, PlainAndTransposed) {
  // A = [[1,2,3],[4,5,6]], B = [[7,8],[9,10],[11,12]]:
  //   A B = [[1*7+2*9+3*11, 1*8+2*10+3*12], [4*7+5*9+6*11, 4*8+5*10+6*12]]
  //       = [[58, 64], [139, 154]]
  Tensor A({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor B({3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor At({3, 2}, {1, 4, 2, 5, 3, 6});     // [K, M]
  Tensor Bt({2, 3}, {7, 9, 11, 8, 10, 12}); // [N, K]
  const std::vector<double> want = {58, 64, 139, 154};
  EXPECT_TRUE(tensorNear(matmul(A, B, false, false), {2, 2}, want));
  EXPECT_TRUE(tensorNear(matmul(At, B, true, false), {2, 2}, want));
  EXPECT_TRUE(tensorNear(matmul(A, Bt, false, true), {2, 2}, want));
  EXPECT_TRUE(tensorNear(matmul(At, Bt, true, true), {2, 2}, want));
  // B A is [3,3]: row 0 = 7*[1,2,3] + 8*[4,5,6] = [39, 54, 69].
  Tensor BA = matmul(B, A, false, false);
  ASSERT_EQ(BA.shape, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(BA.data[0], 39);
  EXPECT_EQ(BA.data[1], 54);
  EXPECT_EQ(BA.data[2], 69);
}

TEST(RefMatmul, NonSquareTransposeLhs) {
  // lhs given as [K=2, M=3], rhs [K=2, N=1]:
  // lhs^T = [[1,2],[3,4],[5,6]] with lhs = [[1,3,5],[2,4,6]];
  // rhs = [[1],[10]] -> [21, 43, 65].
  Tensor lhs({2, 3}, {1, 3, 5, 2, 4, 6});
  Tensor rhs({2, 1}, {1, 10});
  EXPECT_TRUE(tensorNear(matmul(lhs, rhs, true, false), {3, 1}, {21, 43, 65}));
}

TEST(RefMatmul, BatchBroadcast) {
  // lhs [2,1,2,2]: b0 = I, b1 = diag(2,3).
  // rhs [3,2,1]:   c-th = [[c+1],[10(c+1)]].
  // out [2,3,2,1]: b0: [c+1, 10(c+1)]; b1: [2(c+1), 30(c+1)].
  Tensor lhs({2, 1, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 3});
  Tensor rhs({3, 2, 1}, {1, 10, 2, 20, 3, 30});
  EXPECT_TRUE(tensorNear(matmul(lhs, rhs, false, false), {2, 3, 2, 1},
                         {1, 10, 2, 20, 3, 30, 2, 30, 4, 60, 6, 90}));
  // Same with transposeRhs: rhs given as [3,1,2] (N=1, K=2) has the same data.
  Tensor rhsT({3, 1, 2}, {1, 10, 2, 20, 3, 30});
  EXPECT_TRUE(tensorNear(matmul(lhs, rhsT, false, true), {2, 3, 2, 1},
                         {1, 10, 2, 20, 3, 30, 2, 30, 4, 60, 6, 90}));
}

TEST(RefMatmul, BatchedLhsRank2Rhs) {
  // lhs [2,2,3] = [A, -A], rhs B [3,2] -> [AB, -AB].
  Tensor lhs({2, 2, 3}, {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6});
  Tensor B({3, 2}, {7, 8, 9, 10, 11, 12});
  EXPECT_TRUE(tensorNear(matmul(lhs, B, false, false), {2, 2, 2},
                         {58, 64, 139, 154, -58, -64, -139, -154}));
  // rank-2 lhs against batched rhs [2,3,2] = [B, 2B] -> [AB, 2AB].
  Tensor A({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor rhs({2, 3, 2}, {7, 8, 9, 10, 11, 12, 14, 16, 18, 20, 22, 24});
  EXPECT_TRUE(tensorNear(matmul(A, rhs, false, false), {2, 2, 2},
                         {58, 64, 139, 154, 116, 128, 278, 308}));
}

TEST(RefLinear, WithAndWithoutBias) {
  // x [[1,2,3],[4,5,6]], W [[1,0,-1],[0.5,0.5,0.5]]:
  //   x W^T = [[1-3, 0.5*6], [4-6, 0.5*15]] = [[-2, 3], [-2, 7.5]]
  Tensor x({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor W({2, 3}, {1, 0, -1, 0.5, 0.5, 0.5});
  Tensor b({2}, {10, 20});
  EXPECT_TRUE(tensorNear(linear(x, W, nullptr), {2, 2}, {-2, 3, -2, 7.5}));
  EXPECT_TRUE(tensorNear(linear(x, W, &b), {2, 2}, {8, 23, 8, 27.5}));
  // Leading batch dims are kept: x [1,2,3] -> [1,2,2].
  Tensor x3({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(tensorNear(linear(x3, W, &b), {1, 2, 2}, {8, 23, 8, 27.5}));
}

//===----------------------------------------------------------------------===//
// layerNorm / rmsNorm
//===----------------------------------------------------------------------===//

TEST(RefLayerNorm, NormRank1NoAffine) {
  // row0 [1,2,3,4]: mean 2.5, biased var (2.25+0.25+0.25+2.25)/4 = 1.25;
  //   eps 0.75 -> denominator sqrt(2): [-1.5,-0.5,0.5,1.5]/sqrt(2)
  // row1 [5,5,5,5]: var 0 -> all zeros (eps keeps it finite).
  Tensor x({2, 4}, {1, 2, 3, 4, 5, 5, 5, 5});
  const double r2 = std::sqrt(2.0);
  EXPECT_TRUE(tensorNear(layerNorm(x, nullptr, nullptr, 1, 0.75), {2, 4},
                         {-1.5 / r2, -0.5 / r2, 0.5 / r2, 1.5 / r2, 0, 0, 0,
                          0}));
  // eps 0: row0 / sqrt(1.25) = [-1.3416407864998738, -0.4472135954999579, ...]
  Tensor x1({1, 4}, {1, 2, 3, 4});
  EXPECT_TRUE(tensorNear(layerNorm(x1, nullptr, nullptr, 1, 0.0), {1, 4},
                         {-1.3416407864998738, -0.4472135954999579,
                          0.4472135954999579, 1.3416407864998738}));
}

TEST(RefLayerNorm, NormRank1WithAffine) {
  // Same as above (eps 0.75), scale [1,-1,2,0], shift [0,1,0,5]:
  //   row0: [-1.5/r2, -0.5/r2 * -1 + 1, 0.5/r2 * 2, 5]
  //   row1: [0, 1, 0, 5]
  Tensor x({2, 4}, {1, 2, 3, 4, 5, 5, 5, 5});
  Tensor scale({4}, {1, -1, 2, 0}), shift({4}, {0, 1, 0, 5});
  const double r2 = std::sqrt(2.0);
  EXPECT_TRUE(tensorNear(layerNorm(x, &scale, &shift, 1, 0.75), {2, 4},
                         {-1.5 / r2, 0.5 / r2 + 1, 1.0 / r2, 5, 0, 1, 0, 5}));
  // Scale only.
  EXPECT_TRUE(tensorNear(layerNorm(x, &scale, nullptr, 1, 0.75), {2, 4},
                         {-1.5 / r2, 0.5 / r2, 1.0 / r2, 0, 0, 0, 0, 0}));
  // Shift only.
  EXPECT_TRUE(tensorNear(layerNorm(x, nullptr, &shift, 1, 0.75), {2, 4},
                         {-1.5 / r2, -0.5 / r2 + 1, 0.5 / r2, 1.5 / r2 + 5, 0,
                          1, 0, 5}));
}

TEST(RefLayerNorm, NormRank2) {
  // x [2,2,2]; each trailing [2,2] block is normalised on its own, eps 0.
  // block0 [1,2,3,4]: mean 2.5, var 1.25, d = 1/sqrt(1.25) = 0.894427190999916
  //   -> [-1.5d, -0.5d, 0.5d, 1.5d]
  // block1 [1,1,3,3]: mean 2, var 1 -> [-1,-1,1,1]
  Tensor x({2, 2, 2}, {1, 2, 3, 4, 1, 1, 3, 3});
  const double d = 0.8944271909999159;
  EXPECT_TRUE(tensorNear(layerNorm(x, nullptr, nullptr, 2, 0.0), {2, 2, 2},
                         {-1.5 * d, -0.5 * d, 0.5 * d, 1.5 * d, -1, -1, 1, 1}));
  // scale [[1,2],[3,4]], shift [[0,0],[0,10]]:
  //   block0: [-1.5d, -1d, 1.5d, 6d + 10] = [-1.3416407864998738,
  //            -0.894427190999916, 1.3416407864998738, 15.366563145999495]
  //   block1: [-1, -2, 3, 14]
  Tensor scale({2, 2}, {1, 2, 3, 4}), shift({2, 2}, {0, 0, 0, 10});
  EXPECT_TRUE(tensorNear(layerNorm(x, &scale, &shift, 2, 0.0), {2, 2, 2},
                         {-1.3416407864998738, -0.8944271909999159,
                          1.3416407864998738, 15.366563145999495, -1, -2, 3,
                          14}));
  // Contrast: normRank 1 on the same data normalises pairs: every pair
  // (a, b) with a < b becomes (-1, 1) (eps 0), and (1,1) / (3,3) give 0.
  EXPECT_TRUE(tensorNear(layerNorm(x, nullptr, nullptr, 1, 1e-300), {2, 2, 2},
                         {-1, 1, -1, 1, 0, 0, 0, 0}));
}

TEST(RefRmsNorm, NormRank1AndScale) {
  // row0 [2,-2,2,-2]: mean square 4 -> /2 = [1,-1,1,-1].
  // row1 [3,4,0,0]: mean square 25/4 -> /2.5 = [1.2, 1.6, 0, 0].
  Tensor x({2, 4}, {2, -2, 2, -2, 3, 4, 0, 0});
  EXPECT_TRUE(tensorNear(rmsNorm(x, nullptr, 1, 0.0), {2, 4},
                         {1, -1, 1, -1, 1.2, 1.6, 0, 0}));
  Tensor scale({4}, {1, 2, 3, 4});
  EXPECT_TRUE(tensorNear(rmsNorm(x, &scale, 1, 0.0), {2, 4},
                         {1, -2, 3, -4, 1.2, 3.2, 0, 0}));
  // eps inside the sqrt: [1,1,1,1], eps 3 -> 1/sqrt(1+3) = 0.5. No mean
  // subtraction (layerNorm would give 0).
  Tensor ones({1, 4}, 1.0);
  EXPECT_TRUE(
      tensorNear(rmsNorm(ones, nullptr, 1, 3.0), {1, 4}, {0.5, 0.5, 0.5, 0.5}));
}

TEST(RefRmsNorm, NormRank2) {
  // x [1,2,2] = [[3,4],[0,0]]: over both dims mean square = 25/4 -> rms 2.5
  //   -> [1.2, 1.6, 0, 0]; scale [[1,1],[2,2]] leaves zeros at 0.
  Tensor x({1, 2, 2}, {3, 4, 0, 0});
  EXPECT_TRUE(
      tensorNear(rmsNorm(x, nullptr, 2, 0.0), {1, 2, 2}, {1.2, 1.6, 0, 0}));
  Tensor scale({2, 2}, {10, -1, 2, 2});
  EXPECT_TRUE(
      tensorNear(rmsNorm(x, &scale, 2, 0.0), {1, 2, 2}, {12, -1.6, 0, 0}));
  // normRank 1 on the same data: row [3,4] -> ms 12.5, row [0,0] -> 0 (eps>0).
  //   3/sqrt(12.5) = 0.848528137423857, 4/sqrt(12.5) = 1.131370849898476
  EXPECT_TRUE(tensorNear(rmsNorm(x, nullptr, 1, 1e-300), {1, 2, 2},
                         {3 / std::sqrt(12.5), 4 / std::sqrt(12.5), 0, 0}));
}

//===----------------------------------------------------------------------===//
// softmax
//===----------------------------------------------------------------------===//

TEST(RefSoftmax, LastAxis) {
  // row0 [0, ln2, ln3]: exp = [1,2,3] / 6. row1 constant -> 1/3 each.
  Tensor x({2, 3}, {0, std::log(2.0), std::log(3.0), 7, 7, 7});
  EXPECT_TRUE(tensorNear(softmax(x, 1), {2, 3},
                         {1.0 / 6, 1.0 / 3, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3}));
}

TEST(RefSoftmax, Axis0AndMiddleAxis) {
  // x [[0,0],[ln3,0]] along axis 0: column 0 (0, ln3) -> (1/4, 3/4),
  // column 1 (0, 0) -> (1/2, 1/2).
  const double l3 = std::log(3.0);
  Tensor x({2, 2}, {0, 0, l3, 0});
  EXPECT_TRUE(tensorNear(softmax(x, 0), {2, 2}, {0.25, 0.5, 0.75, 0.5}));
  // x [2,2,2] along axis 1: pairs (x[a,0,c], x[a,1,c]):
  //   a0c0 (0,ln3) -> (.25,.75); a0c1 (0,0); a1c0 (ln3,0) -> (.75,.25); a1c1
  Tensor y({2, 2, 2}, {0, 0, l3, 0, l3, 0, 0, 0});
  EXPECT_TRUE(tensorNear(softmax(y, 1), {2, 2, 2},
                         {0.25, 0.5, 0.75, 0.5, 0.75, 0.5, 0.25, 0.5}));
}

TEST(RefSoftmax, LargeMagnitudeIsStable) {
  // [1000,1001,1002] == softmax([0,1,2]) = e^k / (1 + e + e^2)
  //   = [0.0900305731703805, 0.2447284710547977, 0.6652409557748219];
  // naive exp(1000) overflows to inf.
  Tensor x({1, 3}, {1000, 1001, 1002});
  EXPECT_TRUE(tensorNear(softmax(x, 1), {1, 3},
                         {0.09003057317038046, 0.24472847105479765,
                          0.6652409557748219}));
  // Very negative: naive exp underflows to 0/0.
  Tensor y({2}, {-1000, -1000});
  EXPECT_TRUE(tensorNear(softmax(y, 0), {2}, {0.5, 0.5}));
  // -inf entries get probability 0.
  Tensor z({3}, {0, -kInf, 0});
  EXPECT_TRUE(tensorNear(softmax(z, 0), {3}, {0.5, 0, 0.5}));
}

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

TEST(RefAttention, SingleHeadByHand) {
  // B=1, H=1, Nq=2, Nk=2, D=2, Dv=2, scale 1.
  // k0 = [0,0], k1 = [1,0]; q0 = [ln3, 0] -> scores [0, ln3] -> p [1/4, 3/4];
  // q1 = [0, 5] -> scores [0, 0] -> p [1/2, 1/2].
  // v0 = [1,2], v1 = [5,10]:
  //   out0 = 1/4 [1,2] + 3/4 [5,10] = [4, 8]; out1 = [3, 6].
  const double l3 = std::log(3.0);
  Tensor q({1, 1, 2, 2}, {l3, 0, 0, 5});
  Tensor k({1, 1, 2, 2}, {0, 0, 1, 0});
  Tensor v({1, 1, 2, 2}, {1, 2, 5, 10});
  EXPECT_TRUE(tensorNear(attention(q, k, v, nullptr, 1.0, false), {1, 1, 2, 2},
                         {4, 8, 3, 6}));
}

TEST(RefAttention, CustomScale) {
  // As SingleHeadByHand with scale 2: row0 scores [0, 2 ln3] -> p [1/10, 9/10]
  //   -> 0.1 [1,2] + 0.9 [5,10] = [4.6, 9.2]; row1 unchanged [3, 6].
  const double l3 = std::log(3.0);
  Tensor q({1, 1, 2, 2}, {l3, 0, 0, 5});
  Tensor k({1, 1, 2, 2}, {0, 0, 1, 0});
  Tensor v({1, 1, 2, 2}, {1, 2, 5, 10});
  EXPECT_TRUE(tensorNear(attention(q, k, v, nullptr, 2.0, false), {1, 1, 2, 2},
                         {4.6, 9.2, 3, 6}));
  // scale 0.5 with q doubled is the same as scale 1.
  Tensor q2({1, 1, 2, 2}, {2 * l3, 0, 0, 10});
  EXPECT_TRUE(tensorNear(attention(q2, k, v, nullptr, 0.5, false),
                         {1, 1, 2, 2}, {4, 8, 3, 6}));
}

TEST(RefAttention, CausalSquare) {
  // As SingleHeadByHand, causal: row0 sees only key 0 -> v0 = [1,2];
  // row1 sees both -> [3, 6].
  const double l3 = std::log(3.0);
  Tensor q({1, 1, 2, 2}, {l3, 0, 0, 5});
  Tensor k({1, 1, 2, 2}, {0, 0, 1, 0});
  Tensor v({1, 1, 2, 2}, {1, 2, 5, 10});
  EXPECT_TRUE(tensorNear(attention(q, k, v, nullptr, 1.0, true), {1, 1, 2, 2},
                         {1, 2, 3, 6}));
}

TEST(RefAttention, CausalTopLeftFewerQueries) {
  // Nq=2, Nk=3, q = 0 -> uniform weights over visible keys (j <= i).
  // v = [[1,2],[5,10],[100,200]].
  //   row0: key 0 -> [1,2]; row1: keys 0,1 -> [3, 6]; key 2 never seen.
  // (bottom-right alignment would give row0 -> [3,6].)
  Tensor q({1, 1, 2, 1}, 0.0);
  Tensor k({1, 1, 3, 1}, {1, 2, 3});
  Tensor v({1, 1, 3, 2}, {1, 2, 5, 10, 100, 200});
  EXPECT_TRUE(tensorNear(attention(q, k, v, nullptr, 1.0, true), {1, 1, 2, 2},
                         {1, 2, 3, 6}));
}

TEST(RefAttention, CausalTopLeftMoreQueries) {
  // Nq=3, Nk=2, q = 0, v = [[1,2],[5,10]]:
  //   row0: key 0 -> [1,2]; row1: keys 0,1 -> [3,6]; row2: keys 0,1 -> [3,6].
  // (bottom-right alignment would make row0 fully masked.)
  Tensor q({1, 1, 3, 1}, 0.0);
  Tensor k({1, 1, 2, 1}, {1, 2});
  Tensor v({1, 1, 2, 2}, {1, 2, 5, 10});
  EXPECT_TRUE(tensorNear(attention(q, k, v, nullptr, 1.0, true), {1, 1, 3, 2},
                         {1, 2, 3, 6, 3, 6}));
}

TEST(RefAttention, GroupedQueryHeadMapping) {
  // B=1, Hq=4, Hkv=2, Nq=1, Nk=2, D=1, Dv=2, q = 1 everywhere, scale 1.
  // kv head 0: k = [0, ln3] -> p [1/4, 3/4]; v = [[0,1],[4,1]] -> [3, 1].
  // kv head 1: k = [ln3, 0] -> p [3/4, 1/4]; v = [[8,2],[0,2]] -> [6, 2].
  // Query heads 0,1 read kv head 0; heads 2,3 read kv head 1 (h / 2).
  // (h % 2 would give [3,1, 6,2, 3,1, 6,2].)
  const double l3 = std::log(3.0);
  Tensor q({1, 4, 1, 1}, 1.0);
  Tensor k({1, 2, 2, 1}, {0, l3, l3, 0});
  Tensor v({1, 2, 2, 2}, {0, 1, 4, 1, 8, 2, 0, 2});
  EXPECT_TRUE(tensorNear(attention(q, k, v, nullptr, 1.0, false), {1, 4, 1, 2},
                         {3, 1, 3, 1, 6, 2, 6, 2}));
}

TEST(RefAttention, AdditiveMask) {
  // q = 0 so scores are the mask: mask [[0, ln3], [ln3, 0]] (rank 2,
  // broadcast to [1,1,2,2]). v = [[1,2],[5,10]]:
  //   row0 p [1/4, 3/4] -> [4, 8]; row1 p [3/4, 1/4] -> [2, 4].
  const double l3 = std::log(3.0);
  Tensor q({1, 1, 2, 1}, 0.0);
  Tensor k({1, 1, 2, 1}, {3, -7});
  Tensor v({1, 1, 2, 2}, {1, 2, 5, 10});
  Tensor mask({2, 2}, {0, l3, l3, 0});
  EXPECT_TRUE(tensorNear(attention(q, k, v, &mask, 1.0, false), {1, 1, 2, 2},
                         {4, 8, 2, 4}));
}

TEST(RefAttention, MaskBroadcastPerHead) {
  // B=2, H=2, Nq=1, Nk=2, D=1, Dv=1, q = 0, v = [1, 5] for every (b, h).
  // mask [1,2,1,2]: head0 [0, ln3] -> 1/4 + 15/4 = 4; head1 [ln3, 0] ->
  // 3/4 + 5/4 = 2. Output [2,2,1,1] = [4, 2, 4, 2].
  const double l3 = std::log(3.0);
  Tensor q({2, 2, 1, 1}, 0.0);
  Tensor k({2, 2, 2, 1}, 0.0);
  Tensor v({2, 2, 2, 1}, {1, 5, 1, 5, 1, 5, 1, 5});
  Tensor mask({1, 2, 1, 2}, {0, l3, l3, 0});
  EXPECT_TRUE(tensorNear(attention(q, k, v, &mask, 1.0, false), {2, 2, 1, 1},
                         {4, 2, 4, 2}));
}

TEST(RefAttention, FullyMaskedRowGivesZeros) {
  // mask row0 [0, -inf] -> only key 0 -> v0 = [1,2];
  // mask row1 [-inf, -inf] -> no visible key -> zeros (not NaN).
  Tensor q({1, 1, 2, 1}, {1, 2});
  Tensor k({1, 1, 2, 1}, {1, 2});
  Tensor v({1, 1, 2, 2}, {1, 2, 5, 10});
  Tensor mask({2, 2}, {0, -kInf, -kInf, -kInf});
  EXPECT_TRUE(tensorNear(attention(q, k, v, &mask, 1.0, false), {1, 1, 2, 2},
                         {1, 2, 0, 0}));
  // Causal plus mask: query 0 only sees key 0 (causal) and the mask hides
  // key 0 -> zeros; query 1 sees key 1 only -> v1 = [5, 10].
  Tensor mask2({2, 2}, {-kInf, 0, -kInf, 0});
  EXPECT_TRUE(tensorNear(attention(q, k, v, &mask2, 1.0, true), {1, 1, 2, 2},
                         {0, 0, 5, 10}));
}

TEST(RefAttention, LargeScoresAreStable) {
  // Scores [1000, 1000] -> uniform -> (1 + 3) / 2 = 2 (naive exp overflows).
  Tensor q({1, 1, 1, 1}, std::vector<double>{1000});
  Tensor k({1, 1, 2, 1}, {1, 1});
  Tensor v({1, 1, 2, 1}, {1, 3});
  EXPECT_TRUE(
      tensorNear(attention(q, k, v, nullptr, 1.0, false), {1, 1, 1, 1}, {2}));
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

TEST(RefMaxPool2d, PaddingNeverWins) {
  // x = [[-1,-2],[-3,-4]], kernel 2x2, stride 1, pads 1 all round -> 3x3.
  // Window (i,j) covers real rows {i-1, i} and cols {j-1, j} (clipped):
  //   (0,0) {-1}           -> -1   (0,1) {-1,-2}       -> -1   (0,2) {-2} -> -2
  //   (1,0) {-1,-3}        -> -1   (1,1) all           -> -1   (1,2) {-2,-4} -> -2
  //   (2,0) {-3}           -> -3   (2,1) {-3,-4}       -> -3   (2,2) {-4} -> -4
  Tensor x({1, 1, 2, 2}, {-1, -2, -3, -4});
  Pool2dParams p;
  p.layout = Layout::NCHW;
  p.kernel = {2, 2};
  p.pads = {1, 1, 1, 1};
  EXPECT_TRUE(tensorNear(maxPool2d(x, p), {1, 1, 3, 3},
                         {-1, -1, -2, -1, -1, -2, -3, -3, -4}));
}

TEST(RefMaxPool2d, Stride2NHWCTwoChannels) {
  // 4x4, ch0 = 0..15, ch1 = -(0..15); kernel 2, stride 2.
  //   ch0 window maxima: 5, 7, 13, 15
  //   ch1 maxima = -(window minima 0, 2, 8, 10) = 0, -2, -8, -10
  Tensor x({1, 4, 4, 2}, 0.0);
  for (int i = 0; i < 16; ++i) {
    x.data[2 * i] = i;
    x.data[2 * i + 1] = -i;
  }
  Pool2dParams p;
  p.layout = Layout::NHWC;
  p.kernel = {2, 2};
  p.strides = {2, 2};
  EXPECT_TRUE(tensorNear(maxPool2d(x, p), {1, 2, 2, 2},
                         {5, 0, 7, -2, 13, -8, 15, -10}));
}

TEST(RefMaxPool2d, AsymmetricPadsAndKernel) {
  // x 2x3 = [[1,9,2],[8,3,7]], kernel {1,2}, stride {1,2}, pads left 1:
  // padded cols: [p,1,9,2] / [p,8,3,7] -> windows cols {p,1},{9,2}
  //   -> [[1, 9], [8, 7]].
  Tensor x({1, 1, 2, 3}, {1, 9, 2, 8, 3, 7});
  Pool2dParams p;
  p.layout = Layout::NCHW;
  p.kernel = {1, 2};
  p.strides = {1, 2};
  p.pads = {0, 0, 1, 0};
  EXPECT_TRUE(tensorNear(maxPool2d(x, p), {1, 1, 2, 2}, {1, 9, 8, 7}));
}

TEST(RefAvgPool2d, CountIncludePadAtCorner) {
  // x = [[1,2],[3,4]], kernel 2x2, stride 1, pads 1 -> 3x3 window sums:
  //   1 3 2 / 4 10 6 / 3 7 4
  // countIncludePad: every window lies inside the padded input -> /4:
  //   0.25 0.75 0.5 / 1 2.5 1.5 / 0.75 1.75 1
  // otherwise divide by real elements (corners 1, edges 2, centre 4):
  //   1 1.5 2 / 2 2.5 3 / 3 3.5 4
  Tensor x({1, 1, 2, 2}, {1, 2, 3, 4});
  Pool2dParams p;
  p.layout = Layout::NCHW;
  p.kernel = {2, 2};
  p.pads = {1, 1, 1, 1};
  p.countIncludePad = true;
  EXPECT_TRUE(tensorNear(avgPool2d(x, p), {1, 1, 3, 3},
                         {0.25, 0.75, 0.5, 1, 2.5, 1.5, 0.75, 1.75, 1}));
  p.countIncludePad = false;
  EXPECT_TRUE(tensorNear(avgPool2d(x, p), {1, 1, 3, 3},
                         {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}));
}

TEST(RefAvgPool2d, Stride2NHWCNoPadding) {
  // 4x4, ch0 = 0..15, ch1 = 10 * ch0; kernel 2 stride 2:
  //   ch0 means: (0+1+4+5)/4 = 2.5, (2+3+6+7)/4 = 4.5, 10.5, 12.5
  Tensor x({1, 4, 4, 2}, 0.0);
  for (int i = 0; i < 16; ++i) {
    x.data[2 * i] = i;
    x.data[2 * i + 1] = 10 * i;
  }
  Pool2dParams p;
  p.layout = Layout::NHWC;
  p.kernel = {2, 2};
  p.strides = {2, 2};
  EXPECT_TRUE(tensorNear(avgPool2d(x, p), {1, 2, 2, 2},
                         {2.5, 25, 4.5, 45, 10.5, 105, 12.5, 125}));
}

TEST(RefGlobalAvgPool, BothLayouts) {
  // N=2. Batch 0: ch0 [1,2,3,4] -> 2.5, ch1 [10,20,30,60] -> 30.
  // Batch 1: ch0 [0,0,0,4] -> 1, ch1 [-4,0,0,0] -> -1.
  Tensor xc({2, 2, 2, 2},
            {1, 2, 3, 4, 10, 20, 30, 60, 0, 0, 0, 4, -4, 0, 0, 0});
  EXPECT_TRUE(tensorNear(globalAvgPool(xc, Layout::NCHW), {2, 2, 1, 1},
                         {2.5, 30, 1, -1}));
  Tensor xh = permute(xc, kNchwToNhwc);
  EXPECT_TRUE(tensorNear(globalAvgPool(xh, Layout::NHWC), {2, 1, 1, 2},
                         {2.5, 30, 1, -1}));
  // Non-square spatial 1x3 NHWC with one channel: mean(3, 6, 9) = 6.
  Tensor y({1, 1, 3, 1}, {3, 6, 9});
  EXPECT_TRUE(tensorNear(globalAvgPool(y, Layout::NHWC), {1, 1, 1, 1}, {6}));
}

//===----------------------------------------------------------------------===//
// upsample
//===----------------------------------------------------------------------===//

namespace {
UpsampleParams upNchw(UpsampleMode mode, std::array<int64_t, 2> outSize,
                      std::array<double, 2> coordScale, bool align = false) {
  UpsampleParams p;
  p.mode = mode;
  p.outSize = outSize;
  p.coordScale = coordScale;
  p.alignCorners = align;
  p.layout = Layout::NCHW;
  return p;
}
} // namespace

TEST(RefUpsample, NearestBySize) {
  // W 2 -> 4, coordScale 2/4: src = floor(dst/2) = 0,0,1,1.
  Tensor x({1, 1, 1, 2}, {1, 5});
  EXPECT_TRUE(tensorNear(
      upsample(x, upNchw(UpsampleMode::Nearest, {1, 4}, {1.0, 0.5})),
      {1, 1, 1, 4}, {1, 1, 5, 5}));
  // W 3 -> 5, coordScale 3/5 = 0.6: dst*0.6 = 0, .6, 1.2, 1.8, 2.4
  //   -> floor 0,0,1,1,2.
  Tensor y({1, 1, 1, 3}, {10, 20, 30});
  EXPECT_TRUE(tensorNear(
      upsample(y, upNchw(UpsampleMode::Nearest, {1, 5}, {1.0, 3.0 / 5.0})),
      {1, 1, 1, 5}, {10, 10, 20, 20, 30}));
}

TEST(RefUpsample, NearestByScale) {
  // Scale factor 2.6 on W = 3: out = floor(7.8) = 7, coordScale = 1/2.6:
  //   dst/2.6 = 0, .38, .77, 1.15, 1.54, 1.92, 2.31 -> 0,0,0,1,1,1,2
  // (by size, coordScale 3/7: 0, .43, .86, 1.29, 1.71, 2.14, 2.57
  //   -> 0,0,0,1,1,2,2 differs at dst = 5).
  Tensor x({1, 1, 1, 3}, {10, 20, 30});
  EXPECT_TRUE(tensorNear(
      upsample(x, upNchw(UpsampleMode::Nearest, {1, 7}, {1.0, 1.0 / 2.6})),
      {1, 1, 1, 7}, {10, 10, 10, 20, 20, 20, 30}));
  EXPECT_TRUE(tensorNear(
      upsample(x, upNchw(UpsampleMode::Nearest, {1, 7}, {1.0, 3.0 / 7.0})),
      {1, 1, 1, 7}, {10, 10, 10, 20, 20, 30, 30}));
  // Output an exact multiple of the input is no special case: scale 3.2 on
  // W = 3 gives out = floor(9.6) = 9 = 3 * in, coordScale 1/3.2 = 0.3125:
  //   dst * 0.3125 = 0, .31, .62, .94, 1.25, 1.56, 1.88, 2.19, 2.5
  //   -> 0,0,0,0,1,1,1,2,2 (plain replication would be 0,0,0,1,1,1,2,2,2).
  // PyTorch's interpolate(scale_factor=3.2, mode='nearest') agrees.
  EXPECT_TRUE(tensorNear(
      upsample(x, upNchw(UpsampleMode::Nearest, {1, 9}, {1.0, 1.0 / 3.2})),
      {1, 1, 1, 9}, {10, 10, 10, 10, 20, 20, 20, 30, 30}));
  // Same along H (NCHW, H 3 -> 9, W unchanged).
  Tensor y({1, 1, 3, 1}, {10, 20, 30});
  EXPECT_TRUE(tensorNear(
      upsample(y, upNchw(UpsampleMode::Nearest, {9, 1}, {1.0 / 3.2, 1.0})),
      {1, 1, 9, 1}, {10, 10, 10, 10, 20, 20, 20, 30, 30}));
  // Clamp to in - 1: coordScale 1 with out 3 > in 2 -> src 0, 1, min(2, 1).
  Tensor z({1, 1, 1, 2}, {1, 5});
  EXPECT_TRUE(tensorNear(
      upsample(z, upNchw(UpsampleMode::Nearest, {1, 3}, {1.0, 1.0})),
      {1, 1, 1, 3}, {1, 5, 5}));
}

TEST(RefUpsample, Nearest2DNHWC) {
  // NHWC [1,1,2,2]: pixels (1,10), (2,20); out 2x4 with coordScale {0.5,0.5}:
  // each output row = (1,10),(1,10),(2,20),(2,20).
  Tensor x({1, 1, 2, 2}, {1, 10, 2, 20});
  UpsampleParams p;
  p.mode = UpsampleMode::Nearest;
  p.outSize = {2, 4};
  p.coordScale = {0.5, 0.5};
  p.layout = Layout::NHWC;
  EXPECT_TRUE(tensorNear(upsample(x, p), {1, 2, 4, 2},
                         {1, 10, 1, 10, 2, 20, 2, 20, 1, 10, 1, 10, 2, 20, 2,
                          20}));
}

TEST(RefUpsample, BilinearAlignCornersFalseVsTrue) {
  // [a, b] = [1, 5], W 2 -> 4.
  // alignCorners false, coordScale 0.5: src = max((dst+0.5)*0.5-0.5, 0)
  //   = 0, 0.25, 0.75, 1.25(clamped to b):
  //   [a, 0.75a+0.25b, 0.25a+0.75b, b] = [1, 2, 4, 5]
  Tensor x({1, 1, 1, 2}, {1, 5});
  EXPECT_TRUE(tensorNear(
      upsample(x, upNchw(UpsampleMode::Bilinear, {1, 4}, {1.0, 0.5}, false)),
      {1, 1, 1, 4}, {1, 2, 4, 5}));
  // alignCorners true: src = dst/3 -> [a, a+(b-a)/3, a+2(b-a)/3, b]
  //   = [1, 7/3, 11/3, 5]
  EXPECT_TRUE(tensorNear(
      upsample(x, upNchw(UpsampleMode::Bilinear, {1, 4}, {1.0, 0.5}, true)),
      {1, 1, 1, 4}, {1, 7.0 / 3, 11.0 / 3, 5}));
}

TEST(RefUpsample, Bilinear2DAlignCornersNHWC) {
  // 2x2 [[1,2],[3,4]] -> 3x3, alignCorners: src = dst/2 in both dims:
  //   1 1.5 2 / 2 2.5 3 / 3 3.5 4; channel 1 = 10x channel 0.
  Tensor x({1, 2, 2, 2}, {1, 10, 2, 20, 3, 30, 4, 40});
  UpsampleParams p;
  p.mode = UpsampleMode::Bilinear;
  p.outSize = {3, 3};
  p.coordScale = {2.0 / 3, 2.0 / 3};
  p.alignCorners = true;
  p.layout = Layout::NHWC;
  EXPECT_TRUE(tensorNear(upsample(x, p), {1, 3, 3, 2},
                         {1, 10, 1.5, 15, 2, 20, 2, 20, 2.5, 25, 3, 30, 3, 30,
                          3.5, 35, 4, 40}));
}

TEST(RefUpsample, Bilinear2DHalfPixelNCHW) {
  // 2x2 [[1,2],[3,4]] -> 4x4, half-pixel (alignCorners false), coordScale 0.5
  // in both dims: per-dim weights as in the 1-D test, so
  //   row r of the output interpolates rows with src_h = 0, .25, .75, 1(clamp)
  //   value = 1 + 2*src_h + src_w with src in {0, .25, .75, 1}.
  Tensor x({1, 1, 2, 2}, {1, 2, 3, 4});
  const double s[4] = {0, 0.25, 0.75, 1};
  std::vector<double> want;
  for (double sh : s)
    for (double sw : s)
      want.push_back(1 + 2 * sh + sw);
  // e.g. out[1][1] = 1 + 0.5 + 0.25 = 1.75
  EXPECT_EQ(want[5], 1.75);
  EXPECT_TRUE(tensorNear(
      upsample(x, upNchw(UpsampleMode::Bilinear, {4, 4}, {0.5, 0.5}, false)),
      {1, 1, 4, 4}, want));
}

TEST(RefUpsample, BilinearDownsampleAndSingleOutput) {
  // W 4 -> 2, half-pixel, coordScale 2: src = (dst+0.5)*2-0.5 = 0.5, 2.5
  //   [1,2,3,5] -> [(1+2)/2, (3+5)/2] = [1.5, 4]
  Tensor x({1, 1, 1, 4}, {1, 2, 3, 5});
  EXPECT_TRUE(tensorNear(
      upsample(x, upNchw(UpsampleMode::Bilinear, {1, 2}, {1.0, 2.0}, false)),
      {1, 1, 1, 2}, {1.5, 4}));
  // 2x2 -> 1x1: alignCorners uses src 0 -> x[0][0]; half-pixel with
  // coordScale 2 uses src (0.5, 0.5) -> mean 2.5.
  Tensor y({1, 1, 2, 2}, {1, 2, 3, 4});
  EXPECT_TRUE(tensorNear(
      upsample(y, upNchw(UpsampleMode::Bilinear, {1, 1}, {2.0, 2.0}, true)),
      {1, 1, 1, 1}, {1}));
  EXPECT_TRUE(tensorNear(
      upsample(y, upNchw(UpsampleMode::Bilinear, {1, 1}, {2.0, 2.0}, false)),
      {1, 1, 1, 1}, {2.5}));
}

//===----------------------------------------------------------------------===//
// rope
//===----------------------------------------------------------------------===//

TEST(RefRope, HalfSplitVsInterleaved) {
  // x [2 heads, N=2, D=4]; head 1 = 10 * head 0.
  // Position 0: cos [1,1], sin [0,0] -> identity.
  // Position 1: cos [0, 0.6], sin [1, 0.8].
  // Head 0 row 1 = [1,2,3,4].
  // Half-split pairs (0,2) angle 0 and (1,3) angle 1:
  //   (1,3), c0 s1: (1*0 - 3*1, 3*0 + 1*1) = (-3, 1)
  //   (2,4), c.6 s.8: (1.2 - 3.2, 2.4 + 1.6) = (-2, 4)
  //   -> [-3, -2, 1, 4]
  // Interleaved pairs (0,1) angle 0 and (2,3) angle 1:
  //   (1,2): (0 - 2, 0 + 1) = (-2, 1)
  //   (3,4): (1.8 - 3.2, 2.4 + 2.4) = (-1.4, 4.8)
  //   -> [-2, 1, -1.4, 4.8]
  Tensor x({2, 2, 4}, {5, 6, 7, 8, 1, 2, 3, 4, 50, 60, 70, 80, 10, 20, 30, 40});
  Tensor cos({2, 2}, {1, 1, 0, 0.6});
  Tensor sin({2, 2}, {0, 0, 1, 0.8});
  EXPECT_TRUE(tensorNear(rope(x, cos, sin, false), {2, 2, 4},
                         {5, 6, 7, 8, -3, -2, 1, 4, 50, 60, 70, 80, -30, -20,
                          10, 40}));
  EXPECT_TRUE(tensorNear(rope(x, cos, sin, true), {2, 2, 4},
                         {5, 6, 7, 8, -2, 1, -1.4, 4.8, 50, 60, 70, 80, -20,
                          10, -14, 48}));
}

TEST(RefRope, RealAngles) {
  // Single row, D=2 (one pair, both modes identical), angle pi/2 rotates
  // (x0, x1) = (1, 0) to (0, 1); angle pi gives (-1, 0).
  Tensor x({2, 2}, {1, 0, 1, 0});
  const double pi = std::acos(-1.0);
  Tensor cos({2, 1}, {std::cos(pi / 2), std::cos(pi)});
  Tensor sin({2, 1}, {std::sin(pi / 2), std::sin(pi)});
  EXPECT_TRUE(tensorNear(rope(x, cos, sin, false), {2, 2}, {0, 1, -1, 0}));
  EXPECT_TRUE(tensorNear(rope(x, cos, sin, true), {2, 2}, {0, 1, -1, 0}));
}
