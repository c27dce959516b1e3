//===- Passes.h - fusec graph passes ----------------------------*- C++ -*-===//

#ifndef FUSEC_TRANSFORMS_PASSES_H
#define FUSEC_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace fusec {

#define GEN_PASS_DECL
#include "fusec/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fusec/Transforms/Passes.h.inc"

/// Adds the rewrites of fusec-simplify to `patterns`.
void populateFuseSimplifyPatterns(mlir::RewritePatternSet &patterns);

} // namespace fusec

#endif // FUSEC_TRANSFORMS_PASSES_H
