//===- fusec.cpp - The fusec driver ---------------------------------------===//
//
//   fusec graph.mlir [-o out] [--emit=mlir|kernels|tiled|gpu|ptx|cuda]
//   fusec run graph.mlir --device=cpu [--seed=N] [--input=a.npy ...]
//                                     [--output-dir=DIR]
//   fusec tune graph.mlir --tuning-db=FILE
//
// A thin tool: the command line and what is printed. The pipeline
// (lib/Pipelines), the reference interpreter and its inputs (lib/Reference),
// compiling for and running on a GPU and the autotuner (lib/JIT) are
// libraries; the driver knows no op of the fuse dialect.
//
//===----------------------------------------------------------------------===//

#include "fusec/InitAll.h"
#include "fusec/JIT.h"
#include "fusec/Pipelines/Pipelines.h"
#include "fusec/Reference/Inputs.h"
#include "fusec/Reference/Interpreter.h"
#include "fusec/Support/SafeRead.h"
#include "fusec/Support/Summary.h"
#include "fusec/Target/PTX.h"
#include "fusec/Target/TargetDescription.h"
#include "fusec/Tuning/TuningDB.h"
#include "fusec/runtime/Runtime.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <cmath>

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
static cl::SubCommand
    tuneCmd("tune",
            "On a GPU: time candidate configurations of every kernel of a "
            "graph, each checked first, and keep the fastest in the tuning "
            "database");
/// Options of every command: compiling, run and tune.
static cl::SubCommandGroup everyCommand({&cl::SubCommand::getTopLevel(),
                                         &runCmd, &tuneCmd});

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<graph.mlir>"),
                                          cl::init("-"), cl::cat(fusecCat),
                                          cl::sub(everyCommand));

static cl::opt<std::string>
    entryName("entry",
              cl::desc("Graph function to use (default: the only function "
                       "with a body, or @main)"),
              cl::value_desc("name"), cl::cat(fusecCat), cl::sub(everyCommand));

enum class EmitKind { MLIR, Kernels, Tiled, GPU, PTX, CUDA };
static cl::opt<EmitKind> emitKind(
    "emit",
    cl::desc("What to write (default: ptx when -o names a .ptx file, cuda "
             "for a .cu file, else mlir)"),
    cl::init(EmitKind::MLIR),
    cl::values(
        clEnumValN(EmitKind::MLIR, "mlir",
                   "The verified graph in the fuse dialect"),
        clEnumValN(EmitKind::Kernels, "kernels",
                   "The graph simplified and partitioned into "
                   "fuse.kernel regions"),
        clEnumValN(EmitKind::Tiled, "tiled",
                   "Tiled gpu.funcs and the launch plan"),
        clEnumValN(EmitKind::GPU, "gpu", "Kernels lowered to the NVVM dialect"),
        clEnumValN(EmitKind::PTX, "ptx", "The artifact: launch plan and PTX"),
        clEnumValN(EmitKind::CUDA, "cuda",
                   "The artifact: launch plan and CUDA C, which "
                   "NVRTC compiles at load time")),
    cl::cat(fusecCat));

static cl::opt<std::string>
    arch("arch",
         cl::desc("GPU architecture, sm_80 or newer (default sm_90; for "
                  "'run', the GPU's own)"),
         cl::init("sm_90"), cl::cat(fusecCat), cl::sub(everyCommand));

static cl::opt<std::string> fp32Math(
    "fp32-math",
    cl::desc("How f32 convolutions and matrix products compute: ieee (f32 "
             "FMAs on CUDA cores, the default) or tf32 (TF32 tensor cores "
             "with f32 accumulation: faster, about 1e-3 relative error)"),
    cl::init("ieee"), cl::cat(fusecCat), cl::sub(everyCommand));

static cl::opt<std::string> tuningDb(
    "tuning-db",
    cl::desc("The autotuner's database: read when compiling (kernels without "
             "a tile take their measured configuration), written by 'tune' "
             "(default: $FUSEC_TUNING_DB, else ~/.cache/fusec/tuning.json; "
             "'none': no database)"),
    cl::value_desc("file"), cl::cat(fusecCat), cl::sub(everyCommand));

