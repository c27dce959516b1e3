//===- TargetDescription.cpp - What tiling knows of the GPU ---------------===//

#include "fusec/Target/TargetDescription.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"

using namespace fusec;

namespace {
struct Row {
  const char *chip;
  unsigned version;
  int64_t smCount, sharedOptIn, sharedPerSM, threadsPerSM;
  TensorCores tensorCores;
  const char *ptx;
};
} // namespace

// Per-block opt-in and per-SM shared memory and threads from the CUDA
// programming guide's table of compute capabilities; SM counts of the
// flagship part (A100, A40, Orin, L40, H100/H200 SXM, B200, RTX 5090,
// GB10). Each row's chip and PTX version are checked against the linked
// LLVM when a target is parsed (PTXTarget::parse).
static constexpr Row kTargets[] = {
    {"sm_80", 80, 108, 166912, 167936, 2048, TensorCores::MmaSync, "+ptx80"},
    {"sm_86", 86, 84, 101376, 102400, 1536, TensorCores::MmaSync, "+ptx80"},
    {"sm_87", 87, 16, 166912, 167936, 2048, TensorCores::MmaSync, "+ptx80"},
    {"sm_89", 89, 142, 101376, 102400, 1536, TensorCores::MmaSync, "+ptx80"},
    {"sm_90", 90, 132, 232448, 233472, 2048, TensorCores::MmaSync, "+ptx80"},
    {"sm_90a", 90, 132, 232448, 233472, 2048, TensorCores::Wgmma, "+ptx80"},
    {"sm_100", 100, 148, 232448, 233472, 2048, TensorCores::MmaSync, "+ptx86"},
    {"sm_100a", 100, 148, 232448, 233472, 2048, TensorCores::MmaSync,
     "+ptx86"},
    {"sm_120", 120, 170, 101376, 102400, 1536, TensorCores::MmaSync, "+ptx87"},
    {"sm_120a", 120, 170, 101376, 102400, 1536, TensorCores::MmaSync,
     "+ptx87"},
    {"sm_121", 121, 48, 101376, 102400, 1536, TensorCores::MmaSync, "+ptx88"},
    {"sm_121a", 121, 48, 101376, 102400, 1536, TensorCores::MmaSync,
     "+ptx88"},
};

std::string TargetDescription::supportedChips() {
  std::string list;
  for (const Row &row : kTargets) {
    if (!list.empty())
      list += ", ";
    list += row.chip;
  }
  return list;
}

llvm::Expected<TargetDescription> TargetDescription::get(llvm::StringRef chip,
                                                         int64_t smCount) {
  const Row *row = llvm::find_if(
      kTargets, [&](const Row &r) { return chip == r.chip; });
  if (row == std::end(kTargets))
    return llvm::createStringError(
        "--arch=" + chip.str() + " is not a supported GPU architecture; use " +
        supportedChips());
  TargetDescription target;
  target.chip = row->chip;
  target.version = row->version;
  target.smCount = smCount > 0 ? smCount : row->smCount;
  target.sharedBytesPerBlockOptIn = row->sharedOptIn;
  target.sharedBytesPerSM = row->sharedPerSM;
  target.maxThreadsPerSM = row->threadsPerSM;
  target.tensorCores = row->tensorCores;
  target.ptxFeatures = row->ptx;
  return target;
}

std::string TargetDescription::chipForDevice(int major, int minor) {
  std::string chip = "sm_" + std::to_string(major * 10 + minor);
  auto find = [](const std::string &name) {
    return llvm::find_if(kTargets,
                         [&](const Row &r) { return name == r.chip; });
  };
  const Row *portable = find(chip), *specific = find(chip + "a");
  if (portable != std::end(kTargets) && specific != std::end(kTargets) &&
      specific->tensorCores > portable->tensorCores)
    return chip + "a";
  return chip;
}
