//===- GemmSchedule.cpp - How the GEMM families cover C -------------------===//
//
// The grouped tile raster, stage fitting and candidate ranking that the
// GEMM families share (GemmSchedule.h).
//
//===----------------------------------------------------------------------===//

#include "GemmSchedule.h"

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec::tiling;

int64_t fusec::tiling::fitStages(int64_t deepest, int64_t shallowest,
                                 int64_t limit,
                                 function_ref<int64_t(int64_t)> bytes) {
  int64_t stages = deepest;
  while (stages > shallowest && bytes(stages) > limit)
    --stages;
  return stages;
}

int64_t fusec::tiling::splitKOf(const GemmShape &shape, const GemmTile &tile,
                                const TargetDescription &target,
                                int64_t resident) {
  // Sliced k (warps_k) sums its groups in the staged epilogue, which the
  // split's partial stores bypass; the mainloop's y carries the batch.
  if (!shape.splitK || tile.kGroups() > 1 || shape.batch > 65535)
    return 1;
  // One wave at 2 blocks per SM ran at 0.5 waves of the 4 that fit, and
  // half the speed (ncu, an H200, bench/results).
  constexpr int64_t kMinKTiles = 8, kMaxSplits = 128;
  constexpr int64_t kMaxBytes = int64_t(256) << 20;
  int64_t numK = ceilDiv(shape.k, tile.bk);
  int64_t tiles = GemmSchedule::of(shape, tile).tiles();
  // Rounded up, a few blocks past the wave share the SMs with the
  // resident others; with one block per SM they would take a second round.
  int64_t slots = std::max<int64_t>(resident, 1) * target.smCount;
  int64_t fill = resident > 1 ? ceilDiv(slots, tiles) : slots / tiles;
  int64_t splits =
      std::min({fill, numK / kMinKTiles, kMaxSplits,
                kMaxBytes / (4 * shape.batch * shape.m * shape.n)});
  if (splits < 2)
    return 1;
  // As many splits as the k-tiles per split need: none is left empty.
  return ceilDiv(numK, ceilDiv(numK, splits));
}

bool fusec::tiling::isMostlyPadding(const GemmShape &shape,
                                    const GemmTile &tile) {
  return (tile.bn > 64 && tile.bn >= 2 * shape.n) ||
         (tile.bm > 64 && tile.bm >= 2 * shape.m);
}

InFlightDiagnostic fusec::tiling::unsuitableTile(KernelOp kernel,
                                                 const GemmTile &tile,
                                                 StringRef family) {
  return kernel.emitOpError("tile ") << tile.toAttr(kernel.getContext())
                                     << " does not suit " << family << ": ";
}

std::pair<Value, Value> GemmKernel::emitTileOrigin(const GemmShape &shape,
                                                   const GemmTile &tile,
                                                   Value pid) {
  GemmSchedule s = GemmSchedule::of(shape, tile);
  if (!pid)
    pid = blockId(gpu::Dimension::x);
  Value groupId = divi(pid, s.group * s.tilesN);
  Value firstM = muli(groupId, idx(s.group));
  Value rows = mini(subi(idx(s.tilesM), firstM), idx(s.group));
  Value inGroup = remi(pid, s.group * s.tilesN);
  Value tileM = muli(addi(firstM, arith::RemUIOp::create(b, inGroup, rows)),
                     idx(tile.bm));
  Value tileN = muli(arith::DivUIOp::create(b, inGroup, rows), idx(tile.bn));
  return {tileM, tileN};
}
