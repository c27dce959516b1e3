//===- EpilogueEvaluator.h - The fused epilogue at one element --*- C++ -*-===//
//
// Whatever the anchor, each output element of a kernel ends the same way: the
// kernel's yielded values evaluated at that element's coordinates
// (elementwise ops recursively, operands read at their broadcast coordinates,
// the anchor's value taken from registers). The evaluator does that, and owns
// the state it keeps while doing it:
//  - per element (ElementScope): the values computed for the element, each
//    once (a value is always read at the same function of the element's
//    coordinates), and the kernel inputs a family already read for it;
//  - per run of channels (ChannelScope): the per-channel operands' values
//    (bias, batch-norm coefficients), which a family that knows a thread's
//    channels stay fixed computes once.
// Every global access is guarded by the family, so any shape works.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_EPILOGUEEVALUATOR_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_EPILOGUEEVALUATOR_H

#include "Builders.h"

#include "mlir/IR/IRMapping.h"

namespace fusec::tiling {

class EpilogueEvaluator : private Builders {
public:
  /// The per-channel operands' values at one channel.
  using ChannelValues = llvm::DenseMap<mlir::Value, mlir::Value>;
  /// Kernel inputs of the iteration shape, each as a vector loaded at the
  /// coordinates of a run of elements (loadFullInputs).
  using FullInputs =
      llvm::SmallVector<std::pair<mlir::BlockArgument, mlir::Value>>;

  /// `memrefOf` maps the kernel's body arguments to the function's memrefs
  /// and `outputs` holds the function's result memrefs; both are filled
  /// before the first evaluation. `anchorResult` is null for a chain of
  /// elementwise ops.
  EpilogueEvaluator(mlir::ImplicitLocOpBuilder &b, mlir::fuse::KernelOp kernel,
                    const mlir::IRMapping &memrefOf,
                    const llvm::SmallVector<mlir::Value> &outputs,
                    mlir::Value anchorResult)
      : Builders(b), kernel(kernel), memrefOf(memrefOf), outputs(outputs),
        anchorResult(anchorResult) {}

  /// The evaluation of one element, or of lane `lane` of a run of elements
  /// whose full inputs `full` holds (loadFullInputs): what is computed for
  /// it is forgotten when it ends (values computed inside a branch do not
  /// dominate what follows it, and the next element reads other
  /// coordinates). Scopes do not nest.
  class ElementScope {
  public:
    explicit ElementScope(EpilogueEvaluator &evaluator);
    ElementScope(
        EpilogueEvaluator &evaluator,
        llvm::ArrayRef<std::pair<mlir::BlockArgument, mlir::Value>> full,
        int64_t lane);
    ~ElementScope();
    ElementScope(const ElementScope &) = delete;
    ElementScope &operator=(const ElementScope &) = delete;

  private:
    EpilogueEvaluator &evaluator;
  };

  /// While it lives, evalAt takes the per-channel operands of the channels
  /// along `axis` from `values` (evalChannel's results, one map per lane of
  /// the vectors storeVectorResults stores) rather than reading them.
  class ChannelScope {
  public:
    ChannelScope(EpilogueEvaluator &evaluator, int64_t axis,
                 llvm::ArrayRef<ChannelValues> values);
    ~ChannelScope();
    ChannelScope(const ChannelScope &) = delete;
    ChannelScope &operator=(const ChannelScope &) = delete;

  private:
    EpilogueEvaluator &evaluator;
    int64_t savedAxis;
    llvm::ArrayRef<ChannelValues> savedValues;
  };

  mlir::fuse::YieldOp yield() {
    return llvm::cast<mlir::fuse::YieldOp>(
        kernel.getBody().front().getTerminator());
  }

  /// `v` at `coords` (f32), within an ElementScope.
  mlir::Value evalAt(mlir::Value v, llvm::ArrayRef<mlir::Value> coords);
  /// Stores every kernel result at `coords`, given the anchor's value there.
  void storeResults(llvm::ArrayRef<mlir::Value> coords,
                    mlir::Value anchorValue);
  /// Computes and stores `width` consecutive elements along the innermost
  /// axis from `coords` as aligned vectors, reading full-size kernel inputs
  /// as vectors too (or taking them from `full`, loadFullInputs' result at
  /// `coords`); `anchorValues` holds the anchor's value per element.
  void storeVectorResults(llvm::ArrayRef<mlir::Value> coords, int64_t width,
                          llvm::ArrayRef<mlir::Value> anchorValues,
                          const FullInputs *full = nullptr);

  /// The per-channel operands (bias, scale, shift, batch-norm statistics)
  /// of the kernel's elementwise ops whose channel axis is `axis` of the
  /// result.
  llvm::SmallVector<mlir::Value> channelOperands(int64_t axis);
  /// Their values at channel `c`: a family that knows a thread's channels
  /// stay fixed (a GEMM column) computes them once, for a ChannelScope.
  ChannelValues evalChannel(int64_t axis, mlir::Value c);

  /// The kernel inputs of the iteration shape that are read in place.
  llvm::SmallVector<mlir::BlockArgument> fullInputs();
  /// Those inputs, as vectors at `coords`.
  FullInputs loadFullInputs(llvm::ArrayRef<mlir::Value> coords, int64_t width);

private:
  /// Every kernel result at `coords` (f32), given the anchor's value there,
  /// within an ElementScope.
  llvm::SmallVector<mlir::Value> evalResults(llvm::ArrayRef<mlir::Value> coords,
                                             mlir::Value anchorValue);
  mlir::Value evalUnary(mlir::Operation *op, mlir::Value x);
  /// A concat's element at `coords`, read from the operand that holds it.
  mlir::Value evalConcat(mlir::fuse::ConcatOp op,
                         llvm::ArrayRef<mlir::Value> coords);

  mlir::fuse::KernelOp kernel;
  const mlir::IRMapping &memrefOf;
  const llvm::SmallVector<mlir::Value> &outputs;
  mlir::Value anchorResult;

  /// Forgets what was computed for the element.
  void clearElement();

  /// The anchor's value at the element being computed.
  mlir::Value anchorScalar;
  /// Values computed for the element being computed.
  llvm::DenseMap<mlir::Value, mlir::Value> cache;
  /// Kernel inputs already read (as f32) for the element being computed.
  llvm::DenseMap<mlir::Value, mlir::Value> preloaded;
  /// Whether an ElementScope is open.
  bool inElement = false;
  /// The axis whose coordinate `channelValues` hold values for, or -1.
  int64_t channelAxis = -1;
  llvm::ArrayRef<ChannelValues> channelValues;
  /// The lane of channelValues the element being computed reads.
  int64_t channelLane = 0;
};

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_EPILOGUEEVALUATOR_H
