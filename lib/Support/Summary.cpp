//===- Summary.cpp - One-line summaries of tensors ------------------------===//

#include "fusec/Support/Summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace fusec;

TensorSummary fusec::summarize(const std::vector<double> &values) {
  SummaryAccumulator accumulator;
  accumulator.add(values.data(), values.size());
  return accumulator.result();
}

void SummaryAccumulator::add(const double *values, size_t n) {
  count += static_cast<int64_t>(n);
  for (size_t i = 0; i < n; ++i) {
    double v = values[i];
    if (!std::isfinite(v)) {
      ++nonFinite;
      continue;
    }
    sum += v;
    sumSq += v * v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
}

TensorSummary SummaryAccumulator::result() const {
  TensorSummary s;
  s.nonFinite = nonFinite;
  int64_t n = std::max<int64_t>(1, count - nonFinite);
  s.mean = sum / n;
  s.min = lo;
  s.max = hi;
  s.rms = std::sqrt(sumSq / n);
  return s;
}

std::string fusec::formatSummary(const std::string &name,
                                 const std::string &type,
                                 const TensorSummary &s) {
  char buffer[256];
  std::snprintf(buffer, sizeof(buffer), "%-8s %s  mean %e  min %e  max %e  rms %e",
                name.c_str(), type.c_str(), s.mean, s.min, s.max, s.rms);
  std::string line = buffer;
  if (s.nonFinite)
    line += "  non-finite " + std::to_string(s.nonFinite);
  return line;
}

std::string fusec::formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}
