//===- FuseDialect.h - The fuse graph dialect -------------------*- C++ -*-===//

#ifndef FUSE_FUSEDIALECT_H
#define FUSE_FUSEDIALECT_H

#include "mlir/IR/Dialect.h"

#include "Fuse/FuseDialect.h.inc"

#endif // FUSE_FUSEDIALECT_H
