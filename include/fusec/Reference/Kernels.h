//===- Kernels.h - CPU reference kernels for fuse ops -----------*- C++ -*-===//
//
// Plain-loop float64 implementations of every `fuse` operator. They are the
// numeric oracle of the project: simple, obviously correct, and free of any
// MLIR dependency so that unit tests can call them directly.
//
// Conventions shared by every kernel:
//  - tensors are dense, row-major, with float64 storage;
//  - all accumulation is in float64; no intermediate rounding happens here
//    (use roundTo() / castTo() to model a storage dtype);
//  - shapes are assumed valid: the dialect's verifiers reject bad graphs, and
//    kernels only assert.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_REFERENCE_KERNELS_H
#define FUSEC_REFERENCE_KERNELS_H

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace fusec::ref {

enum class DType { F32, F16, BF16 };

/// Round `v` to the nearest value representable in `dt` (round to nearest,
/// ties to even; overflow gives +-inf, NaN stays NaN).
double roundTo(DType dt, double v);

/// A dense row-major tensor with float64 storage.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  Tensor() = default;
  explicit Tensor(std::vector<int64_t> shape, double fill = 0.0);
  Tensor(std::vector<int64_t> shape, std::vector<double> data);

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const;
};

/// Spatial layout of 4-D activations. Filters follow the activation layout:
/// NCHW uses OIHW filters [Co, Ci/g, Kh, Kw], NHWC uses OHWI filters
/// [Co, Kh, Kw, Ci/g].
enum class Layout { NCHW, NHWC };

struct Conv2dParams {
  std::array<int64_t, 2> strides = {1, 1};
  std::array<int64_t, 4> pads = {0, 0, 0, 0}; // top, bottom, left, right
  std::array<int64_t, 2> dilation = {1, 1};
  int64_t groups = 1;
  Layout layout = Layout::NHWC;
};

/// 2-D convolution (cross-correlation, as in every DL framework). Zero
/// padding. `bias` may be null, otherwise it has shape [Co].
Tensor conv2d(const Tensor &input, const Tensor &filter, const Tensor *bias,
              const Conv2dParams &p);

/// Inference batch norm: (x - mean) / sqrt(var + eps) * scale + shift, with
/// the four per-channel vectors of shape [C] indexed along `channelAxis`.
Tensor batchNorm(const Tensor &x, const Tensor &mean, const Tensor &var,
                 const Tensor &scale, const Tensor &shift, double eps,
                 int64_t channelAxis);

/// x * scale + shift with scale and shift of shape [x.shape[axis]] (axis
/// already normalised to [0, rank)).
Tensor scaleShift(const Tensor &x, const Tensor &scale, const Tensor &shift,
                  int64_t axis);

/// The per-channel (scale, shift) of an inference batch norm:
/// scale / sqrt(var + eps) and shift - mean * that.
std::pair<Tensor, Tensor> batchNormCoefficients(const Tensor &mean,
                                                const Tensor &var,
                                                const Tensor &scale,
                                                const Tensor &shift,
                                                double eps);

enum class BinaryKind { Add, Sub, Mul, Div };

/// Elementwise binary op with NumPy broadcasting (shapes aligned on the
/// right; each pair of dimensions equal or one of them 1).
Tensor binary(BinaryKind kind, const Tensor &lhs, const Tensor &rhs);

/// x + b where b has shape [x.shape[axis]] and is broadcast along `axis`
/// (axis already normalised to [0, rank)).
Tensor biasAdd(const Tensor &x, const Tensor &bias, int64_t axis);

enum class UnaryKind {
  Relu,      // max(x, 0)
  Relu6,     // min(max(x, 0), 6)
  Clamp,     // min(max(x, a), b)
  LeakyRelu, // x >= 0 ? x : a * x
  Gelu,      // x * Phi(x), Phi the standard normal CDF (erf form)
  GeluTanh,  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  Silu,      // x * sigmoid(x)
  Sigmoid,   // 1 / (1 + exp(-x))
  Tanh,      // tanh(x)
  HardSwish, // x * min(max(x + 3, 0), 6) / 6
  Neg,       // -x
};

/// Elementwise activation. `a` and `b` are the parameters named above.
Tensor unary(UnaryKind kind, const Tensor &x, double a = 0.0, double b = 0.0);

/// Batched matrix product. lhs [..., M, K] (or [..., K, M] if transposeLhs),
/// rhs [..., K, N] (or [..., N, K] if transposeRhs); batch dimensions are
/// broadcast NumPy-style. Both ranks are >= 2.
Tensor matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
              bool transposeRhs);

