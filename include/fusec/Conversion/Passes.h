//===- Passes.h - fusec conversion passes -----------------------*- C++ -*-===//
//
// The tiling stage's passes (Passes.td): fusec-select-kernel-config, then
// fusec-tile-kernels.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_CONVERSION_PASSES_H
#define FUSEC_CONVERSION_PASSES_H

#include "Fuse/FuseDialect.h"

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

namespace fusec {

#define GEN_PASS_DECL
#include "fusec/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fusec/Conversion/Passes.h.inc"

} // namespace fusec

#endif // FUSEC_CONVERSION_PASSES_H
