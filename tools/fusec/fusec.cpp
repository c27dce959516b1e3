//===- fusec.cpp - The fusec driver ---------------------------------------===//
//
//   fusec graph.mlir [-o out] [--emit=mlir]
//   fusec run graph.mlir --device=cpu [--seed=N] [--input=a.npy ...]
//                                     [--output-dir=DIR]
//
// A thin tool: parsing, verification and evaluation live in the libraries.
//
//===----------------------------------------------------------------------===//

#include "fusec/InitAll.h"
#include "fusec/Pipelines/Pipelines.h"
#include "fusec/Reference/Interpreter.h"
#include "fusec/Target/PTX.h"
#include "fusec/Target/TargetDescription.h"
#include "fusec/Support/Float16.h"
#include "fusec/Support/Npy.h"
#include "fusec/Support/Summary.h"
#include "fusec/runtime/Runtime.h"

#include "Fuse/FuseOps.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <cmath>
#include <random>

using namespace mlir;
using namespace fusec;
namespace cl = llvm::cl;
namespace rt = fusec::runtime;

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

static cl::OptionCategory fusecCat("fusec options");
static cl::SubCommand runCmd("run", "Evaluate a graph and print (or save) "
                                    "its outputs");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<graph.mlir>"),
                                          cl::init("-"), cl::cat(fusecCat),
                                          cl::sub(cl::SubCommand::getTopLevel()),
                                          cl::sub(runCmd));

static cl::opt<std::string> entryName(
    "entry", cl::desc("Graph function to use (default: the only function, "
                      "or @main)"),
    cl::value_desc("name"), cl::cat(fusecCat),
    cl::sub(cl::SubCommand::getTopLevel()), cl::sub(runCmd));

enum class EmitKind { MLIR, Kernels, Tiled, GPU, PTX };
static cl::opt<EmitKind> emitKind(
    "emit",
    cl::desc("What to write (default: ptx when -o names a .ptx file, else "
             "mlir)"),
    cl::init(EmitKind::MLIR),
    cl::values(clEnumValN(EmitKind::MLIR, "mlir",
                          "The verified graph in the fuse dialect"),
               clEnumValN(EmitKind::Kernels, "kernels",
                          "The graph simplified and partitioned into "
                          "fuse.kernel regions"),
               clEnumValN(EmitKind::Tiled, "tiled",
                          "Tiled gpu.funcs and the launch plan"),
               clEnumValN(EmitKind::GPU, "gpu",
                          "Kernels lowered to the NVVM dialect"),
               clEnumValN(EmitKind::PTX, "ptx",
                          "The artifact: launch plan and PTX")),
    cl::cat(fusecCat));

static cl::opt<std::string>
    arch("arch",
         cl::desc("GPU architecture, sm_80 or newer (default sm_90; for "
                  "'run', the GPU's own)"),
         cl::init("sm_90"), cl::cat(fusecCat),
         cl::sub(cl::SubCommand::getTopLevel()), cl::sub(runCmd));

static cl::opt<std::string> fp32Math(
    "fp32-math",
    cl::desc("How f32 convolutions and matrix products compute: ieee (f32 "
             "FMAs on CUDA cores, the default) or tf32 (TF32 tensor cores "
             "with f32 accumulation: faster, about 1e-3 relative error)"),
    cl::init("ieee"), cl::cat(fusecCat),
    cl::sub(cl::SubCommand::getTopLevel()), cl::sub(runCmd));

static cl::opt<bool> mmaPrefetch(
    "mma-prefetch",
    cl::desc("Tensor-core GEMM: load the next k-step's fragments before this "
             "one's mma.sync (a tuning knob, on by default)"),
    cl::init(true), cl::Hidden, cl::cat(fusecCat),
    cl::sub(cl::SubCommand::getTopLevel()), cl::sub(runCmd));

static cl::opt<bool> showRemarks(
    "remarks", cl::desc("Print the compiler's remarks (fusion decisions)"),
    cl::init(false), cl::cat(fusecCat));

static cl::opt<std::string> outputFilename("o", cl::desc("Output file"),
                                           cl::value_desc("file"),
                                           cl::init("-"), cl::cat(fusecCat));

