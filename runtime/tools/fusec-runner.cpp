//===- fusec-runner.cpp - Run a fusec artifact on a GPU -------------------===//
//
//   fusec-runner artifact.ptx [--input=a.npy ...] [--seed=N] [--positive=I,J]
//                [--output-dir=DIR] [--repeat=N] [--warmup=N] [--device=N]
//                [--no-poison]
//
// Runs an artifact's plan once on .npy or seeded random inputs, reports the
// outputs (and any NaN/Inf in them), optionally saves inputs and results as
// .npy, and optionally times repeated runs. The GPU counterpart of `fusec
// run`: with the same seed (and --positive for batch-norm variances) it
// draws the same inputs, so the two runs' results can be compared.
//
// Everything that can be checked without a GPU (options, the artifact, the
// inputs) is checked before the driver is touched.
//
//===----------------------------------------------------------------------===//

#include "fusec/runtime/Runtime.h"
#include "fusec/Support/Float16.h"
#include "fusec/Support/Summary.h"
#include "fusec/Support/Npy.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

using namespace fusec;
using namespace fusec::runtime;
namespace fs = std::filesystem;

namespace {

const char *const kUsage =
    "usage: fusec-runner artifact.ptx [options]\n"
    "\n"
    "Runs a fusec artifact (PTX with an embedded launch plan) on a CUDA GPU.\n"
    "\n"
    "  --input=FILE.npy   one per graph input, in order (default: random)\n"
    "  --seed=N           seed of the random inputs (default 0)\n"
    "  --positive=I,J,... draw random input I from [0.5, 2) instead of\n"
    "                     [-1, 1): use it for batch-norm variances\n"
    "  --output-dir=DIR   write input<i>.npy and result<i>.npy to DIR\n"
    "  --repeat=N         time N runs with CUDA events (after the checked run)\n"
    "  --warmup=N         untimed runs before the timed ones (default 1)\n"
    "  --device=N         CUDA device ordinal (default 0)\n"
    "  --no-poison        do not fill outputs with NaN (0xFF bytes) first\n"
    "  --help             print this help\n";

[[noreturn]] void fail(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "fusec-runner: error: %s\n", message.c_str());
  std::exit(1);
}

void failIf(const Status &status) {
  if (!status)
    fail(status.message());
}

void warn(const std::string &message) {
  // Keep the warning after the stdout lines it is about, also in a pipe.
  std::fflush(stdout);
  std::fprintf(stderr, "fusec-runner: warning: %s\n", message.c_str());
}

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

struct Options {
  std::string artifact;
  std::vector<std::string> inputs;
  uint64_t seed = 0;
  std::set<size_t> positive;
  std::string outputDir;
  uint64_t repeat = 0;
  uint64_t warmup = 1;
  int device = 0;
  bool poison = true;
};

uint64_t parseCount(const std::string &option, const std::string &value,
                    uint64_t max = UINT64_MAX) {
  bool digits = !value.empty() &&
                std::all_of(value.begin(), value.end(),
                            [](char c) { return c >= '0' && c <= '9'; });
  errno = 0;
  unsigned long long n = digits ? std::strtoull(value.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE || n > max)
    fail(option + " expects a non-negative integer" +
         (max == UINT64_MAX ? "" : " up to " + std::to_string(max)) +
         ", got '" + value + "'");
  return n;
}

