//===- fusec-nvrtc-check.cpp - Compile CUDA C artifacts with NVRTC --------===//
//
//   fusec-nvrtc-check kernel.cu... [--arch=sm_90a] [--ptx=out.ptx]
//                     [--option=NVRTC_OPTION ...]
//
// Compiles each file with NVRTC to a cubin (so NVRTC's ptxas checks the code
// too), through the runtime's own NVRTC loader and options (docs/Artifact.md:
// --fmad=false), and prints NVRTC's log when that fails. The architecture
// defaults to the artifact plan's target.arch. `--ptx` also writes the PTX
// NVRTC generates (for the virtual architecture, compute_XY), which
// `ptxas -arch=sm_XY` then checks on its own. Needs no GPU: NVRTC is opened
// at run time, as the runtime opens it; exit status 2 says it is missing.
//
//===----------------------------------------------------------------------===//

#include "Nvrtc.h"

#include "fusec/runtime/Plan.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace fusec::runtime;

int main(int argc, char **argv) {
  std::string arch, ptxPath;
  std::vector<std::string> files, extra;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--arch=", 0) == 0)
      arch = arg.substr(7);
    else if (arg.rfind("--ptx=", 0) == 0)
      ptxPath = arg.substr(6);
    else if (arg.rfind("--option=", 0) == 0)
      extra.push_back(arg.substr(9));
    else if (arg == "-h" || arg == "--help") {
      std::printf("usage: fusec-nvrtc-check kernel.cu... [--arch=sm_XY] "
                  "[--ptx=out.ptx] [--option=NVRTC_OPTION ...]\n");
      return 0;
    } else
      files.push_back(arg);
  }
  if (files.empty() || (!ptxPath.empty() && files.size() != 1)) {
    std::fprintf(stderr, "fusec-nvrtc-check: expected one or more files (one "
                         "with --ptx)\n");
    return 1;
  }
  int failures = 0;
  for (const std::string &file : files) {
    std::ifstream in(file);
    if (!in) {
      std::fprintf(stderr, "fusec-nvrtc-check: cannot read %s\n", file.c_str());
      ++failures;
      continue;
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string source = buffer.str();
    // Without --arch, the plan's target.arch (the runtime's plan parser
    // checks the whole artifact on the way).
    std::string target = arch;
    if (target.empty()) {
      Plan plan;
      if (Status status = parseArtifact(source, plan, file); !status) {
        std::fprintf(stderr, "fusec-nvrtc-check: %s (or name --arch=sm_XY)\n",
                     status.message().c_str());
        ++failures;
        continue;
      }
      target = plan.arch;
    }
    std::string ptx;
    Status status = detail::compileCuda(source, target, extra, file, nullptr);
    if (status && !ptxPath.empty()) {
      status = detail::compileCuda(source, "compute_" + target.substr(3),
                                   extra, file, &ptx);
      std::ofstream out(ptxPath);
      out << ptx;
    }
    if (status.code() == StatusCode::NoCompiler) {
      std::fprintf(stderr, "fusec-nvrtc-check: %s\n", status.message().c_str());
      return 2;
    }
    if (!status) {
      std::fprintf(stderr, "fusec-nvrtc-check: %s\n", status.message().c_str());
      ++failures;
    }
  }
  return failures ? 1 : 0;
}