enum class Device { Auto, CPU, GPU };
static cl::opt<Device> device(
    "device", cl::desc("Where to run (default: the GPU if there is one)"),
    cl::init(Device::Auto),
    cl::values(clEnumValN(Device::Auto, "auto",
                          "The GPU if a CUDA driver and device are there, "
                          "else the CPU"),
               clEnumValN(Device::CPU, "cpu",
                          "The float64 reference interpreter"),
               clEnumValN(Device::GPU, "gpu",
                          "Compile, run on GPU 0 and compare every output "
                          "with the reference interpreter")),
    cl::cat(fusecCat), cl::sub(runCmd));

static cl::opt<uint64_t> seed("seed",
                              cl::desc("Seed of the random inputs (default 0)"),
                              cl::init(0), cl::cat(fusecCat), cl::sub(runCmd));

static cl::list<std::string>
    inputFiles("input",
               cl::desc("A .npy file for the next graph argument; give one "
                        "per argument, in order, or none for random inputs"),
               cl::value_desc("file.npy"), cl::cat(fusecCat), cl::sub(runCmd));

static cl::opt<std::string> outputDir(
    "output-dir",
    cl::desc("Write the inputs used (input<i>.npy) and the results "
             "(result<i>.npy) here; bf16 tensors are written as float32"),
    cl::value_desc("dir"), cl::cat(fusecCat), cl::sub(runCmd));

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static LogicalResult fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "fusec") << message << "\n";
  return failure();
}

/// Parses and verifies the graph file, returning the module.
static OwningOpRef<ModuleOp> loadGraph(MLIRContext &context,
                                       llvm::SourceMgr &sourceMgr) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFilename, &error);
  if (!file) {
    (void)fail(error);
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, &context);
}

/// The graph function to run or compile.
static func::FuncOp findEntry(ModuleOp module) {
  SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
  if (!entryName.empty()) {
    if (auto f = module.lookupSymbol<func::FuncOp>(entryName))
      return f;
    (void)fail("no function @" + entryName + " in " + inputFilename);
    return nullptr;
  }
  if (funcs.size() == 1)
    return funcs.front();
  if (auto f = module.lookupSymbol<func::FuncOp>("main"))
    return f;
  (void)fail(llvm::formatv("{0} has {1} functions and none is @main; choose "
                           "one with --entry",
                           inputFilename, funcs.size()));
  return nullptr;
}

/// True if `value` feeds the variance operand of a batch norm, also inside a
/// fuse.kernel: random values for it are drawn positive so that the graph
/// has a defined result.
static bool isVariance(Value value) {
  return llvm::any_of(value.getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    if (auto bn = dyn_cast<fuse::BatchNormOp>(user))
      return use.get() == bn.getVariance();
    if (auto coeffs = dyn_cast<fuse::BatchNormCoefficientsOp>(user))
      return use.get() == coeffs.getVariance();
    if (auto kernel = dyn_cast<fuse::KernelOp>(user))
      return isVariance(
          kernel.getBody().getArgument(use.getOperandNumber()));
    return false;
  });
}

/// Inputs of `func`: loaded from --input files, or seeded random values
/// (uniform in [-1, 1), [0.5, 2) for variances), rounded to the argument
/// dtypes.
static FailureOr<std::vector<ref::Tensor>> makeInputs(func::FuncOp func) {
  std::vector<ref::Tensor> inputs;
  unsigned numArgs = func.getNumArguments();
  if (!inputFiles.empty() && inputFiles.size() != numArgs)
    return fail(llvm::formatv("@{0} takes {1} arguments but {2} --input "
                              "files were given",
                              func.getSymName(), numArgs, inputFiles.size()));
  std::mt19937_64 rng(seed);
  for (unsigned i = 0; i < numArgs; ++i) {
    auto type = cast<RankedTensorType>(func.getArgument(i).getType());
    ref::DType dtype = *ref::getDType(type.getElementType());
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    ref::Tensor t(shape);
    if (inputFiles.empty()) {
      bool positive = isVariance(func.getArgument(i));
      std::uniform_real_distribution<double> dist(positive ? 0.5 : -1.0,
                                                  positive ? 2.0 : 1.0);
      for (double &v : t.data)
        v = dist(rng);
    } else {
      const std::string &path = inputFiles[i];
      std::string error;
      auto buffer = openInputFile(path, &error);
      if (!buffer)
        return fail(error);
      NpyArray array;
      if (!parseNpy(buffer->getBuffer().str(), array, error))
        return fail(path + ": " + error);
      if (array.shape != shape)
        return fail(llvm::formatv("{0}: shape {1} does not match argument "
                                  "#{2} of @{3}, which is {4}",
                                  path, formatShape(array.shape), i,
                                  func.getSymName(), formatShape(shape)));
      t.data = std::move(array.data);
    }
    inputs.push_back(ref::castTo(t, dtype));
  }
  return inputs;
}

