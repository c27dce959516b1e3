//===- GradCheck.h - Finite-difference check of gradient rules --*- C++ -*-===//
//
// Checks the backward fusec-autodiff builds for a graph against central
// finite differences, all in float64 through the reference interpreter:
// with random inputs x and random output gradients dy (fixed seed), the
// gradient of the projection L(x) = sum_i <dy_i, f_i(x)> with respect to
// each element of each differentiated argument is
// (L(x + eps e_j) - L(x - eps e_j)) / (2 eps), which the backward's result
// must match. fusec-gradcheck is the command line; test/gradcheck runs it
// on every rule.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_REFERENCE_GRADCHECK_H
#define FUSEC_REFERENCE_GRADCHECK_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace fusec::ref {

struct GradCheckOptions {
  /// The function to differentiate; empty: the module's only one.
  std::string func;
  /// Arguments to differentiate; empty: every one a gradient reaches.
  std::vector<unsigned> wrt;
  /// Seeds the inputs (ref::randomInputs) and the output gradients.
  uint64_t seed = 1;
  /// The finite-difference step. Small, so that a kink (ReLU at 0, a max
  /// pooling's tie) is almost never inside a step of a random input.
  double eps = 1e-6;
  /// The largest error accepted, relative to the largest magnitude of the
  /// gradient (or of its finite differences).
  double tolerance = 1e-6;
  /// Also prints the module with the forward/backward pair (what is
  /// checked) before the errors.
  bool printPair = false;
};

/// The error of one differentiated argument.
struct ArgumentError {
  unsigned arg = 0;
  /// max |backward - finite difference| over the argument's elements.
  double maxAbs = 0;
  /// maxAbs / max(|backward|, |finite difference|) over the elements.
  double maxRel = 0;
  /// The element where maxAbs was found (row-major index).
  int64_t worst = 0;
};

/// Differentiates a copy of `module`'s function, evaluates the pair and the
/// finite differences, and prints one line per argument and a verdict to
/// `os`. Fails (with a located error, or a line saying which argument is
/// off) when the pass or the interpreter fails or an error exceeds the
/// tolerance.
mlir::LogicalResult gradCheck(mlir::ModuleOp module,
                              const GradCheckOptions &options,
                              llvm::raw_ostream &os,
                              std::vector<ArgumentError> *errors = nullptr);

} // namespace fusec::ref

#endif // FUSEC_REFERENCE_GRADCHECK_H
