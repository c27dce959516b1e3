//===- KernelBuilder.cpp - What every kernel family builds with -----------===//
//
// The gpu.func of one fuse.kernel: its parameters, shared memory, tensor maps
// and launch shape.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "ExtraLaunches.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
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
      epilogue(builder, kernel, argOf, outputs, anchorResult),
      views(builder, epilogue, argOf, anchorResult) {}

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
  // A batch norm in training and a norm backward store their per-channel
  // (per-column) results themselves (BatchNormTraining.cpp, NormGrad.cpp),
  // an attention its row log-sum-exp, its gradient dQ, dK and dV.
  bool perChannelResults =
      isa_and_nonnull<BatchNormTrainOp, BatchNormGradOp, NormGradOp,
                      AttentionOp, AttentionGradOp>(anchor);
  for (Value v : yield().getValues())
    if (!perChannelResults && shapeOf(v) != shapeOf(yield().getValues()[0]))
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
  setBlockSize(func, config->block);
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

Value KernelBuilder::addWorkspaceArgument(MemRefType type) {
  // The plan passes the workspaces after the results and before the tensor
  // maps: the argument goes before the first map, which moves up one.
  unsigned index = func.getNumArguments();
  SmallVector<int64_t> maps;
  if (auto known =
          func->getAttrOfType<DenseI64ArrayAttr>(fusec::kTensorMapArgsAttr)) {
    llvm::append_range(maps, known.asArrayRef());
    for (int64_t &map : maps)
      index = std::min<unsigned>(index, map++);
    func->setAttr(fusec::kTensorMapArgsAttr, b.getDenseI64ArrayAttr(maps));
  }
  [[maybe_unused]] LogicalResult inserted =
      func.insertArgument(index, type, DictionaryAttr(), func.getLoc());
  assert(succeeded(inserted) && "gpu.func refused a workspace argument");
  return func.getArgument(index);
}

void KernelBuilder::setBlockSize(gpu::GPUFuncOp f,
                                 const std::array<int64_t, 3> &block) {
  f.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(block[0]), static_cast<int32_t>(block[1]),
       static_cast<int32_t>(block[2])}));
}

ExtraLaunch KernelBuilder::splitOffFirstLaunch(StringRef suffix,
                                               const LaunchConfig &config) {
  // The builder may be inside a region (the consumers' branch of a
  // warp-specialised kernel); the function ends after its entry block.
  Block &entry = func.getBody().front();
  b.setInsertionPointToEnd(&entry);
  gpu::ReturnOp::create(b);
  auto first = cast<gpu::GPUFuncOp>(func->clone());
  SymbolTable::setSymbolName(first, (Twine(kernel.getName()) + suffix).str());
  setBlockSize(first, config.block);
  b.setInsertionPointToEnd(module.getBody());
  b.insert(first);
  ExtraLaunch launch{first.getName().str(), config.grid, config.block,
                     sharedBytes};
  for (Operation &op : entry)
    op.dropAllReferences();
  while (!entry.empty())
    entry.back().erase();
  b.setInsertionPointToEnd(&entry);
  dynamicShared = nullptr;
  sharedBytes = 0;
  return launch;
}

LogicalResult KernelBuilder::splitResults(ArrayRef<int64_t> shape,
                                          StringRef unit, SplitResults &into) {
  into.resultAt.assign(anchor->getNumResults(), -1);
  IRMapping cloned;
  into.narrowed = OwningOpRef<KernelOp>(cast<KernelOp>(kernel->clone(cloned)));
  SmallVector<Value> kept;
  for (auto [k, value] : llvm::enumerate(yield().getValues())) {
    auto result = dyn_cast<OpResult>(value);
    if (result && result.getOwner() == anchor && result.getResultNumber()) {
      into.resultAt[result.getResultNumber()] = k;
    } else if (shapeOf(value) == shape) {
      kept.push_back(cloned.lookup(value));
      into.outputs.push_back(outputs[k]);
    } else {
      return kernel.emitOpError("result #")
             << k << " has neither the input's shape nor one " << unit
             << "'s value";
    }
  }
  for (Operation &op : kernel.getBody().front().without_terminator())
    for (Value operand : op.getOperands())
      if (operand.getDefiningOp() == anchor &&
          cast<OpResult>(operand).getResultNumber())
        return kernel.emitOpError("computes with the per-")
               << unit << " results of " << anchor->getName()
               << " per element, which its family does not";
  into.narrowed->getBody().front().getTerminator()->setOperands(kept);
  for (auto [original, copy] :
       llvm::zip_equal(kernel.getBody().getArguments(),
                       into.narrowed->getBody().getArguments()))
    into.args.map(copy, argOf.lookup(original));
  into.evaluator = std::make_unique<EpilogueEvaluator>(
      b, *into.narrowed, into.args, into.outputs, cloned.lookup(anchorResult));
  return success();
}

FailureOr<EpilogueEvaluator *>
KernelBuilder::splitFamilyResults(StringRef unit, SplitResults &into) {
  if (anchor->getNumResults() == 1)
    return &epilogue;
  SmallVector<int64_t> shape;
  for (Value value : yield().getValues()) {
    auto result = dyn_cast<OpResult>(value);
    if (!result || result.getOwner() != anchor || !result.getResultNumber()) {
      llvm::append_range(shape, shapeOf(value));
      break;
    }
  }
  if (failed(splitResults(shape, unit, into)))
    return failure();
  return into.evaluator.get();
}

SmallVector<Value> KernelBuilder::sumPartialColumns(Value partials, int64_t n,
                                                    int64_t groups,
                                                    Value column,
                                                    Value staging) {
  constexpr int64_t kWarps = kColumnSumThreads / 32, kLoads = 4;
  Value tid = threadId();
  Value lane = remi(tid, 32), warp = divi(tid, 32);
  SmallVector<Value> sums = loop(
      warp, idx(groups), idx(kWarps * kLoads), SmallVector<Value>(n, f32(0)),
      [&](Value g, ValueRange acc) -> SmallVector<Value> {
        SmallVector<Value> s(acc);
        for (int64_t u = 0; u < kLoads; ++u) {
          Value gu = addi(g, idx(u * kWarps));
          Value valid = lt(gu, idx(groups));
          gu = mini(gu, idx(groups - 1));
          for (int64_t k = 0; k < n; ++k) {
            Value p = memref::LoadOp::create(b, partials,
                                             ValueRange{idx(k), gu, column});
            s[k] = addf(s[k], select(valid, p, f32(0)));
          }
        }
        return s;
      });
  for (int64_t k = 0; k < n; ++k)
    memref::StoreOp::create(b, sums[k], staging,
                            ValueRange{addi(idx(k * kColumnSumThreads), tid)});
  gpu::BarrierOp::create(b);
  SmallVector<Value> totals;
  for (int64_t k = 0; k < n; ++k) {
    Value sum = f32(0);
    for (int64_t w = 0; w < kWarps; ++w)
      sum = addf(sum, memref::LoadOp::create(
                          b, staging,
                          ValueRange{addi(idx(k * kColumnSumThreads + w * 32),
                                          lane)}));
    totals.push_back(sum);
  }
  return totals;
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