Options parseOptions(int argc, char **argv) {
  Options options;
  // Options that take a value accept "--name=value" and "--name value".
  const std::set<std::string> withValue = {
      "--input", "--seed",   "--positive", "--output-dir",
      "--repeat", "--warmup", "--device"};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (arg == "--no-poison") {
      options.poison = false;
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      if (!options.artifact.empty())
        fail("more than one artifact given ('" + options.artifact + "' and '" +
             arg + "'); run one artifact at a time");
      options.artifact = arg;
      continue;
    }
    std::string name = arg, value;
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    if (name.size() > 1 && name[1] != '-')
      name = "-" + name; // accept -input=... as LLVM tools do
    if (!withValue.count(name))
      fail("unknown option '" + arg + "'; see fusec-runner --help");
    if (eq == std::string::npos) {
      if (i + 1 >= argc)
        fail(name + " needs a value; see fusec-runner --help");
      value = argv[++i];
    }
    if (name == "--input") {
      options.inputs.push_back(value);
    } else if (name == "--seed") {
      options.seed = parseCount(name, value);
    } else if (name == "--positive") {
      size_t start = 0;
      while (true) {
        size_t comma = value.find(',', start);
        options.positive.insert(
            parseCount(name, value.substr(start, comma - start)));
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
    } else if (name == "--output-dir") {
      if (value.empty())
        fail("--output-dir needs a directory name");
      options.outputDir = value;
    } else if (name == "--repeat") {
      options.repeat = parseCount(name, value, 1000000);
    } else if (name == "--warmup") {
      options.warmup = parseCount(name, value, 1000000);
    } else if (name == "--device") {
      options.device = static_cast<int>(parseCount(name, value, 1023));
    }
  }
  if (options.artifact.empty())
    fail("no artifact given; usage: fusec-runner artifact.ptx [options] "
         "(see --help)");
  return options;
}

//===----------------------------------------------------------------------===//
// Host tensors
//===----------------------------------------------------------------------===//

/// A tensor on the host: values as double (already rounded to the buffer's
/// dtype) and the bytes the device sees.
struct HostTensor {
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  std::vector<double> values;
  std::vector<uint8_t> bytes;
};

FloatFormat formatOf(DType dtype) {
  return dtype == DType::F32   ? FloatFormat::F32
         : dtype == DType::F16 ? FloatFormat::F16
                               : FloatFormat::BF16;
}

/// Rounds `values` to `dtype` (to nearest, ties to even) and encodes them.
void encode(HostTensor &t) { encodeFloats(t.values, formatOf(t.dtype), t.bytes); }

/// Decodes t.bytes into t.values.
void decode(HostTensor &t) {
  FloatFormat format = formatOf(t.dtype);
  decodeFloats(t.bytes.data(), t.bytes.size() / byteWidth(format), format,
               t.values);
}


/// "tensor<1x56x56x64xf32>", as `fusec run` prints types.
std::string tensorType(const BufferDesc &desc) {
  std::string s = "tensor<";
  for (int64_t d : desc.shape)
    s += std::to_string(d) + "x";
  return s + dtypeName(desc.dtype) + ">";
}

/// Inputs from --input files, or seeded random values drawn as `fusec run`
/// draws them (one generator, arguments in order, uniform in [-1, 1) or
/// [0.5, 2) for --positive inputs).
std::vector<HostTensor> makeInputs(const Options &options, const Plan &plan) {
  size_t numInputs = plan.inputs.size();
  if (!options.inputs.empty() && options.inputs.size() != numInputs)
    fail(options.artifact + ": graph '" + plan.graph + "' takes " +
         std::to_string(numInputs) + " inputs but " +
         std::to_string(options.inputs.size()) +
         " --input files were given; give one per input, in order");
  for (size_t i : options.positive)
    if (i >= numInputs)
      fail("--positive=" + std::to_string(i) + ": graph '" + plan.graph +
           "' has " + std::to_string(numInputs) + " inputs (0.." +
           std::to_string(static_cast<int64_t>(numInputs) - 1) + ")");

  std::mt19937_64 rng(options.seed);
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < numInputs; ++i) {
    const BufferDesc &desc = plan.input(i);
    HostTensor t;
    t.shape = desc.shape;
    t.dtype = desc.dtype;
    if (options.inputs.empty()) {
      bool positive = options.positive.count(i) != 0;
      std::uniform_real_distribution<double> dist(positive ? 0.5 : -1.0,
                                                  positive ? 2.0 : 1.0);
      t.values.resize(static_cast<size_t>(desc.numel()));
      for (double &v : t.values)
        v = dist(rng);
    } else {
      const std::string &path = options.inputs[i];
      std::string contents;
      failIf(readFile(path, contents));
      NpyArray array;
      std::string error;
      if (!parseNpy(contents, array, error))
        fail(path + ": " + error);
      if (array.shape != desc.shape)
        fail(path + ": shape " + formatShape(array.shape) +
             " does not match input " + std::to_string(i) + " of graph '" +
             plan.graph + "', which is " + formatShape(desc.shape));
      t.values = std::move(array.data);
    }
    encode(t);
    inputs.push_back(std::move(t));
  }
  return inputs;
}

