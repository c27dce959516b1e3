//===- Elementwise.cpp - Chains of elementwise ops ------------------------===//
//
// One thread per 16 bytes of output where the innermost extent allows it
// (full-size operands and results then move as aligned vectors), one thread
// per element otherwise. With per-channel operands on the innermost axis a
// thread keeps its channels and walks rows.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {
class ElementwiseKernel : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

private:
  FailureOr<LaunchConfig> emitBody() override {
    ArrayRef<int64_t> shape = shapeOf(yield().getValues()[0]);
    int64_t width = vectorWidth(shape);
    if (!width)
      return perElement(product(shape), [&](Value linear) {
        epilogue.storeResults(delinearize(linear, shape), Value());
      });
    int64_t last = shape.size() - 1;
    if (!epilogue.channelOperands(last).empty())
      return emitChannelRuns(shape, width);
    return perElement(product(shape) / width, [&](Value group) {
      epilogue.storeVectorResults(delinearize(muli(group, idx(width)), shape),
                                  width, {});
    });
  }

  /// Per-channel operands on the innermost axis (batch norm, bias in NHWC or
  /// [tokens, features]): a thread keeps one run of `width` channels, so it
  /// computes their values (an rsqrt for batch norm) once, and walks
  /// kRows rows; consecutive threads take consecutive runs of a row.
  LaunchConfig emitChannelRuns(ArrayRef<int64_t> shape, int64_t width) {
    int64_t last = shape.size() - 1;
    int64_t runs = shape.back() / width, rows = product(shape) / shape.back();
    ArrayRef<int64_t> rowShape = shape.drop_back();
    return perElement(runs * ceilDiv(rows, kRows), [&](Value t) {
      Value c0 = muli(remi(t, runs), idx(width));
      Value row0 = muli(divi(t, runs), idx(kRows));
      SmallVector<llvm::DenseMap<Value, Value>> values;
      for (int64_t l = 0; l < width; ++l)
        values.push_back(epilogue.evalChannel(last, addi(c0, idx(l))));
      EpilogueEvaluator::ChannelScope channels(epilogue, last, values);
      for (int64_t r = 0; r < kRows; ++r) {
        Value row = addi(row0, idx(r));
        auto store = [&] {
          SmallVector<Value> coords = delinearize(row, rowShape);
          coords.push_back(c0);
          epilogue.storeVectorResults(coords, width, {});
        };
        if (rows % kRows == 0)
          store();
        else
          ifThen(ltc(row, rows), store);
      }
    });
  }

  /// Rows per thread in emitChannelRuns: 4 x 16 bytes in flight per thread.
  static constexpr int64_t kRows = 4;
};
} // namespace

std::unique_ptr<KernelBuilder>
fusec::tiling::makeElementwiseKernel(KernelOp kernel, gpu::GPUModuleOp module,
                                     const TargetDescription &target) {
  return std::make_unique<ElementwiseKernel>(kernel, module, target);
}
