//===- FusionPolicy.h - What a kernel can read in place ---------*- C++ -*-===//
//
// The rules that fusion (fusec-form-kernels) and tiling (fusec-tile-kernels)
// both apply, which come from the code the kernel families emit rather than
// from the IR: the dialect says what a fuse.kernel may hold (FuseOps.h),
// this header which views the families can load an operand through. Fusion
// puts into a kernel only what they can; tiling sends a kernel written by
// hand that holds more to a family that reads element by element.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_TRANSFORMS_FUSIONPOLICY_H
#define FUSEC_TRANSFORMS_FUSIONPOLICY_H

#include "Fuse/FuseOps.h"

namespace fusec::policy {

/// cp.async copies 16-byte chunks: an attention kernel loads an operand
/// through a slice only where the slice's rows start on such chunks (8
/// elements of the 16-bit types attention runs on tensor cores).
inline bool rowsOnCopyChunks(mlir::fuse::SliceOp slice) {
  return slice.getOffsets().back() % 8 == 0 &&
         slice.getInput().getType().getShape().back() % 8 == 0;
}

/// mlir::fuse::isAnchorView under that rule: the views fusion puts into an
/// attention kernel, which the tensor-core families apply on the way.
inline bool isAnchorView(mlir::Operation *op) {
  return mlir::fuse::isAnchorView(op, rowsOnCopyChunks);
}

/// Whether every slice between `op`'s operands and the kernel's arguments
/// keeps its rows on copy chunks (true of every kernel fusion forms).
inline bool loadsThroughCopyChunks(mlir::fuse::AttentionOp op) {
  for (mlir::Value v : {op.getQuery(), op.getKey(), op.getValue()}) {
    while (mlir::Operation *view = v.getDefiningOp()) {
      if (!mlir::isa<mlir::fuse::TransposeOp, mlir::fuse::SliceOp,
                     mlir::fuse::RopeOp>(view))
        break;
      if (auto slice = mlir::dyn_cast<mlir::fuse::SliceOp>(view);
          slice && !rowsOnCopyChunks(slice))
        return false;
      v = view->getOperand(0);
    }
  }
  return true;
}

} // namespace fusec::policy

#endif // FUSEC_TRANSFORMS_FUSIONPOLICY_H
