//===- Nvrtc.cpp - Loading NVRTC and compiling CUDA C artifacts -----------===//

#include "Nvrtc.h"

#include <dlfcn.h>

#include <cctype>
#include <cstdlib>
#include <memory>
#include <vector>

using namespace fusec::runtime;
using namespace fusec::runtime::detail;

namespace {

// nvrtc.h's types, by value (part of NVRTC's stable C ABI).
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram *;
constexpr nvrtcResult NVRTC_SUCCESS = 0;

struct NvrtcApi {
  const char *(*nvrtcGetErrorString)(nvrtcResult);
  nvrtcResult (*nvrtcVersion)(int *, int *);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram *, const char *, const char *,
                                    int, const char *const *,
                                    const char *const *);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram *);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t *);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char *);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t *);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char *);
};

struct LoadedNvrtc {
  NvrtcApi api{};
  Status status;
};

LoadedNvrtc loadOnce() {
  LoadedNvrtc loaded;
  // $FUSEC_NVRTC names the library; else the sonames of the CUDA 13 and 12
  // toolkits and the development link on the loader's path, then in
  // $CUDA_HOME, $CUDA_PATH and /usr/local/cuda.
  std::vector<std::string> candidates;
  if (const char *path = std::getenv("FUSEC_NVRTC"); path && *path)
    candidates.push_back(path);
  const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  for (const char *name : names)
    candidates.push_back(name);
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *dir = std::getenv(var); dir && *dir)
      for (const char *name : names)
        candidates.push_back(std::string(dir) + "/lib64/" + name);
  for (const char *name : names)
    candidates.push_back(std::string("/usr/local/cuda/lib64/") + name);
  void *library = nullptr;
  std::string reasons;
  for (const std::string &name : candidates) {
    // Kept for the life of the process, like the driver.
    library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library)
      break;
    const char *reason = dlerror();
    reasons += "\n  " + name + ": " + (reason ? reason : "not found");
  }
  if (!library) {
    loaded.status = Status::error(
        StatusCode::NoCompiler,
        "cannot load NVRTC, which CUDA C artifacts need:" + reasons +
            "\ninstall the CUDA toolkit's NVRTC (libnvrtc), put it on "
            "LD_LIBRARY_PATH or name it with FUSEC_NVRTC, or compile the "
            "graph to PTX instead (fusec --emit=ptx)");
    return loaded;
  }
#define FUSEC_NVRTC_SYMBOL(name)                                               \
  if (!(loaded.api.name = reinterpret_cast<decltype(loaded.api.name)>(        \
            dlsym(library, #name)))) {                                         \
    loaded.status = Status::error(StatusCode::NoCompiler,                      \
                                  "the NVRTC library found has no " #name      \
                                  ": install NVRTC from CUDA 12 or newer");    \
    return loaded;                                                             \
  }
  FUSEC_NVRTC_SYMBOL(nvrtcGetErrorString)
  FUSEC_NVRTC_SYMBOL(nvrtcVersion)
  FUSEC_NVRTC_SYMBOL(nvrtcCreateProgram)
  FUSEC_NVRTC_SYMBOL(nvrtcDestroyProgram)
  FUSEC_NVRTC_SYMBOL(nvrtcCompileProgram)
  FUSEC_NVRTC_SYMBOL(nvrtcGetProgramLogSize)
  FUSEC_NVRTC_SYMBOL(nvrtcGetProgramLog)
  FUSEC_NVRTC_SYMBOL(nvrtcGetPTXSize)
  FUSEC_NVRTC_SYMBOL(nvrtcGetPTX)
#undef FUSEC_NVRTC_SYMBOL
  return loaded;
}

/// `text` with each comment replaced by spaces, so that offsets and line
/// numbers stay those of the source.
std::string blankComments(const std::string &text) {
  std::string out = text;
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i] == '/' && out[i + 1] == '/') {
      for (; i < out.size() && out[i] != '\n'; ++i)
        out[i] = ' ';
    } else if (out[i] == '/' && out[i + 1] == '*') {
      size_t end = out.find("*/", i + 2);
      end = end == std::string::npos ? out.size() : end + 2;
      for (; i < end; ++i)
        if (out[i] != '\n')
          out[i] = ' ';
      --i;
    }
  }
  return out;
}