static NpyDType npyDType(Type elementType) {
  return elementType.isF16() ? NpyDType::F16 : NpyDType::F32;
}

/// Writes every tensor to `dir`, all or nothing.
static LogicalResult writeTensors(
    llvm::ArrayRef<std::tuple<std::string, const ref::Tensor *, Type>> files) {
  std::vector<std::unique_ptr<llvm::ToolOutputFile>> outputs;
  for (auto &[name, tensor, elementType] : files) {
    llvm::SmallString<128> path(outputDir);
    llvm::sys::path::append(path, name);
    std::string error;
    auto out = openOutputFile(path, &error);
    if (!out)
      return fail(error);
    NpyArray array{tensor->shape, tensor->data};
    out->os() << writeNpy(array, npyDType(elementType));
    out->os().flush();
    if (out->os().has_error())
      return fail("cannot write '" + path + "'");
    outputs.push_back(std::move(out));
  }
  for (auto &out : outputs)
    out->keep();
  return success();
}

static void printSummary(llvm::raw_ostream &os, llvm::StringRef name,
                         const ref::Tensor &t, Type type) {
  std::string typeText;
  llvm::raw_string_ostream(typeText) << type;
  os << formatSummary(name.str(), typeText, summarize(t.data)) << "\n";
}

//===----------------------------------------------------------------------===//
// Commands
//===----------------------------------------------------------------------===//

/// Keeps only `entry` in `module`: code generation works on one graph.
static void keepOnly(ModuleOp module, func::FuncOp entry) {
  for (auto func : llvm::to_vector(module.getOps<func::FuncOp>()))
    if (func != entry)
      func.erase();
}

