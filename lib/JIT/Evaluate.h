//===- Evaluate.h - The interpreter on borrowed inputs ----------*- C++ -*-===//
//
// Private to the JIT library: jit::evaluate and fusec_jit_evaluate both come
// here with views of the caller's inputs, so that nothing is copied or
// allocated before the inputs are checked against the graph.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_JIT_EVALUATE_H
#define FUSEC_LIB_JIT_EVALUATE_H

#include "fusec/JIT.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace fusec::jit::detail {

/// An input as the caller holds it.
struct InputView {
  /// `rank` extents (null only with a bad caller).
  const int64_t *shape = nullptr;
  size_t rank = 0;
  const double *data = nullptr;
  /// How many values `data` holds, when the caller says (a HostTensor);
  /// else as many as the shape (the C API).
  std::optional<size_t> size;
};

/// jit::evaluate on views of `numInputs` inputs (`input(i)` gives one):
/// checks their number, ranks, shapes and sizes against the graph, and the
/// host memory the interpreter needs, before it allocates anything for
/// them; then copies them. Out of memory is an error, not an exception.
Evaluation evaluate(const std::string &mlir, size_t numInputs,
                    llvm::function_ref<InputView(size_t)> input,
                    const std::string &entry, const std::string &name);

} // namespace fusec::jit::detail

#endif // FUSEC_LIB_JIT_EVALUATE_H
