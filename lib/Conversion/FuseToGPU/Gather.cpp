//===- Gather.cpp - Transposes and rotary embeddings ------------------------===//
//
// Ops whose outputs gather their inputs from elsewhere in the tensor. Where
// the innermost axis stays innermost (a rope, a transpose that splits or
// merges heads) a thread moves a 16-byte vector of it; a transpose that
// moves the innermost axis goes through a shared-memory tile, so that both
// its reads and its writes are contiguous; otherwise one thread per output
// element. A slice's gradient gathers too: each output element is the
// gradient's element at its coordinates less the offsets, or zero.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {
class GatherKernel : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

private:
  FailureOr<LaunchConfig> emitBody() override;
  /// Whether a transpose goes through shared-memory tiles.
  bool fillsTransposeTiles(TransposeOp op);
  LaunchConfig emitTiledTranspose(TransposeOp op);
  LaunchConfig emitSliceGrad(SliceGradOp op);
};
} // namespace

std::unique_ptr<KernelBuilder>
fusec::tiling::makeGatherKernel(KernelOp kernel, gpu::GPUModuleOp module,
                                const TargetDescription &target) {
  return std::make_unique<GatherKernel>(kernel, module, target);
}

FailureOr<LaunchConfig> GatherKernel::emitBody() {
  if (auto sliceGrad = dyn_cast<SliceGradOp>(anchor))
    return emitSliceGrad(sliceGrad);
  ArrayRef<int64_t> shape = shapeOf(anchorResult);
  auto transpose = dyn_cast<TransposeOp>(anchor);
  if (transpose && fillsTransposeTiles(transpose))
    return emitTiledTranspose(transpose);
  // Each output reads its sources through the op, as an attention reads its
  // operands through such views (KernelBuilder).
  int64_t width = vectorWidth(shape);
  if (width && views.canLoadVectorThroughViews(anchorResult, width))
    return perElement(product(shape) / width, [&](Value group) {
      SmallVector<Value> coords =
          delinearize(muli(group, idx(width)), shape);
      epilogue.storeVectorResults(
          coords, width,
          views.loadVectorThroughViews(anchorResult, coords, width));
    });
  return perElement(product(shape), [&](Value linear) {
    SmallVector<Value> coords = delinearize(linear, shape);
    epilogue.storeResults(coords, views.loadThroughViews(anchorResult, coords));
  });
}

/// The square tile's side of a transpose of `bits`-bit elements: 32
/// threads across, each moving 4 bytes.
static int64_t transposeTile(int64_t bits) {
  return 32 * std::max<int64_t>(1, 32 / bits);
}

bool GatherKernel::fillsTransposeTiles(TransposeOp op) {
  // Where the innermost axis stays innermost, threads move vectors of it.
  ArrayRef<int64_t> perm = op.getPermutation();
  int64_t last = static_cast<int64_t>(perm.size()) - 1;
  if (perm.back() == last)
    return false;
  // A tile at least half full along both axes it swaps; a narrower one
  // (NCHW's 3-channel images to NHWC, a filter's 3 x 3 taps moved before
  // its channels) spent most of its blocks on padding: 71 us for ResNet-50's
  // 32 x 3 x 224 x 224 input on an H200. One thread per element instead
  // writes contiguously and reads what L2 holds.
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  int64_t to = llvm::find(perm, last) - perm.begin();
  int64_t half =
      transposeTile(cast<ShapedType>(op.getType()).getElementTypeBitWidth()) /
      2;
  return outShape[to] >= half && outShape[last] >= half;
}

