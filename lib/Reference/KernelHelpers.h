//===- KernelHelpers.h - Indexing shared by the reference kernels -*- C++
//-*-===//
//
// The index arithmetic of 4-D activations, per-axis views, pooling windows
// and resampling taps that Kernels.cpp (forward ops) and TrainingKernels.cpp
// (their adjoints) share, so that a gradient walks exactly the windows and
// taps its forward reads. Private to lib/Reference.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_REFERENCE_KERNELHELPERS_H
#define FUSEC_LIB_REFERENCE_KERNELHELPERS_H

#include "fusec/Reference/Kernels.h"

#include <cstddef>

namespace fusec::ref::detail {

/// Product of shape[begin, end).
int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end);
int64_t product(const std::vector<int64_t> &shape);

/// Multi-index of the row-major position `linear` in `shape`.
void unravel(int64_t linear, const std::vector<int64_t> &shape,
             std::vector<int64_t> &index);

/// Sizes of a 4-D activation, independent of its layout.
struct Dims4 {
  int64_t n, c, h, w;
};

Dims4 activationDims(const Tensor &t, Layout layout);
std::vector<int64_t> activationShape(const Dims4 &d, Layout layout);
int64_t activationIndex(const Dims4 &d, Layout layout, int64_t n, int64_t c,
                        int64_t h, int64_t w);

/// Sizes of the dimensions before, along and after `axis`, so that element
/// (o, a, i) of the 3-D view is at (o * len + a) * inner + i.
struct AxisView {
  int64_t outer, len, inner;
};

AxisView axisView(const Tensor &x, int64_t axis);

/// Output size of a pooling window (floor mode).
Dims4 poolOutput(const Dims4 &in, const Pool2dParams &p);

/// Input offset, in `in`, of the element that wins max pooling window
/// (n, c, oy, ox): the first maximum in row-major window order, a later NaN
/// replacing it (PyTorch's CPU rule). -1 if the window holds no input.
int64_t maxPoolArgmax(const Tensor &x, const Dims4 &in, const Pool2dParams &p,
                      int64_t n, int64_t c, int64_t oy, int64_t ox);

/// The divisor average pooling uses for window (oy, ox); 0 for a window
/// without any element counted.
int64_t avgPoolDivisor(const Dims4 &in, const Pool2dParams &p, int64_t oy,
                       int64_t ox);

/// Source index of nearest upsampling along one axis (see upsample()).
int64_t nearestSource(int64_t dst, int64_t inSize, int64_t outSize,
                      double coordScale);

/// The two source taps of linear interpolation along one axis.
struct LinearTaps {
  int64_t i0, i1;
  double lambda; // weight of i1
};

LinearTaps linearSource(int64_t dst, int64_t inSize, int64_t outSize,
                        double coordScale, bool alignCorners);

/// Row-major offset, in a tensor of `shape`, of the element that a broadcast
/// result reads at `index`. `index` may have more leading dimensions than
/// `shape`; size-1 dimensions of `shape` always read position 0.
int64_t broadcastOffset(const std::vector<int64_t> &index,
                        const std::vector<int64_t> &shape);

/// Attention's score of query i and key j of (batch b, query head h):
/// scale * q . k plus the mask; -inf where causal hides the key.
double attentionScore(const Tensor &q, const Tensor &k, const Tensor *mask,
                      double scale, bool causal, int64_t b, int64_t h,
                      int64_t i, int64_t j);

} // namespace fusec::ref::detail

#endif // FUSEC_LIB_REFERENCE_KERNELHELPERS_H
