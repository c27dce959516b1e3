//===- FuseToGPU.h - What the tiling stage offers besides its pass -*- C++ -*-===//
//
// The autotuner's view of the tiling stage: which configurations a kernel
// may take, each one that the family and the target accept.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_CONVERSION_FUSETOGPU_H
#define FUSEC_CONVERSION_FUSETOGPU_H

#include "fusec/Target/TargetDescription.h"

#include "Fuse/FuseOps.h"

#include <vector>

namespace fusec::tiling {

/// The tiles `fusec tune` tries for `kernel` on `target` (with `fp32Math`
/// ieee or tf32): for a GEMM anchor, the warpgroup GEMM's and the
/// tensor-core GEMM's (both families where the target has both); for an
/// attention, its tensor-core kernels' key tiles. Empty for a kernel the
/// heuristic alone configures. Every tile listed passes the checks a
/// kernel's own `tile` attribute would.
std::vector<mlir::fuse::TileAttr>
tuningCandidates(mlir::fuse::KernelOp kernel,
                 const fusec::TargetDescription &target,
                 llvm::StringRef fp32Math);

} // namespace fusec::tiling

#endif // FUSEC_CONVERSION_FUSETOGPU_H
