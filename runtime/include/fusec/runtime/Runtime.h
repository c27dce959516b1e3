//===- Runtime.h - Loading and running fusec artifacts ----------*- C++ -*-===//
//
// The fusec runtime: opens a CUDA device through the driver API (loaded from
// libcuda.so.1 at run time, so nothing here needs the CUDA toolkit to build
// or a GPU to start), loads an artifact (PTX plus its launch plan), and runs
// the plan on a stream. It knows nothing of the compiler.
//
//   std::shared_ptr<Device> device;
//   FUSEC_RETURN_IF_ERROR(Device::open(0, device));
//   std::unique_ptr<Module> module;
//   FUSEC_RETURN_IF_ERROR(Module::loadFile(device, "graph.ptx", module));
//   FUSEC_RETURN_IF_ERROR(module->run(stream, {{x, xBytes}, {w, wBytes}},
//                                     {{y, yBytes}}));
//
// Threads and streams: a Device and a Module may be used from any thread.
// Runs of one Module may overlap, on any streams and from any threads: each
// run gets intermediates no other unfinished run uses (a workspace; see
// Module::run), and a run captured into a CUDA graph gets intermediates the
// graph owns. Enqueueing is serialised per Module; the kernels are not.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_RUNTIME_H
#define FUSEC_RUNTIME_RUNTIME_H

#include "fusec/runtime/Plan.h"
#include "fusec/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fusec {
namespace runtime {

namespace detail {
struct DriverApi;
} // namespace detail

/// A device address (CUdeviceptr).
using DevicePtr = uint64_t;
/// A CUstream or cudaStream_t (the two are the same object); nullptr is the
/// legacy default stream.
using Stream = void *;
/// A CUevent or cudaEvent_t.
using Event = void *;

/// A device buffer handed to Module::run: its address and size in bytes.
struct BufferRef {
  DevicePtr ptr = 0;
  uint64_t bytes = 0;
};

/// A read-only view of contiguous elements (std::span is C++20).
template <typename T> class Span {
public:
  Span() = default;
  Span(const T *data, size_t size) : data_(data), size_(size) {}
  Span(const std::vector<T> &values)
      : data_(values.data()), size_(values.size()) {}
  /// Views the list for the duration of the full expression: fine for
  /// arguments, never for a Span that outlives the call (as std::span).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  Span(std::initializer_list<T> values)
      : data_(values.begin()), size_(values.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  const T *data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T &operator[](size_t i) const { return data_[i]; }
  const T *begin() const { return data_; }
  const T *end() const { return data_ + size_; }

private:
  const T *data_ = nullptr;
  size_t size_ = 0;
};

/// Reads a whole file. Fails with StatusCode::IOError ("cannot open 'x':
/// No such file or directory").
Status readFile(const std::string &path, std::string &contents);

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

/// One CUDA device and its primary context, which the Device retains for its
/// lifetime. Also the place for the few memory and timing helpers that tools
/// and tests need, so that they need not link the CUDA runtime.
class Device {
public:
  /// Number of CUDA devices. Fails (NoDriver) when libcuda.so.1 cannot be
  /// loaded; a driver with no GPU gives NoDevice.
  static Status count(int &count);

  /// Opens device `ordinal`: loads libcuda.so.1 (once per process), calls
  /// cuInit, retains the device's primary context. Fails with NoDriver
  /// ("cannot load libcuda.so.1 (...): no NVIDIA driver on this machine"),
  /// NoDevice ("no CUDA device found", or an ordinal out of range), or
  /// DriverError.
  static Status open(int ordinal, std::shared_ptr<Device> &device);

  /// As open(), through an explicit driver table instead of libcuda.so.1.
  /// For tests, which pass a table of fakes to check the launch path.
  static Status openWithDriver(const detail::DriverApi &api, int ordinal,
                               std::shared_ptr<Device> &device);

  ~Device();
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  int ordinal() const { return ordinal_; }
  /// The marketing name, e.g. "NVIDIA H100 80GB HBM3".
  const std::string &name() const { return name_; }
  int computeCapabilityMajor() const { return ccMajor_; }
  int computeCapabilityMinor() const { return ccMinor_; }
  /// "sm_90" for compute capability 9.0.
  std::string arch() const;
  /// Most dynamic shared memory one block may opt in to, in bytes.
  uint64_t maxSharedBytesPerBlock() const { return maxSharedBytesPerBlock_; }
  int maxThreadsPerBlock() const { return maxThreadsPerBlock_; }
  /// Streaming multiprocessors (132 on an H100 SXM or H200).
  int multiprocessorCount() const { return multiprocessorCount_; }
  /// The driver's CUDA version, e.g. 13000 for 13.0.
  int driverVersion() const { return driverVersion_; }
  /// "device 0 (NVIDIA H100 80GB HBM3, sm_90)": how messages name it.
  std::string describe() const;

  /// Makes the device's context current on the calling thread.
  Status makeCurrent() const;

  // Memory. Copies are synchronous and ordered with the legacy default
  // stream: synchronize other streams first.
  Status allocate(uint64_t bytes, DevicePtr &ptr);
  Status free(DevicePtr ptr);
  Status copyToDevice(DevicePtr dst, const void *src, uint64_t bytes);
  Status copyToHost(void *dst, DevicePtr src, uint64_t bytes);
  /// Sets `bytes` bytes at `dst` to `value`, asynchronously on `stream`.
  Status fill(DevicePtr dst, uint8_t value, uint64_t bytes,
              Stream stream = nullptr);
  /// Waits for `stream`; reports errors of kernels that ran on it.
  Status synchronize(Stream stream = nullptr);

  // Timing with CUDA events.
  Status createEvent(Event &event);
  Status destroyEvent(Event event);
  Status recordEvent(Event event, Stream stream = nullptr);
  /// Milliseconds between two recorded events; waits for `end`.
  Status elapsedMs(Event start, Event end, float &ms);

  /// The driver table (for Module).
  const detail::DriverApi &api() const { return *api_; }

private:
  Device() = default;

  const detail::DriverApi *api_ = nullptr;
  int ordinal_ = 0;
  int cuDevice_ = 0;
  /// CUcontext; null until retained.
  void *context_ = nullptr;
  std::string name_;
  int ccMajor_ = 0;
  int ccMinor_ = 0;
  uint64_t maxSharedBytesPerBlock_ = 0;
  int maxThreadsPerBlock_ = 0;
  int multiprocessorCount_ = 0;
  int driverVersion_ = 0;
};

/// A device allocation freed on destruction. Move-only.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  static Status allocate(std::shared_ptr<Device> device, uint64_t bytes,
                         DeviceBuffer &buffer);

