//===- KernelBuilder.cpp - What every kernel family builds with -----------===//
//
// The gpu.func of one fuse.kernel: its parameters, shared memory, tensor maps
// and launch shape, and the reads through the views an attention anchor
// applies on the way.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace fusec::tiling;

void fusec::tiling::setIndexBitwidth(gpu::GPUModuleOp module, unsigned bits) {
  MLIRContext *ctx = module.getContext();
  auto entry = DataLayoutEntryAttr::get(
      IndexType::get(ctx), IntegerAttr::get(IntegerType::get(ctx, 64), bits));
  module->setAttr(DLTIDialect::kDataLayoutAttrName,
                  DataLayoutSpecAttr::get(ctx, {entry}));
}

//===----------------------------------------------------------------------===//
// The function
//===----------------------------------------------------------------------===//

/// The kernel's anchor (what the family computes), or null.
static Operation *findAnchor(KernelOp kernel) {
  Operation *anchor = nullptr;
  for (Operation &op : kernel.getBody().front().without_terminator())
    if (isAnchor(&op) && !isAnchorView(&op))
      anchor = &op;
  return anchor;
}

KernelBuilder::KernelBuilder(KernelOp kernel, gpu::GPUModuleOp module,
                             const TargetDescription &target)
    : OwnedBuilder(kernel.getLoc(), kernel.getContext()), Builders(builder),
      kernel(kernel), module(module), target(target),
      anchor(findAnchor(kernel)),
      anchorResult(anchor ? anchor->getResult(0) : Value()),
      epilogue(builder, kernel, argOf, outputs, anchorResult) {}

FailureOr<LaunchConfig> KernelBuilder::build() {
  Block &body = kernel.getBody().front();
  SmallVector<Type> argTypes;
  for (TypeRange types : {TypeRange(kernel.getInputs().getTypes()),
                          TypeRange(kernel.getResultTypes())})
    for (Type t : types) {
      auto tensor = cast<RankedTensorType>(t);
      argTypes.push_back(
          MemRefType::get(tensor.getShape(), tensor.getElementType()));
      wideIndex |= tensor.getNumElements() >= kNarrowIndexElements;
    }
  if (wideIndex)
    setIndexBitwidth(module, 64);
  for (Value v : yield().getValues())
    if (shapeOf(v) != shapeOf(yield().getValues()[0]))
      return kernel.emitOpError("results of different shapes cannot share "
                                "one GPU kernel");
  b.setInsertionPointToEnd(module.getBody());
  func = gpu::GPUFuncOp::create(b, kernel.getName(),
                                b.getFunctionType(argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  Block &entry = func.getBody().front();
  for (auto [arg, memref] :
       llvm::zip(body.getArguments(), entry.getArguments()))
    argOf.map(arg, memref);
  for (Value memref : entry.getArguments().drop_front(body.getNumArguments()))
    outputs.push_back(memref);
  b.setInsertionPointToEnd(&entry);

  FailureOr<LaunchConfig> config = emitBody();
  if (failed(config))
    return failure();
  config->sharedBytes = sharedBytes;
  config->tensorMaps = tensorMaps;
  if (sharedBytes > target.sharedBytesPerBlockOptIn)
    return kernel.emitOpError("needs ")
           << sharedBytes << " bytes of shared memory, but " << target.chip
           << " gives a block at most " << target.sharedBytesPerBlockOptIn;
  gpu::ReturnOp::create(b);
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(config->block[0]),
       static_cast<int32_t>(config->block[1]),
       static_cast<int32_t>(config->block[2])}));
  for (int64_t g : config->grid)
    if (g < 1 || g >= (int64_t(1) << 31))
      return kernel.emitOpError("needs a grid of ")
             << config->grid[0] << " x " << config->grid[1] << " x "
             << config->grid[2] << " blocks, beyond what CUDA launches";
  if (config->grid[1] > 65535 || config->grid[2] > 65535)
    if (failed(foldGridIntoX(*config)))
      return failure();
  return config;
}

LogicalResult KernelBuilder::foldGridIntoX(LaunchConfig &config) {
  // CUDA caps grid y and z at 65535 blocks; batches and head counts map
  // there. Launch every block along x instead and recover each block's
  // (x, y, z) from its linear index, which x holds up to 2^31 - 1.
  auto [gx, gy, gz] = config.grid;
  int64_t total = 0;
  if (llvm::MulOverflow(gx, gy, total) || llvm::MulOverflow(total, gz, total) ||
      total >= (int64_t(1) << 31))
    return kernel.emitOpError("needs a grid of ")
           << gx << " x " << gy << " x " << gz
           << " blocks, beyond what CUDA launches";
  SmallVector<gpu::BlockIdOp> ids;
  func.walk([&](gpu::BlockIdOp op) { ids.push_back(op); });
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&func.getBody().front());
  Value linear = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value x = arith::RemUIOp::create(b, linear, idx(gx));
  Value yz = arith::DivUIOp::create(b, linear, idx(gx));
  Value y = arith::RemUIOp::create(b, yz, idx(gy));
  Value z = arith::DivUIOp::create(b, yz, idx(gy));
  for (gpu::BlockIdOp op : ids) {
    gpu::Dimension d = op.getDimension();
    op.replaceAllUsesWith(d == gpu::Dimension::x   ? x
                          : d == gpu::Dimension::y ? y
                                                   : z);
    op.erase();
  }
  config.grid = {total, 1, 1};
  return success();
}

