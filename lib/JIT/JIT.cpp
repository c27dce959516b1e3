//===- JIT.cpp - Compiling graphs from host programs ----------------------===//
//
// compile(): parse, verify, pick the entry, run the one pipeline builder to
// PTX and write the artifact; in front of it, a cache keyed by everything
// that shapes the artifact. A disk entry carries a hash of its own text, so
// that a truncated or corrupt file is detected, rebuilt and replaced, never
// loaded; entries are written to a temporary file and renamed.
//
//===----------------------------------------------------------------------===//

#include "fusec/JIT.h"
#include "Fuse/FuseDialect.h"

#include "Evaluate.h"
#include "ParsedGraph.h"

#include "fusec/InitAll.h"
#include "fusec/Pipelines/Pipelines.h"
#include "fusec/Reference/Interpreter.h"
#include "fusec/Support/SafeRead.h"
#include "fusec/Target/PTX.h"
#include "fusec/Transforms/Autodiff.h"
#include "fusec/Tuning/TuningDB.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <limits>
#include <map>
#include <mutex>

using namespace mlir;
using namespace fusec;
using namespace fusec::jit;

namespace {

/// Changes whenever the key's recipe or the entry format changes.
constexpr llvm::StringLiteral kCacheFormat = "fusec-kernel-cache v1";
constexpr llvm::StringLiteral kEntryHeader = "// fusec-cache-entry: ";
/// The largest disk entry read (docs/JIT.md): artifacts are megabytes.
constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 30;

std::string sha256Hex(llvm::StringRef text) {
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(text)),
                     /*LowerCase=*/true);
}

/// The in-memory cache: key -> artifact.
struct MemoryCache {
  std::mutex mutex;
  std::map<std::string, std::string> entries;
};
MemoryCache &memoryCache() {
  static MemoryCache cache;
  return cache;
}

/// The tuning database a compilation reads ("none" for none).
std::string tuningPath(const Options &options) {
  return options.tuningDb.empty() ? tuning::defaultPath() : options.tuningDb;
}

/// Everything that shapes the artifact: the graph, the options, the
/// tuning database's contents, and this build.
std::string cacheKey(const std::string &mlir, const Options &options) {
  std::string recipe;
  llvm::raw_string_ostream os(recipe);
  os << kCacheFormat << "\n"
     << version() << "\narch=" << options.arch
     << "\nbackend=" << options.backend << "\nfp32-math=" << options.fp32Math
     << "\nentry=" << options.entry << "\nsm-count=" << options.smCount
     << "\ngpu=" << options.gpu << "\nmma-prefetch=" << options.mmaPrefetch
     << "\ntiles=" << options.tiles.size();
  for (const auto &[kernel, tile] : options.tiles)
    os << "\n" << kernel << "=" << tile;
  // Only a training step says so: the keys of other graphs stay as they
  // were.
  if (options.train) {
    os << "\ntrain=";
    for (unsigned i : options.wrt)
      os << i << ",";
    if (options.deterministic)
      os << "\ndeterministic=1";
  }
  os << "\ntuning=";
  std::string db = tuningPath(options);
  if (db == "none") {
    os << "none";
  } else if (auto file = readRegularFile(db, tuning::kMaxDatabaseBytes)) {
    os << sha256Hex((*file)->getBuffer());
  } else {
    // The compilation ignores a database it refuses, as a missing one.
    llvm::consumeError(file.takeError());
    os << "absent";
  }
  os << "\n" << mlir;
  return sha256Hex(recipe);
}

std::string entryPath(const Options &options, const std::string &key) {
  llvm::SmallString<256> path(cacheDirectory(options));
  llvm::sys::path::append(path, key + ".ptx");
  return std::string(path);
}