LaunchConfig GatherKernel::emitTiledTranspose(TransposeOp op) {
  // The output's innermost axis comes from input axis `from`; the input's
  // innermost axis goes to output axis `to`. A block moves a tile x tile
  // square of those two axes: it reads rows of the input along its
  // innermost axis into shared memory, and writes rows of the output along
  // its own, each thread moving `pack` neighbouring elements (4 bytes) at a
  // time, 32 threads across a row.
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  ArrayRef<int64_t> perm = op.getPermutation();
  int64_t rank = outShape.size(), last = rank - 1;
  int64_t to = llvm::find(perm, last) - perm.begin();
  int64_t bits = cast<ShapedType>(op.getType()).getElementTypeBitWidth();
  int64_t pack = std::max<int64_t>(1, 32 / bits);
  int64_t tile = transposeTile(bits), rowsPerPass = kBlock / 32;
  // Output extents along `to` (the input's rows) and `last` (its columns).
  int64_t rowsTo = outShape[to], colsLast = outShape[last];
  int64_t tilesTo = ceilDiv(rowsTo, tile), tilesLast = ceilDiv(colsLast, tile);
  SmallVector<int64_t> batchShape;
  for (int64_t i = 0; i < rank; ++i)
    if (i != to && i != last)
      batchShape.push_back(outShape[i]);
  int64_t batches = product(batchShape);
  // f32 in shared memory whatever the type, padded against bank conflicts.
  Value buffer = allocShared({tile, tile + 1}, b.getF32Type());

  Value block = blockId(gpu::Dimension::x), tid = threadId();
  Value tx = remi(tid, 32), ty = divi(tid, 32);
  Value lastTile = remi(block, tilesLast);
  Value rest = divi(block, tilesLast);
  Value toTile = remi(rest, tilesTo);
  SmallVector<Value> batchCoords = delinearize(divi(rest, tilesTo), batchShape);
  Value to0 = muli(toTile, idx(tile)), last0 = muli(lastTile, idx(tile));
  // Output coordinates with `toIndex` on axis `to` and `lastIndex` innermost.
  auto outCoords = [&](Value toIndex, Value lastIndex) {
    SmallVector<Value> coords;
    for (int64_t i = 0, j = 0; i < rank; ++i)
      coords.push_back(i == to     ? toIndex
                       : i == last ? lastIndex
                                   : batchCoords[j++]);
    return coords;
  };
  // Read: tile row r is output column last0 + r (input axis `from`), tile
  // column c is output row to0 + c (the input's innermost axis).
  for (int64_t r = 0; r < tile; r += rowsPerPass) {
    Value row = addi(ty, idx(r));
    for (int64_t p = 0; p < pack; ++p) {
      Value col = addi(muli(tx, idx(pack)), idx(p));
      Value toIndex = addi(to0, col), lastIndex = addi(last0, row);
      ifThen(andi(ltc(toIndex, rowsTo), ltc(lastIndex, colsLast)), [&] {
        SmallVector<Value> coords = outCoords(toIndex, lastIndex);
        Value v = views.loadThroughViews(op.getInput(), [&] {
          SmallVector<Value> in(rank);
          for (auto [i, q] : llvm::enumerate(perm))
            in[q] = coords[i];
          return in;
        }());
        memref::StoreOp::create(b, v, buffer, ValueRange{row, col});
      });
    }
  }
  gpu::BarrierOp::create(b);
  // Write: the same tile transposed, `pack` neighbours along the output's
  // innermost axis per thread.
  bool vectors = pack > 1 && colsLast % pack == 0;
  for (int64_t r = 0; r < tile; r += rowsPerPass) {
    Value row = addi(ty, idx(r));
    Value toIndex = addi(to0, row);
    Value lastBase = addi(last0, muli(tx, idx(pack)));
    SmallVector<Value> values;
    for (int64_t p = 0; p < pack; ++p)
      values.push_back(memref::LoadOp::create(
          b, buffer, ValueRange{addi(muli(tx, idx(pack)), idx(p)), row}));
    if (vectors) {
      ifThen(andi(ltc(toIndex, rowsTo), ltc(lastBase, colsLast)), [&] {
        epilogue.storeVectorResults(outCoords(toIndex, lastBase), pack, values);
      });
      continue;
    }
    for (int64_t p = 0; p < pack; ++p) {
      Value lastIndex = addi(lastBase, idx(p));
      ifThen(andi(ltc(toIndex, rowsTo), ltc(lastIndex, colsLast)), [&] {
        epilogue.storeResults(outCoords(toIndex, lastIndex), values[p]);
      });
    }
  }
  return {{tilesTo * tilesLast * batches, 1, 1}, {kBlock, 1, 1}};
}

LaunchConfig GatherKernel::emitSliceGrad(SliceGradOp op) {
  // Every output element is written once, zero outside the block: a thread
  // per 16 bytes where the block's innermost edges fall on vector
  // boundaries (so a vector is wholly inside or outside), else per element.
  ArrayRef<int64_t> shape = shapeOf(op.getResult());
  ArrayRef<int64_t> inner = shapeOf(op.getOutputGrad());
  ArrayRef<int64_t> offsets = op.getOffsets();
  Value dy = argOf.lookup(op.getOutputGrad());
  int64_t width = vectorWidth(shape);
  if (width && (offsets.back() % width || inner.back() % width))
    width = 0;
  int64_t lanes = std::max<int64_t>(width, 1);
  return perElement(product(shape) / lanes, [&](Value linear) {
    SmallVector<Value> coords = delinearize(muli(linear, idx(lanes)), shape);
    SmallVector<Value> at;
    Value inside = arith::ConstantIntOp::create(b, 1, 1);
    for (auto [c, offset, extent] : llvm::zip_equal(coords, offsets, inner)) {
      at.push_back(subi(c, idx(offset)));
      if (offset != 0 || extent != shape[at.size() - 1])
        inside = andi(inside, inRange(at.back(), extent));
    }
    if (!width) {
      epilogue.storeResults(coords, loadOrZero(inside, dy, [&] { return at; }));
      return;
    }
    epilogue.storeVectorResults(
        coords, width, loadVectorOrZero(inside, dy, [&] { return at; }, width));
  });
}