Value KernelBuilder::allocShared(ArrayRef<int64_t> shape, Type elementType,
                                 int64_t align) {
  return aliasShared(llvm::alignTo(sharedBytes, align), shape, elementType);
}

Value KernelBuilder::aliasShared(int64_t offset, ArrayRef<int64_t> shape,
                                 Type elementType) {
  auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                       gpu::AddressSpace::Workgroup);
  OpBuilder::InsertionGuard guard(b);
  Block &entry = func.getBody().front();
  if (!dynamicShared) {
    b.setInsertionPointToStart(&entry);
    dynamicShared = gpu::DynamicSharedMemoryOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                           AffineMap(), wg));
  }
  b.setInsertionPointAfter(dynamicShared.getDefiningOp());
  auto type = MemRefType::get(shape, elementType, AffineMap(), wg);
  sharedBytes = std::max(
      sharedBytes,
      offset + product(shape) * elementType.getIntOrFloatBitWidth() / 8);
  return memref::ViewOp::create(b, type, dynamicShared, idx(offset),
                                ValueRange());
}

Value KernelBuilder::addTensorMap(TensorMapParam map) {
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  unsigned index = func.getNumArguments();
  // Fails only for a function type that cannot take the argument; a
  // gpu.func's FunctionType takes any.
  [[maybe_unused]] LogicalResult inserted =
      func.insertArgument(index, ptr, DictionaryAttr(), func.getLoc());
  assert(succeeded(inserted) && "gpu.func refused a tensor-map argument");
  // Which parameters are maps: the lowering to NVVM drops argument
  // attributes but keeps the function's.
  SmallVector<int64_t> indices;
  if (auto known = func->getAttrOfType<DenseI64ArrayAttr>(fusec::kTensorMapArgsAttr))
    llvm::append_range(indices, known.asArrayRef());
  indices.push_back(index);
  func->setAttr(fusec::kTensorMapArgsAttr, b.getDenseI64ArrayAttr(indices));
  tensorMaps.push_back(std::move(map));
  return func.getArgument(index);
}

LaunchConfig KernelBuilder::perElement(int64_t total,
                                       function_ref<void(Value)> body) {
  // One statement each: the order in which C++ evaluates nested calls'
  // arguments differs between compilers, and the IR's order with it.
  Value thread = threadId();
  Value block = blockId(gpu::Dimension::x);
  Value linear = addi(muli(block, idx(kBlock)), thread);
  ifThen(ltc(linear, total), [&] { body(linear); });
  return {{ceilDiv(total, kBlock), 1, 1}, {kBlock, 1, 1}};
}

//===----------------------------------------------------------------------===//
// Vectors
//===----------------------------------------------------------------------===//

int64_t KernelBuilder::vectorWidth(ArrayRef<int64_t> shape) {
  int64_t width = vectorLanes(shape);
  return !shape.empty() && shape.back() % width == 0 ? width : 0;
}

int64_t KernelBuilder::vectorLanes(ArrayRef<int64_t> shape) {
  int64_t widest = 0;
  for (Value out : outputs)
    widest = std::max<int64_t>(
        widest, cast<MemRefType>(out.getType()).getElementTypeBitWidth());
  for (BlockArgument arg : kernel.getBody().getArguments())
    if (shapeOf(arg) == shape)
      widest = std::max<int64_t>(
          widest,
          cast<RankedTensorType>(arg.getType()).getElementTypeBitWidth());
  return 128 / widest;
}

SmallVector<Value> KernelBuilder::storedCoords(ArrayRef<Value> coords) {
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

std::pair<Value, SmallVector<Value>>
KernelBuilder::viewSource(Value v, ArrayRef<Value> coords) {
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
  return {argOf.lookup(v), at};
}

Value KernelBuilder::loadThroughViews(Value v, ArrayRef<Value> coords) {
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
    first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, remi(d, 2),
                                  idx(0));
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

bool KernelBuilder::canLoadVectorThroughViews(Value v, int64_t width) {
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

SmallVector<Value>
KernelBuilder::loadVectorThroughViews(Value v, ArrayRef<Value> coords,
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
    out.push_back(fma(x[i], c[i], select(first, arith::NegFOp::create(b, ys), ys)));
  }
  return out;
}

SmallVector<Value> KernelBuilder::loadRopeAngles(Value table, Value pos,
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
