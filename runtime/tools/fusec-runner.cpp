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
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

/// .npy files being written (temporary name, final name): renamed only
/// once every one is complete, removed if the runner fails first.
std::vector<std::pair<fs::path, fs::path>> pendingFiles;

void removePendingFiles() {
  for (auto &[temporary, target] : pendingFiles) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
  }
  pendingFiles.clear();
}

[[noreturn]] void fail(const std::string &message) {
  removePendingFiles();
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
// Tensors, a piece at a time
//===----------------------------------------------------------------------===//

/// Elements converted per piece (32 MiB as doubles): a tensor of any size
/// costs the host a piece, not its size again as doubles (a 5.6 GB input
/// used to take 24 GB).
constexpr uint64_t kPieceElements = uint64_t(1) << 22;

FloatFormat formatOf(DType dtype) {
  return dtype == DType::F32   ? FloatFormat::F32
         : dtype == DType::F16 ? FloatFormat::F16
                               : FloatFormat::BF16;
}

/// "tensor<1x56x56x64xf32>", as `fusec run` prints types.
std::string tensorType(const BufferDesc &desc) {
  std::string s = "tensor<";
  for (int64_t d : desc.shape)
    s += std::to_string(d) + "x";
  return s + dtypeName(desc.dtype) + ">";
}

/// A regular file mapped read-only (a FIFO or a device such as /dev/zero
/// is refused: it would be read without bound).
class MappedFile {
public:
  MappedFile() = default;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile() {
    if (data_)
      ::munmap(data_, size_);
  }

  void open(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
      fail("cannot open '" + path + "': " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      fail("cannot read '" + path + "': not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_) {
      void *p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        std::string reason = std::strerror(errno);
        ::close(fd);
        fail("cannot read '" + path + "': " + reason);
      }
      data_ = static_cast<char *>(p);
      ::madvise(data_, size_, MADV_SEQUENTIAL);
    }
    ::close(fd);
  }
  const char *data() const { return data_ ? data_ : ""; }
  size_t size() const { return size_; }

private:
  char *data_ = nullptr;
  size_t size_ = 0;
};

/// Where an input's values come from: a .npy file, or the seeded generator.
struct InputSource {
  std::string path;
  std::unique_ptr<MappedFile> file;
  NpyHeader header;
  bool positive = false;
};

/// Checks the --input files against the plan (before the GPU is touched).
std::vector<InputSource> inputSources(const Options &options,
                                      const Plan &plan) {
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
  std::vector<InputSource> sources(numInputs);
  for (size_t i = 0; i < numInputs; ++i) {
    InputSource &source = sources[i];
    source.positive = options.positive.count(i) != 0;
    if (options.inputs.empty())
      continue;
    source.path = options.inputs[i];
    source.file = std::make_unique<MappedFile>();
    source.file->open(source.path);
    std::string error;
    if (!parseNpyHeader(source.file->data(), source.file->size(), source.header,
                        error))
      fail(source.path + ": " + error);
    const BufferDesc &desc = plan.input(i);
    if (source.header.shape != desc.shape)
      fail(source.path + ": shape " + formatShape(source.header.shape) +
           " does not match input " + std::to_string(i) + " of graph '" +
           plan.graph + "', which is " + formatShape(desc.shape));
  }
  return sources;
}

/// A .npy file written a piece at a time under a temporary name, renamed by
/// commitPendingFiles(): float16 for f16 tensors, else float32 (every bf16
/// value is exact in float32).
class NpyFileWriter {
public:
  NpyFileWriter(const std::string &dir, const std::string &name,
                const BufferDesc &desc)
      : dtype(desc.dtype == DType::F16 ? NpyDType::F16 : NpyDType::F32) {
    target = fs::path(dir) / name;
    fs::path temporary =
        fs::path(dir) / ("." + name + ".tmp" + std::to_string(::getpid()));
    out.open(temporary, std::ios::binary);
    if (!out)
      fail("cannot write '" + target.string() + "': " + std::strerror(errno));
    pendingFiles.emplace_back(temporary, target);
    write(npyHeader(desc.shape, dtype));
  }

  /// Appends values already rounded to the tensor's dtype.
  void append(const std::vector<double> &values) {
    piece.clear();
    for (double v : values) {
      if (dtype == NpyDType::F16) {
        uint16_t bits = doubleToHalfBits(v);
        piece.append(reinterpret_cast<const char *>(&bits), 2);
      } else {
        float f = static_cast<float>(v);
        piece.append(reinterpret_cast<const char *>(&f), 4);
      }
    }
    write(piece);
  }

  void close() {
    if (!out.flush())
      fail("cannot write '" + target.string() + "': " + std::strerror(errno));
    out.close();
  }

private:
  void write(const std::string &bytes) {
    if (!out.write(bytes.data(), bytes.size()))
      fail("cannot write '" + target.string() + "': " + std::strerror(errno));
  }

  NpyDType dtype;
  fs::path target;
  std::ofstream out;
  std::string piece;
};

/// Renames every finished .npy file to its name.
void commitPendingFiles() {
  for (auto &[temporary, target] : pendingFiles) {
    std::error_code ec;
    fs::rename(temporary, target, ec);
    if (ec)
      fail("cannot write '" + target.string() + "': " + ec.message());
  }
  pendingFiles.clear();
}

/// Fills input `i`'s device buffer a piece at a time: values from its file,
/// or drawn as `fusec run` draws them (one generator, arguments in order,
/// uniform in [-1, 1) or [0.5, 2) for --positive inputs), rounded to the
/// buffer's dtype; also written to `writer` when there is one.
/// Says on stderr how long a tensor of 1 GiB or more took (minutes for the
/// largest: drawing and rounding cost about 20 ns an element), so that a
/// long run is not a silent one.
class LargeTensorClock {
public:
  LargeTensorClock(const std::string &what, const BufferDesc &desc)
      : what(what + " (" + desc.typeString() + ", " +
             std::to_string(desc.bytes) + " bytes)"),
        large(desc.bytes >= (uint64_t(1) << 30)),
        start(std::chrono::steady_clock::now()) {}
  void done(const char *verb) {
    if (!large)
      return;
    std::chrono::duration<double> s = std::chrono::steady_clock::now() - start;
    std::fflush(stdout);
    std::fprintf(stderr, "fusec-runner: %s %s in %.1f s\n", what.c_str(), verb,
                 s.count());
  }

private:
  std::string what;
  bool large;
  std::chrono::steady_clock::time_point start;
};

void uploadInput(Device &device, const BufferDesc &desc,
                 const InputSource &source, std::mt19937_64 &rng, DevicePtr ptr,
                 NpyFileWriter *writer) {
  LargeTensorClock clock("input " + std::to_string(desc.index), desc);
  FloatFormat format = formatOf(desc.dtype);
  std::uniform_real_distribution<double> dist(source.positive ? 0.5 : -1.0,
                                              source.positive ? 2.0 : 1.0);
  std::vector<double> values;
  std::vector<uint8_t> bytes;
  const uint64_t count = static_cast<uint64_t>(desc.numel());
  for (uint64_t first = 0; first < count; first += kPieceElements) {
    uint64_t n = std::min(kPieceElements, count - first);
    values.resize(n);
    if (source.file)
      readNpyValues(source.file->data(), source.header, first, n,
                    values.data());
    else
      for (double &v : values)
        v = dist(rng);
    encodeFloats(values, format, bytes);
    failIf(device.copyToDevice(ptr + first * byteWidth(format), bytes.data(),
                               bytes.size()));
    if (writer)
      writer->append(values);
  }
  clock.done(source.file ? "read and copied to the device"
                         : "drawn and copied to the device");
}

/// Reads output `desc` back a piece at a time: prints "result0
/// tensor<...> mean ..." as `fusec run` does, writes it to `writer` when
/// there is one; returns the number of non-finite values.
int64_t downloadOutput(Device &device, const std::string &name,
                       const BufferDesc &desc, DevicePtr ptr,
                       NpyFileWriter *writer) {
  LargeTensorClock clock(name, desc);
  FloatFormat format = formatOf(desc.dtype);
  size_t width = byteWidth(format);
  SummaryAccumulator summary;
  std::vector<uint8_t> bytes;
  std::vector<double> values;
  const uint64_t count = static_cast<uint64_t>(desc.numel());
  for (uint64_t first = 0; first < count; first += kPieceElements) {
    uint64_t n = std::min(kPieceElements, count - first);
    bytes.resize(n * width);
    failIf(device.copyToHost(bytes.data(), ptr + first * width, bytes.size()));
    decodeFloats(bytes.data(), n, format, values);
    summary.add(values.data(), values.size());
    if (writer)
      writer->append(values);
  }
  clock.done("copied back and summarised");
  TensorSummary result = summary.result();
  std::printf("%s\n", formatSummary(name, tensorType(desc), result).c_str());
  return result.nonFinite;
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
  std::vector<InputSource> sources = inputSources(options, plan);
  const bool save = !options.outputDir.empty();
  if (save) {
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
  std::mt19937_64 rng(options.seed);
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    DeviceBuffer buffer;
    failIf(DeviceBuffer::allocate(device, plan.input(i).bytes, buffer));
    std::unique_ptr<NpyFileWriter> writer;
    if (save)
      writer = std::make_unique<NpyFileWriter>(
          options.outputDir, "input" + std::to_string(i) + ".npy",
          plan.input(i));
    uploadInput(*device, plan.input(i), sources[i], rng, buffer.ptr(),
                writer.get());
    if (writer)
      writer->close();
    sources[i].file.reset(); // unmapped once on the device
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

  std::printf(
      "@%s on %s, %s\n", plan.graph.c_str(), device->describe().c_str(),
      options.inputs.empty()
          ? ("random inputs, seed " + std::to_string(options.seed)).c_str()
          : "inputs from .npy files");
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const BufferDesc &desc = plan.output(i);
    std::string name = "result" + std::to_string(i);
    std::unique_ptr<NpyFileWriter> writer;
    if (save)
      writer = std::make_unique<NpyFileWriter>(options.outputDir, name + ".npy",
                                               desc);
    int64_t nonFinite =
        downloadOutput(*device, name, desc, outputRefs[i].ptr, writer.get());
    if (writer)
      writer->close();
    if (nonFinite)
      warn(name + " has " + std::to_string(nonFinite) +
           " non-finite values (of " + std::to_string(desc.numel()) + ")" +
           (options.poison ? "; outputs are filled with NaN before the run, "
                             "so these may be elements no kernel wrote"
                           : ""));
  }
  std::fflush(stdout);

  if (save) {
    size_t files = pendingFiles.size();
    commitPendingFiles();
    std::printf("wrote %zu .npy files to %s\n", files,
                options.outputDir.c_str());
  }

  if (options.repeat)
    timeRuns(options, *device, *module, inputRefs, outputRefs);
  return 0;
}
