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
#include "mlir/Transforms/Passes.h"
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
} // namespace

void fusec::registerPTXBackendExtensions(DialectRegistry &registry) {
  registry.insert<nvgpu::NVGPUDialect>();
  registry.addExtension(+[](MLIRContext *, nvgpu::NVGPUDialect *dialect) {
    dialect->addInterfaces<NVGPUToNVVMInterface>();
  });
}

void fusec::buildPTXPipeline(OpPassManager &pm, const PTXTarget &target,
                             bool toBinary) {
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
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  binary.toolkitPath = target.toolkitPath;
  pm.addPass(createGpuModuleToBinaryPass(binary));
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
