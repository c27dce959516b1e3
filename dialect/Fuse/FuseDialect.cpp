//===- FuseDialect.cpp - The fuse graph dialect ---------------------------===//

#include "Fuse/FuseDialect.h"
#include "Fuse/FuseOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fuse;

#include "Fuse/FuseDialect.cpp.inc"
#include "Fuse/FuseEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "Fuse/FuseAttrs.cpp.inc"

void FuseDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Fuse/FuseOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Fuse/FuseAttrs.cpp.inc"
      >();
}
