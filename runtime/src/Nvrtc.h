//===- Nvrtc.h - CUDA C artifacts compiled by NVRTC at load -----*- C++ -*-===//
//
// A CUDA C artifact (target.kind "cuda") is compiled to PTX when it is
// loaded, for the device it will run on. NVRTC is opened at run time, as the
// driver is, so the runtime builds and starts without the CUDA toolkit and
// says what is missing where there is none.
//
// Internal to the runtime and its unit tests.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_NVRTC_H
#define FUSEC_RUNTIME_NVRTC_H

#include "fusec/runtime/Status.h"

#include <set>
#include <string>
#include <vector>

namespace fusec {
namespace runtime {
namespace detail {

/// Compiles `source` (named `sourceName` in messages) for `arch`: a virtual
/// architecture ("compute_90a") gives PTX in `ptx` (when not null), a real
/// one ("sm_90a") runs ptxas too (fusec-nvrtc-check). `extraOptions` go
/// after the runtime's own. On a compile error the message holds NVRTC's
/// log and names the kernel the first error is in.
Status compileCuda(const std::string &source, const std::string &arch,
                   const std::vector<std::string> &extraOptions,
                   const std::string &sourceName, std::string *ptx);

/// compileCuda for the runtime: PTX for the virtual architecture `arch`.
inline Status compileCudaToPtx(const std::string &source,
                               const std::string &arch,
                               const std::string &sourceName,
                               std::string &ptx) {
  return compileCuda(source, arch, {}, sourceName, &ptx);
}

/// The names of the `__global__` functions `text` defines, outside comments.
std::set<std::string> cudaKernels(const std::string &text);

} // namespace detail
} // namespace runtime
} // namespace fusec

#endif // FUSEC_RUNTIME_NVRTC_H