/// The artifact of a disk entry, or "" (with `warning` set when the entry
/// exists but is damaged: it is removed).
std::string readEntry(const std::string &path, std::string &warning) {
  auto file = readRegularFile(path, kMaxEntryBytes);
  if (!file) {
    std::string why;
    if (isMissingFile(file.takeError(), why))
      return "";
    // A link to /dev/zero, a FIFO, a huge file: never read, and replaced.
    warning += "fusec: the kernel cache entry '" + path + "' cannot be read (" +
               why + "); it was compiled again and replaced\n";
    llvm::sys::fs::remove(path);
    return "";
  }
  llvm::StringRef text = (*file)->getBuffer();
  auto [header, artifact] = text.split('\n');
  if (header.consume_front(kEntryHeader) && header == sha256Hex(artifact) &&
      !artifact.empty())
    return artifact.str();
  warning += "fusec: the kernel cache entry '" + path +
             "' is damaged (its hash does not match); it was compiled "
             "again and replaced\n";
  llvm::sys::fs::remove(path);
  return "";
}

/// Writes a disk entry atomically; a failure is a warning, not an error.
void writeEntry(const std::string &path, const std::string &artifact,
                std::string &warning) {
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    warning += "fusec: cannot create the kernel cache '" + dir.str() +
               "': " + ec.message() + "\n";
    return;
  }
  // writeToOutput writes a temporary file beside `path` and renames it: a
  // concurrent reader sees the old entry or the new one, never half.
  if (llvm::Error error = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
        os << kEntryHeader << sha256Hex(artifact) << "\n" << artifact;
        return llvm::Error::success();
      }))
    warning += "fusec: cannot write the kernel cache entry '" + path +
               "': " + llvm::toString(std::move(error)) + "\n";
}

/// The whole compilation.
std::string compileUncached(const std::string &mlir, const Options &options,
                            const std::string &name, std::string &artifact,
                            std::string &warnings) {
  auto target = PTXTarget::parse(options.arch);
  if (!target)
    return name + ": error: " + llvm::toString(target.takeError());
  if (options.fp32Math != "ieee" && options.fp32Math != "tf32")
    return name + ": error: fp32 math must be ieee or tf32, found '" +
           options.fp32Math + "'";
  if (options.backend != "ptx" && options.backend != "cuda")
    return name + ": error: the backend must be ptx or cuda, found '" +
           options.backend + "'";
  if (options.smCount < 0)
    return name + ": error: the SM count must be 0 or more, found " +
           std::to_string(options.smCount);

  jit::detail::ParsedGraph graph;
  if (std::string errors = graph.parse(mlir, name, options.entry);
      !errors.empty())
    return errors;
  keepOnlyEntry(*graph.module, graph.entry);

  PipelineOptions pipeline;
  pipeline.arch = target->chip;
  pipeline.smCount = options.smCount;
  pipeline.fp32Math = options.fp32Math;
  pipeline.tuningDb = tuningPath(options);
  pipeline.tuningGpu = options.gpu;
  pipeline.mmaPrefetch = options.mmaPrefetch;
  pipeline.train = options.train;
  pipeline.wrt = llvm::ArrayRef<unsigned>(options.wrt);
  pipeline.deterministic = options.deterministic;
  ArtifactOptions how;
  how.backend = options.backend == "cuda" ? Backend::CUDA : Backend::PTX;
  how.tiles = options.tiles;
  FailureOr<CompiledArtifact> compiled =
      compileArtifact(*graph.module, pipeline, how);
  if (failed(compiled))
    return graph.failure(name + ": error: compilation failed");
  artifact = std::move(compiled->text);
  // What is left is warnings: errors fail the compilation.
  warnings += graph.takeDiagnostics();
  return "";
}

static_assert(static_cast<int>(DType::BF16) ==
                  static_cast<int>(ref::DType::BF16) &&
              static_cast<int>(DType::F16) == static_cast<int>(ref::DType::F16),
              "jit::DType mirrors ref::DType");

} // namespace

std::string fusec::jit::version() { return tuning::version(); }

std::string fusec::jit::cacheDirectory(const Options &options) {
  if (!options.cacheDir.empty())
    return options.cacheDir;
  if (std::optional<std::string> dir =
          llvm::sys::Process::GetEnv("FUSEC_CACHE_DIR");
      dir && !dir->empty())
    return *dir;
  std::string root = tuning::userCacheDir();
  if (root.empty())
    return "";
  llvm::SmallString<256> dir(root);
  llvm::sys::path::append(dir, "kernels");
  return std::string(dir);
}

