//===- Pipelines.cpp - The one place that orders fusec's passes -----------===//

#include "fusec/Pipelines/Pipelines.h"

#include "Fuse/FuseDialect.h"
#include "Fuse/FuseOps.h"
#include "fusec/Conversion/AttrNames.h"
#include "fusec/Conversion/Passes.h"
#include "fusec/Target/CUDA.h"
#include "fusec/Target/PTX.h"
#include "fusec/Transforms/Autodiff.h"
#include "fusec/Transforms/Passes.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

using namespace mlir;

namespace {
/// Names the kernels of a training pair fwd_* (the forward's) and bwd_* (the
/// backward's): one artifact holds both plans' kernels, which would
/// otherwise both start at k0_.
struct PrefixTrainingKernels
    : PassWrapper<PrefixTrainingKernels, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PrefixTrainingKernels)
  StringRef getArgument() const override {
    return "fusec-prefix-training-kernels";
  }
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      StringRef prefix = f->hasAttr(fusec::kBackwardAttr)  ? "fwd_"
                         : f->hasAttr(fusec::kForwardAttr) ? "bwd_"
                                                           : "";
      if (prefix.empty())
        continue;
      f.walk(
          [&](fuse::KernelOp k) { k.setName((prefix + k.getName()).str()); });
    }
  }
};
} // namespace

void fusec::buildPipeline(OpPassManager &pm, Stage stage,
                          const PipelineOptions &options) {
  bool differentiate = options.train && !options.fromKernels;
  if (differentiate) {
    FusecAutodiffOptions autodiff;
    autodiff.wrt.assign(options.wrt.begin(), options.wrt.end());
    autodiff.deterministic = options.deterministic;
    pm.addPass(createFusecAutodiff(autodiff));
  }
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  if (options.simplify && !options.fromKernels) {
    funcPm.addPass(createFuseSimplify());
    funcPm.addPass(createCSEPass());
  }
  if (stage == Stage::Graph)
    return;
  if (!options.fromKernels)
    funcPm.addPass(createFormKernels());
  if (differentiate)
    pm.addPass(std::make_unique<PrefixTrainingKernels>());
  pm.addPass(createVerifyStage({/*stage=*/"kernels"}));
  if (stage == Stage::Kernels)
    return;
  SelectKernelConfigOptions selection;
  selection.arch = options.arch;
  selection.smCount = options.smCount;
  selection.fp32Math = options.fp32Math;
  selection.tuningDb = options.tuningDb;
  selection.tuningGpu = options.tuningGpu;
  pm.addPass(createSelectKernelConfig(selection));
  TileKernelsOptions tiling;
  tiling.arch = options.arch;
  tiling.smCount = options.smCount;
  tiling.fp32Math = options.fp32Math;
  tiling.mmaPrefetch = options.mmaPrefetch;
  pm.addPass(createTileKernels(tiling));
  // Bottom-up: top-down, the greedy driver revisits a kernel's guard region
  // (one scf.if around the whole body) once per op inside it, O(n^2) in a
  // long fused chain.
  GreedyRewriteConfig bottomUp;
  bottomUp.setUseTopDownTraversal(false);
  pm.addPass(createCanonicalizerPass(bottomUp));
  pm.addPass(createCSEPass());
  pm.addPass(createVerifyStage({/*stage=*/"tiled"}));
  if (stage == Stage::Tiled)
    return;
  // fusec-select-kernel-config has rejected a bad architecture; a missing
  // toolkit surfaces as the serialiser's error.
  PTXTarget target;
  if (auto parsed = PTXTarget::parse(options.arch))
    target = *parsed;
  else
    llvm::consumeError(parsed.takeError());
  buildPTXPipeline(pm, target, /*toBinary=*/stage == Stage::Binary);
}

void fusec::registerPipelines() {
  for (auto [name, stage, summary] :
       {std::tuple{"fusec-pipeline-kernels", Stage::Kernels,
                   "Simplify a graph and partition it into fuse.kernel "
                   "regions"},
        std::tuple{"fusec-pipeline-tiled", Stage::Tiled,
                   "... then generate tiled gpu.funcs and the launch plan"},
        std::tuple{"fusec-pipeline-ptx", Stage::Binary,
                   "... then lower the kernels to PTX"}}) {
    Stage s = stage;
    PassPipelineRegistration<PipelineOptions>(
        name, summary, [s](OpPassManager &pm, const PipelineOptions &options) {
          buildPipeline(pm, s, options);
        });
  }
}

