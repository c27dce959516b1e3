//===- Autodiff.h - Forward and backward functions of a graph ---*- C++ -*-===//
//
// fusec-autodiff (lib/Transforms/Autodiff.cpp) replaces a graph function
// @f by two:
//
// - @f_forward: @f's arguments; @f's results, then the saved tensors (what
//   the backward reads that is neither an argument nor recomputed).
//   Attributes: fusec.num_results (i64, @f's result count) and
//   fusec.backward (the backward's name).
// - @f_backward: the forward arguments it reads (their indices in
//   fusec.forward_args), then the forward's results it reads (their indices
//   in fusec.forward_results; a result the backward needs is read where
//   the caller holds it, not saved a second time), then the saved tensors
//   (fusec.num_saved), then the gradients of the differentiable results
//   (their indices in fusec.grad_results); it returns the gradients of the
//   arguments listed in fusec.wrt, in that order. Attributes: those five
//   and fusec.forward (the forward's name).
//
// Each gradient has its value's type. Runtimes and entry points read only
// these attributes.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_TRANSFORMS_AUTODIFF_H
#define FUSEC_TRANSFORMS_AUTODIFF_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace fusec {

/// Attribute names of the forward/backward pair.
inline constexpr llvm::StringLiteral kNumResultsAttr = "fusec.num_results";
inline constexpr llvm::StringLiteral kBackwardAttr = "fusec.backward";
inline constexpr llvm::StringLiteral kForwardAttr = "fusec.forward";
inline constexpr llvm::StringLiteral kForwardArgsAttr = "fusec.forward_args";
inline constexpr llvm::StringLiteral kForwardResultsAttr =
    "fusec.forward_results";
inline constexpr llvm::StringLiteral kNumSavedAttr = "fusec.num_saved";
inline constexpr llvm::StringLiteral kGradResultsAttr = "fusec.grad_results";
inline constexpr llvm::StringLiteral kWrtAttr = "fusec.wrt";

struct GradientFunctions {
  mlir::func::FuncOp forward, backward;
  /// Bytes of the saved tensors (the forward's extra results).
  int64_t savedBytes = 0;
};

/// Builds @f_forward and @f_backward next to `f` and erases `f`. `wrt`
/// lists the arguments to differentiate; empty means every argument a
/// gradient reaches. `deterministic` asks for gradients that are the same
/// bit for bit run to run (GradientBuilder::deterministic). Emits located
/// errors (an op without a gradient rule, an argument no gradient reaches)
/// and fails, leaving the module as it was.
mlir::FailureOr<GradientFunctions> differentiate(mlir::func::FuncOp f,
                                                 llvm::ArrayRef<unsigned> wrt,
                                                 bool deterministic = false);

} // namespace fusec

#endif // FUSEC_TRANSFORMS_AUTODIFF_H
