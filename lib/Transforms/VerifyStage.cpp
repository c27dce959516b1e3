//===- VerifyStage.cpp - fusec-verify-stage -------------------------------===//
//
// The contract of each pipeline stage, checked at its boundary (the habit of
// torch-mlir's backend contract passes): a stage that leaves something
// behind fails here, at that op, not later in a pass that cannot say why.
//
//===----------------------------------------------------------------------===//

#include "fusec/Transforms/Passes.h"

#include "Fuse/FuseOps.h"

namespace fusec {
#define GEN_PASS_DEF_VERIFYSTAGE
#include "fusec/Transforms/Passes.h.inc"
} // namespace fusec

using namespace mlir;

static LogicalResult verifyKernels(ModuleOp module) {
  WalkResult result = module.walk([](func::FuncOp func) {
    for (Operation &op : func.getBody().getOps())
      if (!isa<fuse::KernelOp, fuse::ReshapeOp, func::ReturnOp>(op)) {
        op.emitOpError("is outside every fuse.kernel after kernel formation");
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

static LogicalResult verifyTiled(ModuleOp module) {
  WalkResult result = module.walk([](Operation *op) {
    if (isa_and_present<fuse::FuseDialect>(op->getDialect()) &&
        !isa<fuse::TensorMapOp>(op)) {
      op->emitOpError("remains after tiling");
      return WalkResult::interrupt();
    }
    auto func = dyn_cast_if_present<func::FuncOp>(op->getParentOp());
    if (func && !isa<arith::ConstantOp, memref::AllocOp,
                     memref::ReinterpretCastOp, memref::CopyOp,
                     fuse::TensorMapOp, gpu::LaunchFuncOp, func::ReturnOp>(
                    op)) {
      op->emitOpError("has no meaning in a launch plan");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

namespace {
struct VerifyStagePass : fusec::impl::VerifyStageBase<VerifyStagePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    LogicalResult result = failure();
    if (stage == "kernels")
      result = verifyKernels(module);
    else if (stage == "tiled")
      result = verifyTiled(module);
    else
      module.emitError("fusec-verify-stage: unknown stage '")
          << stage << "'; expected kernels or tiled";
    if (failed(result))
      signalPassFailure();
  }
};
} // namespace
