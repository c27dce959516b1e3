//===- GemmSchedule.h - How the GEMM families cover C -----------*- C++ -*-===//
//
// What the GEMM families share about the work, apart from the instructions
// that do it: the order in which blocks walk the output tiles (a grouped
// raster; GemmKernel::emitTileOrigin emits it), how many pipeline stages fit
// the shared memory, and the skeleton of ranking candidate tiles by an
// estimated time. Each family keeps its own candidates, costs and checks.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_GEMMSCHEDULE_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_GEMMSCHEDULE_H

#include "Gemm.h"

#include <optional>

namespace fusec::tiling {

/// The output tiles of a tile configuration over a GEMM, and the raster the
/// tensor-core families walk them in: groups of `group` rows of tiles,
/// column by column within a group, so that the A rows and B columns that
/// blocks running together read stay in L2.
struct GemmSchedule {
  int64_t tilesM = 0, tilesN = 0, batch = 1;
  /// Rows of tiles per group of the raster.
  int64_t group = 1;

  static GemmSchedule of(const GemmShape &shape, const GemmTile &tile) {
    GemmSchedule s;
    s.tilesM = ceilDiv(shape.m, tile.bm);
    s.tilesN = ceilDiv(shape.n, tile.bn);
    s.batch = shape.batch;
    s.group = std::min<int64_t>(s.tilesM, 8);
    return s;
  }
  /// The tiles of one batch, which the raster's blocks (x) cover; the
  /// batch is the grid's y.
  int64_t tilesPerBatch() const { return tilesM * tilesN; }
  int64_t tiles() const { return tilesPerBatch() * batch; }
  /// Rounds of tiles over the SMs: the busiest SM's share.
  int64_t tilesPerSM(const TargetDescription &target) const {
    return ceilDiv(tiles(), target.smCount);
  }
};

/// Blocks along k per output tile of `tile` over `shape` (1 unless
/// shape.splitK): enough that the tiles fill one wave of `resident` blocks
/// per SM, each block keeping at least 8 k-tiles, at most 128 splits and
/// the f32 parts within 256 MiB.
int64_t splitKOf(const GemmShape &shape, const GemmTile &tile,
                 const TargetDescription &target, int64_t resident);

/// The deepest pipeline, from `deepest` down to `shallowest`, whose shared
/// memory `bytes(stages)` fits in `limit` (`shallowest` when none does).
int64_t fitStages(int64_t deepest, int64_t shallowest, int64_t limit,
                  llvm::function_ref<int64_t(int64_t)> bytes);

/// Whether `tile` is far wider than the problem, so that it computes mostly
/// padding: more than 64 wide along m or n and at least twice the extent.
bool isMostlyPadding(const GemmShape &shape, const GemmTile &tile);

/// The candidate of least estimated time. A later candidate must be 3%
/// faster to win (the estimates are no finer), so that ties go to the
/// earlier, preferred one.
class TileRanking {
public:
  void consider(const GemmTile &tile, double time) {
    if (!best || time < bestTime * 0.97) {
      best = tile;
      bestTime = time;
    }
  }
  const std::optional<GemmTile> &winner() const { return best; }

private:
  std::optional<GemmTile> best;
  double bestTime = 0;
};

/// The error at `kernel` that opens with "tile <tile> does not suit
/// <family>: "; the caller says what the family needs.
mlir::InFlightDiagnostic unsuitableTile(mlir::fuse::KernelOp kernel,
                                        const GemmTile &tile,
                                        llvm::StringRef family);

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_GEMMSCHEDULE_H