/// Each kernel of `text` with the line its definition starts on.
std::vector<std::pair<size_t, std::string>>
kernelLines(const std::string &text) {
  std::string code = blankComments(text);
  std::vector<std::pair<size_t, std::string>> kernels;
  const std::string keyword = "__global__";
  for (size_t at = code.find(keyword); at != std::string::npos;
       at = code.find(keyword, at + keyword.size())) {
    // The name is the identifier before the first '(' that does not open
    // the arguments of an attribute (__launch_bounds__(256)).
    size_t begin = 0, end = 0;
    for (size_t from = at;;) {
      size_t paren = code.find('(', from);
      if (paren == std::string::npos)
        break;
      end = paren;
      while (end > at &&
             std::isspace(static_cast<unsigned char>(code[end - 1])))
        --end;
      begin = end;
      while (begin > at &&
             (std::isalnum(static_cast<unsigned char>(code[begin - 1])) ||
              code[begin - 1] == '_'))
        --begin;
      std::string word = code.substr(begin, end - begin);
      if (word != "__launch_bounds__" && word != "__attribute__" &&
          word != "__maxnreg__" && word != "__cluster_dims__")
        break;
      int depth = 0;
      for (from = paren; from < code.size(); ++from) {
        depth += code[from] == '(';
        depth -= code[from] == ')';
        if (depth == 0)
          break;
      }
      begin = end = 0;
    }
    if (begin == end)
      continue;
    size_t line = 1;
    for (size_t i = 0; i < at; ++i)
      line += code[i] == '\n';
    kernels.emplace_back(line, code.substr(begin, end - begin));
  }
  return kernels;
}

/// The kernel holding the first error NVRTC's `log` reports
/// ("NAME(LINE): error ..."), or "".
std::string kernelOfFirstError(const std::string &log,
                               const std::string &programName,
                               const std::string &source) {
  size_t at = log.find(programName + "(");
  if (at == std::string::npos)
    return "";
  size_t line = std::strtoul(log.c_str() + at + programName.size() + 1,
                             nullptr, 10);
  std::string kernel;
  for (const auto &[start, name] : kernelLines(source))
    if (start <= line)
      kernel = name;
  return kernel;
}

} // namespace

std::set<std::string>
fusec::runtime::detail::cudaKernels(const std::string &text) {
  std::set<std::string> names;
  for (const auto &entry : kernelLines(text))
    names.insert(entry.second);
  return names;
}

Status fusec::runtime::detail::compileCuda(
    const std::string &source, const std::string &arch,
    const std::vector<std::string> &extraOptions,
    const std::string &sourceName, std::string *ptx) {
  // A function-local static is initialised once, thread-safely; NVRTC
  // itself may be called from several threads at once.
  static const LoadedNvrtc loaded = loadOnce();
  if (!loaded.status)
    return loaded.status;
  const NvrtcApi &api = loaded.api;
  auto fail = [&](nvrtcResult result, const char *call) {
    return Status::error(StatusCode::CompileError,
                         sourceName + ": " + call + " failed with " +
                             api.nvrtcGetErrorString(result));
  };

  const std::string programName = "fusec.cu";
  nvrtcProgram program = nullptr;
  nvrtcResult result = api.nvrtcCreateProgram(
      &program, source.c_str(), programName.c_str(), 0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS)
    return fail(result, "nvrtcCreateProgram");
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram *)> guard(
      &program, [](nvrtcProgram *p) { (void)loaded.api.nvrtcDestroyProgram(p); });

  // No implicit multiply-add contraction: the artifact writes its fused
  // multiply-adds out (fmaf), as the PTX backend's LLVM does, so that both
  // backends round alike.
  std::string archOption = "--gpu-architecture=" + arch;
  std::vector<const char *> options = {archOption.c_str(), "--std=c++17",
                                       "--fmad=false",
                                       "--device-as-default-execution-space"};
  for (const std::string &option : extraOptions)
    options.push_back(option.c_str());
  result = api.nvrtcCompileProgram(program, static_cast<int>(options.size()),
                                   options.data());
  size_t logSize = 0;
  std::string log;
  if (api.nvrtcGetProgramLogSize(program, &logSize) == NVRTC_SUCCESS &&
      logSize > 1) {
    log.resize(logSize);
    if (api.nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS)
      log.clear();
    while (!log.empty() &&
           (log.back() == '\0' || log.back() == '\n' || log.back() == '\r'))
      log.pop_back();
  }
  if (result != NVRTC_SUCCESS) {
    std::string kernel = kernelOfFirstError(log, programName, source);
    return Status::error(
        StatusCode::CompileError,
        sourceName + ": NVRTC cannot compile the CUDA C for " + arch +
            (kernel.empty() ? "" : " (first error in kernel '" + kernel + "')") +
            ": " + api.nvrtcGetErrorString(result) +
            (log.empty() ? "" : "\nNVRTC log:\n" + log) +
            "\nthis is a fusec bug: please report it with the artifact");
  }

  if (!ptx)
    return Status::success();
  size_t ptxSize = 0;
  if ((result = api.nvrtcGetPTXSize(program, &ptxSize)) != NVRTC_SUCCESS)
    return fail(result, "nvrtcGetPTXSize");
  ptx->assign(ptxSize, '\0');
  if ((result = api.nvrtcGetPTX(program, ptx->data())) != NVRTC_SUCCESS)
    return fail(result, "nvrtcGetPTX");
  // std::string keeps its own NUL after the text.
  while (!ptx->empty() && ptx->back() == '\0')
    ptx->pop_back();
  return Status::success();
}
