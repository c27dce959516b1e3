//===- PTX.cpp - The PTX backend and its artifact -------------------------===//

#include "fusec/Target/PTX.h"
#include "fusec/Target/Artifact.h"
#include "fusec/Target/TargetDescription.h"

#include "mlir/Conversion/ConvertToLLVM/ToLLVMInterface.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Threading.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/TargetParser/Triple.h"

extern "C" void LLVMInitializeNVPTXTargetInfo();
extern "C" void LLVMInitializeNVPTXTargetMC();

using namespace mlir;
using namespace fusec;

static std::string findToolkit() {
  SmallVector<std::string> candidates;
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (std::optional<std::string> dir = llvm::sys::Process::GetEnv(var))
      candidates.push_back(*dir);
  if (llvm::ErrorOr<std::string> ptxas = llvm::sys::findProgramByName("ptxas"))
    candidates.push_back(
        llvm::sys::path::parent_path(llvm::sys::path::parent_path(*ptxas))
            .str());
  candidates.push_back("/usr/local/cuda");
  for (const std::string &dir : candidates) {
    SmallString<128> libdevice(dir);
    llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
    if (llvm::sys::fs::exists(libdevice))
      return dir;
  }
  return "";
}

llvm::Expected<PTXTarget> PTXTarget::parse(StringRef arch) {
  llvm::Expected<TargetDescription> description = TargetDescription::get(arch);
  if (!description)
    return description.takeError();
  // The table knows the chip; the LLVM fusec is linked against must know it
  // too, and the PTX version the table pairs it with, or its NVPTX backend
  // would abort instead of failing.
  static const bool initialized = [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTargetMC();
    return true;
  }();
  (void)initialized;
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string error;
  const llvm::Target *nvptx = llvm::TargetRegistry::lookupTarget(triple, error);
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      nvptx ? nvptx->createMCSubtargetInfo(triple, "", "") : nullptr);
  llvm::StringRef ptxVersion = llvm::StringRef(description->ptxFeatures)
                                   .drop_front(); // "+ptx86" -> "ptx86"
  if (!subtarget || !subtarget->isCPUStringValid(description->chip) ||
      !llvm::any_of(subtarget->getAllProcessorFeatures(), [&](const auto &kv) {
        return ptxVersion == kv.Key;
      }))
    return llvm::createStringError(
        "--arch=" + arch.str() + " needs " + ptxVersion.str() +
        ", which the LLVM fusec is built with (" LLVM_VERSION_STRING
        ") cannot emit for " + description->chip);
  PTXTarget target;
  target.chip = description->chip;
  target.features = description->ptxFeatures;
  target.toolkitPath = findToolkit();
  if (target.toolkitPath.empty())
    return llvm::createStringError(
        "cannot find libdevice (nvvm/libdevice/libdevice.10.bc) of a CUDA "
        "toolkit: set CUDA_HOME to the toolkit's directory");
  return target;
}

namespace {
/// Lets convert-gpu-to-nvvm lower nvgpu ops with its own type converter, so
/// that they share its 32-bit indices (convert-nvgpu-to-nvvm, a pass of its
/// own, converts indices to 64 bits and leaves casts that do not fold).
struct NVGPUToNVVMInterface : ConvertToLLVMPatternInterface {
  using ConvertToLLVMPatternInterface::ConvertToLLVMPatternInterface;
  void populateConvertToLLVMConversionPatterns(
      ConversionTarget &target, LLVMTypeConverter &converter,
      RewritePatternSet &patterns) const final {
    converter.addConversion([&converter](nvgpu::DeviceAsyncTokenType type) {
      return converter.convertType(IntegerType::get(type.getContext(), 32));
    });
    populateNVGPUToNVVMConversionPatterns(converter, patterns);
  }
};

/// gpu.dynamic_shared_memory lowers to an internal zero-size global, which
/// ptxas allocates as one byte of static shared memory. Made external, it is
/// the block's dynamic shared memory proper (`.extern .shared ... x[]`),
/// aligned for swizzled tiles. Internal to the backend, so not registered.
struct ExternDynamicSharedMemory
    : PassWrapper<ExternDynamicSharedMemory,
                  OperationPass<gpu::GPUModuleOp>> {
  void runOnOperation() override {
    getOperation().walk([](LLVM::GlobalOp global) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (global.getAddrSpace() ==
                        static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared) && array &&
          array.getNumElements() == 0) {
        global.setLinkage(LLVM::Linkage::External);
        global.setAlignment(1024);
      }
    });
  }
};

