//===- Autotune.cpp - Measuring each kernel's candidate tiles -------------===//
//
// jit::tune, which `fusec tune`, the C API and Python call: forms the
// graph's kernels, and for each kernel whose family has candidate tiles
// (tiling::tuningCandidates) compiles the kernel alone with the heuristic's
// configuration and with each candidate, checks each on random inputs
// (against the float64 reference, or the heuristic's output for big
// kernels), times the survivors on the GPU, times the fastest again in
// turns with the heuristic's, and records the winner in the tuning
// database. What each compilation chose comes from compileArtifact's
// kernel records; nothing is parsed back from text. Progress, warnings and
// errors go to the caller's callback as they come (docs/Tuning.md).
//
//===----------------------------------------------------------------------===//

#include "fusec/JIT.h"

#include "ParsedGraph.h"

#include "Fuse/FuseOps.h"
#include "fusec/Conversion/FuseToGPU.h"
#include "fusec/Reference/Inputs.h"
#include "fusec/Target/PTX.h"
#include "fusec/Target/TargetDescription.h"
#include "fusec/Tuning/TuningDB.h"
#include "fusec/runtime/Runtime.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>

using namespace mlir;
using namespace fusec;
using namespace fusec::jit;
namespace rt = fusec::runtime;

namespace {

/// A module holding `kernel` alone: a function of its inputs returning its
/// results, named after it.
OwningOpRef<ModuleOp> kernelModule(fuse::KernelOp kernel) {
  OpBuilder b(kernel.getContext());
  Location loc = kernel.getLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto func =
      func::FuncOp::create(b, loc, kernel.getName(),
                           b.getFunctionType(kernel.getInputs().getTypes(),
                                             kernel.getResultTypes()));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  IRMapping map;
  map.map(kernel.getInputs(), entry->getArguments());
  Operation *copy = b.clone(*kernel, map);
  func::ReturnOp::create(b, loc, copy->getResults());
  return module;
}

/// Roughly the floating-point work of `kernel`, to decide whether the
/// float64 interpreter can check its candidates in reasonable time.
double kernelFlops(fuse::KernelOp kernel) {
  double flops = 0;
  kernel.getBody().walk([&](Operation *op) {
    auto outs = op->getResultTypes();
    if (outs.empty())
      return;
    double n = cast<ShapedType>(outs[0]).getNumElements();
    double k = 1;
    if (auto conv = dyn_cast<fuse::Conv2dOp>(op))
      k = cast<ShapedType>(conv.getFilter().getType()).getNumElements() /
          cast<ShapedType>(conv.getFilter().getType()).getDimSize(0);
    else if (auto linear = dyn_cast<fuse::LinearOp>(op))
      k = cast<ShapedType>(linear.getInput().getType()).getShape().back();
    else if (auto matmul = dyn_cast<fuse::MatmulOp>(op))
      k = matmul.getTransposeLhs()
              ? cast<ShapedType>(matmul.getLhs().getType()).getShape().end()[-2]
              : cast<ShapedType>(matmul.getLhs().getType()).getShape().back();
    else if (auto attention = dyn_cast<fuse::AttentionOp>(op))
      k = 2.0 * cast<ShapedType>(attention.getKey().getType()).getDimSize(2) *
          cast<ShapedType>(attention.getKey().getType()).getDimSize(3);
    flops += 2 * n * k;
  });
  return flops;
}

/// One line naming what `kernel` computes: its anchor and operand types.
std::string describeKernel(fuse::KernelOp kernel) {
  std::string text = kernel.getName().str();
  for (Operation &op : kernel.getBody().front().without_terminator())
    if (fuse::isAnchor(&op) && !fuse::isAnchorView(&op)) {
      llvm::raw_string_ostream os(text);
      os << " (" << op.getName().stripDialect();
      for (Type t : op.getOperandTypes())
        os << " " << t;
      os << ")";
      break;
    }
  return text;
}

/// The text of `tile` as the artifact writes it ("" for none).
std::string tileText(Attribute tile) {
  std::string text;
  if (tile)
    llvm::raw_string_ostream(text) << tile;
  return text;
}

/// relativeError over every result, the worst of them.
double worstError(const std::vector<ref::Tensor> &a,
                  const std::vector<ref::Tensor> &b) {
  double worst = 0;
  for (auto [x, y] : llvm::zip_equal(a, b)) {
    double rel = ref::relativeError(x.data, y.data);
    if (!(rel <= worst)) // NaN sticks
      worst = rel;
  }
  return worst;
}

/// `tensors` as the JIT library's host tensors (their dtype is the graph's).
std::vector<HostTensor> hostTensors(const std::vector<ref::Tensor> &tensors) {
  std::vector<HostTensor> host;
  for (const ref::Tensor &t : tensors)
    host.push_back({t.shape, DType::F32, t.data});
  return host;
}

/// One configuration of one kernel, compiled, checked and timed; 0 ms when
/// it is refused or wrong (`why` says which).
struct Measured {
  double ms = 0, error = 0;
  std::string family, why;
  Attribute tile;
  std::vector<ref::Tensor> results;
};

/// The tuning of one graph: the messages and result it builds up, the GPU
/// and target, the database.
class Tuner {
public:
  Tuner(const TuneOptions &options, const TuneCallback &callback,
        const std::string &name, TuneResult &result)
      : options(options), callback(callback), name(name), result(result) {}

