//===- TargetDescription.h - What tiling knows of the GPU -------*- C++ -*-===//
//
// The facts about a GPU architecture that code generation decides by: SM
// count, shared memory per block (default and opt-in maximum), tensor-core
// generation, and the PTX ISA version the backend targets. One table holds
// every architecture fusec accepts.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_TARGET_TARGETDESCRIPTION_H
#define FUSEC_TARGET_TARGETDESCRIPTION_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace fusec {

/// The tensor-core instructions an architecture offers.
enum class TensorCores {
  /// ldmatrix + mma.sync (m16n8k16 f16/bf16, m16n8k8 tf32), cp.async:
  /// sm_80 and newer.
  MmaSync,
  /// ... and wgmma, TMA and mbarrier transaction counts: sm_90a.
  Wgmma,
};

/// The gpu.func attribute that lists, as an array of indices, the parameters
/// that are TMA tensor maps the host passes by value (128 bytes); the PTX
/// backend makes them grid constants. A function attribute because the
/// lowering to NVVM keeps those and drops argument attributes.
constexpr llvm::StringLiteral kTensorMapArgsAttr = "fusec.tensor_map_args";

struct TargetDescription {
  /// "sm_90", "sm_90a", ...
  std::string chip;
  /// Compute capability times ten (90 for sm_90a).
  unsigned version = 0;
  /// Streaming multiprocessors: the architecture's flagship part unless the
  /// caller knows the device (`sm-count`, or `fusec run` on a GPU).
  int64_t smCount = 0;
  /// Shared memory a block gets without opting in, and the opt-in maximum
  /// (cuFuncSetAttribute), in bytes.
  int64_t sharedBytesPerBlock = 48 * 1024;
  int64_t sharedBytesPerBlockOptIn = 0;
  /// Shared memory and threads of one SM, for occupancy.
  int64_t sharedBytesPerSM = 0;
  int64_t maxThreadsPerSM = 0;
  int64_t registersPerSM = 64 * 1024;
  TensorCores tensorCores = TensorCores::MmaSync;
  /// The PTX ISA the backend emits for this chip ("+ptx80").
  std::string ptxFeatures;

  /// The description of `chip`, with `smCount` SMs when it is positive.
  /// Fails with a message naming the supported chips otherwise.
  static llvm::Expected<TargetDescription> get(llvm::StringRef chip,
                                               int64_t smCount = 0);
  /// The chips `get` accepts, for messages: "sm_80, sm_86, ...".
  static std::string supportedChips();
  /// The chip to compile for a device of compute capability major.minor:
  /// its arch-specific variant ("sm_90a") where that offers more tensor-core
  /// instructions than the portable one, else "sm_XY".
  static std::string chipForDevice(int major, int minor);
};

} // namespace fusec

#endif // FUSEC_TARGET_TARGETDESCRIPTION_H
