//===- FuzzPipeline.cpp - libFuzzer target: graph text to an artifact -----===//
//
// Any text as a graph, through the JIT library's compile(): parse, verify,
// the whole pipeline to PTX, or to CUDA C when the input starts with '#'
// (an MLIR comment would not, so the choice costs the text nothing). It
// either gives an artifact or a located error; it must not crash, hang or
// abort.
//
//===----------------------------------------------------------------------===//

#include "fusec/JIT.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  fusec::jit::Options options;
  options.cache = false;
  options.tuningDb = "none";
  if (!text.empty() && text[0] == '#') {
    options.backend = "cuda";
    text.erase(0, 1);
  }
  fusec::jit::Result result = fusec::jit::compile(text, options, "fuzz.mlir");
  // Either an artifact or an error that says something.
  if (result.ok() == result.artifact.empty())
    abort();
  return 0;
}
