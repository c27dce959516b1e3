//===- FuzzBuilder.cpp - libFuzzer target: the C++ graph builder ----------===//
//
// Bytes as a program of GraphBuilder calls: inputs of shapes drawn from
// ordinary, boundary, zero and huge extents, then ops on earlier values.
// The builder names the first invalid op, or the graph compiles to PTX or
// fails with a located error; nothing crashes.
//
//===----------------------------------------------------------------------===//

#include "fusec/JIT.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace fusec::jit;

namespace {
/// Reads the fuzzer's bytes; zeros once they run out.
struct Reader {
  const uint8_t *data;
  size_t size, at = 0;
  uint8_t byte() { return at < size ? data[at++] : 0; }
  bool done() const { return at >= size; }
};

/// Extents worth trying: small ones, tile boundaries, zero and past 2^31.
int64_t extent(Reader &r) {
  static const int64_t kSpecial[] = {0,     1,     2,     3,         7,
                                     8,     15,    16,    17,        31,
                                     63,    64,    65,    127,       128,
                                     129,   255,   256,   4096,      65535,
                                     65536, 65537, 1LL << 31, 1LL << 40,
                                     (1LL << 62) + 1};
  uint8_t b = r.byte();
  if (b < 200)
    return 1 + b % 40;
  return kSpecial[b % (sizeof(kSpecial) / sizeof(kSpecial[0]))];
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Reader r{data, size};
  GraphBuilder g("fuzz");
  std::vector<Tensor> values;
  DType dtype = static_cast<DType>(r.byte() % 3);
  for (int step = 0; step < 12 && !r.done(); ++step) {
    uint8_t op = r.byte() % 16;
    auto pick = [&] {
      return values.empty() ? Tensor{} : values[r.byte() % values.size()];
    };
    if (op == 0 || values.empty()) {
      std::vector<int64_t> shape(1 + r.byte() % 4);
      for (int64_t &d : shape)
        d = extent(r);
      values.push_back(g.input(shape, dtype));
      continue;
    }
    Tensor a = pick(), b = pick();
    switch (op) {
    case 1: values.push_back(g.relu(a)); break;
    case 2: values.push_back(g.gelu(a)); break;
    case 3: values.push_back(g.add(a, b)); break;
    case 4: values.push_back(g.mul(a, b)); break;
    case 5: values.push_back(g.softmax(a)); break;
    case 6: values.push_back(g.layerNorm(a)); break;
    case 7: values.push_back(g.rmsNorm(a)); break;
    case 8: values.push_back(g.linear(a, b)); break;
    case 9: values.push_back(g.matmul(a, b)); break;
    case 10: {
      Conv2dOptions o;
      o.strides = {1 + r.byte() % 3, 1 + r.byte() % 3};
      o.padding = {r.byte() % 3, r.byte() % 3};
      o.groups = 1 + r.byte() % 2;
      values.push_back(g.conv2d(a, b, o));
      break;
    }
    case 11: values.push_back(g.attention(a, b, pick())); break;
    case 12:
      values.push_back(g.maxPool2d(a, {1 + r.byte() % 3, 1 + r.byte() % 3},
                                   {1 + r.byte() % 2, 1 + r.byte() % 2},
                                   {r.byte() % 2, r.byte() % 2}));
      break;
    case 13: {
      std::vector<int64_t> perm;
      for (int64_t i = static_cast<int64_t>(g.shape(a).size()) - 1; i >= 0;
           --i)
        perm.push_back(i);
      values.push_back(g.transpose(a, perm));
      break;
    }
    case 14: values.push_back(g.reshape(a, {extent(r), extent(r)})); break;
    default: values.push_back(g.sigmoid(a)); break;
    }
  }
  if (values.empty())
    return 0;
  g.output(values.back());
  Options options;
  options.cache = false;
  options.tuningDb = "none";
  Result result = compile(g, options);
  if (!g.error().empty() && result.ok())
    abort(); // an invalid graph must not compile
  if (result.ok() == result.artifact.empty())
    abort();
  return 0;
}