  DevicePtr ptr() const { return ptr_; }
  uint64_t bytes() const { return bytes_; }
  BufferRef ref() const { return {ptr_, bytes_}; }

private:
  void reset();

  std::shared_ptr<Device> device_;
  DevicePtr ptr_ = 0;
  uint64_t bytes_ = 0;
};

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

/// A loaded artifact: its PTX compiled for the device, a function handle for
/// every kernel, and workspaces for the intermediate buffers of its plan.
///
/// A workspace is one device allocation of workspaceBytes() holding every
/// intermediate. The first is allocated at load; run() takes one that no
/// unfinished run on another stream uses, so that runs on one stream reuse
/// one workspace and runs on N streams at once use at most N (never more
/// than maxWorkspaces(): beyond it a run waits, on the device, for the
/// oldest). A run captured into a CUDA graph allocates its workspace inside
/// the graph (cuMemAllocAsync/cuMemFreeAsync), so the graph owns it and its
/// replays never share intermediates with other runs. A caller that manages
/// memory itself passes a workspace to run() instead.
class Module {
public:
  /// Loads artifact text. Parses and validates the plan, refuses a device
  /// whose compute capability is below target.arch, JIT-compiles the PTX
  /// (a failure reports the driver's JIT log), looks up every kernel, raises
  /// the dynamic shared memory limit of kernels that need more than 48 KiB,
  /// and allocates the first workspace. `sourceName` starts error messages.
  /// Safe while the calling thread or another captures a CUDA graph: the
  /// load itself is not captured.
  static Status load(std::shared_ptr<Device> device,
                     const std::string &artifact,
                     std::unique_ptr<Module> &module,
                     const std::string &sourceName = "artifact");

  /// load() on the contents of the file at `path`.
  static Status loadFile(std::shared_ptr<Device> device,
                         const std::string &path,
                         std::unique_ptr<Module> &module);

