//===- Artifact.cpp - The launch plan both backends write -----------------===//

#include "fusec/Target/Artifact.h"
#include "Fuse/FuseOps.h"
#include "fusec/Conversion/AttrNames.h"
#include "fusec/Transforms/Autodiff.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace fusec;

static StringRef dtypeName(Type type) {
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  return "f32";
}

static int64_t byteSize(MemRefType type) {
  // Bytes per element first: the verifier bounds the size in bytes, not in
  // bits (elements x 32 overflowed for a 2^60-element f32 buffer).
  return type.getNumElements() * (type.getElementTypeBitWidth() / 8);
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
  /// Each kernel's configuration (its launch's #fuse.kernel_config).
  llvm::json::Array kernels;
};
} // namespace

/// What the artifact says of a kernel's configuration: its family, its tile
/// in #fuse.tile's terms, where they came from, and its tuning signature.
static llvm::json::Object kernelRecord(gpu::LaunchFuncOp launch,
                                       fuse::KernelConfigAttr config) {
  llvm::json::Object record{
      {"kernel", launch.getKernelName().getValue()},
      {"family", fuse::stringifyKernelFamily(config.getFamily())},
      {"source", config.getSource()}};
  if (auto signature = launch->getAttrOfType<StringAttr>(kSignatureAttr))
    record["signature"] = signature.getValue();
  if (fuse::TileAttr tile = config.getTileAsTileAttr()) {
    std::string text;
    llvm::raw_string_ostream(text) << tile;
    record["tile"] = text;
  }
  return record;
}

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
  auto numInputs = plan->getAttrOfType<IntegerAttr>(kNumInputsAttr);
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
        llvm::json::Object desc{
            {"buffer", bufferOf(map.getBuffer())},
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
      if (auto config =
              launch->getAttrOfType<fuse::KernelConfigAttr>(kKernelConfigAttr))
        kernels.push_back(kernelRecord(launch, config));
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

/// The `training` object of a plan of a forward/backward pair
/// (docs/Training.md): what its inputs and outputs are to the other plan.
static llvm::json::Object trainingRecord(func::FuncOp plan) {
  auto ints = [&](StringRef name) {
    llvm::json::Array values;
    if (auto array = plan->getAttrOfType<DenseI64ArrayAttr>(name))
      for (int64_t v : array.asArrayRef())
        values.push_back(v);
    return values;
  };
  auto integer = [&](StringRef name) {
    auto attr = plan->getAttrOfType<IntegerAttr>(name);
    return attr ? attr.getInt() : 0;
  };
  if (plan->hasAttr(kBackwardAttr))
    return llvm::json::Object{{"role", "forward"},
                              {"num_results", integer(kNumResultsAttr)}};
  return llvm::json::Object{{"role", "backward"},
                            {"forward_args", ints(kForwardArgsAttr)},
                            {"forward_results", ints(kForwardResultsAttr)},
                            {"num_saved", integer(kNumSavedAttr)},
                            {"grad_results", ints(kGradResultsAttr)},
                            {"wrt", ints(kWrtAttr)}};
}

FailureOr<std::string>
fusec::writeArtifactHeader(ModuleOp module, StringRef kind, StringRef arch) {
  auto plans = llvm::to_vector(module.getOps<func::FuncOp>());
  // A training artifact: the forward's plan, then the backward's.
  bool training = plans.size() == 2 && plans[0]->hasAttr(kBackwardAttr) &&
                  plans[1]->hasAttr(kForwardAttr);
  if (plans.size() != 1 && !training)
    return module.emitError("an artifact holds exactly one graph, found ")
           << plans.size() << " plans";
  std::string text = "// fusec artifact v1\n";
  llvm::raw_string_ostream os(text);
  llvm::json::Array kernels;
  for (func::FuncOp plan : plans) {
    PlanWriter writer;
    if (failed(writer.run(plan)))
      return failure();
    writer.result["target"] =
        llvm::json::Object{{"kind", kind}, {"arch", arch}};
    // Version 3 added the training object.
    if (training) {
      writer.result["version"] = 3;
      writer.result["training"] = trainingRecord(plan);
    }
    os << "// fusec-plan: " << llvm::json::Value(std::move(writer.result))
       << "\n";
    for (llvm::json::Value &kernel : writer.kernels)
      kernels.push_back(std::move(kernel));
  }
  // How each kernel was configured, for people (no runtime reads it; tools
  // take the same from compileArtifact's records).
  os << "// fusec-kernels: " << llvm::json::Value(std::move(kernels)) << "\n";
  return text;
}