func::FuncOp fusec::selectEntry(ModuleOp module, llvm::StringRef entry,
                                llvm::StringRef choose, std::string &problem) {
  if (!entry.empty()) {
    auto f = module.lookupSymbol<func::FuncOp>(entry);
    if (f && !f.isDeclaration())
      return f;
    problem = f ? ("@" + entry + " is a declaration, not a graph").str()
                : ("no function @" + entry).str();
    return nullptr;
  }
  // A declaration is no graph: a graph calls nothing (verifyGraph), so a
  // private helper declared beside it is left alone.
  SmallVector<func::FuncOp> graphs;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isDeclaration())
      graphs.push_back(f);
  if (graphs.size() == 1)
    return graphs.front();
  if (auto f = module.lookupSymbol<func::FuncOp>("main");
      f && !f.isDeclaration())
    return f;
  if (graphs.empty())
    problem = "no function: a graph is a func.func of fuse ops";
  else
    problem = std::to_string(graphs.size()) + " functions and none is @main; " +
              choose.str();
  return nullptr;
}

void fusec::keepOnlyEntry(ModuleOp module, func::FuncOp entry) {
  for (auto func : llvm::to_vector(module.getOps<func::FuncOp>()))
    if (func != entry)
      func.erase();
}

/// Writes `tiles` onto the kernels of `module` by name; every name must
/// match a kernel, and every text must parse as a #fuse.tile.
static LogicalResult
applyTiles(ModuleOp module,
           llvm::ArrayRef<std::pair<std::string, std::string>> tiles) {
  llvm::StringMap<fuse::KernelOp> kernels;
  module.walk([&](fuse::KernelOp k) { kernels[k.getName()] = k; });
  for (const auto &[name, text] : tiles) {
    auto it = kernels.find(name);
    if (it == kernels.end()) {
      SmallVector<llvm::StringRef> names;
      for (const auto &entry : kernels)
        names.push_back(entry.getKey());
      llvm::sort(names);
      return emitError(module.getLoc())
             << "a tile is given for kernel '" << name
             << "', but the graph's kernels are: " << llvm::join(names, ", ");
    }
    auto tile = llvm::dyn_cast_or_null<fuse::TileAttr>(
        parseAttribute(text, module.getContext()));
    if (!tile)
      return emitError(it->second.getLoc())
             << "the tile given for kernel '" << name
             << "' is not a #fuse.tile<...>: '" << text << "'";
    it->second.setTileAttr(tile);
  }
  return success();
}

/// The configuration fusec-tile-kernels recorded on each launch of the
/// plan (its #fuse.kernel_config and tuning signature), in launch order.
static std::vector<fusec::KernelRecord> kernelRecords(ModuleOp module) {
  std::vector<fusec::KernelRecord> records;
  module.walk([&](gpu::LaunchFuncOp launch) {
    auto config =
        launch->getAttrOfType<fuse::KernelConfigAttr>(fusec::kKernelConfigAttr);
    if (!config)
      return;
    auto signature = launch->getAttrOfType<StringAttr>(fusec::kSignatureAttr);
    records.push_back({launch.getKernelName().str(),
                       fuse::stringifyKernelFamily(config.getFamily()).str(),
                       config.getSource().str(),
                       signature ? signature.str() : std::string(),
                       config.getTileAsTileAttr()});
  });
  return records;
}

/// The bits of `index` in a gpu.module's data layout (32 unless it says).
static unsigned indexBits(gpu::GPUModuleOp module) {
  auto spec = module->getAttrOfType<DataLayoutSpecAttr>(
      DLTIDialect::kDataLayoutAttrName);
  if (spec)
    for (DataLayoutEntryInterface entry : spec.getEntries())
      if (auto type = llvm::dyn_cast_if_present<Type>(entry.getKey());
          type && type.isIndex())
        if (auto bits = llvm::dyn_cast<IntegerAttr>(entry.getValue()))
          return bits.getInt();
  return 32;
}

/// Moves the kernels of `from` into `into` (one artifact is one PTX module),
/// pointing `from`'s launches at them, and erases `from`. The kernels'
/// names differ (PrefixTrainingKernels); the module keeps the wider index.
static void mergeKernelModules(ModuleOp module, gpu::GPUModuleOp into,
                               gpu::GPUModuleOp from) {
  if (indexBits(from) > indexBits(into))
    into->setAttr(DLTIDialect::kDataLayoutAttrName,
                  from->getAttr(DLTIDialect::kDataLayoutAttrName));
  Block &to = into.getBodyRegion().front();
  for (Operation &op :
       llvm::make_early_inc_range(from.getBodyRegion().front())) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      continue;
    if (to.mightHaveTerminator())
      op.moveBefore(to.getTerminator());
    else
      op.moveBefore(&to, to.end());
  }
  module.walk([&](gpu::LaunchFuncOp launch) {
    if (launch.getKernelModuleName() != from.getName())
      return;
    launch.setKernelAttr(SymbolRefAttr::get(
        into.getNameAttr(), {FlatSymbolRefAttr::get(launch.getKernelName())}));
  });
  from.erase();
}

