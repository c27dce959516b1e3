//===- fusec-nvrtc-check.cpp - Compile CUDA C artifacts with NVRTC --------===//
//
//   fusec-nvrtc-check kernel.cu... [--arch=sm_90a] [--ptx=out.ptx]
//                     [--option=NVRTC_OPTION ...]
//
// Compiles each file with NVRTC to a cubin (so NVRTC's ptxas checks the code
// too), with the options the runtime must use at load time
// (docs/Artifact.md: --fmad=false), and prints NVRTC's log when that fails. The
// architecture defaults to the artifact plan's target.arch.
// `--ptx` also writes the PTX NVRTC generates (for the virtual architecture,
// compute_XY), which `ptxas -arch=sm_XY` then checks on its own. Needs no
// GPU: NVRTC is opened at run time, as the runtime opens it; exit status 2
// says it is missing.
//
//===----------------------------------------------------------------------===//

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// The part of nvrtc.h this tool calls; the ABI is stable across CUDA 11-13.
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram *;

struct Nvrtc {
  const char *(*getErrorString)(nvrtcResult);
  nvrtcResult (*createProgram)(nvrtcProgram *, const char *, const char *, int,
                               const char *const *, const char *const *);
  nvrtcResult (*destroyProgram)(nvrtcProgram *);
  nvrtcResult (*compileProgram)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*getProgramLogSize)(nvrtcProgram, size_t *);
  nvrtcResult (*getProgramLog)(nvrtcProgram, char *);
  nvrtcResult (*getPTXSize)(nvrtcProgram, size_t *);
  nvrtcResult (*getPTX)(nvrtcProgram, char *);

  /// Opens libnvrtc from $CUDA_HOME, /usr/local/cuda or the loader's path.
  bool open(std::string &error) {
    std::vector<std::string> candidates;
    for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
      if (const char *dir = std::getenv(var))
        candidates.push_back(std::string(dir) + "/lib64/libnvrtc.so");
    candidates.push_back("/usr/local/cuda/lib64/libnvrtc.so");
    for (const char *name : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"})
      candidates.push_back(name);
    void *lib = nullptr;
    for (const std::string &c : candidates)
      if ((lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)))
        break;
    if (!lib) {
      error = "cannot open libnvrtc.so (set CUDA_HOME to the CUDA toolkit)";
      return false;
    }
    bool ok = true;
    auto get = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::decay_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn) {
        error = std::string("libnvrtc.so lacks ") + name;
        ok = false;
      }
    };
    get(getErrorString, "nvrtcGetErrorString");
    get(createProgram, "nvrtcCreateProgram");
    get(destroyProgram, "nvrtcDestroyProgram");
    get(compileProgram, "nvrtcCompileProgram");
    get(getProgramLogSize, "nvrtcGetProgramLogSize");
    get(getProgramLog, "nvrtcGetProgramLog");
    get(getPTXSize, "nvrtcGetPTXSize");
    get(getPTX, "nvrtcGetPTX");
    return ok;
  }
};

/// target.arch of the artifact's plan line, or "".
std::string planArch(const std::string &source) {
  std::istringstream lines(source);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("// fusec-plan: ", 0) != 0)
      continue;
    size_t at = line.find("\"arch\":\"");
    if (at == std::string::npos)
      return "";
    at += 8;
    return line.substr(at, line.find('"', at) - at);
  }
  return "";
}

/// Compiles `source` for `arch` ("sm_90a": a cubin; "compute_90a": PTX),
/// returning false with NVRTC's log on failure.
bool compile(Nvrtc &nvrtc, const std::string &source, const std::string &name,
             const std::string &arch, const std::vector<std::string> &extra,
             std::string &log, std::string *ptx) {
  nvrtcProgram program;
  if (nvrtcResult r = nvrtc.createProgram(&program, source.c_str(),
                                          name.c_str(), 0, nullptr, nullptr)) {
    log = nvrtc.getErrorString(r);
    return false;
  }
  std::string archOption = "--gpu-architecture=" + arch;
  // CUDA's math functions then round each operation as libdevice does in
  // the PTX backend, which LLVM does not contract into FMAs.
  std::vector<const char *> options = {archOption.c_str(), "--fmad=false"};
  for (const std::string &option : extra)
    options.push_back(option.c_str());
  nvrtcResult result =
      nvrtc.compileProgram(program, options.size(), options.data());
  size_t size = 0;
  nvrtc.getProgramLogSize(program, &size);
  log.assign(size, '\0');
  if (size)
    nvrtc.getProgramLog(program, &log[0]);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  if (result) {
    if (log.empty())
      log = nvrtc.getErrorString(result);
  } else if (ptx) {
    nvrtc.getPTXSize(program, &size);
    ptx->assign(size, '\0');
    nvrtc.getPTX(program, &(*ptx)[0]);
    while (!ptx->empty() && ptx->back() == '\0')
      ptx->pop_back();
  }
  nvrtc.destroyProgram(&program);
  return result == 0;
}

} // namespace

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
  Nvrtc nvrtc;
  std::string error;
  if (!nvrtc.open(error)) {
    std::fprintf(stderr, "fusec-nvrtc-check: %s\n", error.c_str());
    return 2;
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
    std::string target = arch.empty() ? planArch(source) : arch;
    if (target.rfind("sm_", 0) != 0) {
      std::fprintf(stderr,
                   "fusec-nvrtc-check: %s: no --arch=sm_XY and no plan "
                   "target.arch\n",
                   file.c_str());
      ++failures;
      continue;
    }
    std::string log, ptx;
    bool ok = compile(nvrtc, source, file, target, extra, log, nullptr);
    if (ok && !ptxPath.empty()) {
      ok = compile(nvrtc, source, file, "compute_" + target.substr(3), extra,
                   log, &ptx);
      std::ofstream out(ptxPath);
      out << ptx;
    }
    if (!ok) {
      std::fprintf(stderr, "fusec-nvrtc-check: %s: NVRTC failed for %s:\n%s\n",
                   file.c_str(), target.c_str(), log.c_str());
      ++failures;
    }
  }
  return failures ? 1 : 0;
}