static cl::opt<unsigned>
    tuneRepeat("repeat",
               cl::desc("tune: back-to-back runs per timing (default 10)"),
               cl::init(10), cl::cat(fusecCat), cl::sub(tuneCmd));

static cl::opt<double> referenceGflop(
    "reference-gflop",
    cl::desc("tune: the largest kernel (in GFLOP) whose candidates are "
             "checked against the float64 reference interpreter; larger "
             "ones are checked against the heuristic configuration's "
             "output on the GPU (default 2)"),
    cl::init(2.0), cl::cat(fusecCat), cl::sub(tuneCmd));

static cl::opt<bool> mmaPrefetch(
    "mma-prefetch",
    cl::desc("Tensor-core GEMM: load the next k-step's fragments before this "
             "one's mma.sync (a tuning knob, on by default)"),
    cl::init(true), cl::Hidden, cl::cat(fusecCat), cl::sub(everyCommand));

static cl::opt<int64_t> smCount(
    "sm-count",
    cl::desc("SMs of the GPU the artifact runs on (0, the default: the "
             "architecture's flagship part, 132 for sm_90a); persistent "
             "GEMMs launch as many blocks as fit on them at once"),
    cl::init(0), cl::cat(fusecCat));

static cl::opt<bool>
    showRemarks("remarks",
                cl::desc("Print the compiler's remarks (fusion decisions)"),
                cl::init(false), cl::cat(fusecCat));

static cl::opt<bool>
    train("train",
          cl::desc("Compile a training step: differentiate the graph "
                   "(fusec-autodiff) and write one artifact holding its "
                   "forward and backward plans (docs/Training.md)"),
          cl::init(false), cl::cat(fusecCat));
static cl::list<unsigned>
    wrtArgs("wrt",
            cl::desc("With --train: the graph arguments to differentiate, "
                     "by position (default: every argument a gradient "
                     "reaches)"),
            cl::value_desc("i,j,..."), cl::CommaSeparated, cl::cat(fusecCat));
static cl::opt<bool> deterministic(
    "deterministic",
    cl::desc("With --train: gradients the same bit for bit run to run (the "
             "attention backward adds dQ in a fixed order, docs/Training.md)"),
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
                              cl::init(0), cl::cat(fusecCat), cl::sub(runCmd),
                              cl::sub(tuneCmd));

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
  // Bounded: a graph given as /dev/zero must not be read until memory
  // runs out (a pipe or "-" is read to its end, under the bound).
  auto file = readBoundedText(inputFilename, kMaxGraphTextBytes);
  if (!file) {
    (void)fail("cannot open input file '" + inputFilename +
               "': " + llvm::toString(file.takeError()));
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, &context);
}

/// The graph function to run or compile.
static func::FuncOp findEntry(ModuleOp module) {
  std::string problem;
  func::FuncOp f =
      selectEntry(module, entryName, "choose one with --entry", problem);
  if (!f)
    (void)fail(entryName.empty() ? inputFilename + " has " + problem
                                 : problem + " in " + inputFilename);
  return f;
}

/// Inputs of `func`: loaded from --input files, or random, rounded to the
/// argument dtypes.
static FailureOr<std::vector<ref::Tensor>> makeInputs(func::FuncOp func) {
  if (inputFiles.empty())
    return ref::randomInputs(func, seed);
  llvm::Expected<std::vector<ref::Tensor>> inputs =
      ref::loadInputs(func, inputFiles);
  if (!inputs)
    return fail(llvm::toString(inputs.takeError()));
  return std::move(*inputs);
}

//===----------------------------------------------------------------------===//
// Commands
//===----------------------------------------------------------------------===//

/// The database compilation reads and `tune` writes.
static std::string tuningDbPath() {
  return tuningDb.getNumOccurrences() ? std::string(tuningDb)
                                      : tuning::defaultPath();
}

