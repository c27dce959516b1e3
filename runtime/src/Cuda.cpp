//===- Cuda.cpp - Loading libcuda.so.1 and reporting its errors -----------===//
//
// dlopen()s the NVIDIA driver once per process and fills the DriverApi table
// from CudaSymbols.def; turns CUresult codes into messages that name the call
// that failed and say what to do.
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h"

#include <dlfcn.h>

#include <mutex>

using namespace fusec::runtime;
using namespace fusec::runtime::detail;

namespace {

constexpr const char *kDriverLibrary = "libcuda.so.1";

struct LoadedDriver {
  DriverApi api;
  Status status;
};

/// Resolves every entry point of CudaSymbols.def from `library`.
Status resolveSymbols(void *library, DriverApi &api) {
#define FUSEC_CUDA_SYMBOL(name, symbol, params)                                \
  {                                                                            \
    void *address = dlsym(library, symbol);                                    \
    if (!address)                                                              \
      return Status::error(                                                    \
          StatusCode::NoDriver,                                                \
          std::string(kDriverLibrary) + " has no " + symbol +                  \
              ": the NVIDIA driver is too old for the fusec runtime; "         \
              "install a driver for CUDA 12 or newer");                        \
    api.name = reinterpret_cast<decltype(api.name)>(address);                  \
  }
#include "CudaSymbols.def"
  return Status::success();
}

LoadedDriver loadOnce() {
  LoadedDriver loaded;
  // RTLD_LOCAL: cu* symbols stay out of the global namespace, so a host
  // program that links libcuda itself is not affected.
  void *library = dlopen(kDriverLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *reason = dlerror();
    loaded.status = Status::error(
        StatusCode::NoDriver,
        std::string("cannot load ") + kDriverLibrary + " (" +
            (reason ? reason : "unknown reason") +
            "): no NVIDIA driver on this machine; install the NVIDIA driver "
            "or run on a machine with an NVIDIA GPU");
    return loaded;
  }
  // The library stays loaded for the life of the process: entry points are
  // used until exit, and unloading a driver is never safe.
  loaded.status = resolveSymbols(library, loaded.api);
  if (!loaded.status)
    return loaded;

  CUresult result = loaded.api.cuInit(0);
  if (result == CUDA_ERROR_NO_DEVICE) {
    loaded.status = Status::error(
        StatusCode::NoDevice,
        "no CUDA device found: the NVIDIA driver is installed but sees no "
        "GPU; check nvidia-smi and CUDA_VISIBLE_DEVICES");
    return loaded;
  }
  if (result != CUDA_SUCCESS)
    loaded.status = driverError(loaded.api, result, "cuInit",
                                "cannot initialise the NVIDIA driver (check that "
                                "nvidia-smi works)");
  return loaded;
}

/// What to do about `result`, or "" where the code alone says it.
const char *hintFor(CUresult result) {
  switch (result) {
  case CUDA_ERROR_OUT_OF_MEMORY:
    return "free device memory (other processes may hold it: see "
           "nvidia-smi) or run a smaller graph";
  case CUDA_ERROR_STUB_LIBRARY:
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    return "the libcuda.so.1 found is a stub or does not match the kernel "
           "driver: install a matching NVIDIA driver and check "
           "LD_LIBRARY_PATH";
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_INVALID_DEVICE:
  case CUDA_ERROR_DEVICE_UNAVAILABLE:
    return "check nvidia-smi and CUDA_VISIBLE_DEVICES, and that no other "
           "process holds the device exclusively";
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
    return "the artifact has no code this GPU can run: recompile it for "
           "the device's architecture";
  case CUDA_ERROR_INVALID_PTX:
    return "the driver's PTX compiler rejected the artifact (see the JIT "
           "log); check it with 'ptxas -arch=<arch>' and report it as a "
           "fusec bug";
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    return "the PTX .version is newer than this driver understands: "
           "update the NVIDIA driver or compile for an older PTX version";
  case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    return "the driver's PTX JIT compiler (libnvidia-ptxjitcompiler) is "
           "missing: reinstall the NVIDIA driver";
  case CUDA_ERROR_NOT_FOUND:
    return "the module has no such symbol: check that the PTX defines it";
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_LAUNCH_FAILED:
    return "a kernel faulted and the CUDA context is no longer usable: "
           "restart the process, check that every buffer has the size the "
           "plan needs, and run under compute-sanitizer to find the access";
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    return "the kernel needs more registers or shared memory than its "
           "block size allows on this device: recompile with smaller tiles "
           "or blocks";
  case CUDA_ERROR_LAUNCH_TIMEOUT:
    return "a kernel ran past the display watchdog: run on a GPU without a "
           "display attached";
  case CUDA_ERROR_INVALID_VALUE:
    return "an argument of the call is outside what the device allows "
           "(grid, block or shared memory size, or a pointer)";
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
  case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
  case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
    return "a CUDA graph capture is under way and this call is not allowed "
           "in it (or the capture failed before); run on the capturing "
           "stream, not the legacy default stream, or outside the capture";
  default:
    return "";
  }
}

} // namespace

Status fusec::runtime::detail::loadDriverApi(const DriverApi *&api) {
  // A function-local static is initialised once, thread-safely.
  static const LoadedDriver loaded = loadOnce();
  api = loaded.status ? &loaded.api : nullptr;
  return loaded.status;
}

Status fusec::runtime::detail::driverError(const DriverApi &api,
                                           CUresult result, const char *call,
                                           const std::string &doing) {
  const char *name = nullptr;
  const char *description = nullptr;
  if (!api.cuGetErrorName || api.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (!api.cuGetErrorString ||
      api.cuGetErrorString(result, &description) != CUDA_SUCCESS)
    description = nullptr;

  std::string message = doing + ": " + call + " failed with ";
  message += name ? name : "CUDA error " + std::to_string(result);
  if (description)
    message += std::string(" (") + description + ")";
  const char *hint = hintFor(result);
  if (*hint)
    message += std::string("; ") + hint;

  StatusCode code = StatusCode::DriverError;
  if (result == CUDA_ERROR_NO_DEVICE || result == CUDA_ERROR_INVALID_DEVICE)
    code = StatusCode::NoDevice;
  return Status::error(code, message);
}
