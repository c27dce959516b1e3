//===- TileKernels.cpp - fusec-tile-kernels -------------------------------===//
//
// Generates one gpu.func per fuse.kernel, in the family the strategy
// selection picks for the target (Strategy.h), and rewrites each graph
// function into its launch plan over memrefs.
//
//===----------------------------------------------------------------------===//

#include "fusec/Transforms/Passes.h"

#include "Strategy.h"

#include "fusec/Tuning/TuningDB.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace fusec {
#define GEN_PASS_DEF_TILEKERNELS
#include "fusec/Transforms/Passes.h.inc"
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

/// What fusec-tile-kernels looks kernels up in.
struct Tuning {
  tuning::Database db;
  std::string chip, gpu, fp32Math;
};

/// selectStrategy with `entry`'s tile when there is one and it suits.
static FailureOr<KernelStrategy> tuneWith(KernelOp kernel,
                                          const TargetDescription &target,
                                          const TilingOptions &options,
                                          const tuning::Entry *entry) {
  if (!entry) {
    FailureOr<KernelStrategy> strategy =
        selectStrategy(kernel, target, options);
    if (succeeded(strategy))
      strategy->source = kernel.getTileAttr() ? "tile attribute" : "heuristic";
    return strategy;
  }
  auto get = [&](llvm::StringRef key) -> int64_t {
    auto it = entry->tile.find(key.str());
    return it == entry->tile.end() ? 0 : it->second;
  };
  kernel.setTileAttr(TileAttr::get(kernel.getContext(), get("bm"), get("bn"),
                                   get("bk"), get("tm"), get("tn"),
                                   get("warps_m"), get("warps_n"),
                                   get("stages"), get("warps_k")));
  FailureOr<KernelStrategy> strategy;
  std::string why;
  {
    // The entry's tile must pass every check a written one would.
    ScopedDiagnosticHandler quiet(kernel.getContext(), [&](Diagnostic &d) {
      if (d.getSeverity() != DiagnosticSeverity::Error)
        return failure();
      why = d.str();
      return success();
    });
    strategy = selectStrategy(kernel, target, options);
  }
  kernel.removeTileAttr();
  if (succeeded(strategy) && familyName(strategy->family) == entry->family) {
    strategy->source = "tuning database (" + entry->gpu + ")";
    return strategy;
  }
  kernel.emitWarning("ignoring the tuning database's entry for kernel '")
      << kernel.getName() << "' (" << entry->family << "): "
      << (why.empty() ? "it selects another family" : why)
      << "; using the heuristic";
  strategy = selectStrategy(kernel, target, options);
  if (succeeded(strategy))
    strategy->source = "heuristic";
  return strategy;
}

/// selectStrategy, but a kernel without a tile takes the tuning database's
/// entry for it where that suits it (else a warning and the heuristic).
static FailureOr<KernelStrategy>
selectTunedStrategy(KernelOp kernel, const TargetDescription &target,
                    const TilingOptions &options, const Tuning &tuning) {
  std::string signature =
      tuning::kernelSignature(kernel, tuning.chip, tuning.fp32Math);
  const tuning::Entry *entry = nullptr;
  if (!kernel.getTileAttr())
    entry = tuning.db.lookup(signature, tuning.chip, tuning.gpu);
  FailureOr<KernelStrategy> strategy = tuneWith(kernel, target, options, entry);
  if (succeeded(strategy))
    strategy->signature = signature;
  return strategy;
}

/// Rewrites graph function `func` (of fuse.kernel ops, reshapes and a
/// return) into its launch plan, with the kernels in `module`.
static LogicalResult lowerGraph(func::FuncOp func, gpu::GPUModuleOp module,
                                const TargetDescription &target,
                                const TilingOptions &options,
                                const Tuning &tuning) {
  Location loc = func.getLoc();
  OpBuilder b(func);
  SmallVector<Type> argTypes;
  for (Type t : func.getArgumentTypes())
    argTypes.push_back(memrefOf(t));
  for (Type t : func.getResultTypes())
    argTypes.push_back(memrefOf(t));
  auto plan = func::FuncOp::create(b, loc, func.getSymName(),
                                   b.getFunctionType(argTypes, {}));
  plan->setAttr("fusec.num_inputs",
                b.getI64IntegerAttr(func.getNumArguments()));
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
    FailureOr<KernelStrategy> strategy =
        selectTunedStrategy(kernel, target, options, tuning);
    if (failed(strategy))
      return failure();
    FailureOr<LaunchConfig> config =
        emitKernel(kernel, module, *strategy, target);
    if (failed(config))
      return failure();
    auto kernelFunc = module.lookupSymbol<gpu::GPUFuncOp>(kernel.getName());
    kernelFunc->setAttr("fusec.family",
                        b.getStringAttr(familyName(strategy->family)));
    if (strategy->tile.bm)
      kernelFunc->setAttr("fusec.tile",
                          strategy->tile.toAttr(b.getContext()));
    if (strategy->family == KernelFamily::AttentionMmaSync ||
        strategy->family == KernelFamily::AttentionWgmma)
      kernelFunc->setAttr(
          "fusec.tile",
          strategy->attention.toAttr(
              b.getContext(),
              strategy->family == KernelFamily::AttentionWgmma));
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
    Value sharedBytes;
    if (config->sharedBytes)
      sharedBytes = arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                                 config->sharedBytes);
    auto launch =
        gpu::LaunchFuncOp::create(b, loc, kernelFunc, dim3(config->grid),
                                  dim3(config->block), sharedBytes, args);
    // What the artifact records of the kernel's configuration.
    SmallVector<NamedAttribute> record{
        b.getNamedAttr("family", b.getStringAttr(familyName(strategy->family))),
        b.getNamedAttr("source", b.getStringAttr(strategy->source)),
        b.getNamedAttr("signature", b.getStringAttr(strategy->signature))};
    if (TileAttr tile = kernelFunc->getAttrOfType<TileAttr>("fusec.tile"))
      record.push_back(b.getNamedAttr("tile", tile));
    launch->setAttr("fusec.config", b.getDictionaryAttr(record));
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
    llvm::Expected<TargetDescription> target =
        TargetDescription::get(arch, smCount);
    if (!target) {
      module.emitError(llvm::toString(target.takeError()));
      return signalPassFailure();
    }
    TilingOptions options;
    options.prefetchFragments = mmaPrefetch;
    if (fp32Math == "tf32") {
      options.fp32Math = Fp32Math::TF32;
    } else if (fp32Math != "ieee") {
      module.emitError("fp32-math must be ieee or tf32, found '")
          << fp32Math << "'";
      return signalPassFailure();
    }
    Tuning tuning{{}, target->chip, tuningGpu, fp32Math};
    if (!tuningDb.empty() && tuningDb != "none") {
      std::vector<std::string> warnings;
      tuning.db = tuning::Database::load(tuningDb, warnings);
      for (const std::string &warning : warnings)
        module.emitWarning(warning);
    }
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
      if (failed(lowerGraph(func, gpuModule, *target, options, tuning)))
        return signalPassFailure();
    }
  }
};
} // namespace