/// Runs the pipeline up to the stage `kind` emits: the artifact's text for
/// PTX and CUDA C, else the module printed.
static FailureOr<std::string> lower(ModuleOp module, EmitKind kind,
                                    const PTXTarget &target) {
  std::string text;
  PipelineOptions options;
  options.arch = target.chip;
  options.fp32Math = fp32Math;
  options.mmaPrefetch = mmaPrefetch;
  options.smCount = smCount;
  options.tuningDb = tuningDbPath();
  options.train = train;
  options.wrt = llvm::to_vector(wrtArgs);
  options.deterministic = deterministic;
  if (kind == EmitKind::PTX || kind == EmitKind::CUDA) {
    ArtifactOptions how;
    how.backend = kind == EmitKind::CUDA ? Backend::CUDA : Backend::PTX;
    how.configure = [](PassManager &pm) {
      return applyPassManagerCLOptions(pm);
    };
    FailureOr<CompiledArtifact> compiled =
        compileArtifact(module, options, how);
    if (failed(compiled))
      return failure();
    return std::move(compiled->text);
  }
  // --train --emit=mlir: the forward/backward pair, as compiled.
  if (kind != EmitKind::MLIR || train) {
    static const Stage stages[] = {Stage::Graph, Stage::Kernels, Stage::Tiled,
                                   Stage::GPU};
    PassManager pm(module->getContext());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    buildPipeline(pm, stages[static_cast<int>(kind)], options);
    if (failed(pm.run(module)))
      return failure();
  }
  llvm::raw_string_ostream(text) << module;
  return text;
}

static LogicalResult emitGraph(ModuleOp module) {
  EmitKind kind = emitKind;
  if (emitKind.getNumOccurrences() == 0 &&
      llvm::StringRef(outputFilename).ends_with(".ptx"))
    kind = EmitKind::PTX;
  if (emitKind.getNumOccurrences() == 0 &&
      llvm::StringRef(outputFilename).ends_with(".cu"))
    kind = EmitKind::CUDA;
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    if (failed(ref::verifyGraph(func)))
      return failure();
  auto target = PTXTarget::parse(arch);
  if (!target)
    return fail(llvm::toString(target.takeError()));
  if (smCount < 0)
    return fail("--sm-count is the GPU's number of SMs: 0 (the "
                "architecture's flagship part) or more, not " +
                llvm::Twine(smCount));
  if (!wrtArgs.empty() && !train)
    return fail("--wrt names the arguments to differentiate; it needs "
                "--train");
  if (deterministic && !train)
    return fail("--deterministic asks for deterministic gradients; it needs "
                "--train");
  // fusec-autodiff differentiates one graph.
  if (kind >= EmitKind::Tiled || train) {
    func::FuncOp entry = findEntry(module);
    if (!entry)
      return failure();
    keepOnlyEntry(module, entry);
  }
  FailureOr<std::string> text = lower(module, kind, *target);
  if (failed(text))
    return failure();
  std::string error;
  auto out = openOutputFile(outputFilename, &error);
  if (!out)
    return fail(error);
  out->os() << *text;
  out->keep();
  return success();
}

/// Compiles the graph (`func` of `graph`) through the JIT library for
/// `gpu` (its chip, SMs and tuning entries) and runs it there on `inputs`,
/// outputs poisoned with NaN first.
static FailureOr<std::vector<ref::Tensor>>
runOnGPU(func::FuncOp func, const llvm::MemoryBuffer &graph,
         const std::vector<ref::Tensor> &inputs, const rt::Device &gpu) {
  // --arch, else the GPU's own, arch-specific where that unlocks
  // instructions (sm_90a: wgmma and TMA on an H100/H200).
  auto target = PTXTarget::parse(
      arch.getNumOccurrences()
          ? std::string(arch)
          : TargetDescription::chipForDevice(gpu.computeCapabilityMajor(),
                                             gpu.computeCapabilityMinor()));
  if (!target)
    return fail(llvm::toString(target.takeError()));
  jit::Options options;
  options.arch = target->chip;
  options.fp32Math = fp32Math;
  options.mmaPrefetch = mmaPrefetch;
  options.tuningDb = tuningDbPath();
  options.entry = func.getSymName().str();
  options.smCount = gpu.multiprocessorCount();
  options.gpu = gpu.name();
  options.cache = false;
  jit::Result compiled = jit::compile(graph.getBuffer().str(), options,
                                      graph.getBufferIdentifier().str());
  llvm::errs() << compiled.warnings << compiled.error;
  if (!compiled.ok())
    return failure();
  std::vector<jit::HostTensor> host;
  for (const ref::Tensor &t : inputs)
    host.push_back({t.shape, jit::DType::F32, t.data});
  jit::Evaluation run =
      jit::run(compiled.artifact, host, /*device=*/0, func.getSymName().str());
  if (!run.ok())
    return fail(run.error);
  std::vector<ref::Tensor> results;
  for (jit::HostTensor &t : run.outputs)
    results.emplace_back(std::move(t.shape), std::move(t.data));
  return results;
}

