//===- FuzzNpy.cpp - libFuzzer target: the .npy reader --------------------===//
//
// Any bytes: parseNpy accepts them or says why, and an accepted array's
// element count matches its shape.
//
//===----------------------------------------------------------------------===//

#include "fusec/Support/Npy.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fusec::NpyArray array;
  std::string error;
  std::string bytes(reinterpret_cast<const char *>(data), size);
  if (!fusec::parseNpy(bytes, array, error)) {
    if (error.empty())
      abort(); // a refusal says why
    return 0;
  }
  size_t count = 1;
  for (int64_t d : array.shape)
    count *= static_cast<size_t>(d);
  if (count != array.data.size())
    abort();
  return 0;
}
