//===- TileKernels.cpp - fusec-tile-kernels -------------------------------===//
//
// Generates one gpu.func per fuse.kernel, in the family and with the tile
// of its #fuse.kernel_config (fusec-select-kernel-config wrote it; this pass
// checks that it suits and selects nothing), and rewrites each graph
// function into its launch plan over memrefs.
//
//===----------------------------------------------------------------------===//

#include "fusec/Conversion/Passes.h"

#include "ExtraLaunches.h"
#include "Strategy.h"

#include "fusec/Conversion/AttrNames.h"
#include "fusec/Tuning/TuningDB.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace fusec {
#define GEN_PASS_DEF_TILEKERNELS
#include "fusec/Conversion/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec;
using namespace fusec::tiling;

static MemRefType memrefOf(Type tensorType) {
  auto tensor = cast<RankedTensorType>(tensorType);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

/// The value a chain of reshapes starts from.
static Value reshapeRoot(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
  return v;
}

/// `memref` seen with the (same-size, contiguous) type `type`.
static Value view(OpBuilder &b, Location loc, Value memref, MemRefType type) {
  if (memref.getType() == type)
    return memref;
  SmallVector<int64_t> strides(type.getRank(), 1);
  for (int64_t i = type.getRank() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * type.getDimSize(i + 1);
  return memref::ReinterpretCastOp::create(b, loc, type, memref, 0,
                                           type.getShape(), strides);
}

/// The tuning signature of each kernel (the artifact records it).
struct Signing {
  std::string chip, fp32Math;
};

/// Generates `kernel` into `module` as its config says; the gpu.func
/// carries the family and tile for the CUDA C backend.
static FailureOr<LaunchConfig> generate(KernelOp kernel,
                                        gpu::GPUModuleOp module,
                                        const TargetDescription &target,
                                        const TilingOptions &options) {
  auto config = kernel->getAttrOfType<KernelConfigAttr>(kKernelConfigAttr);
  if (!config)
    return kernel.emitOpError("has no ")
           << kKernelConfigAttr
           << "; run fusec-select-kernel-config before fusec-tile-kernels";
  KernelQuery query(kernel, target, options);
  if (failed(verifyConfig(query, config)))
    return failure();
  FailureOr<LaunchConfig> launch = emitKernel(query, module, config);
  if (failed(launch))
    return failure();
  auto func = module.lookupSymbol<gpu::GPUFuncOp>(kernel.getName());
  Builder b(kernel.getContext());
  func->setAttr(kFamilyAttr,
                b.getStringAttr(stringifyKernelFamily(config.getFamily())));
  if (TileAttr tile = config.getTileAsTileAttr())
    func->setAttr(kTileAttr, tile);
  return launch;
}

/// Rewrites graph function `func` (of fuse.kernel ops, reshapes and a
/// return) into its launch plan, with the kernels in `module`.
static LogicalResult lowerGraph(func::FuncOp func, gpu::GPUModuleOp module,
                                const TargetDescription &target,
                                const TilingOptions &options,
                                const Signing &signing) {
  Location loc = func.getLoc();
  OpBuilder b(func);
  SmallVector<Type> argTypes;
  for (Type t : func.getArgumentTypes())
    argTypes.push_back(memrefOf(t));
  for (Type t : func.getResultTypes())
    argTypes.push_back(memrefOf(t));
  auto plan = func::FuncOp::create(b, loc, func.getSymName(),
                                   b.getFunctionType(argTypes, {}));
  plan->setAttr(kNumInputsAttr, b.getI64IntegerAttr(func.getNumArguments()));
  Block *entry = plan.addEntryBlock();
  b.setInsertionPointToStart(entry);

  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  unsigned numInputs = func.getNumArguments();
  // Kernel results that a graph output is (possibly reshaped) get written
  // straight into that output.
  llvm::DenseMap<Value, unsigned> outputOf;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    Value root = reshapeRoot(v);
    if (root.getDefiningOp<KernelOp>() && !outputOf.count(root))
      outputOf[root] = i;
  }

  IRMapping buffers;
  for (auto [arg, memref] :
       llvm::zip(body.getArguments(), entry->getArguments()))
    buffers.map(arg, memref);
  for (Operation &op : body.without_terminator()) {
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      buffers.map(reshape.getResult(),
                  view(b, loc, buffers.lookup(reshape.getInput()),
                       memrefOf(reshape.getType())));
      continue;
    }
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel)
      return op.emitOpError("is outside every fuse.kernel; run "
                            "fusec-form-kernels before fusec-tile-kernels");
    if (module.lookupSymbol(kernel.getName()))
      return kernel.emitOpError("name '")
             << kernel.getName() << "' is taken by another kernel of @"
             << func.getSymName();
    FailureOr<LaunchConfig> config = generate(kernel, module, target, options);
    if (failed(config))
      return failure();
    auto kernelFunc = module.lookupSymbol<gpu::GPUFuncOp>(kernel.getName());
    SmallVector<Value> args;
    for (Value input : kernel.getInputs())
      args.push_back(buffers.lookup(input));
    for (Value result : kernel.getResults()) {
      MemRefType type = memrefOf(result.getType());
      auto it = outputOf.find(result);
      Value memref =
          it != outputOf.end()
              ? view(b, loc, entry->getArgument(numInputs + it->second), type)
              : memref::AllocOp::create(b, loc, type).getResult();
      buffers.map(result, memref);
      args.push_back(memref);
    }
    auto dim3 = [&](const std::array<int64_t, 3> &d) {
      return gpu::KernelDim3{arith::ConstantIndexOp::create(b, loc, d[0]),
                             arith::ConstantIndexOp::create(b, loc, d[1]),
                             arith::ConstantIndexOp::create(b, loc, d[2])};
    };
    // Scratch buffers follow the results.
    SmallVector<MemRefType> workspaces;
    std::vector<ExtraLaunch> first;
    takeExtraLaunches(kernelFunc, workspaces, first);
    for (MemRefType type : workspaces)
      args.push_back(memref::AllocOp::create(b, loc, type).getResult());
    // Tensor maps follow the memrefs, each over one of them.
    auto ptr = LLVM::LLVMPointerType::get(b.getContext());
    for (const TensorMapParam &map : config->tensorMaps) {
      bool im2col = !map.im2colLower.empty();
      args.push_back(TensorMapOp::create(
          b, loc, ptr, args[map.memref], b.getDenseI64ArrayAttr(map.dims),
          b.getDenseI64ArrayAttr(map.strides), b.getDenseI64ArrayAttr(map.box),
          b.getI64IntegerAttr(map.offset), b.getI64IntegerAttr(map.swizzle),
          im2col ? b.getDenseI64ArrayAttr(map.im2colLower) : nullptr,
          im2col ? b.getDenseI64ArrayAttr(map.im2colUpper) : nullptr));
    }
    // Kernels launched first (a batch norm's statistics, a split-K
    // mainloop) take the same arguments, or those before the maps.
    for (const ExtraLaunch &launch : first) {
      Value bytes;
      if (launch.sharedBytes)
        bytes = arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                             launch.sharedBytes);
      auto firstFunc = module.lookupSymbol<gpu::GPUFuncOp>(launch.func);
      gpu::LaunchFuncOp::create(
          b, loc, firstFunc, dim3(launch.grid), dim3(launch.block), bytes,
          ArrayRef<Value>(args).take_front(firstFunc.getNumArguments()));
    }
    Value sharedBytes;
    if (config->sharedBytes)
      sharedBytes = arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                                 config->sharedBytes);
    auto launch =
        gpu::LaunchFuncOp::create(b, loc, kernelFunc, dim3(config->grid),
                                  dim3(config->block), sharedBytes, args);
    // What the artifact records of the kernel's configuration.
    launch->setAttr(kKernelConfigAttr, kernel->getAttr(kKernelConfigAttr));
    launch->setAttr(kSignatureAttr,
                    b.getStringAttr(tuning::kernelSignature(
                        kernel, signing.chip, signing.fp32Math)));
  }
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto it = outputOf.find(reshapeRoot(v));
    if (it != outputOf.end() && it->second == i)
      continue;
    Value out = entry->getArgument(numInputs + i);
    Value src = view(b, loc, buffers.lookup(v), cast<MemRefType>(out.getType()));
    memref::CopyOp::create(b, loc, src, out);
  }
  func::ReturnOp::create(b, loc);
  func.erase();
  return success();
}

namespace {
struct TileKernelsPass : fusec::impl::TileKernelsBase<TileKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<TilingTarget> parsed =
        parseTilingTarget(module, arch, smCount, fp32Math);
    if (failed(parsed))
      return signalPassFailure();
    parsed->options.prefetchFragments = mmaPrefetch;
    Signing signing{parsed->target.chip, fp32Math};
    OpBuilder b(module.getContext());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isDeclaration())
        continue;
      b.setInsertionPointToEnd(module.getBody());
      auto gpuModule = gpu::GPUModuleOp::create(
          b, func.getLoc(), (func.getSymName() + "_kernels").str());
      setIndexBitwidth(gpuModule, 32);
      if (failed(lowerGraph(func, gpuModule, parsed->target, parsed->options,
                            signing)))
        return signalPassFailure();
    }
  }
};
} // namespace