/// TMA tensor maps travel by value: a 128-byte, 64-byte aligned parameter
/// that the kernel addresses in place (`__grid_constant__`). The lowering to
/// NVVM drops argument attributes, so the tiling stage lists these
/// parameters in a function attribute, applied here.
struct GridConstantTensorMaps
    : PassWrapper<GridConstantTensorMaps, OperationPass<gpu::GPUModuleOp>> {
  void runOnOperation() override {
    getOperation().walk([](LLVM::LLVMFuncOp func) {
      auto indices = func->getAttrOfType<DenseI64ArrayAttr>(kTensorMapArgsAttr);
      if (!indices)
        return;
      Builder b(func.getContext());
      for (int64_t i : indices.asArrayRef()) {
        func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                        TypeAttr::get(LLVM::LLVMArrayType::get(b.getI64Type(), 16)));
        func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                        b.getI64IntegerAttr(64));
        func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                        b.getUnitAttr());
      }
      func->removeAttr(kTensorMapArgsAttr);
    });
  }
};
/// The attribute naming the kernel module a split-off module's kernel came
/// from, and whose binary its PTX joins (SerializeKernelModules).
constexpr llvm::StringLiteral kMergeIntoAttr = "fusec.merge_into";

/// One gpu.module per kernel: the NVVM lowering, which a pass manager runs on
/// sibling modules in parallel, and LLVM's code generation
/// (SerializeKernelModules) then use every core instead of one; a
/// ResNet-50 is 161 kernels. Each new module carries the original's
/// attributes and its other symbols (globals, device functions), and its
/// launches are pointed at it.
struct SplitKernelModules
    : PassWrapper<SplitKernelModules, OperationPass<ModuleOp>> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    llvm::StringMap<StringAttr> movedTo; // "module::kernel" -> new module
    for (auto module : llvm::to_vector(top.getOps<gpu::GPUModuleOp>())) {
      SmallVector<gpu::GPUFuncOp> kernels;
      for (auto func : module.getOps<gpu::GPUFuncOp>())
        if (func.isKernel())
          kernels.push_back(func);
      if (kernels.size() < 2)
        continue;
      StringAttr origin = module.getNameAttr();
      module->setAttr(kMergeIntoAttr, origin);
      OpBuilder b(module);
      b.setInsertionPointAfter(module);
      for (gpu::GPUFuncOp kernel : llvm::drop_begin(kernels)) {
        auto split = cast<gpu::GPUModuleOp>(b.cloneWithoutRegions(*module));
        std::string name = (origin.getValue() + "__" + kernel.getName()).str();
        split.setName(name);
        Block *body = b.createBlock(&split.getBodyRegion());
        OpBuilder inner = OpBuilder::atBlockEnd(body);
        for (Operation &op : module.getBody()->getOperations()) {
          auto func = dyn_cast<gpu::GPUFuncOp>(op);
          if (!func || !func.isKernel())
            inner.clone(op);
        }
        kernel->moveBefore(body, body->end());
        movedTo[(origin.getValue() + "::" + kernel.getName()).str()] =
            split.getNameAttr();
        b.setInsertionPointAfter(split);
      }
    }
    top.walk([&](gpu::LaunchFuncOp launch) {
      auto it = movedTo.find((launch.getKernelModuleName().getValue() +
                              "::" + launch.getKernelName().getValue())
                                 .str());
      if (it != movedTo.end())
        launch.setKernelAttr(SymbolRefAttr::get(
            it->second, {FlatSymbolRefAttr::get(launch.getKernelName())}));
    });
  }
};

