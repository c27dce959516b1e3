//===- fusec-translate.cpp - fusec's mlir-translate -----------------------===//
//
// Runs fusec's translations out of MLIR on textual IR: `--fusec-to-cuda`
// prints a tiled module's kernels as CUDA C.
//
//===----------------------------------------------------------------------===//

#include "fusec/Target/CUDA.h"

#include "mlir/Support/LogicalResult.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  fusec::registerCUDATranslation();
  return mlir::failed(
             mlir::mlirTranslateMain(argc, argv, "fusec translation driver\n"))
             ? 1
             : 0;
}