void fusec::jit::clearMemoryCache() {
  MemoryCache &cache = memoryCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.entries.clear();
}

Result fusec::jit::compile(const std::string &mlir, const Options &options,
                           const std::string &name) {
  auto start = std::chrono::steady_clock::now();
  Result result;
  auto finish = [&]() -> Result {
    result.milliseconds = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - start)
                              .count();
    return std::move(result);
  };

  std::string key, path;
  if (options.cache) {
    key = cacheKey(mlir, options);
    MemoryCache &cache = memoryCache();
    {
      std::lock_guard<std::mutex> lock(cache.mutex);
      auto it = cache.entries.find(key);
      if (it != cache.entries.end()) {
        result.artifact = it->second;
        result.source = Source::MemoryCache;
        return finish();
      }
    }
    if (!cacheDirectory(options).empty()) {
      path = entryPath(options, key);
      result.artifact = readEntry(path, result.warnings);
      if (!result.artifact.empty()) {
        std::lock_guard<std::mutex> lock(cache.mutex);
        cache.entries.emplace(key, result.artifact);
        result.source = Source::DiskCache;
        return finish();
      }
    }
  }

  result.error =
      compileUncached(mlir, options, name, result.artifact, result.warnings);
  if (!result.ok() || !options.cache)
    return finish();
  {
    MemoryCache &cache = memoryCache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    cache.entries.emplace(key, result.artifact);
  }
  if (!path.empty())
    writeEntry(path, result.artifact, result.warnings);
  return finish();
}

Result fusec::jit::compileFile(const std::string &path,
                               const Options &options) {
  auto file = readBoundedText(path, kMaxGraphTextBytes);
  if (!file) {
    Result result;
    result.error = "cannot open '" + path + "': " + toString(file.takeError());
    return result;
  }
  return compile((*file)->getBuffer().str(), options, path);
}

Evaluation
fusec::jit::detail::evaluate(const std::string &mlir, size_t numInputs,
                             llvm::function_ref<InputView(size_t)> input,
                             const std::string &entry,
                             const std::string &name) {
  Evaluation result;
  jit::detail::ParsedGraph graph;
  result.error = graph.parse(mlir, name, entry);
  if (!result.ok())
    return result;
  func::FuncOp func = graph.entry;
  auto fail = [&](const std::string &message) {
    result.error = name + ": error: @" + func.getSymName().str() + ": " +
                   message + "\n";
    return result;
  };
  if (numInputs != func.getNumArguments())
    return fail("the graph takes " + std::to_string(func.getNumArguments()) +
                " inputs, " + std::to_string(numInputs) + " were given");
  // Everything about the inputs is checked before anything is allocated:
  // a shape is not multiplied out (it may overflow), only compared.
  for (size_t i = 0; i < numInputs; ++i) {
    auto type = cast<RankedTensorType>(func.getArgumentTypes()[i]);
    std::string takes = llvm::formatv("{0}", type).str();
    InputView in = input(i);
    if (in.rank != static_cast<size_t>(type.getRank()))
      return fail("input " + std::to_string(i) + " has rank " +
                  std::to_string(in.rank) + ", the graph takes " + takes);
    if (in.rank && !in.shape)
      return fail("input " + std::to_string(i) + " has no shape");
    llvm::ArrayRef<int64_t> shape(in.shape, in.rank);
    if (shape != type.getShape()) {
      std::string text;
      for (int64_t d : shape)
        text += (text.empty() ? "" : "x") + std::to_string(d);
      return fail("input " + std::to_string(i) + " has shape [" + text +
                  "], the graph takes " + takes);
    }
    // The argument's shape is verified to fit in int64.
    auto count = static_cast<size_t>(type.getNumElements());
    if (in.size && *in.size != count)
      return fail("input " + std::to_string(i) + " holds " +
                  std::to_string(*in.size) + " values, its shape " +
                  std::to_string(count));
    if (!in.data)
      return fail("input " + std::to_string(i) + " has no data");
  }
  if (failed(ref::checkHostMemory(func))) {
    result.error = graph.failure(name + ": error: not enough host memory\n");
    return result;
  }
  try {
    std::vector<ref::Tensor> tensors;
    tensors.reserve(numInputs);
    for (size_t i = 0; i < numInputs; ++i) {
      auto type = cast<RankedTensorType>(func.getArgumentTypes()[i]);
      ref::DType dtype = *ref::getDType(type.getElementType());
      InputView in = input(i);
      ref::Tensor t;
      t.shape.assign(type.getShape().begin(), type.getShape().end());
      t.data.resize(type.getNumElements());
      for (auto [v, x] : llvm::zip_equal(
               t.data, llvm::ArrayRef<double>(in.data, t.data.size())))
        v = ref::roundTo(dtype, x);
      tensors.push_back(std::move(t));
    }
    FailureOr<std::vector<ref::Tensor>> outputs = ref::evaluate(func, tensors);
    if (failed(outputs)) {
      // The interpreter emits a located error.
      result.error = graph.failure(name + ": error: the reference "
                                          "interpreter failed\n");
      return result;
    }
    for (auto [t, type] : llvm::zip_equal(*outputs, func.getResultTypes()))
      result.outputs.push_back(
          {t.shape,
           static_cast<DType>(
               *ref::getDType(cast<RankedTensorType>(type).getElementType())),
           std::move(t.data)});
  } catch (const std::bad_alloc &) {
    // checkHostMemory goes by the machine's memory; a process limit (ulimit,
    // a cgroup) may be lower.
    result.outputs.clear();
    return fail("out of host memory: the float64 reference interpreter "
                "could not allocate its tensors (a process memory limit may "
                "be lower than the machine's memory)");
  }
  return result;
}

