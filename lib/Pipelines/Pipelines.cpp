//===- Pipelines.cpp - The one place that orders fusec's passes -----------===//

#include "fusec/Pipelines/Pipelines.h"

#include "fusec/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void fusec::buildPipeline(OpPassManager &pm, Stage stage,
                          const PipelineOptions &options) {
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  if (options.simplify) {
    funcPm.addPass(createFuseSimplify());
    funcPm.addPass(createCSEPass());
  }
  if (stage == Stage::Graph)
    return;
  funcPm.addPass(createFormKernels());
}

void fusec::registerPipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "fusec-pipeline-kernels",
      "Simplify a graph and partition it into fuse.kernel regions",
      [](OpPassManager &pm, const PipelineOptions &options) {
        buildPipeline(pm, Stage::Kernels, options);
      });
}
