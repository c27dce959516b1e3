//===- FuseGradient.h - What a gradient rule builds with --------*- C++ -*-===//
//
// The builder fusec-autodiff hands each op's gradient rule
// (GradientOpInterface): the gradients reaching the op's results, the
// forward values the backward may read (saved or recomputed, as the
// pass's policy decides), and where the operands' gradients go.
//
//===----------------------------------------------------------------------===//

#ifndef FUSE_FUSEGRADIENT_H
#define FUSE_FUSEGRADIENT_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::fuse {

class GradientBuilder {
public:
  virtual ~GradientBuilder() = default;

  /// Where the rule builds, in the backward function.
  virtual OpBuilder &builder() = 0;
  /// The location of the op being differentiated.
  virtual Location loc() = 0;
  /// The gradient reaching `result` (a result of the op), with its type;
  /// null when none does.
  virtual Value gradient(Value result) = 0;
  /// The backward function's value of forward value `value` (an operand or
  /// result of the op).
  virtual Value forward(Value value) = 0;
  /// Whether the gradient of forward operand `operand` is needed.
  virtual bool wanted(Value operand) = 0;
  /// Adds `grad`, of `operand`'s type, to the gradient of `operand`.
  virtual void accumulate(Value operand, Value grad) = 0;
  /// Whether the gradients must be the same bit for bit run to run: rules
  /// whose op has an ordered form ask for it.
  virtual bool deterministic() = 0;
};

/// Sums `grad` over the axes NumPy broadcasting expanded `type` along, and
/// reshapes it to `type`'s shape: the gradient of a broadcast operand.
/// Returns `grad` when the shapes match.
Value sumToShape(OpBuilder &b, Location loc, Value grad,
                 RankedTensorType type);

} // namespace mlir::fuse

#endif // FUSE_FUSEGRADIENT_H
