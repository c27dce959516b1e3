//===- Interpreter.h - CPU reference interpreter for fuse graphs -*- C++ -*-===//
//
// Evaluates a graph function op by op with the float64 kernels of Kernels.h.
// It is the numeric oracle every later stage is checked against.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_REFERENCE_INTERPRETER_H
#define FUSEC_REFERENCE_INTERPRETER_H

#include "fusec/Reference/Kernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"

#include <optional>

namespace fusec::ref {

/// The reference dtype of an element type, if fuse supports it.
std::optional<DType> getDType(mlir::Type elementType);

/// Checks that `func` is a graph: a body of fuse ops ending in a return,
/// arguments and results statically shaped tensors of f32, f16 or bf16.
/// Emits a located error otherwise. A declaration passes: it is no graph,
/// and fusec::selectEntry never takes one.
mlir::LogicalResult verifyGraph(mlir::func::FuncOp func);

/// Checks that the interpreter can hold `func`'s tensors (float64, every
/// argument and op result at once, a bound on what it keeps alive) in this
/// machine's physical memory; emits an error naming the sizes otherwise.
/// evaluate() checks it; callers that make inputs first check it before.
mlir::LogicalResult checkHostMemory(mlir::func::FuncOp func);

/// The host memory checkHostMemory counts: 8 bytes per element of every
/// argument and op result (saturating in a double).
double hostMemoryBytes(mlir::func::FuncOp func);

/// Evaluates `func` on `inputs`, one per argument with the argument's shape
/// (the caller has already rounded them to the argument dtypes). Results are
/// rounded to their element types unless `roundResults` is false (finite
/// differences need float64 throughout; only fuse.cast rounds then). Emits
/// an error at the offending op and fails on anything that is not a fuse
/// op.
mlir::FailureOr<std::vector<Tensor>> evaluate(mlir::func::FuncOp func,
                                              llvm::ArrayRef<Tensor> inputs,
                                              bool roundResults = true);

/// ||x - reference|| / ||reference|| (||x - reference|| when the reference
/// is all zeros); NaN when x holds one. The spans have one size.
double relativeError(llvm::ArrayRef<double> x,
                     llvm::ArrayRef<double> reference);

/// The largest relativeError accepted for a GPU result of `dtype`: float32
/// arithmetic (TF32 products when `tf32`), or rounding to f16/bf16 between
/// kernels.
double tolerance(DType dtype, bool tf32);

} // namespace fusec::ref

#endif // FUSEC_REFERENCE_INTERPRETER_H
