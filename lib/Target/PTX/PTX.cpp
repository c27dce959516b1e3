//===- PTX.cpp - The PTX backend and its artifact -------------------------===//

#include "fusec/Target/PTX.h"
#include "Fuse/FuseOps.h"
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
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"

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
  // One pointer per buffer and 32-bit index arithmetic (kernels check that
  // their tensors fit).
  nvvm.useBarePtrCallConv = true;
  nvvm.indexBitwidth = 32;
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

//===----------------------------------------------------------------------===//
// Artifact
//===----------------------------------------------------------------------===//

static StringRef dtypeName(Type type) {
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  return "f32";
}

static int64_t byteSize(MemRefType type) {
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

namespace {
/// Builds the plan: buffers (inputs, outputs, intermediates) and steps.
class PlanWriter {
public:
  LogicalResult run(func::FuncOp plan);
  llvm::json::Object result;

private:
  int64_t bufferOf(Value v) {
    while (auto cast = v.getDefiningOp<memref::ReinterpretCastOp>())
      v = cast.getSource();
    return ids.lookup(v);
  }
  void addBuffer(Value v, StringRef role, std::optional<int64_t> index) {
    auto type = cast<MemRefType>(v.getType());
    int64_t id = buffers.size();
    ids[v] = id;
    llvm::json::Object buffer{{"id", id},
                              {"role", role},
                              {"dtype", dtypeName(type.getElementType())},
                              {"shape", llvm::json::Array(type.getShape())},
                              {"bytes", byteSize(type)}};
    if (index)
      buffer["index"] = *index;
    buffers.push_back(std::move(buffer));
  }

  llvm::DenseMap<Value, int64_t> ids;
  llvm::json::Array buffers, steps;
  int64_t version = 1;

public:
  /// Each kernel's configuration (fusec.config on its launch).
  llvm::json::Array kernels;
};
} // namespace

/// The launch's dynamic shared memory in bytes (0 when it has none).
static int64_t sharedBytes(gpu::LaunchFuncOp launch) {
  Value size = launch.getDynamicSharedMemorySize();
  return size ? *getConstantIntValue(size) : 0;
}

static llvm::json::Array dims(gpu::KernelDim3 d) {
  llvm::json::Array result;
  for (Value v : {d.x, d.y, d.z})
    result.push_back(*getConstantIntValue(v));
  return result;
}

LogicalResult PlanWriter::run(func::FuncOp plan) {
  auto numInputs = plan->getAttrOfType<IntegerAttr>("fusec.num_inputs");
  if (!numInputs)
    return plan.emitOpError("is not a launch plan; run fusec-tile-kernels");
  for (BlockArgument arg : plan.getArguments()) {
    int64_t i = arg.getArgNumber();
    bool isInput = i < numInputs.getInt();
    addBuffer(arg, isInput ? "input" : "output",
              isInput ? i : i - numInputs.getInt());
  }
  for (Operation &op : plan.getBody().front()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      addBuffer(alloc, "intermediate", std::nullopt);
    } else if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
      llvm::json::Array args;
      for (Value v : launch.getKernelOperands()) {
        auto map = v.getDefiningOp<fuse::TensorMapOp>();
        if (!map) {
          args.push_back(bufferOf(v));
          continue;
        }
        // Plans with tensor maps are version 2; runtimes of version 1 do
        // not know them.
        version = 2;
        llvm::json::Object desc{{"buffer", bufferOf(map.getBuffer())},
                                {"dims", llvm::json::Array(map.getDims())},
                                {"strides", llvm::json::Array(map.getStrides())},
                                {"box", llvm::json::Array(map.getBox())},
                                {"offset", map.getOffset()},
                                {"swizzle", map.getSwizzle()}};
        if (auto lower = map.getIm2colLower())
          desc["im2col"] = llvm::json::Object{
              {"lower", llvm::json::Array(*lower)},
              {"upper", llvm::json::Array(*map.getIm2colUpper())}};
        args.push_back(llvm::json::Object{{"tensor_map", std::move(desc)}});
      }
      if (auto config = launch->getAttrOfType<DictionaryAttr>("fusec.config")) {
        llvm::json::Object record{{"kernel", launch.getKernelName().getValue()}};
        for (NamedAttribute attr : config) {
          std::string text;
          if (auto str = dyn_cast<StringAttr>(attr.getValue()))
            text = str.getValue().str();
          else
            llvm::raw_string_ostream(text) << attr.getValue();
          record[attr.getName().getValue()] = text;
        }
        kernels.push_back(std::move(record));
      }
      steps.push_back(llvm::json::Object{
          {"kind", "launch"},
          {"kernel", launch.getKernelName().getValue()},
          {"grid", dims(launch.getGridSizeOperandValues())},
          {"block", dims(launch.getBlockSizeOperandValues())},
          {"shared_bytes", sharedBytes(launch)},
          {"args", std::move(args)}});
    } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
      steps.push_back(llvm::json::Object{
          {"kind", "copy"},
          {"src", bufferOf(copy.getSource())},
          {"dst", bufferOf(copy.getTarget())},
          {"bytes", byteSize(cast<MemRefType>(copy.getTarget().getType()))}});
    } else if (!isa<arith::ConstantOp, memref::ReinterpretCastOp,
                    fuse::TensorMapOp, func::ReturnOp>(op)) {
      return op.emitOpError("has no meaning in a launch plan");
    }
  }
  result = llvm::json::Object{{"format", "fusec-plan"},
                              {"version", version},
                              {"graph", plan.getSymName()},
                              {"buffers", std::move(buffers)},
                              {"steps", std::move(steps)}};
  return success();
}

FailureOr<std::string> fusec::writeArtifact(ModuleOp module,
                                            const PTXTarget &target) {
  auto plans = llvm::to_vector(module.getOps<func::FuncOp>());
  auto binaries = llvm::to_vector(module.getOps<gpu::BinaryOp>());
  if (plans.size() != 1 || binaries.size() != 1)
    return module.emitError("an artifact holds exactly one graph, found ")
           << plans.size() << " plans and " << binaries.size()
           << " kernel modules";
  PlanWriter writer;
  if (failed(writer.run(plans.front())))
    return failure();
  writer.result["target"] =
      llvm::json::Object{{"kind", "ptx"}, {"arch", target.chip}};
  auto object = cast<gpu::ObjectAttr>(binaries.front().getObjects()[0]);
  std::string text = "// fusec artifact v1\n// fusec-plan: ";
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(writer.result)) << "\n";
  // How each kernel was configured, for people and for `fusec tune` (no
  // runtime reads it).
  os << "// fusec-kernels: " << llvm::json::Value(std::move(writer.kernels))
     << "\n";
  os << object.getObject().getValue();
  return text;
}