/// The forward/backward pair's contract (Autodiff.h), which the launch
/// plans fusec-tile-kernels builds in place of the functions must carry on
/// to the artifact writer.
static const llvm::StringLiteral kContractAttrs[] = {
    fusec::kNumResultsAttr,     fusec::kBackwardAttr,
    fusec::kForwardAttr,        fusec::kForwardArgsAttr,
    fusec::kForwardResultsAttr, fusec::kNumSavedAttr,
    fusec::kGradResultsAttr,    fusec::kWrtAttr};

/// Lowers the graph's forward/backward pair (fusec-autodiff) to one kernel
/// module and two launch plans carrying the pair's contract: PTX in a
/// gpu.binary, or the tiled kernels for CUDA C.
static LogicalResult lowerTrainingPair(
    ModuleOp module, const fusec::PTXTarget &target,
    const fusec::PipelineOptions &options, const fusec::ArtifactOptions &how,
    llvm::function_ref<LogicalResult(fusec::Stage,
                                     const fusec::PipelineOptions &)>
        run) {
  using namespace fusec;
  // Differentiate and form both functions' kernels, tile them, then put
  // both plans' kernels in one kernel module before code generation.
  if (failed(run(Stage::Kernels, options)) ||
      (!how.tiles.empty() && failed(applyTiles(module, how.tiles))))
    return failure();
  func::FuncOp forward, backward;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (f->hasAttr(kBackwardAttr))
      forward = f;
    else if (f->hasAttr(kForwardAttr))
      backward = f;
  }
  if (!forward || !backward)
    return emitError(module.getLoc())
           << "fusec-autodiff made no forward/backward pair";
  std::string names[2] = {forward.getSymName().str(),
                          backward.getSymName().str()};
  NamedAttrList contracts[2];
  for (auto [f, contract] : llvm::zip(std::array{forward, backward}, contracts))
    for (llvm::StringLiteral name : kContractAttrs)
      if (Attribute attr = f->getAttr(name))
        contract.set(name, attr);
  PipelineOptions rest;
  rest.copyOptionValuesFrom(options);
  rest.fromKernels = true;
  if (failed(run(Stage::Tiled, rest)))
    return failure();
  auto kernelsOf = [&](const std::string &f) {
    return module.lookupSymbol<gpu::GPUModuleOp>(f + "_kernels");
  };
  mergeKernelModules(module, kernelsOf(names[0]), kernelsOf(names[1]));
  for (auto [name, contract] : llvm::zip(names, contracts))
    for (NamedAttribute attr : contract)
      module.lookupSymbol<func::FuncOp>(name)->setAttr(attr.getName(),
                                                       attr.getValue());
  if (how.backend == Backend::PTX) {
    PassManager pm(module.getContext());
    if (how.configure && failed(how.configure(pm)))
      return failure();
    buildPTXPipeline(pm, target, /*toBinary=*/true);
    if (failed(pm.run(module)))
      return failure();
  }
  return success();
}

FailureOr<fusec::CompiledArtifact>
fusec::compileArtifact(ModuleOp module, const PipelineOptions &options,
                       const ArtifactOptions &how) {
  auto target = PTXTarget::parse(options.arch);
  if (!target)
    return emitError(module.getLoc())
           << llvm::toString(target.takeError());
  auto run = [&](Stage stage, const PipelineOptions &pipeline) {
    PassManager pm(module.getContext());
    if (how.configure && failed(how.configure(pm)))
      return failure();
    buildPipeline(pm, stage, pipeline);
    return pm.run(module);
  };
  // CUDA C is printed from the tiled kernels.
  Stage last = how.backend == Backend::CUDA ? Stage::Tiled : Stage::Binary;
  if (options.train && !options.fromKernels) {
    if (failed(lowerTrainingPair(module, *target, options, how, run)))
      return failure();
  } else if (how.tiles.empty() || options.fromKernels) {
    if (!how.tiles.empty() && failed(applyTiles(module, how.tiles)))
      return failure();
    if (failed(run(last, options)))
      return failure();
  } else {
    // Form the kernels, name their tiles, then go on from the kernels.
    if (failed(run(Stage::Kernels, options)) ||
        failed(applyTiles(module, how.tiles)))
      return failure();
    PipelineOptions rest;
    rest.copyOptionValuesFrom(options);
    rest.fromKernels = true;
    if (failed(run(last, rest)))
      return failure();
  }
  fusec::CompiledArtifact artifact;
  artifact.kernels = kernelRecords(module);
  FailureOr<std::string> text = how.backend == Backend::CUDA
                                    ? writeCUDAArtifact(module, target->chip)
                                    : writeArtifact(module, *target);
  if (failed(text))
    return failure();
  artifact.text = std::move(*text);
  return artifact;
}
