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

#include <string>

namespace fusec {
namespace jit {

struct Options {
  /// The GPU architecture: sm_80, sm_86, sm_89, sm_90, sm_90a (Hopper's
  /// wgmma/TMA kernels), sm_100, sm_100a.
  std::string arch = "sm_90";
  /// "ieee" (f32 on CUDA cores) or "tf32" (f32 products on tensor cores).
  std::string fp32Math = "ieee";
  /// The autotuner's database: "" for $FUSEC_TUNING_DB or the per-user
  /// default, "none" for the heuristics alone, or a path.
  std::string tuningDb;
  /// The graph function to compile: "" for the only one (or @main).
  std::string entry;
  /// Use the kernel cache (memory, then disk).
  bool cache = true;
  /// The cache directory: "" for $FUSEC_CACHE_DIR, else
  /// $XDG_CACHE_HOME/fusec/kernels or ~/.cache/fusec/kernels.
  std::string cacheDir;
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
  /// Warnings, such as a corrupt cache entry that was rebuilt.
  std::string warnings;

  bool ok() const { return error.empty(); }
};

/// Compiles the MLIR text of a graph; `name` names it in messages.
Result compile(const std::string &mlir, const Options &options = {},
               const std::string &name = "<graph>");
/// Compiles the graph in the file at `path`.
Result compileFile(const std::string &path, const Options &options = {});

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
