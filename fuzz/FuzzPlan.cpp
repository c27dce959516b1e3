//===- FuzzPlan.cpp - libFuzzer target: the artifact and plan loader ------===//
//
// Any bytes as an artifact: parseArtifact accepts them or returns an
// InvalidArtifact status with a message. An accepted plan's launch steps name
// only buffers that exist.
//
//===----------------------------------------------------------------------===//

#include "fusec/runtime/Plan.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace fusec::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Plan plan;
  std::string text(reinterpret_cast<const char *>(data), size);
  Status status = parseArtifact(text, plan, "fuzz.ptx");
  if (!status) {
    if (status.message().empty())
      abort();
    return 0;
  }
  for (const Step &step : plan.steps)
    for (int64_t arg : step.args)
      if (arg < 0 || static_cast<size_t>(arg) >= plan.buffers.size())
        abort();
  return 0;
}
