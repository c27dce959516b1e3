//===- AttrNames.h - The discardable attributes fusec writes ----*- C++ -*-===//
//
// The names of the discardable attributes the tiling stage puts on the IR
// and the backends and the artifact writer read back, declared once. The
// typed values (#fuse.kernel_config and the tiles) are the fuse dialect's.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_CONVERSION_ATTRNAMES_H
#define FUSEC_CONVERSION_ATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace fusec {

/// On a fuse.kernel (fusec-select-kernel-config) and on the gpu.launch_func
/// that launches it (fusec-tile-kernels): its #fuse.kernel_config.
constexpr llvm::StringLiteral kKernelConfigAttr = "fusec.kernel_config";
/// On the gpu.launch_func: the kernel's tuning-database signature.
constexpr llvm::StringLiteral kSignatureAttr = "fusec.signature";
/// On the gpu.func: its family's name and its tile in #fuse.tile's terms,
/// which the CUDA C backend prints in the kernel's comment.
constexpr llvm::StringLiteral kFamilyAttr = "fusec.family";
constexpr llvm::StringLiteral kTileAttr = "fusec.tile";
/// On a launch plan: how many of its arguments are the graph's inputs.
constexpr llvm::StringLiteral kNumInputsAttr = "fusec.num_inputs";

} // namespace fusec

#endif // FUSEC_CONVERSION_ATTRNAMES_H