  /// load() with `plan`, already parsed from `artifact` (one of a training
  /// artifact's plans, from parseTrainingArtifact) and checked against its
  /// code.
  static Status load(std::shared_ptr<Device> device,
                     const std::string &artifact, Plan plan,
                     std::unique_ptr<Module> &module,
                     const std::string &sourceName);

  ~Module();
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  const Plan &plan() const { return plan_; }
  Device &device() const { return *device_; }
  /// The driver JIT's informational log (may be empty).
  const std::string &jitLog() const { return jitLog_; }

  /// Bytes of one workspace: every intermediate of the plan, each aligned
  /// to kWorkspaceAlignment (0 when the plan has none).
  uint64_t workspaceBytes() const { return workspaceBytes_; }
  /// Workspaces allocated so far (device memory in use by the module:
  /// workspaceCount() * workspaceBytes()).
  size_t workspaceCount() const;
  /// The most workspaces run() allocates (default kDefaultMaxWorkspaces);
  /// at least 1. Lowering it frees none already allocated.
  size_t maxWorkspaces() const;
  void setMaxWorkspaces(size_t count);

  /// Enqueues every step of the plan on `stream`: one buffer per graph
  /// input and per graph output, in index order, each exactly the size the
  /// plan gives it, no output sharing memory with an input or with another
  /// output. Fails (InvalidArgument) on a wrong count ("expected 3 inputs,
  /// got 2"), size ("input 1 has 800 bytes, the plan needs 802816 (f32
  /// [1,56,56,64])"), null pointer or overlap ("output 0 [0x..., +N bytes)
  /// overlaps input 1 [...]"), before anything is enqueued. Returns once
  /// the work is enqueued: synchronize the stream to wait for it and to see
  /// errors raised while the kernels ran.
  Status run(Stream stream, Span<BufferRef> inputs, Span<BufferRef> outputs);

  /// run() with the caller's workspace: at least workspaceBytes() bytes,
  /// kWorkspaceAlignment-aligned, sharing no memory with the inputs and
  /// outputs, and not used by anything else until this run has finished on
  /// `stream`. The module's own workspaces are not touched.
  Status run(Stream stream, Span<BufferRef> inputs, Span<BufferRef> outputs,
             BufferRef workspace);

  /// The checks of run() alone.
  Status checkBindings(Span<BufferRef> inputs,
                       Span<BufferRef> outputs) const;

  /// Alignment of the intermediates in a workspace, and of a workspace
  /// passed to run() (cuMemAlloc's own alignment).
  static constexpr uint64_t kWorkspaceAlignment = 256;
  static constexpr size_t kDefaultMaxWorkspaces = 4;

private:
  Module() = default;

  /// One set of intermediates, and the run that last used it.
  struct Workspace {
    DevicePtr base = 0;
    /// CUevent recorded on `stream` after that run's last step.
    void *done = nullptr;
    Stream stream = nullptr;
    /// Which run last used it (for the least recently used).
    uint64_t lastRun = 0;
  };

  /// Enqueues the steps with intermediates at `workspace` (mutex_ held).
  Status enqueue(Stream stream, Span<BufferRef> inputs, Span<BufferRef> outputs,
                 DevicePtr workspace);
  /// A workspace for a run on `stream`, allocated or made safe to reuse by
  /// ordering `stream` after its last run (mutex_ held).
  Status acquireWorkspace(Stream stream, Workspace *&workspace);
  Status allocateWorkspace(Workspace &workspace);

  std::shared_ptr<Device> device_;
  Plan plan_;
  std::string sourceName_;
  std::string jitLog_;
  /// CUmodule; null until loaded.
  void *cuModule_ = nullptr;
  /// CUfunction of each step (null for copies).
  std::vector<void *> stepFunctions_;
  /// Offset of each buffer id's intermediate in a workspace (0 for others).
  std::vector<uint64_t> workspaceOffsets_;
  uint64_t workspaceBytes_ = 0;

  /// Guards everything below: runs are enqueued one at a time.
  mutable std::mutex mutex_;
  std::vector<Workspace> workspaces_;
  size_t maxWorkspaces_ = kDefaultMaxWorkspaces;
  uint64_t runs_ = 0;
  /// The encoded tensor maps (CUtensorMap) of every step, in plan order, and
  /// the address each was encoded for: a map is encoded again only when its
  /// buffer moves between runs. cuLaunchKernel copies the parameters, so a
  /// map may be re-encoded while an earlier launch of it runs.
  struct alignas(64) TensorMapBytes {
    uint64_t words[16];
  };
  std::vector<TensorMapBytes> tensorMaps_;
  std::vector<DevicePtr> tensorMapAddresses_;
};

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