Evaluation fusec::jit::evaluate(const std::string &mlir,
                                const std::vector<HostTensor> &inputs,
                                const std::string &entry,
                                const std::string &name) {
  return detail::evaluate(
      mlir, inputs.size(),
      [&](size_t i) {
        const HostTensor &t = inputs[i];
        return detail::InputView{t.shape.data(), t.shape.size(), t.data.data(),
                                 t.data.size()};
      },
      entry, name);
}

double fusec::jit::relativeError(const std::vector<double> &result,
                                 const std::vector<double> &reference) {
  if (result.size() != reference.size())
    return std::numeric_limits<double>::quiet_NaN();
  return ref::relativeError(result, reference);
}

double fusec::jit::tolerance(DType dtype, const std::string &fp32Math) {
  return ref::tolerance(static_cast<ref::DType>(dtype), fp32Math == "tf32");
}

namespace {
/// Copies `given` into interpreter tensors of `types`, rounded to their
/// dtypes; "" or what is wrong ("result gradient 1 has shape [3], the graph
/// takes tensor<4xf32>").
std::string toTensors(TypeRange types, const std::vector<HostTensor> &given,
                      const std::string &what, std::vector<ref::Tensor> &out) {
  if (given.size() != types.size())
    return "the graph takes " + std::to_string(types.size()) + " " + what +
           "s, " + std::to_string(given.size()) + " were given";
  for (auto [i, type, t] : llvm::enumerate(types, given)) {
    auto tensor = cast<RankedTensorType>(type);
    std::string takes = llvm::formatv("{0}", tensor).str();
    if (llvm::ArrayRef<int64_t>(t.shape) != tensor.getShape()) {
      std::string text;
      for (int64_t d : t.shape)
        text += (text.empty() ? "" : "x") + std::to_string(d);
      return what + " " + std::to_string(i) + " has shape [" + text +
             "], the graph takes " + takes;
    }
    if (t.data.size() != static_cast<size_t>(tensor.getNumElements()))
      return what + " " + std::to_string(i) + " holds " +
             std::to_string(t.data.size()) + " values, its shape " +
             std::to_string(tensor.getNumElements());
  }
  for (auto [type, t] : llvm::zip_equal(types, given)) {
    ref::DType dtype =
        *ref::getDType(cast<RankedTensorType>(type).getElementType());
    ref::Tensor v;
    v.shape = t.shape;
    v.data.reserve(t.data.size());
    for (double x : t.data)
      v.data.push_back(ref::roundTo(dtype, x));
    out.push_back(std::move(v));
  }
  return "";
}

HostTensor toHost(ref::Tensor &&t, Type type) {
  return {std::move(t.shape),
          static_cast<DType>(
              *ref::getDType(cast<RankedTensorType>(type).getElementType())),
          std::move(t.data)};
}

std::vector<int64_t> intsOf(func::FuncOp f, llvm::StringRef name) {
  auto attr = f->getAttrOfType<DenseI64ArrayAttr>(name);
  return attr ? std::vector<int64_t>(attr.asArrayRef().begin(),
                                     attr.asArrayRef().end())
              : std::vector<int64_t>();
}
} // namespace

