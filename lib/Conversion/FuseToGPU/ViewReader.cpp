//===- ViewReader.cpp - Reads through slices, concats and transposes ------===//

#include "ViewReader.h"

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec::tiling;

SmallVector<Value> ViewReader::storedCoords(ArrayRef<Value> coords) {
  SmallVector<Value> out(coords);
  Value v = anchorResult;
  while (v.hasOneUse()) {
    auto transpose = dyn_cast<TransposeOp>(*v.user_begin());
    if (!transpose)
      break;
    SmallVector<Value> permuted;
    for (int64_t p : transpose.getPermutation())
      permuted.push_back(out[p]);
    out = permuted;
    v = transpose.getResult();
  }
  return out;
}

Value ViewReader::readThroughViews(Value v, ArrayRef<Value> coords) {
  EpilogueEvaluator::ElementScope element(epilogue);
  return epilogue.evalAt(v, coords);
}

std::pair<Value, SmallVector<Value>>
ViewReader::viewSource(Value v, ArrayRef<Value> coords) {
  SmallVector<Value> at(coords);
  while (Operation *view = v.getDefiningOp()) {
    if (auto transpose = dyn_cast<TransposeOp>(view))
      at = transposeSourceCoords(transpose, at);
    else if (auto slice = dyn_cast<SliceOp>(view))
      at = sliceSourceCoords(slice, at);
    else
      break;
    v = view->getOperand(0);
  }
  return {memrefOf.lookup(v), at};
}

Value ViewReader::loadThroughViews(Value v, ArrayRef<Value> coords) {
  auto rope = v.getDefiningOp<RopeOp>();
  if (!rope) {
    auto [memref, at] = viewSource(v, coords);
    return load(memref, at);
  }
  // (x0, x1) -> (x0 cos - x1 sin, x1 cos + x0 sin) for pairs (i, i + D/2),
  // or (2i, 2i + 1) when interleaved; position = the second-to-last axis.
  int64_t dim = shapeOf(v).back(), half = dim / 2;
  Value d = coords.back(), pos = coords[coords.size() - 2];
  Value first, partner, pair;
  if (rope.getInterleaved()) {
    first =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, remi(d, 2), idx(0));
    partner = arith::XOrIOp::create(b, d, idx(1));
    pair = divi(d, 2);
  } else {
    first = ltc(d, half);
    partner = select(first, addi(d, idx(half)), subi(d, idx(half)));
    pair = remi(d, half);
  }
  SmallVector<Value> other(coords);
  other.back() = partner;
  Value x = loadThroughViews(rope.getInput(), coords);
  Value y = loadThroughViews(rope.getInput(), other);
  Value c = loadRopeAngles(rope.getCos(), pos, pair, 1)[0];
  Value s = loadRopeAngles(rope.getSin(), pos, pair, 1)[0];
  // first: x c - y s; second: x c + y s.
  Value ys = mulf(y, s);
  return fma(x, c, select(first, arith::NegFOp::create(b, ys), ys));
}

bool ViewReader::canLoadVectorThroughViews(Value v, int64_t width) {
  int64_t last = shapeOf(v).size() - 1;
  if (auto rope = v.getDefiningOp<RopeOp>()) {
    // Half-split: a run stays within one half, and its partner run and
    // angles are aligned too. Interleaved: runs hold whole pairs.
    int64_t dim = shapeOf(v).back();
    bool runs = rope.getInterleaved() ? width % 2 == 0 && dim % width == 0
                                      : (dim / 2) % width == 0;
    return runs && canLoadVectorThroughViews(rope.getInput(), width);
  }
  if (auto transpose = v.getDefiningOp<TransposeOp>())
    return transpose.getPermutation().back() == last &&
           canLoadVectorThroughViews(transpose.getInput(), width);
  if (auto slice = v.getDefiningOp<SliceOp>())
    return slice.getOffsets().back() % width == 0 &&
           canLoadVectorThroughViews(slice.getInput(), width);
  return isa<BlockArgument>(v) && shapeOf(v).back() % width == 0;
}

SmallVector<Value> ViewReader::loadVectorThroughViews(Value v,
                                                      ArrayRef<Value> coords,
                                                      int64_t width) {
  auto lanesOf = [&](Value vec) {
    SmallVector<Value> lanes;
    for (int64_t i = 0; i < cast<VectorType>(vec.getType()).getNumElements();
         ++i)
      lanes.push_back(toF32(vector::ExtractOp::create(b, vec, i)));
    return lanes;
  };
  auto rope = v.getDefiningOp<RopeOp>();
  if (!rope) {
    auto [memref, at] = viewSource(v, coords);
    return lanesOf(loadVector(memref, at, width));
  }
  // As loadThroughViews, a run at a time: the angles of a half-split run
  // are one run of the tables, those of an interleaved run half of one.
  int64_t half = shapeOf(v).back() / 2;
  Value d = coords.back(), pos = coords[coords.size() - 2];
  SmallVector<Value> x = loadVectorThroughViews(rope.getInput(), coords, width);
  SmallVector<Value> out;
  if (rope.getInterleaved()) {
    Value pair = divi(d, 2);
    SmallVector<Value> c = loadRopeAngles(rope.getCos(), pos, pair, width / 2);
    SmallVector<Value> s = loadRopeAngles(rope.getSin(), pos, pair, width / 2);
    for (int64_t j = 0; j < width / 2; ++j) {
      Value x0 = x[2 * j], x1 = x[2 * j + 1];
      out.push_back(fma(x0, c[j], arith::NegFOp::create(b, mulf(x1, s[j]))));
      out.push_back(fma(x1, c[j], mulf(x0, s[j])));
    }
    return out;
  }
  Value first = ltc(d, half);
  SmallVector<Value> other(coords);
  other.back() = select(first, addi(d, idx(half)), subi(d, idx(half)));
  SmallVector<Value> y = loadVectorThroughViews(rope.getInput(), other, width);
  Value pair = remi(d, half);
  SmallVector<Value> c = loadRopeAngles(rope.getCos(), pos, pair, width);
  SmallVector<Value> s = loadRopeAngles(rope.getSin(), pos, pair, width);
  // first: x c - y s; second: x c + y s.
  for (int64_t i = 0; i < width; ++i) {
    Value ys = mulf(y[i], s[i]);
    out.push_back(
        fma(x[i], c[i], select(first, arith::NegFOp::create(b, ys), ys)));
  }
  return out;
}

SmallVector<Value> ViewReader::loadRopeAngles(Value table, Value pos,
                                              Value pair, int64_t width) {
  // Fusion puts the views and parameter computations that only ropes use
  // into the kernel (a slice of the tables for a position offset), so the
  // table need not be a kernel argument.
  if (width > 1 && canLoadVectorThroughViews(table, width))
    return loadVectorThroughViews(table, {pos, pair}, width);
  SmallVector<Value> lanes;
  for (int64_t i = 0; i < width; ++i)
    lanes.push_back(
        readThroughViews(table, {pos, i ? addi(pair, idx(i)) : pair}));
  return lanes;
}