class TrainingStep;

/// A loaded training artifact (`fusec graph.mlir --train`, docs/Training.md):
/// the forward plan and the backward plan, each a Module (which loads the
/// artifact's code once per plan). A TrainingStep runs them.
class TrainingModule {
public:
  /// Loads artifact text: parseTrainingArtifact, then each plan as
  /// Module::load does.
  static Status load(std::shared_ptr<Device> device,
                     const std::string &artifact,
                     std::unique_ptr<TrainingModule> &module,
                     const std::string &sourceName = "artifact");
  static Status loadFile(std::shared_ptr<Device> device,
                         const std::string &path,
                         std::unique_ptr<TrainingModule> &module);

  const TrainingPlan &plan() const { return plan_; }
  /// The forward plan: the graph's arguments in; its results, then the
  /// saved tensors, out.
  Module &forward() const { return *forward_; }
  /// The backward plan (TrainingDesc says what its inputs are).
  Module &backward() const { return *backward_; }

  /// The graph's arguments (the forward's inputs).
  size_t numArgs() const { return plan_.forward.inputs.size(); }
  /// The graph's results (the forward's first outputs).
  size_t numResults() const {
    return static_cast<size_t>(plan_.forward.training.numResults);
  }
  /// The tensors the forward saves for the backward.
  size_t numSaved() const {
    return plan_.forward.outputs.size() - numResults();
  }
  /// Bytes of the saved tensors: the device memory a TrainingStep holds.
  uint64_t savedBytes() const;
  /// The results whose gradients the backward takes, in its order.
  const std::vector<int64_t> &gradResults() const {
    return plan_.backward.training.gradResults;
  }
  /// The arguments whose gradients the backward returns, in its order.
  const std::vector<int64_t> &wrt() const {
    return plan_.backward.training.wrt;
  }
  /// The arguments and results of the forward that the backward reads
  /// again, where the caller holds them.
  const std::vector<int64_t> &forwardArgs() const {
    return plan_.backward.training.forwardArgs;
  }
  const std::vector<int64_t> &forwardResults() const {
    return plan_.backward.training.forwardResults;
  }

private:
  friend class TrainingStep;
  TrainingModule() = default;
  std::shared_ptr<Device> device_;
  TrainingPlan plan_;
  std::unique_ptr<Module> forward_, backward_;
};

/// One training step's state: the saved tensors, device buffers the step
/// owns, and the arguments and results of its last forward. Steps of one module
/// are independent (micro-batches in flight, one per stream); a step's forward
/// and backward run in order, on one stream or with the caller ordering
/// them.
class TrainingStep {
public:
  /// Allocates the saved tensors of `module`, which must outlive the step.
  static Status create(const TrainingModule &module,
                       std::unique_ptr<TrainingStep> &step);

  /// Enqueues the forward plan: one buffer per graph argument and per graph
  /// result (Module::run's rules); the saved tensors go to the step's
  /// buffers. The backward reads some arguments and results again
  /// (forwardArgs(), forwardResults()): keep them alive and unchanged until
  /// it has run.
  Status forward(Stream stream, Span<BufferRef> args, Span<BufferRef> results);

  /// Enqueues the backward plan after a forward of this step: one gradient
  /// per entry of gradResults() (each its result's type), one output per
  /// entry of wrt() (each its argument's type). Fails (InvalidArgument)
  /// before any forward. A backward may run again after one forward (the
  /// saved tensors are only read).
  Status backward(Stream stream, Span<BufferRef> resultGrads,
                  Span<BufferRef> argGrads);

  /// The saved tensors, in the forward's order.
  const std::vector<DeviceBuffer> &saved() const { return saved_; }
  const TrainingModule &module() const { return *module_; }

private:
  TrainingStep() = default;
  const TrainingModule *module_ = nullptr;
  std::vector<DeviceBuffer> saved_;
  std::vector<BufferRef> args_, results_;
  bool haveForward_ = false;
};

} // namespace runtime
} // namespace fusec

#endif // FUSEC_RUNTIME_RUNTIME_H