TrainingEvaluation fusec::jit::evaluateTraining(
    const std::string &mlir, const std::vector<HostTensor> &inputs,
    const std::vector<HostTensor> &resultGrads,
    const std::vector<unsigned> &wrt, const std::string &entry,
    const std::string &name) {
  TrainingEvaluation result;
  jit::detail::ParsedGraph graph;
  result.error = graph.parse(mlir, name, entry);
  if (!result.ok())
    return result;
  func::FuncOp func = graph.entry;
  std::string graphName = func.getSymName().str();
  auto fail = [&](const std::string &message) {
    result.error = name + ": error: @" + graphName + ": " + message + "\n";
    return result;
  };
  std::vector<ref::Tensor> args, grads;
  if (std::string problem =
          toTensors(func.getArgumentTypes(), inputs, "input", args);
      !problem.empty())
    return fail(problem);
  if (std::string problem = toTensors(func.getResultTypes(), resultGrads,
                                      "result gradient", grads);
      !problem.empty())
    return fail(problem);
  if (failed(ref::checkHostMemory(func))) {
    result.error = graph.failure(name + ": error: not enough host memory\n");
    return result;
  }
  keepOnlyEntry(*graph.module, func);
  // The backward is built of fuse ops even when the graph has none (the
  // pass says so through its dependent dialects).
  graph.context.getOrLoadDialect<mlir::fuse::FuseDialect>();
  FailureOr<GradientFunctions> pair = differentiate(func, wrt);
  if (failed(pair)) {
    result.error = graph.failure(name + ": error: fusec-autodiff failed\n");
    return result;
  }
  func::FuncOp forward = pair->forward, backward = pair->backward;
  try {
    FailureOr<std::vector<ref::Tensor>> outs = ref::evaluate(forward, args);
    if (failed(outs)) {
      result.error = graph.failure(name + ": error: the reference "
                                          "interpreter failed\n");
      return result;
    }
    size_t numResults =
        forward->getAttrOfType<IntegerAttr>(kNumResultsAttr).getInt();
    std::vector<ref::Tensor> backwardArgs;
    result.gradResults = intsOf(backward, kGradResultsAttr);
    result.wrt = intsOf(backward, kWrtAttr);
    for (int64_t i : intsOf(backward, kForwardArgsAttr))
      backwardArgs.push_back(args[i]);
    for (int64_t i : intsOf(backward, kForwardResultsAttr))
      backwardArgs.push_back((*outs)[i]);
    for (size_t i = numResults; i < outs->size(); ++i)
      backwardArgs.push_back((*outs)[i]);
    for (int64_t r : result.gradResults)
      backwardArgs.push_back(grads[r]);
    FailureOr<std::vector<ref::Tensor>> gradients =
        ref::evaluate(backward, backwardArgs);
    if (failed(gradients)) {
      result.error = graph.failure(name + ": error: the reference "
                                          "interpreter failed\n");
      return result;
    }
    for (auto [i, t] : llvm::enumerate(*outs))
      (i < numResults ? result.outputs : result.saved)
          .push_back(toHost(std::move(t), forward.getResultTypes()[i]));
    for (auto [t, type] :
         llvm::zip_equal(*gradients, backward.getResultTypes()))
      result.gradients.push_back(toHost(std::move(t), type));
  } catch (const std::bad_alloc &) {
    result.outputs.clear();
    result.saved.clear();
    result.gradients.clear();
    return fail("out of host memory: the float64 reference interpreter "
                "could not allocate its tensors");
  }
  return result;
}
