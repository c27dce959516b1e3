//===- ViewReader.h - Reads through slices, concats, transposes -*- C++ -*-===//
//
// The views an anchor applies on the way (isAnchorView): an attention or a
// gather reads its operands through the transposes, slices, concats and
// ropes fusion left between them and the kernel's arguments, and stores its
// result through the transposes after it. A ViewReader maps coordinates
// through those views and reads the element (or an aligned vector of
// elements) they lead to, anew on every call. What is computed on the way
// (a concat's branches, a cast) it leaves to the kernel's EpilogueEvaluator,
// in an element scope of its own.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_VIEWREADER_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_VIEWREADER_H

#include "EpilogueEvaluator.h"

namespace fusec::tiling {

class ViewReader : private Builders {
public:
  /// `memrefOf` maps the kernel's body arguments to the function's memrefs
  /// (filled before the first read); `anchorResult` is the anchor's result.
  ViewReader(mlir::ImplicitLocOpBuilder &b, EpilogueEvaluator &epilogue,
             const mlir::IRMapping &memrefOf, mlir::Value anchorResult)
      : Builders(b), epilogue(epilogue), memrefOf(memrefOf),
        anchorResult(anchorResult) {}

  /// Where the anchor's element at `coords` is stored: permuted by the
  /// transposes between the anchor and the kernel's results.
  llvm::SmallVector<mlir::Value>
  storedCoords(llvm::ArrayRef<mlir::Value> coords);
  /// `v`, computed from kernel arguments through views (slices, concats),
  /// at `coords`, read anew on each call (unlike EpilogueEvaluator::evalAt,
  /// which computes a value once per element).
  mlir::Value readThroughViews(mlir::Value v,
                               llvm::ArrayRef<mlir::Value> coords);
  /// The kernel argument (a memref) under `v`'s transposes and slices, and
  /// `coords` (in `v`'s shape) mapped to it.
  std::pair<mlir::Value, llvm::SmallVector<mlir::Value>>
  viewSource(mlir::Value v, llvm::ArrayRef<mlir::Value> coords);
  /// `v`, a kernel argument under transposes and a rope, at `coords` (f32),
  /// read from memory on every call.
  mlir::Value loadThroughViews(mlir::Value v,
                               llvm::ArrayRef<mlir::Value> coords);
  /// Whether loadVectorThroughViews can read `v` in runs of `width` along
  /// the innermost axis: every view keeps that axis innermost and aligned.
  bool canLoadVectorThroughViews(mlir::Value v, int64_t width);
  /// The `width` elements of `v` from `coords` on along the innermost axis
  /// (f32), read as aligned vectors.
  llvm::SmallVector<mlir::Value>
  loadVectorThroughViews(mlir::Value v, llvm::ArrayRef<mlir::Value> coords,
                         int64_t width);
  /// The `width` angles of a rope's cos or sin `table` ([N, D/2]) at row
  /// `pos` from column `pair` on (f32). The table is a kernel argument or
  /// was fused into the kernel (a slice that applies a position offset, a
  /// cast): read as one aligned vector where its views allow, else element
  /// by element through them.
  llvm::SmallVector<mlir::Value> loadRopeAngles(mlir::Value table,
                                                mlir::Value pos,
                                                mlir::Value pair,
                                                int64_t width);

private:
  EpilogueEvaluator &epilogue;
  const mlir::IRMapping &memrefOf;
  mlir::Value anchorResult;
};

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_VIEWREADER_H