/// x [..., K] times weight [N, K] transposed, plus optional bias [N].
Tensor linear(const Tensor &x, const Tensor &weight, const Tensor *bias);

/// Normalises over the trailing `normRank` dimensions: biased variance,
/// (x - mean) / sqrt(var + eps), then optional elementwise scale and shift of
/// the trailing shape.
Tensor layerNorm(const Tensor &x, const Tensor *scale, const Tensor *shift,
                 int64_t normRank, double eps);

/// x / sqrt(mean(x^2) + eps) over the trailing `normRank` dimensions, times
/// an optional scale of the trailing shape.
Tensor rmsNorm(const Tensor &x, const Tensor *scale, int64_t normRank,
               double eps);

/// Numerically stable softmax along `axis` (normalised to [0, rank)).
Tensor softmax(const Tensor &x, int64_t axis);

/// Scaled dot-product attention. q [B, Hq, Nq, D], k [B, Hkv, Nk, D],
/// v [B, Hkv, Nk, Dv], Hq a multiple of Hkv (query head h reads kv head
/// h / (Hq / Hkv)). `mask`, if given, is additive and broadcasts NumPy-style
/// to [B, Hq, Nq, Nk]. `causal` masks key j for query i when j > i
/// (top-left aligned, as PyTorch's is_causal). A query row with no visible
/// key (every score -inf) produces zeros. Result [B, Hq, Nq, Dv]. `lse`, if
/// given, receives each row's log-sum-exp of its scores [B, Hq, Nq] (-inf
/// for a row with no visible key).
Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v,
                 const Tensor *mask, double scale, bool causal,
                 Tensor *lse = nullptr);

struct Pool2dParams {
  std::array<int64_t, 2> kernel = {1, 1};
  std::array<int64_t, 2> strides = {1, 1};
  std::array<int64_t, 4> pads = {0, 0, 0, 0}; // top, bottom, left, right
  bool countIncludePad = true;                 // avg_pool2d only
  Layout layout = Layout::NHWC;
};

/// Max pooling; padding never wins (it acts as -inf).
Tensor maxPool2d(const Tensor &x, const Pool2dParams &p);

/// Average pooling. With countIncludePad the divisor is the window size
/// clipped to the padded input (PyTorch semantics); without it, the number
/// of real input elements in the window.
Tensor avgPool2d(const Tensor &x, const Pool2dParams &p);

/// Mean over H and W, keeping them as size-1 dimensions.
Tensor globalAvgPool(const Tensor &x, Layout layout);

enum class UpsampleMode { Nearest, Bilinear };

struct UpsampleParams {
  UpsampleMode mode = UpsampleMode::Nearest;
  std::array<int64_t, 2> outSize = {1, 1}; // output H, W
  /// Source-per-destination step used to map coordinates (in/out when the
  /// output size was given, 1/scale when a scale factor was given), as
  /// PyTorch's interpolate does.
  std::array<double, 2> coordScale = {1.0, 1.0};
  bool alignCorners = false; // bilinear only
  Layout layout = Layout::NHWC;
};

/// Nearest, as PyTorch computes it: src = dst when out == in, dst / 2 when
/// out == 2 * in, else min(floor(float(dst) * float(coordScale)), in - 1)
/// in float32 arithmetic.
/// Bilinear, alignCorners: src = dst * (in - 1) / (out - 1) (0 if out == 1).
/// Bilinear otherwise: src = max((dst + 0.5) * coordScale - 0.5, 0), clamped
/// neighbours.
Tensor upsample(const Tensor &x, const UpsampleParams &p);

/// Rotary position embedding of x [..., N, D] with cos/sin tables [N, D/2].
/// Half-split (GPT-NeoX / Llama) pairs element i with i + D/2; interleaved
/// (GPT-J) pairs 2i with 2i+1. For a pair (x0, x1) and angle t:
/// (x0 cos t - x1 sin t, x1 cos t + x0 sin t).
Tensor rope(const Tensor &x, const Tensor &cos, const Tensor &sin,
            bool interleaved);

/// Rounds every element to `dt`.
Tensor castTo(const Tensor &x, DType dt);

/// Same data, new shape (element counts equal).
Tensor reshape(const Tensor &x, std::vector<int64_t> shape);

/// result.shape[i] = x.shape[perm[i]].
Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm);

/// result[i] = x[offsets + i], result shape `sizes` (the block fits in x).
Tensor slice(const Tensor &x, const std::vector<int64_t> &offsets,
             const std::vector<int64_t> &sizes);

/// The inputs joined along `axis`; they agree on every other extent.
Tensor concat(const std::vector<const Tensor *> &inputs, int64_t axis);

} // namespace fusec::ref

#endif // FUSEC_REFERENCE_KERNELS_H
