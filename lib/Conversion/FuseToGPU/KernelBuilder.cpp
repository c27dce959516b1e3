//===- KernelBuilder.cpp - What every kernel family builds with -----------===//
//
// The gpu.func of one fuse.kernel and the fused epilogue: whatever the
// anchor, each output element ends the same way, the kernel's yielded values
// evaluated at that element's coordinates (elementwise ops recursively,
// operands read at their broadcast coordinates, the anchor's value taken
// from registers). Every global access is guarded, so any shape works.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

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

  for (Operation &op : body.without_terminator())
    if (isAnchor(&op) && !isAnchorView(&op))
      anchor = &op;
  if (anchor)
    anchorResult = anchor->getResult(0);

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

//===----------------------------------------------------------------------===//
// Builders
//===----------------------------------------------------------------------===//

SmallVector<Value>
KernelBuilder::loadVectorOrZero(Value inBounds, Value memref,
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
            DenseElementsAttr::get(type,
                                   b.getZeroAttr(type.getElementType())));
      },
      type);
  SmallVector<Value> lanes;
  for (int64_t i = 0; i < width; ++i)
    lanes.push_back(toF32(vector::ExtractOp::create(b, vec, i)));
  return lanes;
}

SmallVector<Value> KernelBuilder::delinearize(Value linear,
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

SmallVector<Value>
KernelBuilder::loop(Value lb, Value ub, Value step, ValueRange init,
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

void KernelBuilder::ifThen(Value cond, function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, TypeRange(), cond, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  body();
}

Value KernelBuilder::ifElse(Value cond, function_ref<Value()> thenFn,
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
// Epilogue
//===----------------------------------------------------------------------===//

SmallVector<Value> KernelBuilder::broadcastCoords(ArrayRef<Value> coords,
                                                  ArrayRef<int64_t> shape) {
  SmallVector<Value> result;
  size_t offset = coords.size() - shape.size();
  for (auto [i, dim] : llvm::enumerate(shape))
    result.push_back(dim == 1 ? idx(0) : coords[offset + i]);
  return result;
}

/// Calls `fn(operand, axis)` for each per-channel operand in `kernel`.
static void forEachChannelOperand(KernelOp kernel,
                                  function_ref<void(Value, int64_t)> fn) {
  kernel.getBody().walk([&](Operation *op) {
    llvm::TypeSwitch<Operation *>(op)
        .Case([&](BiasAddOp o) {
          auto axis = static_cast<int64_t>(o.getAxis());
          fn(o.getBias(), axis < 0 ? axis + o.getType().getRank() : axis);
        })
        .Case([&](ScaleShiftOp o) {
          fn(o.getScale(), o.getChannelAxis());
          fn(o.getShift(), o.getChannelAxis());
        })
        .Case([&](BatchNormOp o) {
          for (Value v :
               {o.getMean(), o.getVariance(), o.getScale(), o.getShift()})
            fn(v, o.getChannelAxis());
        });
  });
}

SmallVector<Value> KernelBuilder::channelOperands(int64_t axis) {
  llvm::SetVector<Value> operands;
  forEachChannelOperand(kernel, [&](Value v, int64_t a) {
    if (a == axis)
      operands.insert(v);
  });
  return operands.takeVector();
}

llvm::DenseMap<Value, Value> KernelBuilder::evalChannel(int64_t axis,
                                                        Value c) {
  llvm::DenseMap<Value, Value> values;
  cache.clear();
  for (Value v : channelOperands(axis))
    values[v] = evalAt(v, {c});
  cache.clear();
  return values;
}

SmallVector<Value> KernelBuilder::evalResults(ArrayRef<Value> coords,
                                              Value anchorValue) {
  anchorScalar = anchorValue;
  cache.clear();
  SmallVector<Value> values;
  for (Value value : yield().getValues())
    values.push_back(evalAt(value, coords));
  return values;
}

void KernelBuilder::storeResults(ArrayRef<Value> coords, Value anchorValue) {
  for (auto [value, out] :
       llvm::zip_equal(evalResults(coords, anchorValue), outputs))
    store(value, out, coords);
}

Value KernelBuilder::evalUnary(Operation *op, Value x) {
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](ReluOp) { return maxf(x, f32(0)); })
      .Case([&](Relu6Op) { return minf(maxf(x, f32(0)), f32(6)); })
      .Case([&](ClampOp o) {
        return minf(maxf(x, f32(o.getMin().convertToDouble())),
                    f32(o.getMax().convertToDouble()));
      })
      .Case([&](LeakyReluOp o) {
        Value neg = mulf(x, f32(o.getAlpha().convertToDouble()));
        return select(
            arith::CmpFOp::create(b, arith::CmpFPredicate::OGE, x, f32(0)), x,
            neg);
      })
      .Case([&](GeluOp o) {
        Value half = mulf(x, f32(0.5));
        if (o.getApproximate() == GeluApproximation::Tanh) {
          Value x3 = mulf(mulf(x, x), x);
          Value inner = mulf(f32(std::sqrt(2.0 / M_PI)),
                             fma(x3, f32(0.044715), x));
          return mulf(half, addf(f32(1), math::TanhOp::create(b, inner)));
        }
        Value erf = math::ErfOp::create(b, mulf(x, f32(M_SQRT1_2)));
        return mulf(half, addf(f32(1), erf));
      })
      .Case([&](SiluOp) {
        return divf(x, addf(f32(1), exp(arith::NegFOp::create(b, x))));
      })
      .Case([&](SigmoidOp) {
        return divf(f32(1), addf(f32(1), exp(arith::NegFOp::create(b, x))));
      })
      .Case([&](TanhOp) { return math::TanhOp::create(b, x); })
      .Case([&](HardSwishOp) {
        Value r6 = minf(maxf(addf(x, f32(3)), f32(0)), f32(6));
        return mulf(x, mulf(r6, f32(1.0 / 6.0)));
      })
      .Case([&](CastOp o) {
        Type to = o.getType().getElementType();
        if (to.isF32())
          return x;
        return toF32(arith::TruncFOp::create(b, to, x));
      })
      .Default([](Operation *) { return Value(); });
}

/// The coordinates in `op`'s input of its result's element at `coords`.
static SmallVector<Value> inputCoords(TransposeOp op, ArrayRef<Value> coords) {
  SmallVector<Value> in(coords.size());
  for (auto [i, p] : llvm::enumerate(op.getPermutation()))
    in[p] = coords[i];
  return in;
}

SmallVector<Value> KernelBuilder::sliceSourceCoords(SliceOp op,
                                                    ArrayRef<Value> coords) {
  SmallVector<Value> in(coords);
  for (auto [c, offset] : llvm::zip_equal(in, op.getOffsets()))
    if (offset)
      c = addi(c, idx(offset));
  return in;
}

Value KernelBuilder::evalConcat(ConcatOp op, ArrayRef<Value> coords) {
  auto axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0)
    axis += coords.size();
  // Only the operand holding the element is read: a branch per boundary.
  // Values computed inside a branch do not dominate what follows it, so
  // the cache is restored after each.
  std::function<Value(size_t, int64_t)> from = [&](size_t i,
                                                   int64_t start) -> Value {
    Value operand = op.getInputs()[i];
    auto read = [&, operand, start]() -> Value {
      SmallVector<Value> at(coords);
      if (start)
        at[axis] = subi(at[axis], idx(start));
      llvm::DenseMap<Value, Value> saved = cache;
      Value value = evalAt(operand, at);
      cache = std::move(saved);
      return value;
    };
    if (i + 1 == op.getInputs().size())
      return read();
    int64_t end = start + shapeOf(operand)[axis];
    return ifElse(ltc(coords[axis], end), read,
                  [&] { return from(i + 1, end); });
  };
  return from(0, 0);
}

