//===- fusec-compile-times.cpp - Cold compile and warm cache load times ----===//
//
//   fusec-compile-times graph.mlir... [--arch=sm_90] [--repeat=N]
//
// Per graph, through the JIT library (fusec/JIT.h): the cold compilation
// (cache off; the best of N), the kernels it made, and the warm loads from
// the disk cache (memory cache cleared first) and from the memory cache.
// One JSON object per graph on stdout. Runs on one thread: each
// compilation's MLIR context is single-threaded.
//
//===----------------------------------------------------------------------===//

#include "fusec/JIT.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace cl = llvm::cl;

static cl::list<std::string> graphs(cl::Positional, cl::OneOrMore,
                                    cl::desc("<graph.mlir>..."));
static cl::opt<std::string> arch("arch", cl::init("sm_90"),
                                 cl::desc("GPU architecture"));
static cl::opt<unsigned> repeat("repeat", cl::init(3),
                                cl::desc("timings per measurement (best)"));

/// Kernels in an artifact: launch steps of its plan ("kind":"launch").
static size_t kernelsOf(const std::string &artifact) {
  size_t n = 0;
  for (size_t at = artifact.find(".entry "); at != std::string::npos;
       at = artifact.find(".entry ", at + 1))
    ++n;
  return n;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "fusec compile and load times\n");
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("fusec-compile-times", dir)) {
    llvm::errs() << "fusec-compile-times: " << ec.message() << "\n";
    return 1;
  }
  fusec::jit::Options options;
  options.arch = arch;
  options.tuningDb = "none";
  options.cacheDir = std::string(dir);
  int status = 0;
  for (const std::string &graph : graphs) {
    auto best = [&](bool cache, bool clear, fusec::jit::Source expect,
                    fusec::jit::Result &last) {
      double ms = 1e30;
      for (unsigned i = 0; i < repeat; ++i) {
        if (clear)
          fusec::jit::clearMemoryCache();
        options.cache = cache;
        last = fusec::jit::compileFile(graph, options);
        if (!last.ok() || last.source != expect)
          return -1.0;
        ms = std::min(ms, last.milliseconds);
      }
      return ms;
    };
    fusec::jit::Result r;
    double cold = best(false, false, fusec::jit::Source::Compiled, r);
    if (cold < 0) {
      llvm::errs() << r.error;
      status = 1;
      continue;
    }
    size_t kernels = kernelsOf(r.artifact);
    // Fill the cache, then time the loads.
    options.cache = true;
    fusec::jit::clearMemoryCache();
    (void)fusec::jit::compileFile(graph, options);
    double disk = best(true, true, fusec::jit::Source::DiskCache, r);
    double memory = best(true, false, fusec::jit::Source::MemoryCache, r);
    llvm::outs() << llvm::json::Value(llvm::json::Object{
                        {"graph", graph},
                        {"arch", arch},
                        {"kernels", static_cast<int64_t>(kernels)},
                        {"cold_ms", cold},
                        {"cold_ms_per_kernel", kernels ? cold / kernels : 0},
                        {"disk_cache_ms", disk},
                        {"memory_cache_ms", memory}})
                 << "\n";
  }
  llvm::sys::fs::remove_directories(dir);
  return status;
}
