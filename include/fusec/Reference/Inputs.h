//===- Inputs.h - The inputs a graph is checked on --------------*- C++ -*-===//
//
// Every front end that runs a graph without inputs of its own (fusec run,
// fusec tune, jit::tune) draws them here, so that one seed gives one set
// of inputs everywhere: uniform in [-1, 1), except arguments used as a
// batch-norm variance, drawn from [0.5, 2) so that the graph has a defined
// result (in training graphs also a running variance, the batch count of a
// cumulative average and the inverse std a batch-norm backward reads); each
// rounded to its argument's element type. fusec-runner draws
// the same values from the same seed (its --positive names the variances).
// Inputs may come from .npy files instead, and are saved as .npy.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_REFERENCE_INPUTS_H
#define FUSEC_REFERENCE_INPUTS_H

#include "fusec/Reference/Kernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace fusec::ref {

/// True if `value` feeds the variance operand of a batch norm (or another
/// operand that must be positive, listed above), also inside a fuse.kernel:
/// its random values are drawn positive.
bool isVariance(mlir::Value value);

/// Seeded random inputs of `func`, one per argument, by the policy above.
std::vector<Tensor> randomInputs(mlir::func::FuncOp func, uint64_t seed);

/// Inputs of `func` read from .npy files (float16, float32 or float64), one
/// per argument in order, rounded to the arguments' element types. Each
/// file is mapped, not read (a FIFO or /dev/zero is refused), and its shape
/// is checked against the argument's before anything is allocated for it.
/// Fails with a message naming the file.
llvm::Expected<std::vector<Tensor>>
loadInputs(mlir::func::FuncOp func, llvm::ArrayRef<std::string> files);

/// A tensor to save as .npy: its file name and element type.
struct NamedTensor {
  std::string file;
  const Tensor *tensor = nullptr;
  DType dtype = DType::F32;
};

/// Creates `dir` and writes each tensor there as .npy (float16 for f16,
/// float32 for f32 and bf16, which NumPy lacks): every file or none. Fails
/// with a message naming the path. fusec run saves the inputs it used and
/// its results so.
llvm::Error saveTensors(llvm::StringRef dir,
                        llvm::ArrayRef<NamedTensor> tensors);

} // namespace fusec::ref

#endif // FUSEC_REFERENCE_INPUTS_H
