//===- JIT.h - Compiling graphs from host programs --------------*- C++ -*-===//
//
// The compiler as a library: a graph (MLIR text or a file) in, an artifact
// (docs/Artifact.md) out, through the same pipeline as `fusec graph.mlir -o
// kernel.ptx`, with a cache in memory and on disk. The artifact runs through
// the runtime (fusec/runtime/Runtime.h: Module::load, Module::run on device
// pointers and a stream), which knows nothing of the compiler.
//
// No MLIR or LLVM type appears here. Every function may be called from
// several threads at once: each compilation has its own MLIR context, and
// the cache serialises only its own bookkeeping.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_JIT_H
#define FUSEC_JIT_H

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fusec {
namespace runtime {
class Device;
class Module;
struct Plan;
} // namespace runtime

namespace jit {

struct Options {
  /// The GPU architecture: sm_80, sm_86, sm_89, sm_90, sm_90a (Hopper's
  /// wgmma/TMA kernels), sm_100, sm_100a, sm_120, sm_120a, sm_121, sm_121a.
  std::string arch = "sm_90";
  /// "ptx" (the artifact carries PTX) or "cuda" (CUDA C, which the runtime
  /// compiles with NVRTC when it loads the artifact).
  std::string backend = "ptx";
  /// "ieee" (f32 on CUDA cores) or "tf32" (f32 products on tensor cores).
  std::string fp32Math = "ieee";
  /// Tile overrides: kernel name (as `fusec --emit=kernels` names them:
  /// "k0_conv2d", ...) -> a `#fuse.tile<...>` (docs/Tiling.md). They win
  /// over the tuning database and the heuristics.
  std::vector<std::pair<std::string, std::string>> tiles;
  /// SMs of the GPU the kernels are for (0: the architecture's flagship
  /// part); grids are sized for it.
  int64_t smCount = 0;
  /// The GPU whose tuning database entries apply ("": any GPU of `arch`).
  std::string gpu;
  /// The autotuner's database: "" for $FUSEC_TUNING_DB or the per-user
  /// default, "none" for the heuristics alone, or a path.
  std::string tuningDb;
  /// The graph function to compile: "" for the only one (or @main).
  std::string entry;
  /// Tensor-core GEMM: load the next k-step's fragments ahead (a tuning
  /// knob, fusec's hidden --mma-prefetch).
  bool mmaPrefetch = true;
  /// Use the kernel cache (memory, then disk).
  bool cache = true;
  /// The cache directory: "" for $FUSEC_CACHE_DIR, else
  /// $XDG_CACHE_HOME/fusec/kernels or ~/.cache/fusec/kernels.
  std::string cacheDir;
  /// Compile a training step (`fusec --train`, docs/Training.md): the
  /// artifact holds the forward and the backward plan of the graph, which
  /// runtime::TrainingModule loads (runtime::Module refuses it).
  bool train = false;
  /// With `train`: the arguments to differentiate, by position (empty:
  /// every argument a gradient reaches).
  std::vector<unsigned> wrt;
  /// With `train`: gradients the same bit for bit run to run (`fusec
  /// --deterministic`).
  bool deterministic = false;
};

/// Where a compilation's artifact came from.
enum class Source { Compiled, MemoryCache, DiskCache };

struct Result {
  /// Empty on success; else every error, located in the graph's text
  /// ("graph.mlir:3:8: error: ...").
  std::string error;
  /// The artifact: the launch plan and the PTX.
  std::string artifact;
  Source source = Source::Compiled;
  /// Wall time of this call.
  double milliseconds = 0;
  /// Warnings, such as a corrupt cache entry that was rebuilt, or the
  /// compiler's own (located in the graph's text, as errors are).
  std::string warnings;

  bool ok() const { return error.empty(); }
};

//===----------------------------------------------------------------------===//
// Building a graph in C++
//===----------------------------------------------------------------------===//

enum class DType { F32, F16, BF16 };

/// A value of the graph being built.
struct Tensor {
  int id = -1;
};

struct Conv2dOptions {
  std::vector<int64_t> strides = {1, 1};
  /// [ph, pw] or [top, bottom, left, right].
  std::vector<int64_t> padding = {0, 0};
  std::vector<int64_t> dilation = {1, 1};
  int64_t groups = 1;
};

struct AttentionOptions {
  bool causal = false;
  /// The logits' scale; 1/sqrt(head dim) when not given.
  std::optional<double> scale;
};

/// Builds a graph op by op (NHWC convolutions, [tokens, features] linear
/// layers, [batch, heads, tokens, head dim] attention: the fuse dialect's
/// conventions, docs/Dialect/FuseDialect.md). Each op's result type is
/// inferred as it is added.
///
/// Errors: an invalid call returns Tensor{-1} (an empty vector for split)
/// and records an error naming the op. The graph stays usable: later calls
/// are built as usual (one given a -1 fails in turn, saying so). error()
/// keeps the first error until clearError(), and while it is there mlir()
/// is empty and compile() refuses the graph, so checking once at the end
/// is enough; a caller that handles each failure as it comes (the Python
/// module raises it) clears it and goes on.
class GraphBuilder {
public:
  /// `name` names the graph function: any text (it is quoted in the MLIR
  /// where it is not an identifier), not empty.
  explicit GraphBuilder(std::string name = "graph");
  ~GraphBuilder();
  GraphBuilder(GraphBuilder &&) noexcept;
  GraphBuilder &operator=(GraphBuilder &&) noexcept;

  Tensor input(const std::vector<int64_t> &shape, DType dtype);
  Tensor conv2d(Tensor x, Tensor filter, const Conv2dOptions &options = {},
                std::optional<Tensor> bias = std::nullopt);
  Tensor batchNorm(Tensor x, Tensor mean, Tensor variance, Tensor scale,
                   Tensor shift, double epsilon = 1e-5);
  Tensor relu(Tensor x);
  Tensor relu6(Tensor x);
  Tensor gelu(Tensor x);
  Tensor silu(Tensor x);
  Tensor sigmoid(Tensor x);
  Tensor tanh(Tensor x);
  Tensor hardswish(Tensor x);
  Tensor add(Tensor a, Tensor b);
  Tensor sub(Tensor a, Tensor b);
  Tensor mul(Tensor a, Tensor b);
  Tensor div(Tensor a, Tensor b);
  Tensor biasAdd(Tensor x, Tensor bias);
  Tensor linear(Tensor x, Tensor weight,
                std::optional<Tensor> bias = std::nullopt);
  Tensor matmul(Tensor a, Tensor b);
  Tensor layerNorm(Tensor x, std::optional<Tensor> scale = std::nullopt,
                   std::optional<Tensor> shift = std::nullopt,
                   double epsilon = 1e-5);
  Tensor rmsNorm(Tensor x, std::optional<Tensor> scale = std::nullopt,
                 double epsilon = 1e-6);
  Tensor softmax(Tensor x);
  Tensor attention(Tensor q, Tensor k, Tensor v,
                   const AttentionOptions &options = {});
  /// Rotary embedding of `x [..., N, D]` by tables `cos, sin [N, D/2]`.
  Tensor rope(Tensor x, Tensor cos, Tensor sin, bool interleaved = false);
  /// NHWC pooling; empty `strides` stand for the kernel.
  Tensor maxPool2d(Tensor x, std::vector<int64_t> kernel,
                   std::vector<int64_t> strides, std::vector<int64_t> padding);
  Tensor avgPool2d(Tensor x, std::vector<int64_t> kernel,
                   std::vector<int64_t> strides, std::vector<int64_t> padding,
                   bool countIncludePad = true);
  /// Mean over H and W of NHWC `x`: [N, 1, 1, C].
  Tensor globalAvgPool(Tensor x);
  Tensor transpose(Tensor x, const std::vector<int64_t> &permutation);
  Tensor reshape(Tensor x, const std::vector<int64_t> &shape);
  /// `x` converted to `dtype` (round to nearest even).
  Tensor cast(Tensor x, DType dtype);
  Tensor slice(Tensor x, const std::vector<int64_t> &offsets,
               const std::vector<int64_t> &sizes);
  Tensor concat(const std::vector<Tensor> &values, int64_t axis);
  /// Consecutive pieces of `x` along `axis`, of extents `sizes`.
  std::vector<Tensor> split(Tensor x, int64_t axis,
                            const std::vector<int64_t> &sizes);
  /// Any fuse op whose result type follows from its operands and
  /// attributes (every op but fuse.cast and fuse.reshape), by name
  /// ("fuse.rope" or "rope"). `attributes` are an MLIR attribute
  /// dictionary, with or without its braces ("axis = 1", "{interleaved}",
  /// "" for none). The op is written in MLIR's generic form.
  Tensor op(const std::string &name, const std::vector<Tensor> &operands,
            const std::string &attributes = "");
  /// op() for an op of any number of results (fuse.split).
  std::vector<Tensor> opResults(const std::string &name,
                                const std::vector<Tensor> &operands,
                                const std::string &attributes = "");
  /// Marks a result of the graph, in order.
  void output(Tensor x);

  /// The shape of `x` (empty for an invalid handle).
  std::vector<int64_t> shape(Tensor x) const;
  /// The first error not yet cleared (with how many calls failed after
  /// it), or "".
  const std::string &error() const;
  /// Forgets the recorded error, once the caller has dealt with it: the
  /// graph holds the calls that succeeded.
  void clearError();
  /// Records an error found by a front end that checks its own arguments
  /// (the C API), as a failed call does.
  void recordError(const std::string &message);
  /// The graph as MLIR text ("" while there is an error or no output).
  std::string mlir() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Compiles a built graph (its error, if it has one).
Result compile(const GraphBuilder &graph, const Options &options = {});

/// Compiles the MLIR text of a graph; `name` names it in messages.
Result compile(const std::string &mlir, const Options &options = {},
               const std::string &name = "<graph>");
/// Compiles the graph in the file at `path`.
Result compileFile(const std::string &path, const Options &options = {});

//===----------------------------------------------------------------------===//
// The reference interpreter
//===----------------------------------------------------------------------===//

/// A tensor in host memory: row-major float64 values (the reference
/// interpreter computes in float64 and rounds each op's result to `dtype`).
struct HostTensor {
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  std::vector<double> data;
};

struct Evaluation {
  /// Empty on success; else the located errors.
  std::string error;
  /// One per graph result, in order.
  std::vector<HostTensor> outputs;

  bool ok() const { return error.empty(); }
};

/// Evaluates a graph on the float64 reference interpreter, the oracle the
/// compiled kernels are checked against. `inputs` take the arguments'
/// shapes, in order; their values are rounded to the arguments' dtypes
/// (their own `dtype` is ignored).
Evaluation evaluate(const std::string &mlir,
                    const std::vector<HostTensor> &inputs,
                    const std::string &entry = "",
                    const std::string &name = "<graph>");

/// ||result - reference|| / ||reference|| (the plain norm of the difference
/// when the reference is all zeros); NaN when `result` holds one.
double relativeError(const std::vector<double> &result,
                     const std::vector<double> &reference);

/// The largest relativeError accepted for a GPU result of `dtype`: float32
/// arithmetic (TF32 products when `fp32Math` is "tf32"), or rounding to
/// f16/bf16 between kernels.
double tolerance(DType dtype, const std::string &fp32Math = "ieee");

/// A training step's values: the forward's results and saved tensors, and
/// the backward's argument gradients.
struct TrainingEvaluation {
  /// Empty on success; else the located errors.
  std::string error;
  /// One per graph result, in order.
  std::vector<HostTensor> outputs;
  /// The tensors the forward saves for the backward.
  std::vector<HostTensor> saved;
  /// The gradients of the arguments listed in `wrt`, in that order.
  std::vector<HostTensor> gradients;
  /// The arguments differentiated (the `wrt` asked for, or every argument a
  /// gradient reaches).
  std::vector<int64_t> wrt;
  /// The results with a gradient (the others, such as running statistics,
  /// carry none, and their gradients are not read).
  std::vector<int64_t> gradResults;
  bool ok() const { return error.empty(); }
};

/// A training step on the float64 reference interpreter: differentiates the
/// graph (fusec-autodiff, with `wrt` as Options::wrt), evaluates the
/// forward on `inputs` (one per argument) and the backward on
/// `resultGrads`, one per graph result, of its shape (those of results
/// without a gradient are ignored). Values are rounded to the dtypes.
TrainingEvaluation evaluateTraining(const std::string &mlir,
                                    const std::vector<HostTensor> &inputs,
                                    const std::vector<HostTensor> &resultGrads,
                                    const std::vector<unsigned> &wrt = {},
                                    const std::string &entry = "",
                                    const std::string &name = "<graph>");

//===----------------------------------------------------------------------===//
// Checking and timing on a GPU
//===----------------------------------------------------------------------===//

/// A graph's inputs and outputs on a GPU, for checking and timing the
/// artifacts of one graph (`fusec run` and `fusec tune` use it): the inputs
/// are uploaded once, rounded to the plan's dtypes, and the outputs are
/// filled with NaN (0xFF bytes, NaN in every float format) before each run,
/// so that an output a kernel leaves unwritten shows. Host programs run
/// artifacts on their own buffers with runtime::Module::run instead.
class DeviceRun {
public:
  /// Allocates on `gpu` the graph inputs and outputs that `plan` (any
  /// artifact of the graph: runtime::Module::plan()) names, and uploads
  /// `inputs`; their shapes are checked against the plan, their own `dtype`
  /// is ignored. Null, with `error` set, on failure.
  static std::unique_ptr<DeviceRun>
  create(std::shared_ptr<runtime::Device> gpu, const runtime::Plan &plan,
         const std::vector<HostTensor> &inputs, std::string &error);
  ~DeviceRun();

  /// Runs `module` (an artifact of the same graph, loaded on the same GPU)
  /// once, waits for it and returns its outputs.
  Evaluation run(runtime::Module &module);
  /// The median of 5 timings of `repeat` back-to-back runs, after two
  /// warm-up runs and an idle moment: milliseconds per run, or a negative
  /// number with `error` set.
  double time(runtime::Module &module, unsigned repeat, std::string &error);

private:
  DeviceRun();
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Loads `artifact` (a compile() result) on GPU `device` and runs it once on
/// `inputs` through DeviceRun: the GPU's answer, to hold against evaluate().
/// `name` starts the runtime's error messages.
Evaluation run(const std::string &artifact,
               const std::vector<HostTensor> &inputs, int device = 0,
               const std::string &name = "artifact");

/// Loads a training artifact (a compile() result with Options::train) on GPU
/// `device` and runs one step: the forward on `inputs`, then the backward
/// on `resultGrads` (one per graph result, as evaluateTraining takes them),
/// returning what the GPU computed, to hold against evaluateTraining().
TrainingEvaluation runTraining(const std::string &artifact,
                               const std::vector<HostTensor> &inputs,
                               const std::vector<HostTensor> &resultGrads,
                               int device = 0,
                               const std::string &name = "artifact");

//===----------------------------------------------------------------------===//
// Autotuning
//===----------------------------------------------------------------------===//

struct TuneOptions {
  /// The architecture to compile for: "" for the GPU's own (sm_90a on an
  /// H100 or H200: Options::arch lists them).
  std::string arch;
  /// "ieee" or "tf32", as Options::fp32Math.
  std::string fp32Math = "ieee";
  /// The database to update: "" for $FUSEC_TUNING_DB or the per-user
  /// default (Options::tuningDb); "none" is refused.
  std::string tuningDb;
  /// The graph function to tune: "" for the only one (or @main).
  std::string entry;
  /// The GPU that measures.
  int device = 0;
  /// The seed of the random inputs (fusec/Reference/Inputs.h's policy).
  uint64_t seed = 0;
  /// Back-to-back runs per timing (DeviceRun::time), at least 1.
  unsigned repeat = 10;
  /// The largest kernel, in GFLOP, whose candidates are checked against the
  /// float64 reference interpreter; larger ones are checked against the
  /// heuristic configuration's output on the GPU.
  double referenceGflop = 2;
  /// Tensor-core GEMM: load the next k-step's fragments ahead (a tuning
  /// knob, fusec's hidden --mma-prefetch).
  bool mmaPrefetch = true;
};

/// How a tuning ended. fusec_jit_tune_status (fusec_jit.h) mirrors it.
enum class TuneStatus {
  Ok,
  /// An option is out of range (the message names it).
  InvalidArgument,
  /// The graph does not parse or verify, or has no such entry.
  InvalidGraph,
  /// No GPU to measure on (no driver, no device, a busy device).
  NoDevice,
  /// Anything else: a heuristic configuration that fails, the reference
  /// interpreter, writing the database.
  Failed,
};

/// What tune() says as it goes, in order.
struct TuneMessage {
  enum class Kind { Progress, Warning, Error };
  Kind kind = Kind::Progress;
  /// A progress line as `fusec tune` prints it (no newline), or a warning or
  /// error: one sentence, or, when `located`, diagnostics located in the
  /// graph's text as a compiler prints them ("graph.mlir:3:8: error: ...",
  /// the source line and a caret; newlines included).
  std::string text;
  bool located = false;
};
using TuneCallback = std::function<void(const TuneMessage &)>;

/// One database entry a tuning wrote.
struct TunedKernel {
  /// The kernel's name, its family and tile (the `#fuse.tile<...>` text).
  std::string kernel, family, tile;
  /// The medians of the heuristic's configuration and of the one recorded.
  double heuristicMs = 0, tunedMs = 0;
};

struct TuneResult {
  TuneStatus status = TuneStatus::Ok;
  /// "" on success; else the errors as compile() gives them: located in the
  /// graph's text, or "<name>: error: ...".
  std::string error;
  /// The warnings (the database's own, each "warning: ..."; located ones
  /// as compiled), one per line.
  std::string warnings;
  /// The entries written, in kernel order.
  std::vector<TunedKernel> kernels;
  /// The database written.
  std::string database;
  /// Wall time of the call.
  double seconds = 0;

  bool ok() const { return status == TuneStatus::Ok; }
};

/// `fusec tune` as a function (docs/Tuning.md): forms the graph's kernels
/// and, for each kernel with candidate tiles, compiles the kernel alone
/// with each, checks it on random inputs against the reference, times it
/// on GPU `options.device` and records the fastest in the tuning database
/// (when it beats the heuristic's configuration by more than the noise).
/// `progress`, when given, receives every progress line, warning and error
/// as it comes, on the calling thread; `name` names the graph in messages.
/// The options and the graph are checked before a GPU is looked for.
///
/// May be called from several threads, but tunings on one GPU time each
/// other's noise, and two that write one database at once keep one's
/// entries (each rewrites the file atomically from what it read).
TuneResult tune(const std::string &mlir, const TuneOptions &options = {},
                const TuneCallback &progress = {},
                const std::string &name = "<graph>");

/// The cache directory `options` selects.
std::string cacheDirectory(const Options &options = {});
/// Forgets the in-memory cache (the disk cache stays).
void clearMemoryCache();
/// The release and commit of this build, as `fusec --version` prints them:
/// part of every cache key.
std::string version();

} // namespace jit
} // namespace fusec

#endif // FUSEC_JIT_H
