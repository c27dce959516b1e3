//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// The runtime reaches the NVIDIA driver through a table of function pointers
// filled from libcuda.so.1 with dlopen/dlsym (as IREE, PyTorch and cuDNN do),
// so that it builds without the CUDA toolkit and its binaries start, and say
// what is missing, on machines without a driver. The few CUDA types and
// constants it needs are declared here with the values of cuda.h; they are
// part of the driver's stable ABI.
//
// Internal to the runtime, and to its unit tests, which fill a DriverApi
// with fakes to check the launch path without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_CUDADRIVER_H
#define FUSEC_RUNTIME_CUDADRIVER_H

#include "fusec/runtime/Status.h"

#include <cstddef>
#include <string>

namespace fusec {
namespace runtime {
namespace detail {

//===----------------------------------------------------------------------===//
// CUDA types and constants (values from cuda.h)
//===----------------------------------------------------------------------===//

using CUresult = int;
using CUdevice = int;
/// 64-bit on every platform the runtime supports (cuda.h: CUdeviceptr_v2).
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
// Enums in cuda.h; int-sized in the ABI.
using CUdevice_attribute = int;
using CUfunction_attribute = int;
using CUjit_option = int;
using CUstreamCaptureStatus = int;
using CUstreamCaptureMode = int;

// Tensor maps (cuTensorMapEncodeTiled).
using cuuint32_t = unsigned int;
using cuuint64_t = unsigned long long;
using CUtensorMapDataType = int;
using CUtensorMapInterleave = int;
using CUtensorMapSwizzle = int;
using CUtensorMapL2promotion = int;
using CUtensorMapFloatOOBfill = int;
/// cuda.h's CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct alignas(64) CUtensorMap {
  cuuint64_t opaque[16];
};
enum : CUtensorMapDataType {
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
};
constexpr CUtensorMapInterleave CU_TENSOR_MAP_INTERLEAVE_NONE = 0;
/// NONE, 32B, 64B, 128B are 0..3.
constexpr CUtensorMapSwizzle CU_TENSOR_MAP_SWIZZLE_NONE = 0;
constexpr CUtensorMapL2promotion CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2;
/// Elements outside the tensor read as zero.
constexpr CUtensorMapFloatOOBfill CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0;

enum : CUresult {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_TIMEOUT = 702,
  CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
  CUDA_ERROR_MISALIGNED_ADDRESS = 716,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
  CUDA_ERROR_STREAM_CAPTURE_ISOLATION = 905,
  CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906,
};

enum : CUdevice_attribute {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

enum : CUfunction_attribute {
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

enum : CUjit_option {
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

/// cuEventCreate flags.
constexpr unsigned int CU_EVENT_DEFAULT = 0;
constexpr unsigned int CU_EVENT_DISABLE_TIMING = 2;

enum : CUstreamCaptureStatus {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2,
};
enum : CUstreamCaptureMode {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2,
};

/// Dynamic shared memory a kernel may use without opting in.
constexpr unsigned int kDefaultMaxDynamicSharedBytes = 48 * 1024;

//===----------------------------------------------------------------------===//
// The entry point table
//===----------------------------------------------------------------------===//

/// Every cu* function the runtime calls (CudaSymbols.def), as pointers.
struct DriverApi {
#define FUSEC_CUDA_SYMBOL(name, symbol, params) CUresult(*name) params = nullptr;
#include "CudaSymbols.def"
};

/// Loads libcuda.so.1, resolves every symbol and calls cuInit, once per
/// process; later calls return the same table or the same error. Fails with
/// StatusCode::NoDriver ("cannot load libcuda.so.1 (...): no NVIDIA driver on
/// this machine") or StatusCode::NoDevice ("no CUDA device found").
Status loadDriverApi(const DriverApi *&api);

/// The failure of `call` (a cu* name) with `result`, as a Status whose
/// message reads "<doing>: <call> failed with CUDA_ERROR_X (description);
/// <what to do>".
Status driverError(const DriverApi &api, CUresult result, const char *call,
                   const std::string &doing);

/// Ok when `result` is CUDA_SUCCESS, else driverError(...).
inline Status check(const DriverApi &api, CUresult result, const char *call,
                    const std::string &doing) {
  if (result == CUDA_SUCCESS)
    return Status::success();
  return driverError(api, result, call, doing);
}

} // namespace detail
} // namespace runtime
} // namespace fusec

/// Calls api.name(args...) and returns a driver error naming the call and
/// `doing` (a std::string expression, evaluated only on failure) if it fails.
#define FUSEC_CU_CHECK(api, name, args, doing)                                 \
  do {                                                                         \
    ::fusec::runtime::detail::CUresult fusecResult_ = (api).name args;         \
    if (fusecResult_ != ::fusec::runtime::detail::CUDA_SUCCESS)                \
      return ::fusec::runtime::detail::driverError((api), fusecResult_, #name, \
                                                   (doing));                   \
  } while (false)

#endif // FUSEC_RUNTIME_CUDADRIVER_H