/// Joins the PTX of modules split by SplitKernelModules into one PTX module:
/// the first part whole; of the others, everything after their header
/// (which must be the first's), with each declaration of dynamic shared
/// memory kept once. Fails on any other module-scope declaration in a later
/// part, which two parts could both define.
static FailureOr<std::string> mergePTX(Location loc,
                                       ArrayRef<StringRef> parts) {
  std::string merged = parts.front().str();
  auto header = [](StringRef ptx,
                   SmallVectorImpl<StringRef> &lines) -> StringRef {
    // The body after the `.version`, `.target` and `.address_size` lines.
    StringRef rest = ptx;
    while (!rest.empty()) {
      auto [line, next] = rest.split('\n');
      rest = next;
      StringRef t = line.trim();
      if (t.starts_with(".version") || t.starts_with(".target"))
        lines.push_back(t);
      if (t.starts_with(".address_size")) {
        lines.push_back(t);
        return rest;
      }
    }
    return StringRef();
  };
  SmallVector<StringRef> firstHeader;
  header(parts.front(), firstHeader);
  llvm::StringSet<> declared;
  auto scopeLines = [&](StringRef body,
                        llvm::function_ref<bool(StringRef)> fn) -> bool {
    int depth = 0;
    StringRef rest = body;
    while (!rest.empty()) {
      auto [line, next] = rest.split('\n');
      rest = next;
      StringRef t = line.trim();
      if (depth == 0 &&
          (t.starts_with(".extern") || t.starts_with(".global") ||
           t.starts_with(".const") || t.starts_with(".func") ||
           t.starts_with(".visible .func") || t.starts_with(".shared")))
        if (!fn(t))
          return false;
      depth += t.count('{') - t.count('}');
    }
    return true;
  };
  scopeLines(parts.front(), [&](StringRef t) {
    declared.insert(t);
    return true;
  });
  for (StringRef part : llvm::drop_begin(parts)) {
    SmallVector<StringRef> lines;
    StringRef body = header(part, lines);
    if (lines != firstHeader)
      return emitError(loc) << "cannot join the kernels' PTX: their headers "
                               "differ";
    std::string kept;
    StringRef clash;
    bool ok = scopeLines(body, [&](StringRef t) {
      // The dynamic shared memory's declaration is kept once (below); any
      // other module-scope symbol would be defined twice.
      if (t.starts_with(".extern .shared"))
        return true;
      clash = t;
      return false;
    });
    if (!ok)
      return emitError(loc) << "cannot join the kernels' PTX: '" << clash
                            << "' is declared at module scope";
    StringRef rest = body;
    while (!rest.empty()) {
      auto [line, next] = rest.split('\n');
      rest = next;
      if (line.trim().starts_with(".extern .shared") &&
          !declared.insert(line.trim()).second)
        continue;
      kept += line;
      kept += '\n';
    }
    merged += kept;
  }
  return merged;
}