  void run(const std::string &mlir);

private:
  /// Checks the options, opens the GPU, loads the database; false (with the
  /// error reported) on failure.
  bool prepare();
  bool tuneKernel(size_t index, size_t count, fuse::KernelOp kernel);
  Measured measure(ModuleOp single, fuse::KernelOp kernel, fuse::TileAttr tile,
                   const std::vector<ref::Tensor> *reference);
  void summarise();

  void say(TuneMessage::Kind kind, std::string text, bool located = false) {
    if (callback)
      callback({kind, std::move(text), located});
  }
  void progress(std::string line) {
    say(TuneMessage::Kind::Progress, std::move(line));
  }
  bool fail(TuneStatus status, const std::string &sentence) {
    result.status = status;
    result.error += name + ": error: " + sentence + "\n";
    say(TuneMessage::Kind::Error, sentence);
    return false;
  }
  /// Reports the graph's diagnostics so far: as the error of `status` when
  /// `failed`, else as warnings.
  bool diagnostics(bool failed, TuneStatus status = TuneStatus::Failed) {
    std::string text = graph.takeDiagnostics();
    if (failed) {
      result.status = status;
      if (text.empty())
        text = name + ": error: tuning failed\n";
      result.error += text;
    } else if (!text.empty()) {
      result.warnings += text;
    }
    if (!text.empty())
      say(failed ? TuneMessage::Kind::Error : TuneMessage::Kind::Warning, text,
          /*located=*/true);
    return !failed;
  }
  double elapsed() const {
    return std::chrono::duration<double>(Clock::now() - started).count();
  }