/// Runs the pipeline up to the stage `kind` emits; for PTX, returns the
/// artifact text in `artifact`.
static LogicalResult lower(ModuleOp module, EmitKind kind,
                           const PTXTarget &target, std::string *artifact,
                           int64_t smCount = 0) {
  if (kind == EmitKind::MLIR)
    return success();
  static const Stage stages[] = {Stage::Graph, Stage::Kernels, Stage::Tiled,
                                 Stage::GPU, Stage::Binary};
  PassManager pm(module->getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  PipelineOptions options;
  options.arch = target.chip;
  options.smCount = smCount;
  options.fp32Math = fp32Math;
  options.mmaPrefetch = mmaPrefetch;
  buildPipeline(pm, stages[static_cast<int>(kind)], options);
  if (failed(pm.run(module)))
    return failure();
  if (kind != EmitKind::PTX)
    return success();
  FailureOr<std::string> text = writeArtifact(module, target);
  if (failed(text))
    return failure();
  *artifact = std::move(*text);
  return success();
}

static LogicalResult emitGraph(ModuleOp module) {
  EmitKind kind = emitKind;
  if (emitKind.getNumOccurrences() == 0 &&
      llvm::StringRef(outputFilename).ends_with(".ptx"))
    kind = EmitKind::PTX;
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    if (failed(ref::verifyGraph(func)))
      return failure();
  auto target = PTXTarget::parse(arch);
  if (!target)
    return fail(llvm::toString(target.takeError()));
  if (kind >= EmitKind::Tiled) {
    func::FuncOp entry = findEntry(module);
    if (!entry)
      return failure();
    keepOnly(module, entry);
  }
  std::string text;
  if (failed(lower(module, kind, *target, &text)))
    return failure();
  if (kind != EmitKind::PTX) {
    llvm::raw_string_ostream os(text);
    module.print(os);
  }
  std::string error;
  auto out = openOutputFile(outputFilename, &error);
  if (!out)
    return fail(error);
  out->os() << text;
  out->keep();
  return success();
}

static FloatFormat formatOf(Type elementType) {
  return elementType.isF16()    ? FloatFormat::F16
         : elementType.isBF16() ? FloatFormat::BF16
                                : FloatFormat::F32;
}

/// Compiles `func` and runs it on GPU 0 with `inputs`, outputs poisoned
/// with NaN first.
static FailureOr<std::vector<ref::Tensor>>
runOnGPU(func::FuncOp func, const std::vector<ref::Tensor> &inputs,
         std::shared_ptr<rt::Device> gpu) {
  // The device's own chip, arch-specific where that unlocks instructions
  // (sm_90a: wgmma and TMA GEMMs on an H100 or H200).
  auto target = PTXTarget::parse(
      arch.getNumOccurrences()
          ? arch
          : TargetDescription::chipForDevice(gpu->computeCapabilityMajor(),
                                             gpu->computeCapabilityMinor()));
  if (!target)
    return fail(llvm::toString(target.takeError()));
  OwningOpRef<ModuleOp> module = cast<ModuleOp>(func->getParentOp()->clone());
  keepOnly(*module, module->lookupSymbol<func::FuncOp>(func.getSymName()));
  std::string artifact;
  // Tiles sized for this GPU's SMs.
  if (failed(lower(*module, EmitKind::PTX, *target, &artifact,
                   gpu->multiprocessorCount())))
    return failure();
  auto check = [](const rt::Status &status) -> LogicalResult {
    if (status.isOk())
      return success();
    return fail(status.message());
  };
  std::unique_ptr<rt::Module> loaded;
  if (failed(check(rt::Module::load(gpu, artifact, loaded,
                                    func.getSymName().str()))))
    return failure();
  std::vector<rt::DeviceBuffer> buffers;
  std::vector<rt::BufferRef> in, out;
  for (auto [t, type] : llvm::zip_equal(inputs, func.getArgumentTypes())) {
    std::vector<double> values = t.data;
    std::vector<uint8_t> bytes;
    encodeFloats(values, formatOf(cast<RankedTensorType>(type).getElementType()),
                 bytes);
    buffers.emplace_back();
    if (failed(check(rt::DeviceBuffer::allocate(gpu, bytes.size(),
                                                buffers.back()))) ||
        failed(check(gpu->copyToDevice(buffers.back().ptr(), bytes.data(),
                                       bytes.size()))))
      return failure();
    in.push_back(buffers.back().ref());
  }
  for (Type type : func.getResultTypes()) {
    auto tensor = cast<RankedTensorType>(type);
    uint64_t bytes = tensor.getNumElements() *
                     byteWidth(formatOf(tensor.getElementType()));
    buffers.emplace_back();
    // 0xFF bytes are NaN in every float format: unwritten outputs show.
    if (failed(check(rt::DeviceBuffer::allocate(gpu, bytes, buffers.back()))) ||
        failed(check(gpu->fill(buffers.back().ptr(), 0xFF, bytes))))
      return failure();
    out.push_back(buffers.back().ref());
  }
  if (failed(check(loaded->run(nullptr, in, out))) ||
      failed(check(gpu->synchronize())))
    return failure();
  std::vector<ref::Tensor> results;
  for (auto [ref, type] : llvm::zip_equal(out, func.getResultTypes())) {
    auto tensor = cast<RankedTensorType>(type);
    std::vector<uint8_t> bytes(ref.bytes);
    if (failed(check(gpu->copyToHost(bytes.data(), ref.ptr, ref.bytes))))
      return failure();
    ref::Tensor t(std::vector<int64_t>(tensor.getShape().begin(),
                                       tensor.getShape().end()));
    decodeFloats(bytes.data(), t.data.size(),
                 formatOf(tensor.getElementType()), t.data);
    results.push_back(std::move(t));
  }
  return results;
}

/// The largest ||gpu - ref|| / ||ref|| accepted per output dtype: float32
/// arithmetic (TF32 products with --fp32-math=tf32), or rounding to
/// f16/bf16 between kernels.
static double tolerance(Type elementType) {
  if (elementType.isF16())
    return 5e-3;
  if (elementType.isBF16())
    return 3e-2;
  return fp32Math == "tf32" ? 5e-3 : 1e-4;
}

static LogicalResult runGraph(ModuleOp module) {
  func::FuncOp func = findEntry(module);
  if (!func || failed(ref::verifyGraph(func)))
    return failure();
  if (!outputDir.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
      return fail("cannot create directory '" + outputDir +
                  "': " + ec.message());
  std::shared_ptr<rt::Device> gpu;
  if (device != Device::CPU) {
    rt::Status status = rt::Device::open(0, gpu);
    if (!status.isOk()) {
      if (device == Device::GPU)
        return fail(status.message());
      llvm::outs() << "no GPU (" << status.message()
                   << "); evaluating on the CPU\n";
      gpu.reset();
    }
  }
  FailureOr<std::vector<ref::Tensor>> inputs = makeInputs(func);
  if (failed(inputs))
    return failure();
  FailureOr<std::vector<ref::Tensor>> reference = ref::evaluate(func, *inputs);
  if (failed(reference))
    return failure();
  FailureOr<std::vector<ref::Tensor>> results = reference;
  if (gpu) {
    results = runOnGPU(func, *inputs, gpu);
    if (failed(results))
      return failure();
  }

  llvm::outs() << "@" << func.getSymName() << " on "
               << (gpu ? gpu->describe() : std::string("cpu (reference)"))
               << ", "
               << (inputFiles.empty()
                       ? "random inputs, seed " + std::to_string(seed)
                       : std::string("inputs from .npy files"))
               << "\n";
  std::vector<std::tuple<std::string, const ref::Tensor *, Type>> files;
  for (auto [i, t] : llvm::enumerate(*inputs))
    files.emplace_back(llvm::formatv("input{0}.npy", i).str(), &t,
                       cast<RankedTensorType>(func.getArgumentTypes()[i])
                           .getElementType());
  bool allWithin = true;
  for (auto [i, t] : llvm::enumerate(*results)) {
    Type type = func.getResultTypes()[i];
    Type elementType = cast<RankedTensorType>(type).getElementType();
    std::string name = llvm::formatv("result{0}", i).str();
    printSummary(llvm::outs(), name, t, type);
    if (gpu) {
      double err = 0, norm = 0, maxAbs = 0;
      const ref::Tensor &r = (*reference)[i];
      for (auto [a, b] : llvm::zip_equal(t.data, r.data)) {
        err += (a - b) * (a - b);
        norm += b * b;
        maxAbs = std::max(maxAbs, std::abs(a - b));
      }
      double rel = std::sqrt(err) / (norm > 0 ? std::sqrt(norm) : 1.0);
      bool within = rel <= tolerance(elementType); // NaN fails
      allWithin &= within;
      llvm::outs() << llvm::formatv(
          "         vs reference: relative error {0:e} (limit {1:e}), max "
          "abs error {2:e}  {3}\n",
          rel, tolerance(elementType), maxAbs, within ? "ok" : "FAILED");
    }
    files.emplace_back(name + ".npy", &t, elementType);
  }
  if (!outputDir.empty()) {
    if (failed(writeTensors(files)))
      return failure();
    llvm::outs() << "wrote " << files.size() << " .npy files to " << outputDir
                 << "\n";
  }
  if (!allWithin)
    return fail("the GPU results differ from the reference beyond the "
                "limits above");
  return success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  cl::HideUnrelatedOptions(fusecCat);
  cl::ParseCommandLineOptions(
      argc, argv,
      "fusec: compiles graphs of deep-learning operators into fused GPU "
      "kernels\n\n"
      "  fusec graph.mlir -o kernel.ptx [--arch=sm_90] [--fp32-math=ieee|tf32] "
      "[--remarks]\n"
      "  fusec graph.mlir [--emit=mlir|kernels|tiled|gpu|ptx] [-o out]\n"
      "  fusec run graph.mlir [--device=auto|cpu|gpu] [--seed=N] "
      "[--input=a.npy ...] [--output-dir=DIR]\n");

  if (fp32Math != "ieee" && fp32Math != "tf32") {
    (void)fail("--fp32-math must be ieee or tf32, found '" + fp32Math + "'");
    return 1;
  }

  DialectRegistry registry;
  registerAll(registry);
  MLIRContext context(registry);
  // Diagnostics point at the user's source; no dumps of transformed IR.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  // Registered last, so it sees diagnostics first: drops remarks unless
  // asked for.
  context.getDiagEngine().registerHandler([](Diagnostic &diag) {
    return success(!showRemarks &&
                   diag.getSeverity() == DiagnosticSeverity::Remark);
  });

  OwningOpRef<ModuleOp> module = loadGraph(context, sourceMgr);
  if (!module)
    return 1;
  LogicalResult result =
      runCmd ? runGraph(*module) : emitGraph(*module);
  return succeeded(result) ? 0 : 1;
}