/// Prints "result0  tensor<...>  mean ..." as `fusec run` does; returns the
/// number of non-finite values.
int64_t printSummary(const std::string &name, const BufferDesc &desc,
                     const HostTensor &t) {
  TensorSummary summary = summarize(t.values);
  std::printf("%s\n", formatSummary(name, tensorType(desc), summary).c_str());
  return summary.nonFinite;
}

/// Writes every (name, tensor) to `dir`, all or nothing: each goes to a
/// temporary name first, and only once all are written are they renamed.
void writeTensors(const std::string &dir,
                  const std::vector<std::pair<std::string, const HostTensor *>>
                      &files) {
  std::vector<std::pair<fs::path, fs::path>> written;
  auto removeTemporaries = [&] {
    for (auto &[temporary, target] : written) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
    }
  };
  for (auto &[name, tensor] : files) {
    fs::path target = fs::path(dir) / name;
    fs::path temporary = fs::path(dir) / ("." + name + ".tmp" +
                                          std::to_string(::getpid()));
    NpyArray array{tensor->shape, tensor->values};
    std::string image =
        writeNpy(array, tensor->dtype == DType::F16 ? NpyDType::F16
                                                    : NpyDType::F32);
    std::ofstream out(temporary, std::ios::binary);
    if (out)
      written.emplace_back(temporary, target);
    if (!out || !out.write(image.data(), image.size()) || !out.flush()) {
      std::string reason = std::strerror(errno);
      removeTemporaries();
      fail("cannot write '" + target.string() + "': " + reason);
    }
  }
  for (auto &[temporary, target] : written) {
    std::error_code ec;
    fs::rename(temporary, target, ec);
    if (ec) {
      removeTemporaries();
      fail("cannot write '" + target.string() + "': " + ec.message());
    }
  }
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