  using Clock = std::chrono::steady_clock;
  const TuneOptions &options;
  const TuneCallback &callback;
  const std::string &name;
  TuneResult &result;
  Clock::time_point started = Clock::now();
  jit::detail::ParsedGraph graph;
  std::shared_ptr<rt::Device> gpu;
  std::string chip;
  std::optional<PTXTarget> target;
  std::optional<TargetDescription> description;
  tuning::Database db;
  /// The inputs and outputs of the kernel being tuned, on the GPU: created
  /// with its first configuration that loads (all have the same plan).
  std::unique_ptr<DeviceRun> buffers;
  std::vector<ref::Tensor> inputs;
};

bool Tuner::prepare() {
  if (options.fp32Math != "ieee" && options.fp32Math != "tf32")
    return fail(TuneStatus::InvalidArgument,
                "fp32 math must be ieee or tf32, found '" + options.fp32Math +
                    "'");
  if (options.repeat < 1)
    return fail(TuneStatus::InvalidArgument,
                "the runs per timing (repeat) must be at least 1");
  if (options.device < 0)
    return fail(TuneStatus::InvalidArgument,
                "the device must be 0 or more, found " +
                    std::to_string(options.device));
  if (!options.arch.empty()) {
    auto parsed = PTXTarget::parse(options.arch);
    if (!parsed)
      return fail(TuneStatus::InvalidArgument,
                  llvm::toString(parsed.takeError()));
  }
  result.database =
      options.tuningDb.empty() ? tuning::defaultPath() : options.tuningDb;
  if (result.database == "none")
    return fail(TuneStatus::InvalidArgument,
                "fusec tune writes a tuning database: name one, not 'none'");
  // Read before the GPU is looked for: what is wrong with it shows on any
  // machine.
  std::vector<std::string> warnings;
  db = tuning::Database::load(result.database, warnings);
  for (const std::string &w : warnings) {
    result.warnings += "warning: " + w + "\n";
    say(TuneMessage::Kind::Warning, w);
  }
  if (rt::Status status = rt::Device::open(options.device, gpu); !status.isOk())
    return fail(TuneStatus::NoDevice,
                "fusec tune measures on a GPU: " + status.message());
  chip = options.arch.empty()
             ? TargetDescription::chipForDevice(gpu->computeCapabilityMajor(),
                                                gpu->computeCapabilityMinor())
             : options.arch;
  auto parsed = PTXTarget::parse(chip);
  if (!parsed)
    return fail(TuneStatus::Failed, llvm::toString(parsed.takeError()));
  target = *parsed;
  llvm::Expected<TargetDescription> described =
      TargetDescription::get(chip, gpu->multiprocessorCount());
  if (!described)
    return fail(TuneStatus::Failed, llvm::toString(described.takeError()));
  description = *described;
  return true;
}

void Tuner::run(const std::string &mlir) {
  std::string errors = graph.parse(mlir, name, options.entry);
  if (!errors.empty()) {
    graph.takeDiagnostics();
    result.status = TuneStatus::InvalidGraph;
    result.error = errors;
    say(TuneMessage::Kind::Error, errors, /*located=*/true);
    return;
  }
  if (!prepare())
    return;

  // The graph's kernels, as fusion forms them.
  ModuleOp module = *graph.module;
  func::FuncOp entry = graph.entry;
  keepOnlyEntry(module, entry);
  PassManager pm(module->getContext());
  PipelineOptions pipeline;
  pipeline.arch = chip;
  buildPipeline(pm, Stage::Kernels, pipeline);
  if (!diagnostics(failed(pm.run(module))))
    return;
  SmallVector<fuse::KernelOp> kernels(entry.getOps<fuse::KernelOp>());
  progress(llvm::formatv("tuning @{0} on {1} for {2}: {3} kernels; database "
                         "{4}",
                         entry.getSymName(), gpu->describe(), chip,
                         kernels.size(), result.database));
  for (auto [i, kernel] : llvm::enumerate(kernels))
    if (!tuneKernel(i, kernels.size(), kernel))
      return;
  std::string error;
  if (!db.save(result.database, error)) {
    fail(TuneStatus::Failed, error);
    return;
  }
  summarise();
}

Measured Tuner::measure(ModuleOp single, fuse::KernelOp kernel,
                        fuse::TileAttr tile,
                        const std::vector<ref::Tensor> *reference) {
  Measured m;
  OwningOpRef<ModuleOp> copy = single.clone();
  auto func = *copy->getOps<func::FuncOp>().begin();
  if (tile)
    (*func.getOps<fuse::KernelOp>().begin()).setTileAttr(tile);
  // Read before compiling: the pipeline lowers `func` away.
  Type element =
      cast<RankedTensorType>(func.getResultTypes()[0]).getElementType();
  PipelineOptions pipeline;
  pipeline.arch = target->chip;
  pipeline.smCount = gpu->multiprocessorCount();
  pipeline.fp32Math = options.fp32Math;
  pipeline.mmaPrefetch = options.mmaPrefetch;
  pipeline.tuningDb = "none";
  pipeline.fromKernels = true;
  FailureOr<CompiledArtifact> artifact;
  {
    // A refused candidate is a line of progress, not an error.
    ScopedDiagnosticHandler quiet(single.getContext(), [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error)
        m.why = d.str();
      return success();
    });
    artifact = compileArtifact(*copy, pipeline);
  }
  if (failed(artifact)) {
    if (m.why.empty())
      m.why = "does not compile";
    return m;
  }
  for (const KernelRecord &record : artifact->kernels)
    if (record.kernel == kernel.getName()) {
      m.family = record.family;
      m.tile = record.tile;
    }
  std::unique_ptr<rt::Module> loaded;
  rt::Status status =
      rt::Module::load(gpu, artifact->text, loaded, kernel.getName().str());
  if (!status.isOk()) {
    m.why = status.message();
    return m;
  }
  if (!buffers) {
    buffers =
        DeviceRun::create(gpu, loaded->plan(), hostTensors(inputs), m.why);
    if (!buffers)
      return m;
  }
  Evaluation run = buffers->run(*loaded);
  if (!run.ok()) {
    m.why = run.error;
    return m;
  }
  for (HostTensor &t : run.outputs)
    m.results.emplace_back(std::move(t.shape), std::move(t.data));
  if (reference) {
    m.error = worstError(m.results, *reference);
    double limit =
        ref::tolerance(*ref::getDType(element), options.fp32Math == "tf32");
    if (!(m.error <= limit)) {
      m.why = llvm::formatv("relative error {0:e} over the limit {1:e}",
                            m.error, limit);
      return m;
    }
  }
  std::string error;
  m.ms = std::max(0.0, buffers->time(*loaded, options.repeat, error));
  return m;
}

