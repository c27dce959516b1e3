//===- Summary.h - One-line summaries of tensors ----------------*- C++ -*-===//
//
// What `fusec run` and `fusec-runner` print per result. No LLVM dependency.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_SUPPORT_SUMMARY_H
#define FUSEC_SUPPORT_SUMMARY_H

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace fusec {

/// Statistics of the finite values, and how many are not finite.
struct TensorSummary {
  double mean = 0, min = 0, max = 0, rms = 0;
  int64_t nonFinite = 0;
};

TensorSummary summarize(const std::vector<double> &values);

/// summarize() a piece at a time, for tensors too large to hold as doubles:
/// add() every value once, in order, then result() (the same numbers).
class SummaryAccumulator {
public:
  void add(const double *values, size_t count);
  TensorSummary result() const;

private:
  double sum = 0, sumSq = 0;
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  int64_t count = 0, nonFinite = 0;
};

/// "result0  tensor<2x3xf32>  mean 1.0e+00  min ...  max ...  rms ..."
/// followed by "  non-finite N" when there are any.
std::string formatSummary(const std::string &name, const std::string &type,
                          const TensorSummary &summary);

/// "[1, 56, 56, 64]".
std::string formatShape(const std::vector<int64_t> &shape);

} // namespace fusec

#endif // FUSEC_SUPPORT_SUMMARY_H