/// Times `options.repeat` runs, each between two events, after
/// `options.warmup` untimed ones; prints the final "time_ms" line.
void timeRuns(const Options &options, Device &device, Module &module,
              const std::vector<BufferRef> &inputs,
              const std::vector<BufferRef> &outputs) {
  for (uint64_t i = 0; i < options.warmup; ++i)
    failIf(module.run(nullptr, inputs, outputs));
  failIf(device.synchronize());

  std::vector<Event> events(options.repeat + 1, nullptr);
  for (Event &event : events)
    failIf(device.createEvent(event));
  failIf(device.recordEvent(events[0]));
  for (uint64_t i = 0; i < options.repeat; ++i) {
    failIf(module.run(nullptr, inputs, outputs));
    failIf(device.recordEvent(events[i + 1]));
  }
  failIf(device.synchronize().withContext("timed runs"));
  std::vector<float> ms(options.repeat);
  for (uint64_t i = 0; i < options.repeat; ++i)
    failIf(device.elapsedMs(events[i], events[i + 1], ms[i]));
  for (Event event : events)
    failIf(device.destroyEvent(event));

  std::vector<float> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  double median = n % 2 ? sorted[n / 2]
                        : 0.5 * (double(sorted[n / 2 - 1]) + sorted[n / 2]);
  std::printf("time_ms median=%.4f min=%.4f runs=%llu\n", median, sorted[0],
              static_cast<unsigned long long>(n));
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseOptions(argc, argv);

  // Without a GPU: the artifact, the inputs, the output directory.
  std::string text;
  Status status = readFile(options.artifact, text);
  if (!status) {
    // "cannot open 'x': ..." -> "cannot open artifact 'x': ...".
    std::string message = status.message();
    if (message.rfind("cannot open '", 0) == 0)
      message.insert(std::strlen("cannot open "), "artifact ");
    fail(message);
  }
  Plan plan;
  failIf(parseArtifact(text, plan, options.artifact));
  std::vector<HostTensor> hostInputs = makeInputs(options, plan);
  if (!options.outputDir.empty()) {
    std::error_code ec;
    fs::create_directories(options.outputDir, ec);
    if (ec)
      fail("cannot create directory '" + options.outputDir +
           "': " + ec.message());
  }

  // With a GPU.
  std::shared_ptr<Device> device;
  failIf(Device::open(options.device, device));
  std::unique_ptr<Module> module;
  failIf(Module::load(device, text, module, options.artifact));

  std::vector<DeviceBuffer> buffers;
  std::vector<BufferRef> inputRefs, outputRefs;
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    DeviceBuffer buffer;
    failIf(DeviceBuffer::allocate(device, plan.input(i).bytes, buffer));
    failIf(device->copyToDevice(buffer.ptr(), hostInputs[i].bytes.data(),
                                hostInputs[i].bytes.size()));
    inputRefs.push_back(buffer.ref());
    buffers.push_back(std::move(buffer));
  }
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    DeviceBuffer buffer;
    failIf(DeviceBuffer::allocate(device, plan.output(i).bytes, buffer));
    // 0xFF bytes are NaN in f32, f16 and bf16: an element no kernel writes
    // shows up as non-finite.
    if (options.poison)
      failIf(device->fill(buffer.ptr(), 0xFF, buffer.bytes()));
    outputRefs.push_back(buffer.ref());
    buffers.push_back(std::move(buffer));
  }

  failIf(module->run(nullptr, inputRefs, outputRefs));
  failIf(device->synchronize().withContext("running " + options.artifact));

  std::printf("@%s on %s, %s\n", plan.graph.c_str(),
              device->describe().c_str(),
              options.inputs.empty()
                  ? ("random inputs, seed " + std::to_string(options.seed))
                        .c_str()
                  : "inputs from .npy files");
  std::vector<HostTensor> results;
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const BufferDesc &desc = plan.output(i);
    HostTensor t;
    t.shape = desc.shape;
    t.dtype = desc.dtype;
    t.bytes.resize(desc.bytes);
    failIf(device->copyToHost(t.bytes.data(), outputRefs[i].ptr, desc.bytes));
    decode(t);
    std::string name = "result" + std::to_string(i);
    int64_t nonFinite = printSummary(name, desc, t);
    if (nonFinite)
      warn(name + " has " + std::to_string(nonFinite) + " non-finite values (of " +
           std::to_string(t.values.size()) + ")" +
           (options.poison ? "; outputs are filled with NaN before the run, "
                             "so these may be elements no kernel wrote"
                           : ""));
    results.push_back(std::move(t));
  }
  std::fflush(stdout);

  if (!options.outputDir.empty()) {
    std::vector<std::pair<std::string, const HostTensor *>> files;
    for (size_t i = 0; i < hostInputs.size(); ++i)
      files.emplace_back("input" + std::to_string(i) + ".npy", &hostInputs[i]);
    for (size_t i = 0; i < results.size(); ++i)
      files.emplace_back("result" + std::to_string(i) + ".npy", &results[i]);
    writeTensors(options.outputDir, files);
    std::printf("wrote %zu .npy files to %s\n", files.size(),
                options.outputDir.c_str());
  }

  if (options.repeat)
    timeRuns(options, *device, *module, inputRefs, outputRefs);
  return 0;
}