static LogicalResult runGraph(ModuleOp module,
                              const llvm::MemoryBuffer &graph) {
  func::FuncOp func = findEntry(module);
  if (!func || failed(ref::verifyGraph(func)) ||
      failed(ref::checkHostMemory(func)))
    return failure();
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
  // Large graphs take minutes in the float64 interpreter: say what is
  // happening, on stderr, so that a long run is not a silent one.
  double referenceBytes = ref::hostMemoryBytes(func);
  bool large = referenceBytes >= double(uint64_t(1) << 30);
  auto progress = [&](const llvm::Twine &message) {
    if (large)
      llvm::errs() << "fusec: " << message << "\n";
  };
  auto start = std::chrono::steady_clock::now();
  auto seconds = [&] {
    std::chrono::duration<double> elapsed =
        std::chrono::steady_clock::now() - start;
    return llvm::formatv("{0:f1} s", elapsed.count()).str();
  };
  progress(llvm::formatv("@{0} is large: its float64 reference takes {1:e2} "
                         "bytes of host memory; drawing the inputs",
                         func.getSymName(), referenceBytes));
  FailureOr<std::vector<ref::Tensor>> inputs = makeInputs(func);
  if (failed(inputs))
    return failure();
  progress("evaluating the float64 reference on the CPU (fusec-runner runs "
           "the artifact without it)");
  FailureOr<std::vector<ref::Tensor>> reference = ref::evaluate(func, *inputs);
  if (failed(reference))
    return failure();
  FailureOr<std::vector<ref::Tensor>> results = reference;
  if (gpu) {
    progress("the reference is done (" + seconds() +
             " so far); compiling "
             "and running on " +
             gpu->describe());
    results = runOnGPU(func, graph, *inputs, *gpu);
    if (failed(results))
      return failure();
  }
  progress("done in " + seconds() + "; comparing");

  llvm::outs() << "@" << func.getSymName() << " on "
               << (gpu ? gpu->describe() : std::string("cpu (reference)"))
               << ", "
               << (inputFiles.empty()
                       ? "random inputs, seed " + std::to_string(seed)
                       : std::string("inputs from .npy files"))
               << "\n";
  auto dtype = [](Type type) {
    return *ref::getDType(cast<RankedTensorType>(type).getElementType());
  };
  std::vector<ref::NamedTensor> files;
  for (auto [i, t] : llvm::enumerate(*inputs))
    files.push_back({llvm::formatv("input{0}.npy", i).str(), &t,
                     dtype(func.getArgumentTypes()[i])});
  bool allWithin = true;
  for (auto [i, t] : llvm::enumerate(*results)) {
    Type type = func.getResultTypes()[i];
    std::string name = llvm::formatv("result{0}", i).str(), typeText;
    llvm::raw_string_ostream(typeText) << type;
    llvm::outs() << formatSummary(name, typeText, summarize(t.data)) << "\n";
    if (gpu) {
      const ref::Tensor &r = (*reference)[i];
      double rel = ref::relativeError(t.data, r.data), maxAbs = 0;
      for (auto [a, b] : llvm::zip_equal(t.data, r.data))
        maxAbs = std::max(maxAbs, std::abs(a - b));
      double limit = ref::tolerance(dtype(type), fp32Math == "tf32");
      bool within = rel <= limit; // NaN fails
      allWithin &= within;
      llvm::outs() << llvm::formatv(
          "         vs reference: relative error {0:e} (limit {1:e}), max "
          "abs error {2:e}  {3}\n",
          rel, limit, maxAbs, within ? "ok" : "FAILED");
    }
    files.push_back({name + ".npy", &t, dtype(type)});
  }
  if (!outputDir.empty()) {
    // Only now: a run that fails earlier leaves no directory behind.
    if (llvm::Error error = ref::saveTensors(outputDir, files))
      return fail(llvm::toString(std::move(error)));
    llvm::outs() << "wrote " << files.size() << " .npy files to " << outputDir
                 << "\n";
  }
  if (!allWithin)
    return fail("the GPU results differ from the reference beyond the "
                "limits above");
  return success();
}

