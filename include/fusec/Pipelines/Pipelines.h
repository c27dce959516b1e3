//===- Pipelines.h - The one place that orders fusec's passes ---*- C++ -*-===//

#ifndef FUSEC_PIPELINES_PIPELINES_H
#define FUSEC_PIPELINES_PIPELINES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace fusec {

/// How far the pipeline runs; each stage includes the ones before it.
enum class Stage {
  Graph,   // verified input, simplified
  Kernels, // partitioned into fuse.kernel regions
  Tiled,   // gpu.funcs of tiled loops plus a launch plan over memrefs
  GPU,     // kernels lowered to the NVVM/LLVM dialects
  Binary,  // kernels serialised to PTX in a gpu.binary
};

struct PipelineOptions : mlir::PassPipelineOptions<PipelineOptions> {
  Option<bool> simplify{*this, "simplify",
                        llvm::cl::desc("Run fusec-simplify"),
                        llvm::cl::init(true)};
  Option<std::string> arch{*this, "arch",
                           llvm::cl::desc("GPU architecture, sm_80 or newer"),
                           llvm::cl::init("sm_90")};
  Option<int64_t> smCount{
      *this, "sm-count",
      llvm::cl::desc("SMs of the GPU (0: the architecture's flagship part)"),
      llvm::cl::init(0)};
  Option<std::string> fp32Math{
      *this, "fp32-math",
      llvm::cl::desc("f32 convolutions and matrix products: ieee (f32 FMAs "
                     "on CUDA cores) or tf32 (TF32 tensor cores, f32 "
                     "accumulation)"),
      llvm::cl::init("ieee")};
  Option<std::string> tuningDb{
      *this, "tuning-db",
      llvm::cl::desc("The autotuner's database, consulted for kernels "
                     "without a tile (empty or none: the heuristic alone)"),
      llvm::cl::init("")};
  Option<std::string> tuningGpu{
      *this, "tuning-gpu",
      llvm::cl::desc("The GPU whose tuning entries apply (empty: any GPU of "
                     "the chip)"),
      llvm::cl::init("")};
  Option<bool> fromKernels{
      *this, "from-kernels",
      llvm::cl::desc("The input is already partitioned into fuse.kernel "
                     "regions (fusec tune's kernels): no simplification or "
                     "kernel formation"),
      llvm::cl::init(false)};
  Option<bool> mmaPrefetch{
      *this, "mma-prefetch",
      llvm::cl::desc("Tensor-core GEMM: load the next k-step's fragments "
                     "before this one's mma.sync (a tuning knob)"),
      llvm::cl::init(true)};
  Option<bool> train{
      *this, "train",
      llvm::cl::desc("Differentiate the graph first (fusec-autodiff) and "
                     "compile its forward and backward functions, their "
                     "kernels named fwd_* and bwd_*"),
      llvm::cl::init(false)};
  ListOption<unsigned> wrt{
      *this, "wrt",
      llvm::cl::desc("With train: the arguments to differentiate (default: "
                     "every argument a gradient reaches)")};
  Option<bool> deterministic{
      *this, "deterministic",
      llvm::cl::desc("With train: gradients the same bit for bit run to run "
                     "(the attention backward adds dQ in a fixed order)"),
      llvm::cl::init(false)};
};

/// What an artifact carries: PTX, or CUDA C that NVRTC compiles at load.
enum class Backend { PTX, CUDA };

/// How compileArtifact differs from `fusec graph.mlir -o kernel.ptx`.
struct ArtifactOptions {
  Backend backend = Backend::PTX;
  /// Kernel name -> `#fuse.tile<...>` text, written onto the kernels formed
  /// from the graph before they are tiled (a tile in the graph, or the
  /// tuning database's, loses to it).
  std::vector<std::pair<std::string, std::string>> tiles;
  /// Prepares each pass manager before it runs (fusec adds its
  /// command-line instrumentation); may fail.
  std::function<mlir::LogicalResult(mlir::PassManager &)> configure;
};

/// How fusec-tile-kernels configured one kernel of an artifact: what its
/// "// fusec-kernels:" line says, for the autotuner and other callers that
/// must not parse the text.
struct KernelRecord {
  /// The kernel's name ("k0_conv2d").
  std::string kernel;
  /// Its family (docs/Tiling.md: "gemm_wgmma", "attention_mma_sync", ...).
  std::string family;
  /// Where the configuration came from: "heuristic", "tile attribute",
  /// "tuning database (GPU)".
  std::string source;
  /// The kernel's signature in the tuning database.
  std::string signature;
  /// The tile (a #fuse.tile in the module's context); null for a family
  /// without one.
  mlir::Attribute tile;
};

/// An artifact and the configuration of each of its kernels, in launch
/// order.
struct CompiledArtifact {
  std::string text;
  std::vector<KernelRecord> kernels;
};

/// Lowers a graph module holding one function (keepOnlyEntry) to an
/// artifact (docs/Artifact.md) for `options.arch`. With `options.train`, the
/// artifact holds the forward and the backward plan of the function's
/// fusec-autodiff pair (docs/Training.md). Errors are emitted as
/// diagnostics on the module's context.
mlir::FailureOr<CompiledArtifact>
compileArtifact(mlir::ModuleOp module, const PipelineOptions &options,
                const ArtifactOptions &how = {});

/// Adds the passes that take a graph module to `stage`.
void buildPipeline(mlir::OpPassManager &pm, Stage stage,
                   const PipelineOptions &options);

/// Registers `fusec-pipeline-kernels`, `fusec-pipeline-tiled` and
/// `fusec-pipeline-ptx` with fusec-opt.
void registerPipelines();

/// The graph function of `module` to compile or run: the one named `entry`,
/// else the only function with a body, else @main; declarations are never
/// graphs. Every front end (fusec, the JIT and its C and Python APIs)
/// selects with it. Null when there is none, with `problem` saying why
/// ("no function @x", "@x is a declaration, not a graph", "no function: a
/// graph is a func.func of fuse ops", "3 functions and none is @main; " +
/// `choose`, the caller's words for its own option).
mlir::func::FuncOp selectEntry(mlir::ModuleOp module, llvm::StringRef entry,
                               llvm::StringRef choose, std::string &problem);

/// Erases every function of `module` but `entry`: code generation works on
/// one graph.
void keepOnlyEntry(mlir::ModuleOp module, mlir::func::FuncOp entry);

} // namespace fusec

#endif // FUSEC_PIPELINES_PIPELINES_H
