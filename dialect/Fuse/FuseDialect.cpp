//===- FuseDialect.cpp - The fuse graph dialect ---------------------------===//

#include "Fuse/FuseDialect.h"
#include "Fuse/FuseOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fuse;

#include "Fuse/FuseDialect.cpp.inc"
#include "Fuse/FuseEnums.cpp.inc"
#include "Fuse/FuseInterfaces.cpp.inc"

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

LogicalResult
AttentionTileAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          int64_t rows, int64_t keys, int64_t warps,
                          bool pingPong) {
  // Bounds as #fuse.tile's; whether the tile suits a kernel is the family's
  // to check.
  for (auto [name, value, lo, hi] :
       {std::tuple{"rows", rows, 1, 1024}, std::tuple{"keys", keys, 1, 1024},
        std::tuple{"warps", warps, 0, 32}})
    if (value < lo || value > hi)
      return emitError() << "attention tile " << name << " = " << value
                         << " is out of range [" << lo << ", " << hi << "]";
  if (warps && pingPong)
    return emitError() << "attention tile: ping_pong is a warpgroup "
                          "schedule, warps an mma.sync one";
  return success();
}

TileAttr AttentionTileAttr::asTile() const {
  if (getWarps())
    return TileAttr::get(getContext(), getRows(), getKeys(), 16, 0, 0,
                         getWarps(), 0, 0, 0);
  return TileAttr::get(getContext(), getRows(), getKeys(), 16, 0, 0, 0,
                       getPingPong() ? 2 : 1, 0, 0);
}

TileAttr KernelConfigAttr::getTileAsTileAttr() const {
  if (auto attention = dyn_cast_or_null<AttentionTileAttr>(getTile()))
    return attention.asTile();
  return dyn_cast_or_null<TileAttr>(getTile());
}