Value KernelBuilder::evalAt(Value v, ArrayRef<Value> coords) {
  if (v == anchorResult)
    return anchorScalar;
  if (Value known = preloaded.lookup(v))
    return known;
  if (auto arg = dyn_cast<BlockArgument>(v))
    return load(argOf.lookup(arg), coords);
  // A value is always read at the same function of the element's
  // coordinates (broadcasting is consistent), so it is computed once per
  // element.
  if (Value hit = cache.lookup(v))
    return hit;
  Operation *op = v.getDefiningOp();
  auto at = [&](Value operand) {
    return evalAt(operand, broadcastCoords(coords, shapeOf(operand)));
  };
  auto channel = [&](Value vec, int64_t axis) {
    if (axis == channelAxis && !channelValues.empty())
      if (Value known = channelValues[channelLane].lookup(vec))
        return known;
    return evalAt(vec, {coords[axis]});
  };
  Value result =
      llvm::TypeSwitch<Operation *, Value>(op)
          .Case([&](SliceOp o) {
            return evalAt(o.getInput(), sliceSourceCoords(o, coords));
          })
          .Case([&](ConcatOp o) { return evalConcat(o, coords); })
          .Case([&](TransposeOp o) {
            // A transpose of the anchor's result (isAnchorView).
            return evalAt(o.getInput(), inputCoords(o, coords));
          })
          .Case([&](AddOp o) { return addf(at(o.getLhs()), at(o.getRhs())); })
          .Case([&](SubOp o) { return subf(at(o.getLhs()), at(o.getRhs())); })
          .Case([&](MulOp o) { return mulf(at(o.getLhs()), at(o.getRhs())); })
          .Case([&](DivOp o) { return divf(at(o.getLhs()), at(o.getRhs())); })
          .Case([&](BiasAddOp o) {
            int64_t axis = static_cast<int64_t>(o.getAxis());
            if (axis < 0)
              axis += coords.size();
            return addf(evalAt(o.getInput(), coords),
                        channel(o.getBias(), axis));
          })
          .Case([&](ScaleShiftOp o) {
            int64_t axis = o.getChannelAxis();
            return fma(evalAt(o.getInput(), coords),
                       channel(o.getScale(), axis),
                       channel(o.getShift(), axis));
          })
          .Case([&](BatchNormOp o) {
            int64_t axis = o.getChannelAxis();
            Value x = evalAt(o.getInput(), coords);
            Value inv = math::RsqrtOp::create(
                b, addf(channel(o.getVariance(), axis),
                        f32(o.getEpsilon().convertToDouble())));
            Value scale = mulf(inv, channel(o.getScale(), axis));
            return fma(subf(x, channel(o.getMean(), axis)), scale,
                       channel(o.getShift(), axis));
          })
          .Case([&](BatchNormCoefficientsOp o) {
            Value var = evalAt(o.getVariance(), coords);
            Value eps = f32(o.getEpsilon().convertToDouble());
            Value scale = mulf(evalAt(o.getScale(), coords),
                               math::RsqrtOp::create(b, addf(var, eps)));
            if (v == o.getResultScale())
              return scale;
            return subf(evalAt(o.getShift(), coords),
                        mulf(evalAt(o.getMean(), coords), scale));
          })
          .Default([&](Operation *o) {
            return evalUnary(o, evalAt(o->getOperand(0), coords));
          });
  assert(result && "unexpected op in a kernel epilogue");
  cache[v] = result;
  return result;
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

VectorType KernelBuilder::vectorOf(Value memref, int64_t width) {
  return VectorType::get({width},
                         cast<MemRefType>(memref.getType()).getElementType());
}

llvm::MaybeAlign KernelBuilder::alignOf(Value memref, int64_t width) {
  return llvm::MaybeAlign(
      width * cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8);
}

Value KernelBuilder::loadVector(Value memref, ArrayRef<Value> coords,
                                int64_t width) {
  return vector::LoadOp::create(b, vectorOf(memref, width), memref, coords,
                                /*nontemporal=*/false, alignOf(memref, width));
}

SmallVector<std::pair<BlockArgument, Value>>
KernelBuilder::loadFullInputs(ArrayRef<Value> coords, int64_t width) {
  SmallVector<std::pair<BlockArgument, Value>> full;
  for (BlockArgument arg : fullInputs())
    full.emplace_back(arg, loadVector(argOf.lookup(arg), coords, width));
  return full;
}

SmallVector<BlockArgument> KernelBuilder::fullInputs() {
  ArrayRef<int64_t> shape = shapeOf(yield().getValues()[0]);
  SmallVector<BlockArgument> args;
  for (BlockArgument arg : kernel.getBody().getArguments())
    // An argument read through a view is read at other coordinates.
    if (shapeOf(arg) == shape && !arg.use_empty() &&
        llvm::none_of(arg.getUsers(), isView))
      args.push_back(arg);
  return args;
}

void KernelBuilder::selectLane(ArrayRef<std::pair<BlockArgument, Value>> full,
                               int64_t lane) {
  preloaded.clear();
  cache.clear();
  for (auto [arg, vec] : full)
    preloaded[arg] = toF32(vector::ExtractOp::create(b, vec, lane));
}

void KernelBuilder::storeVectorResults(
    ArrayRef<Value> coords, int64_t width, ArrayRef<Value> anchorValues,
    const SmallVector<std::pair<BlockArgument, Value>> *loaded) {
  auto full = loaded ? *loaded : loadFullInputs(coords, width);
  SmallVector<SmallVector<Value>> lanes(outputs.size());
  for (int64_t i = 0; i < width; ++i) {
    SmallVector<Value> at(coords);
    at.back() = addi(coords.back(), idx(i));
    selectLane(full, i);
    channelLane = channelValues.size() > 1 ? i : 0;
    Value anchorValue = anchorValues.empty() ? Value() : anchorValues[i];
    for (auto [k, value] : llvm::enumerate(evalResults(at, anchorValue))) {
      Type type = cast<MemRefType>(outputs[k].getType()).getElementType();
      lanes[k].push_back(value.getType() == type
                             ? value
                             : arith::TruncFOp::create(b, type, value)
                                   .getResult());
    }
  }
  preloaded.clear();
  channelLane = 0;
  for (auto [out, values] : llvm::zip_equal(outputs, lanes))
    vector::StoreOp::create(
        b, vector::FromElementsOp::create(b, vectorOf(out, width), values),
        out, coords, /*nontemporal=*/false, alignOf(out, width));
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
      at = inputCoords(transpose, at);
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