bool Tuner::tuneKernel(size_t index, size_t count, fuse::KernelOp kernel) {
  std::string what = describeKernel(kernel);
  std::string head = llvm::formatv("[{0}/{1}] ", index + 1, count);
  std::vector<fuse::TileAttr> candidates =
      tiling::tuningCandidates(kernel, *description, options.fp32Math);
  if (candidates.empty()) {
    progress(head + what + ": the heuristic alone configures it");
    return true;
  }
  OwningOpRef<ModuleOp> single = kernelModule(kernel);
  auto func = *single->getOps<func::FuncOp>().begin();
  if (!diagnostics(failed(ref::checkHostMemory(func))))
    return false;
  inputs = ref::randomInputs(func, options.seed);
  buffers.reset();

  // The reference: the float64 interpreter where affordable, else the
  // heuristic configuration's output (itself checked by the GPU suite).
  std::vector<ref::Tensor> reference;
  std::string against;
  if (kernelFlops(kernel) <= options.referenceGflop * 1e9) {
    FailureOr<std::vector<ref::Tensor>> r = ref::evaluate(func, inputs);
    if (!diagnostics(failed(r)))
      return false;
    reference = std::move(*r);
    against = "the float64 reference";
  }
  Measured heuristic =
      measure(*single, kernel, {}, against.empty() ? nullptr : &reference);
  if (!heuristic.ms)
    return fail(TuneStatus::Failed,
                what + ": the heuristic configuration fails: " + heuristic.why);
  if (against.empty()) {
    reference = heuristic.results;
    against = "the heuristic configuration's output";
  }
  progress(
      head + what + ": " + std::to_string(candidates.size()) +
      " candidates, checked against " + against + "; heuristic " +
      heuristic.family + " " + tileText(heuristic.tile) +
      llvm::formatv(": {0:f3} ms  [{1:f1} s]", heuristic.ms, elapsed()).str());
  Measured best = heuristic;
  fuse::TileAttr bestTile;
  for (auto [c, tile] : llvm::enumerate(candidates)) {
    Measured m = measure(*single, kernel, tile, &reference);
    std::string line =
        llvm::formatv("      {0}/{1} {2} {3}: ", c + 1, candidates.size(),
                      m.family, tileText(tile));
    if (!m.ms) {
      progress(line + "refused, " + m.why);
      continue;
    }
    bool better = m.ms < best.ms;
    progress(line + llvm::formatv("{0:f3} ms (error {1:e}){2}  [{3:f1} s]",
                                  m.ms, m.error, better ? " best" : "",
                                  elapsed())
                        .str());
    if (better) {
      best = std::move(m);
      bestTile = tile;
    }
  }
  // The winner, timed again in turns with the heuristic's configuration:
  // it must beat it by more than the timing noise (2%), else the
  // heuristic's tile is recorded.
  if (bestTile && best.tile != heuristic.tile) {
    double again[2] = {best.ms, heuristic.ms};
    for (int round = 0; round < 2; ++round)
      for (int which = 0; which < 2; ++which) {
        Measured m = measure(*single, kernel,
                             which ? fuse::TileAttr() : bestTile, nullptr);
        if (m.ms)
          again[which] = std::min(again[which], m.ms);
      }
    best.ms = again[0];
    heuristic.ms = again[1];
    bool beats = best.ms < 0.98 * heuristic.ms;
    progress(llvm::formatv("      again, in turns: {0:f3} ms against the "
                           "heuristic's {1:f3} ms{2}",
                           best.ms, heuristic.ms,
                           beats ? ""
                                 : ": within the noise, keeping the "
                                   "heuristic's"));
    if (!beats) {
      bestTile = {};
      best = heuristic;
    }
  } else if (bestTile) {
    // The heuristic's own tile: one configuration, one time.
    best.ms = heuristic.ms;
  }
  // The winner (the heuristic's own tile when nothing beat it).
  if (!bestTile)
    bestTile = dyn_cast_or_null<fuse::TileAttr>(best.tile);
  if (!bestTile) {
    progress("      (no tile to record)");
    return true;
  }
  tuning::Entry e;
  e.kernel = tuning::kernelSignature(kernel, chip, options.fp32Math);
  e.chip = chip;
  e.gpu = gpu->name();
  e.fusec = tuning::version();
  e.description = what;
  e.family = best.family;
  e.tile = {
      {"bm", bestTile.getBm()},          {"bn", bestTile.getBn()},
      {"bk", bestTile.getBk()},          {"tm", bestTile.getTm()},
      {"tn", bestTile.getTn()},          {"warps_m", bestTile.getWarpsM()},
      {"warps_n", bestTile.getWarpsN()}, {"stages", bestTile.getStages()},
      {"warps_k", bestTile.getWarpsK()}};
  e.ms = best.ms;
  e.heuristicMs = heuristic.ms;
  db.record(std::move(e));
  result.kernels.push_back({kernel.getName().str(), best.family,
                            tileText(bestTile), heuristic.ms, best.ms});
  return true;
}

/// The table `fusec tune` ends with.
void Tuner::summarise() {
  progress("");
  progress(llvm::formatv("{0,-20} {1,-20} {2,12} {3,12} {4,8}  tile", "kernel",
                         "family", "heuristic ms", "tuned ms", "speedup"));
  for (const TunedKernel &k : result.kernels)
    progress(llvm::formatv("{0,-20} {1,-20} {2,12:f3} {3,12:f3} {4,8:f2}  "
                           "{5}",
                           k.kernel, k.family, k.heuristicMs, k.tunedMs,
                           k.heuristicMs / k.tunedMs, k.tile));
  progress(llvm::formatv("wrote {0} entries to {1} in {2:f1} s",
                         result.kernels.size(), result.database, elapsed()));
}

} // namespace

TuneResult fusec::jit::tune(const std::string &mlir, const TuneOptions &options,
                            const TuneCallback &progress,
                            const std::string &name) {
  auto start = std::chrono::steady_clock::now();
  TuneResult result;
  Tuner(options, progress, name, result).run(mlir);
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}
