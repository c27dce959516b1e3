//===- Gather.cpp - Transposes and rotary embeddings ------------------------===//
//
// Ops whose outputs gather their inputs from elsewhere in the tensor: one
// thread per output element.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

using namespace fusec::tiling;

namespace {
class GatherKernel : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

private:
  FailureOr<LaunchConfig> emitBody() override { return emitGather(anchor); }
  LaunchConfig emitGather(Operation *op);
};
} // namespace

std::unique_ptr<KernelBuilder>
fusec::tiling::makeGatherKernel(KernelOp kernel, gpu::GPUModuleOp module,
                                const TargetDescription &target) {
  return std::make_unique<GatherKernel>(kernel, module, target);
}

LaunchConfig GatherKernel::emitGather(Operation *op) {
  // Each output element reads its source elements through the op, as an
  // attention reads its operands through such views (KernelBuilder).
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  return perElement(product(shape), [&](Value linear) {
    SmallVector<Value> coords = delinearize(linear, shape);
    storeResults(coords, loadThroughViews(op->getResult(0), coords));
  });
}