/// gpu-module-to-binary (assembly) on every kernel module at once, then one
/// gpu.binary per original kernel module (the split modules' PTX joined).
struct SerializeKernelModules
    : PassWrapper<SerializeKernelModules, OperationPass<ModuleOp>> {
  explicit SerializeKernelModules(std::string toolkitPath)
      : toolkitPath(std::move(toolkitPath)) {}

  void runOnOperation() override {
    ModuleOp top = getOperation();
    MLIRContext *context = &getContext();
    auto modules = llvm::to_vector(top.getOps<gpu::GPUModuleOp>());
    SymbolTable symbols(top);
    gpu::TargetOptions options(toolkitPath, {}, {}, {},
                               gpu::CompilationTarget::Assembly,
                               [&]() -> SymbolTable * { return &symbols; });
    std::vector<std::optional<SmallVector<char, 0>>> serialized(modules.size());
    ParallelDiagnosticHandler diagnostics(context);
    LogicalResult result =
        failableParallelForEachN(context, 0, modules.size(), [&](size_t i) {
          diagnostics.setOrderIDForThread(i);
          auto targets = modules[i].getTargetsAttr();
          auto target = targets && targets.size() == 1
                            ? dyn_cast<gpu::TargetAttrInterface>(targets[0])
                            : gpu::TargetAttrInterface();
          if (!target) {
            modules[i].emitError("a kernel module needs exactly one target");
            return failure();
          }
          serialized[i] = target.serializeToObject(modules[i], options);
          diagnostics.eraseOrderIDForThread();
          if (!serialized[i])
            return modules[i].emitError("failed to serialize the module"),
                   failure();
          return success();
        });
    if (failed(result))
      return signalPassFailure();

    // Group by the module each came from, in the modules' order.
    llvm::MapVector<StringAttr, SmallVector<size_t>> groups;
    for (auto [i, module] : llvm::enumerate(modules)) {
      auto into = module->getAttrOfType<StringAttr>(kMergeIntoAttr);
      groups[into ? into : module.getNameAttr()].push_back(i);
    }
    for (auto &[name, members] : groups) {
      gpu::GPUModuleOp first = modules[members.front()];
      auto target = cast<gpu::TargetAttrInterface>(first.getTargetsAttr()[0]);
      auto object = dyn_cast<gpu::ObjectAttr>(
          target.createObject(first, *serialized[members.front()], options));
      if (!object)
        return first.emitError("no object for the kernel module"),
               signalPassFailure();
      if (members.size() > 1) {
        SmallVector<StringRef> parts;
        for (size_t i : members)
          parts.push_back(
              StringRef(serialized[i]->data(), serialized[i]->size()));
        FailureOr<std::string> ptx = mergePTX(first.getLoc(), parts);
        if (failed(ptx))
          return signalPassFailure();
        object = gpu::ObjectAttr::get(
            context, object.getTarget(), object.getFormat(),
            StringAttr::get(context, *ptx), object.getProperties(), nullptr);
      }
      OpBuilder b(first);
      gpu::BinaryOp::create(b, first.getLoc(), name.getValue(), nullptr,
                            ArrayAttr::get(context, {object}));
    }
    top.walk([&](gpu::LaunchFuncOp launch) {
      auto module =
          top.lookupSymbol<gpu::GPUModuleOp>(launch.getKernelModuleName());
      if (!module)
        return;
      if (auto into = module->getAttrOfType<StringAttr>(kMergeIntoAttr))
        launch.setKernelAttr(SymbolRefAttr::get(
            into, {FlatSymbolRefAttr::get(launch.getKernelName())}));
    });
    for (gpu::GPUModuleOp module : modules)
      module.erase();
  }

  std::string toolkitPath;
};
} // namespace

void fusec::registerPTXBackendExtensions(DialectRegistry &registry) {
  registry.insert<nvgpu::NVGPUDialect>();
  registry.addExtension(+[](MLIRContext *, nvgpu::NVGPUDialect *dialect) {
    dialect->addInterfaces<NVGPUToNVVMInterface>();
  });
}

void fusec::buildPTXPipeline(OpPassManager &pm, const PTXTarget &target,
                             bool toBinary) {
  if (toBinary)
    pm.addPass(std::make_unique<SplitKernelModules>());
  GpuNVVMAttachTargetOptions attach;
  attach.chip = target.chip;
  attach.features = target.features;
  attach.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(attach));
  OpPassManager &gpuPm = pm.nest<gpu::GPUModuleOp>();
  gpuPm.addPass(createSCFToControlFlowPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  // One pointer per buffer; index arithmetic as wide as the gpu.module's
  // data layout says (32 bits unless fusec-tile-kernels found a tensor too
  // large for it).
  nvvm.useBarePtrCallConv = true;
  nvvm.indexBitwidth = kDeriveIndexBitwidthFromDataLayout;
  gpuPm.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  // NVVM ops with no LLVM intrinsic (mbarrier waits, wgmma) become inline
  // PTX.
  gpuPm.addPass(createConvertNVVMToLLVMPass());
  gpuPm.addPass(std::make_unique<ExternDynamicSharedMemory>());
  gpuPm.addPass(std::make_unique<GridConstantTensorMaps>());
  gpuPm.addPass(createCanonicalizerPass());
  gpuPm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (!toBinary)
    return;
  pm.addPass(std::make_unique<SerializeKernelModules>(target.toolkitPath));
}

FailureOr<std::string> fusec::writeArtifact(ModuleOp module,
                                            const PTXTarget &target) {
  auto binaries = llvm::to_vector(module.getOps<gpu::BinaryOp>());
  if (binaries.size() != 1)
    return module.emitError("an artifact holds exactly one graph, found ")
           << binaries.size() << " kernel modules";
  FailureOr<std::string> text =
      writeArtifactHeader(module, "ptx", target.chip);
  if (failed(text))
    return failure();
  auto object = cast<gpu::ObjectAttr>(binaries.front().getObjects()[0]);
  *text += object.getObject().getValue();
  return text;
}
