//===- fusec-opt.cpp - fusec's mlir-opt -----------------------------------===//
//
// Runs any fusec or upstream pass on textual IR; the dialects and passes it
// knows come from fusec::registerAll, the one registration list.
//
//===----------------------------------------------------------------------===//

#include "fusec/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  fusec::registerAll(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "fusec optimizer driver\n", registry));
}
