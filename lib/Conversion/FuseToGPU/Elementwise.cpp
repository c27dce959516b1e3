//===- Elementwise.cpp - Chains of elementwise ops ------------------------===//
//
// One thread per 16 bytes of output where the innermost extent allows it
// (full-size operands and results then move as aligned vectors), one thread
// per element otherwise.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

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
        storeResults(delinearize(linear, shape), Value());
      });
    return perElement(product(shape) / width, [&](Value group) {
      storeVectorResults(delinearize(muli(group, idx(width)), shape), width,
                         {});
    });
  }
};
} // namespace

std::unique_ptr<KernelBuilder>
fusec::tiling::makeElementwiseKernel(KernelOp kernel, gpu::GPUModuleOp module,
                                     const TargetDescription &target) {
  return std::make_unique<ElementwiseKernel>(kernel, module, target);
}