//===----------------------------------------------------------------------===//
// tune
//===----------------------------------------------------------------------===//

/// Prints what jit::tune says as `fusec tune` always has: progress on
/// stdout, warnings and errors on stderr.
static void printTuneMessage(const jit::TuneMessage &message) {
  using Kind = jit::TuneMessage::Kind;
  if (message.kind == Kind::Progress)
    llvm::outs() << message.text << "\n";
  else if (message.located)
    llvm::errs() << message.text;
  else if (message.kind == Kind::Error)
    (void)fail(message.text);
  else
    llvm::WithColor::warning(llvm::errs(), "fusec") << message.text << "\n";
}

static LogicalResult tuneGraph(ModuleOp module,
                               const llvm::MemoryBuffer &graph) {
  func::FuncOp entry = findEntry(module);
  if (!entry)
    return failure();
  if (tuningDbPath() == "none")
    return fail("fusec tune writes a tuning database: name one with "
                "--tuning-db=FILE");
  jit::TuneOptions options;
  options.arch = arch.getNumOccurrences() ? std::string(arch) : "";
  options.fp32Math = fp32Math;
  options.tuningDb = tuningDbPath();
  options.entry = entry.getSymName().str();
  options.seed = seed;
  options.repeat = tuneRepeat;
  options.referenceGflop = referenceGflop;
  options.mmaPrefetch = mmaPrefetch;
  jit::TuneResult result =
      jit::tune(graph.getBuffer().str(), options, printTuneMessage,
                graph.getBufferIdentifier().str());
  return success(result.ok());
}

// The driver's entry. The fusec executable's main (main.cpp) calls it, and
// libfusec_jit.so exports it for the `fusec` command the Python wheel
// installs (python/fusec/__main__.py).
extern "C" int fusec_main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  cl::HideUnrelatedOptions(fusecCat);
  // --version names the build the tuning database keys its entries by.
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "fusec " << tuning::version() << "\n  LLVM " LLVM_VERSION_STRING
       << "\n";
  });
  cl::ParseCommandLineOptions(
      argc, argv,
      "fusec: compiles graphs of deep-learning operators into fused GPU "
      "kernels\n\n"
      "  fusec graph.mlir -o kernel.ptx [--arch=sm_90] [--fp32-math=ieee|tf32] "
      "[--remarks]\n"
      "  fusec graph.mlir -o kernel.cu [--arch=sm_90] ...   (CUDA C for "
      "NVRTC)\n"
      "  fusec graph.mlir [--emit=mlir|kernels|tiled|gpu|ptx|cuda] [-o out]\n"
      "  fusec graph.mlir --train [--wrt=0,2] -o step.ptx   (forward and "
      "backward)\n"
      "  fusec run graph.mlir [--device=auto|cpu|gpu] [--seed=N] "
      "[--input=a.npy ...] [--output-dir=DIR]\n"
      "  fusec tune graph.mlir [--tuning-db=FILE] [--repeat=N]\n");

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
  const llvm::MemoryBuffer &graph =
      *sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  LogicalResult result = tuneCmd  ? tuneGraph(*module, graph)
                         : runCmd ? runGraph(*module, graph)
                                  : emitGraph(*module);
  return succeeded(result) ? 0 : 1;
}
