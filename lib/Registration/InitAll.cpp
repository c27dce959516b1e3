//===- InitAll.cpp - Everything fusec tools register ----------------------===//

#include "fusec/InitAll.h"

#include "fusec/Pipelines/Pipelines.h"
#include "fusec/Transforms/Passes.h"

#include "Fuse/FuseDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void fusec::registerAll(mlir::DialectRegistry &registry) {
  registry.insert<mlir::fuse::FuseDialect, mlir::func::FuncDialect>();
  fusec::registerFusecTransformsPasses();
  fusec::registerPipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
}
