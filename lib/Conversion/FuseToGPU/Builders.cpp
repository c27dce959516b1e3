//===- Builders.cpp - Small builders over one ImplicitLocOpBuilder --------===//

#include "Builders.h"

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec::tiling;

SmallVector<Value>
Builders::loadVectorOrZero(Value inBounds, Value memref,
                           std::function<SmallVector<Value>()> indices,
                           int64_t width) {
  auto type = VectorType::get(
      {width}, cast<MemRefType>(memref.getType()).getElementType());
  int64_t bytes =
      width * cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8;
  Value vec = ifElse(
      inBounds,
      [&]() -> Value {
        return vector::LoadOp::create(b, type, memref, indices(),
                                      /*nontemporal=*/false,
                                      llvm::MaybeAlign(bytes));
      },
      [&]() -> Value {
        return arith::ConstantOp::create(
            b, type,
            DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())));
      },
      type);
  SmallVector<Value> lanes;
  for (int64_t i = 0; i < width; ++i)
    lanes.push_back(toF32(vector::ExtractOp::create(b, vec, i)));
  return lanes;
}

VectorType Builders::vectorOf(Value memref, int64_t width) {
  return VectorType::get({width},
                         cast<MemRefType>(memref.getType()).getElementType());
}

llvm::MaybeAlign Builders::alignOf(Value memref, int64_t width) {
  return llvm::MaybeAlign(
      width * cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8);
}

Value Builders::loadVector(Value memref, ArrayRef<Value> coords,
                           int64_t width) {
  return vector::LoadOp::create(b, vectorOf(memref, width), memref, coords,
                                /*nontemporal=*/false, alignOf(memref, width));
}

SmallVector<Value> Builders::delinearize(Value linear,
                                         ArrayRef<int64_t> shape) {
  SmallVector<Value> coords(shape.size());
  int64_t stride = 1;
  for (int64_t i = shape.size() - 1; i >= 0; --i) {
    Value q = divi(linear, stride);
    coords[i] = i == 0 ? q : remi(q, shape[i]);
    stride *= shape[i];
  }
  return coords;
}

SmallVector<Value> Builders::broadcastCoords(ArrayRef<Value> coords,
                                             ArrayRef<int64_t> shape) {
  SmallVector<Value> result;
  size_t offset = coords.size() - shape.size();
  for (auto [i, dim] : llvm::enumerate(shape))
    result.push_back(dim == 1 ? idx(0) : coords[offset + i]);
  return result;
}

SmallVector<Value> Builders::sliceSourceCoords(SliceOp op,
                                               ArrayRef<Value> coords) {
  SmallVector<Value> in(coords);
  for (auto [c, offset] : llvm::zip_equal(in, op.getOffsets()))
    if (offset)
      c = addi(c, idx(offset));
  return in;
}

SmallVector<Value> Builders::transposeSourceCoords(TransposeOp op,
                                                   ArrayRef<Value> coords) {
  SmallVector<Value> in(coords.size());
  for (auto [i, p] : llvm::enumerate(op.getPermutation()))
    in[p] = coords[i];
  return in;
}

SmallVector<Value>
Builders::loop(Value lb, Value ub, Value step, ValueRange init,
               function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto forOp = scf::ForOp::create(b, lb, ub, step, init);
  OpBuilder::InsertionGuard guard(b);
  Block *block = forOp.getBody();
  if (!block->empty())
    block->back().erase();
  b.setInsertionPointToEnd(block);
  scf::YieldOp::create(
      b, body(forOp.getInductionVar(), forOp.getRegionIterArgs()));
  return forOp.getResults();
}

void Builders::ifThen(Value cond, function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, TypeRange(), cond, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  body();
}

Value Builders::ifElse(Value cond, function_ref<Value()> thenFn,
                       function_ref<Value()> elseFn, Type type) {
  auto ifOp = scf::IfOp::create(b, type ? type : b.getF32Type(), cond, true);
  OpBuilder::InsertionGuard guard(b);
  for (auto [block, fn] : {std::pair{ifOp.thenBlock(), thenFn},
                           std::pair{ifOp.elseBlock(), elseFn}}) {
    if (!block->empty())
      block->back().erase();
    b.setInsertionPointToEnd(block);
    scf::YieldOp::create(b, fn());
  }
  return ifOp.getResult(0);
}
