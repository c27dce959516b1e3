//===- Runtime.cpp - Devices, memory and modules --------------------------===//
//
// Every driver call goes through the DriverApi table and has its CUresult
// checked; a failure names the call and what the runtime was doing.
//
//===----------------------------------------------------------------------===//

#include "fusec/runtime/Runtime.h"

#include "CudaDriver.h"
#include "Nvrtc.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace fusec::runtime;
using namespace fusec::runtime::detail;

Status fusec::runtime::readFile(const std::string &path,
                                std::string &contents) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused
  // below with anything else that is not a regular file (/dev/zero would be
  // read without bound).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return Status::error(StatusCode::IOError, "cannot open '" + path +
                                                  "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(StatusCode::IOError,
                         "cannot read '" + path + "': not a regular file");
  }
  // Read what the file holds now: it may change size underneath.
  contents.assign(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::read(fd, &contents[done], contents.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      std::string reason = n < 0 ? std::strerror(errno) : "the file shrank";
      ::close(fd);
      contents.clear();
      return Status::error(StatusCode::IOError,
                           "cannot read '" + path + "': " + reason);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return Status::success();
}

static std::string bytesString(uint64_t bytes) {
  return std::to_string(bytes) + " bytes";
}

static std::string hexString(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%llx",
                static_cast<unsigned long long>(value));
  return text;
}

static std::string dim3String(const std::array<uint32_t, 3> &d) {
  return "[" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," +
         std::to_string(d[2]) + "]";
}

static CUcontext toContext(void *context) {
  return static_cast<CUcontext>(context);
}

namespace {
/// Makes the calling thread's CUDA graph capture mode relaxed while it
/// lives. A module load, an allocation or an event query is a "potentially
/// unsafe" call that, in the default global mode, fails and invalidates any
/// capture under way on any thread (a PyTorch CUDA graph, say). Relaxed, the
/// thread may make them; none of them is captured.
class RelaxedCaptureMode {
public:
  explicit RelaxedCaptureMode(const DriverApi &api) : api_(api) {
    active_ = api_.cuThreadExchangeStreamCaptureMode(&mode_) == CUDA_SUCCESS;
  }
  ~RelaxedCaptureMode() {
    if (active_)
      (void)api_.cuThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode &) = delete;
  RelaxedCaptureMode &operator=(const RelaxedCaptureMode &) = delete;

private:
  const DriverApi &api_;
  /// The mode to set, then the one to restore.
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool active_ = false;
};
} // namespace

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

Status Device::count(int &count) {
  count = 0;
  const DriverApi *api;
  Status status = loadDriverApi(api);
  if (status.code() == StatusCode::NoDevice)
    return Status::success(); // the driver works and sees no GPU
  FUSEC_RETURN_IF_ERROR(status);
  FUSEC_CU_CHECK(*api, cuDeviceGetCount, (&count), "counting CUDA devices");
  return Status::success();
}

Status Device::open(int ordinal, std::shared_ptr<Device> &device) {
  const DriverApi *api;
  FUSEC_RETURN_IF_ERROR(loadDriverApi(api));
  return openWithDriver(*api, ordinal, device);
}

Status Device::openWithDriver(const DriverApi &api, int ordinal,
                              std::shared_ptr<Device> &device) {
  device.reset();
  int count = 0;
  FUSEC_CU_CHECK(api, cuDeviceGetCount, (&count), "counting CUDA devices");
  if (count == 0)
    return Status::error(StatusCode::NoDevice,
                         "no CUDA device found: the NVIDIA driver is "
                         "installed but sees no GPU; check nvidia-smi and "
                         "CUDA_VISIBLE_DEVICES");
  if (ordinal < 0 || ordinal >= count)
    return Status::error(StatusCode::NoDevice,
                         "device " + std::to_string(ordinal) +
                             " does not exist: this machine has " +
                             std::to_string(count) + " CUDA device" +
                             (count == 1 ? "" : "s") + " (0.." +
                             std::to_string(count - 1) + ")");

  std::shared_ptr<Device> d(new Device());
  d->api_ = &api;
  d->ordinal_ = ordinal;
  std::string doing = "opening device " + std::to_string(ordinal);
  FUSEC_CU_CHECK(api, cuDriverGetVersion, (&d->driverVersion_), doing);
  CUdevice cuDevice;
  FUSEC_CU_CHECK(api, cuDeviceGet, (&cuDevice, ordinal), doing);
  d->cuDevice_ = cuDevice;
  char name[256] = {};
  FUSEC_CU_CHECK(api, cuDeviceGetName, (name, sizeof(name) - 1, cuDevice),
                 doing);
  d->name_ = name;
  FUSEC_CU_CHECK(api, cuDeviceGetAttribute,
                 (&d->ccMajor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                  cuDevice),
                 doing);
  FUSEC_CU_CHECK(api, cuDeviceGetAttribute,
                 (&d->ccMinor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                  cuDevice),
                 doing);
  int shared = 0;
  FUSEC_CU_CHECK(api, cuDeviceGetAttribute,
                 (&shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                  cuDevice),
                 doing);
  d->maxSharedBytesPerBlock_ = static_cast<uint64_t>(shared);
  FUSEC_CU_CHECK(api, cuDeviceGetAttribute,
                 (&d->maxThreadsPerBlock_,
                  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, cuDevice),
                 doing);
  FUSEC_CU_CHECK(api, cuDeviceGetAttribute,
                 (&d->multiprocessorCount_,
                  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, cuDevice),
                 doing);
  CUcontext context = nullptr;
  FUSEC_CU_CHECK(api, cuDevicePrimaryCtxRetain, (&context, cuDevice), doing);
  d->context_ = context;
  device = std::move(d);
  return Status::success();
}

Device::~Device() {
  if (context_)
    (void)api_->cuDevicePrimaryCtxRelease(cuDevice_);
}

std::string Device::arch() const {
  return "sm_" + std::to_string(ccMajor_) + std::to_string(ccMinor_);
}

std::string Device::describe() const {
  return "device " + std::to_string(ordinal_) + " (" + name_ + ", " + arch() +
         ")";
}

Status Device::makeCurrent() const {
  FUSEC_CU_CHECK(*api_, cuCtxSetCurrent, (toContext(context_)),
                 "making the context of " + describe() + " current");
  return Status::success();
}

Status Device::allocate(uint64_t bytes, DevicePtr &ptr) {
  ptr = 0;
  FUSEC_RETURN_IF_ERROR(makeCurrent());
  RelaxedCaptureMode relaxed(*api_);
  CUdeviceptr p = 0;
  FUSEC_CU_CHECK(*api_, cuMemAlloc, (&p, bytes),
                 "allocating " + bytesString(bytes) + " on " + describe());
  ptr = p;
  return Status::success();
}

Status Device::free(DevicePtr ptr) {
  if (!ptr)
    return Status::success();
  FUSEC_RETURN_IF_ERROR(makeCurrent());
  RelaxedCaptureMode relaxed(*api_);
  FUSEC_CU_CHECK(*api_, cuMemFree, (ptr), "freeing device memory");
  return Status::success();
}

Status Device::copyToDevice(DevicePtr dst, const void *src, uint64_t bytes) {
  if (!bytes)
    return Status::success();
  FUSEC_RETURN_IF_ERROR(makeCurrent());
  FUSEC_CU_CHECK(*api_, cuMemcpyHtoD, (dst, src, bytes),
                 "copying " + bytesString(bytes) + " to the device");
  return Status::success();
}

Status Device::copyToHost(void *dst, DevicePtr src, uint64_t bytes) {
  if (!bytes)
    return Status::success();
  FUSEC_RETURN_IF_ERROR(makeCurrent());
  FUSEC_CU_CHECK(*api_, cuMemcpyDtoH, (dst, src, bytes),
                 "copying " + bytesString(bytes) + " from the device");
  return Status::success();
}

Status Device::fill(DevicePtr dst, uint8_t value, uint64_t bytes,
                    Stream stream) {
  if (!bytes)
    return Status::success();
  FUSEC_RETURN_IF_ERROR(makeCurrent());
  FUSEC_CU_CHECK(*api_, cuMemsetD8Async,
                 (dst, value, bytes, static_cast<CUstream>(stream)),
                 "filling " + bytesString(bytes) + " of device memory");
  return Status::success();
}

Status Device::synchronize(Stream stream) {
  FUSEC_RETURN_IF_ERROR(makeCurrent());
  FUSEC_CU_CHECK(*api_, cuStreamSynchronize, (static_cast<CUstream>(stream)),
                 "waiting for the work on " + describe());
  return Status::success();
}

Status Device::createEvent(Event &event) {
  event = nullptr;
  FUSEC_RETURN_IF_ERROR(makeCurrent());
  CUevent e = nullptr;
  FUSEC_CU_CHECK(*api_, cuEventCreate, (&e, CU_EVENT_DEFAULT),
                 "creating an event");
  event = e;
  return Status::success();
}

Status Device::destroyEvent(Event event) {
  if (!event)
    return Status::success();
  FUSEC_RETURN_IF_ERROR(makeCurrent());
  FUSEC_CU_CHECK(*api_, cuEventDestroy, (static_cast<CUevent>(event)),
                 "destroying an event");
  return Status::success();
}

Status Device::recordEvent(Event event, Stream stream) {
  FUSEC_RETURN_IF_ERROR(makeCurrent());
  FUSEC_CU_CHECK(
      *api_, cuEventRecord,
      (static_cast<CUevent>(event), static_cast<CUstream>(stream)),
      "recording an event");
  return Status::success();
}

Status Device::elapsedMs(Event start, Event end, float &ms) {
  ms = 0;
  FUSEC_RETURN_IF_ERROR(makeCurrent());
  FUSEC_CU_CHECK(*api_, cuEventSynchronize, (static_cast<CUevent>(end)),
                 "waiting for an event");
  FUSEC_CU_CHECK(
      *api_, cuEventElapsedTime,
      (&ms, static_cast<CUevent>(start), static_cast<CUevent>(end)),
      "timing between two events");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

Status DeviceBuffer::allocate(std::shared_ptr<Device> device, uint64_t bytes,
                              DeviceBuffer &buffer) {
  buffer.reset();
  DevicePtr ptr = 0;
  if (bytes)
    FUSEC_RETURN_IF_ERROR(device->allocate(bytes, ptr));
  buffer.device_ = std::move(device);
  buffer.ptr_ = ptr;
  buffer.bytes_ = bytes;
  return Status::success();
}

DeviceBuffer::~DeviceBuffer() { reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : device_(std::move(other.device_)), ptr_(other.ptr_),
      bytes_(other.bytes_) {
  other.ptr_ = 0;
  other.bytes_ = 0;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    device_ = std::move(other.device_);
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.ptr_ = 0;
    other.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (device_ && ptr_)
    (void)device_->free(ptr_);
  device_.reset();
  ptr_ = 0;
  bytes_ = 0;
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

/// Checks what can be checked before compiling anything: the architecture
/// and the launch limits of the device.
static Status checkDevice(const Plan &plan, const Device &device,
                          const std::string &sourceName) {
  int major = device.computeCapabilityMajor();
  int minor = device.computeCapabilityMinor();
  std::string planCC =
      std::to_string(plan.archMajor) + "." + std::to_string(plan.archMinor);
  std::string deviceCC = std::to_string(major) + "." + std::to_string(minor);
  if (std::make_pair(major, minor) <
      std::make_pair(plan.archMajor, plan.archMinor))
    return Status::error(
        StatusCode::UnsupportedDevice,
        sourceName + " was compiled for " + plan.arch + " (target.arch), but " +
            device.describe() + " has compute capability " + deviceCC +
            ": recompile the graph for " + device.arch() +
            " or run it on a device of compute capability " + planCC +
            " or newer");
  if (plan.archSpecific &&
      (major != plan.archMajor ||
       (plan.arch.back() == 'a' && minor != plan.archMinor)))
    return Status::error(
        StatusCode::UnsupportedDevice,
        sourceName + " was compiled for " + plan.arch +
            " (target.arch), whose code runs only on compute capability " +
            planCC + (plan.arch.back() == 'f' ? " and its family" : "") +
            ", but " + device.describe() + " has compute capability " +
            deviceCC + ": recompile the graph for " + device.arch());

  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &step = plan.steps[i];
    if (step.kind != Step::Kind::Launch)
      continue;
    std::string what = sourceName + ": steps[" + std::to_string(i) +
                       "] (kernel '" + step.kernel + "')";
    if (step.sharedBytes > device.maxSharedBytesPerBlock())
      return Status::error(
          StatusCode::UnsupportedDevice,
          what + " needs " + bytesString(step.sharedBytes) +
              " of dynamic shared memory, but " + device.describe() +
              " allows at most " +
              bytesString(device.maxSharedBytesPerBlock()) +
              " per block: recompile with smaller tiles for this device");
    uint64_t threads =
        uint64_t(step.block[0]) * step.block[1] * step.block[2];
    if (threads > static_cast<uint64_t>(device.maxThreadsPerBlock()))
      return Status::error(
          StatusCode::UnsupportedDevice,
          what + " has blocks of " + std::to_string(threads) + " threads " +
              dim3String(step.block) + ", but " + device.describe() +
              " allows at most " +
              std::to_string(device.maxThreadsPerBlock()) +
              ": recompile with smaller blocks");
  }
  return Status::success();
}

Status Module::load(std::shared_ptr<Device> device, const std::string &artifact,
                    std::unique_ptr<Module> &module,
                    const std::string &sourceName) {
  module.reset();
  Plan plan;
  FUSEC_RETURN_IF_ERROR(parseArtifact(artifact, plan, sourceName));
  return load(std::move(device), artifact, std::move(plan), module, sourceName);
}

Status Module::load(std::shared_ptr<Device> device, const std::string &artifact,
                    Plan parsed, std::unique_ptr<Module> &module,
                    const std::string &sourceName) {
  module.reset();
  // Filled as resources are acquired, so that a failure part way releases
  // what was acquired (in ~Module).
  std::unique_ptr<Module> m(new Module());
  m->device_ = device;
  m->sourceName_ = sourceName;
  m->plan_ = std::move(parsed);
  const Plan &plan = m->plan_;
  FUSEC_RETURN_IF_ERROR(checkDevice(plan, *device, sourceName));

  const DriverApi &api = device->api();
  FUSEC_RETURN_IF_ERROR(device->makeCurrent());
  // A first call inside a CUDA graph capture loads the module here.
  RelaxedCaptureMode relaxed(api);

  // CUDA C becomes PTX first, for this device's architecture unless the
  // artifact needs an arch-specific one ("sm_90a": wgmma, setmaxnreg).
  std::string ptx;
  if (plan.targetKind == "cuda") {
    std::string arch = plan.archSpecific ? plan.arch : device->arch();
    FUSEC_RETURN_IF_ERROR(detail::compileCudaToPtx(
        artifact, "compute_" + arch.substr(3), sourceName, ptx));
    FUSEC_RETURN_IF_ERROR(checkKernelParameters(ptx, plan, sourceName));
  }
  const std::string &image = plan.targetKind == "cuda" ? ptx : artifact;

  // JIT-compile the PTX, keeping the logs so that a PTX error is reported
  // with the JIT compiler's own message. std::string keeps a NUL after the
  // text, which cuModuleLoadDataEx needs.
  constexpr size_t kLogBytes = 16 * 1024;
  std::vector<char> errorLog(kLogBytes, '\0');
  std::vector<char> infoLog(kLogBytes, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_INFO_LOG_BUFFER,
                            CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {errorLog.data(), reinterpret_cast<void *>(kLogBytes - 1),
                    infoLog.data(), reinterpret_cast<void *>(kLogBytes - 1)};
  CUmodule cuModule = nullptr;
  CUresult result = api.cuModuleLoadDataEx(
      &cuModule, image.c_str(), sizeof(options) / sizeof(options[0]),
      options, values);
  m->jitLog_ = infoLog.data();
  if (result != CUDA_SUCCESS) {
    Status status =
        driverError(api, result, "cuModuleLoadDataEx",
                    sourceName + ": cannot load the PTX on " + device->describe());
    std::string log = errorLog.data();
    if (log.empty())
      return status;
    while (!log.empty() && (log.back() == '\n' || log.back() == '\r'))
      log.pop_back();
    return Status::error(status.code(),
                         status.message() + "\nJIT log:\n" + log);
  }
  m->cuModule_ = cuModule;

  // One handle per kernel, and the shared memory opt-in each needs.
  std::map<std::string, CUfunction> functions;
  std::map<std::string, uint32_t> maxShared;
  for (const std::string &kernel : plan.kernels) {
    CUfunction function = nullptr;
    FUSEC_CU_CHECK(api, cuModuleGetFunction, (&function, cuModule, kernel.c_str()),
                   sourceName + ": looking up kernel '" + kernel + "'");
    functions[kernel] = function;
  }
  for (const Step &step : plan.steps)
    if (step.kind == Step::Kind::Launch)
      maxShared[step.kernel] = std::max(maxShared[step.kernel], step.sharedBytes);
  for (const auto &[kernel, shared] : maxShared) {
    if (shared <= kDefaultMaxDynamicSharedBytes)
      continue;
    FUSEC_CU_CHECK(api, cuFuncSetAttribute,
                   (functions[kernel],
                    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    static_cast<int>(shared)),
                   sourceName + ": allowing kernel '" + kernel + "' " +
                       bytesString(shared) + " of dynamic shared memory");
  }
  for (const Step &step : plan.steps) {
    m->stepFunctions_.push_back(
        step.kind == Step::Kind::Launch ? functions[step.kernel] : nullptr);
    m->tensorMaps_.resize(m->tensorMaps_.size() + step.tensorMaps.size());
  }
  m->tensorMapAddresses_.assign(m->tensorMaps_.size(), 0);

  // Every intermediate at its own aligned offset in one workspace.
  m->workspaceOffsets_.assign(plan.buffers.size(), 0);
  uint64_t end = 0;
  for (const BufferDesc &buffer : plan.buffers) {
    if (buffer.role != BufferRole::Intermediate || buffer.bytes == 0)
      continue;
    uint64_t offset = (end + kWorkspaceAlignment - 1) / kWorkspaceAlignment *
                      kWorkspaceAlignment;
    if (offset < end || buffer.bytes > UINT64_MAX - offset)
      return Status::error(StatusCode::InvalidArtifact,
                           sourceName + ": the intermediate buffers need more "
                                        "than 2^64 bytes together");
    m->workspaceOffsets_[buffer.id] = offset;
    end = offset + buffer.bytes;
  }
  m->workspaceBytes_ = end;
  // The first workspace now, so that a module that loads can run, and a
  // run on one stream never allocates.
  if (m->workspaceBytes_) {
    Workspace first;
    Status status = m->allocateWorkspace(first);
    // Kept even when half made, for ~Module to free.
    m->workspaces_.push_back(first);
    FUSEC_RETURN_IF_ERROR(status);
  }
  module = std::move(m);
  return Status::success();
}

Status Module::allocateWorkspace(Workspace &workspace) {
  const DriverApi &api = device_->api();
  CUdeviceptr base = 0;
  FUSEC_CU_CHECK(api, cuMemAlloc, (&base, workspaceBytes_),
                 sourceName_ + ": allocating " + bytesString(workspaceBytes_) +
                     " for the intermediate buffers (workspace " +
                     std::to_string(workspaces_.size()) + ") on " +
                     device_->describe());
  workspace.base = base;
  CUevent done = nullptr;
  FUSEC_CU_CHECK(api, cuEventCreate, (&done, CU_EVENT_DISABLE_TIMING),
                 sourceName_ + ": creating the event of a workspace");
  workspace.done = done;
  return Status::success();
}

Status Module::loadFile(std::shared_ptr<Device> device, const std::string &path,
                        std::unique_ptr<Module> &module) {
  std::string text;
  FUSEC_RETURN_IF_ERROR(readFile(path, text));
  return load(std::move(device), text, module, path);
}

Module::~Module() {
  // Workspaces are allocated only once the module is loaded.
  if (!device_ || !cuModule_)
    return;
  const DriverApi &api = device_->api();
  if (!device_->makeCurrent())
    return;
  // Errors are ignored: nothing can be done about them in a destructor, and
  // after a kernel fault every call fails anyway.
  RelaxedCaptureMode relaxed(api);
  for (const Workspace &workspace : workspaces_) {
    if (workspace.base)
      (void)api.cuMemFree(workspace.base);
    if (workspace.done)
      (void)api.cuEventDestroy(static_cast<CUevent>(workspace.done));
  }
  if (cuModule_)
    (void)api.cuModuleUnload(static_cast<CUmodule>(cuModule_));
}

/// Checks one side (inputs or outputs) of run()'s bindings.
static Status checkSide(const Plan &plan, const char *side,
                        const std::vector<int64_t> &ids,
                        Span<BufferRef> buffers) {
  std::string plural = std::string(side) + (ids.size() == 1 ? "" : "s");
  if (buffers.size() != ids.size())
    return Status::error(
        StatusCode::InvalidArgument,
        "expected " + std::to_string(ids.size()) + " " + plural + ", got " +
            std::to_string(buffers.size()) + ": pass one device buffer per " +
            "graph " + (std::string(side) == "input" ? "argument" : "result") +
            ", in order");
  for (size_t i = 0; i < ids.size(); ++i) {
    const BufferDesc &desc = plan.buffers[ids[i]];
    const BufferRef &ref = buffers[i];
    std::string name = std::string(side) + " " + std::to_string(i);
    if (ref.bytes != desc.bytes)
      return Status::error(StatusCode::InvalidArgument,
                           name + " has " + std::to_string(ref.bytes) +
                               " bytes, the plan needs " +
                               std::to_string(desc.bytes) + " (" +
                               desc.typeString() + ")");
    if (!ref.ptr && desc.bytes)
      return Status::error(StatusCode::InvalidArgument,
                           name + " is a null device pointer: allocate " +
                               std::to_string(desc.bytes) + " bytes (" +
                               desc.typeString() + ") for it");
  }
  return Status::success();
}

/// "[0x7f00, +64 bytes)": how overlap messages name a buffer.
static std::string rangeString(const BufferRef &ref) {
  return "[0x" + hexString(ref.ptr) + ", +" + bytesString(ref.bytes) + ")";
}

static bool overlaps(const BufferRef &a, const BufferRef &b) {
  return a.bytes && b.bytes && a.ptr < b.ptr + b.bytes &&
         b.ptr < a.ptr + a.bytes;
}

/// Refuses an output that shares memory with an input or another output.
/// Kernels write outputs while later kernels still read the inputs, so an
/// output over an input is not "in place" but a wrong answer.
static Status checkOverlaps(Span<BufferRef> inputs, Span<BufferRef> outputs) {
  for (size_t o = 0; o < outputs.size(); ++o) {
    auto refuse = [&](const std::string &other, const BufferRef &ref) {
      return Status::error(
          StatusCode::InvalidArgument,
          "output " + std::to_string(o) + " " + rangeString(outputs[o]) +
              " overlaps " + other + " " + rangeString(ref) +
              ": fusec does not compute in place (a kernel may write the "
              "output while another still reads it); pass an output that "
              "shares no memory with the inputs or the other outputs");
    };
    for (size_t i = 0; i < inputs.size(); ++i)
      if (overlaps(outputs[o], inputs[i]))
        return refuse("input " + std::to_string(i), inputs[i]);
    for (size_t p = 0; p < o; ++p)
      if (overlaps(outputs[o], outputs[p]))
        return refuse("output " + std::to_string(p), outputs[p]);
  }
  return Status::success();
}

Status Module::checkBindings(Span<BufferRef> inputs,
                             Span<BufferRef> outputs) const {
  FUSEC_RETURN_IF_ERROR(checkSide(plan_, "input", plan_.inputs, inputs));
  FUSEC_RETURN_IF_ERROR(checkSide(plan_, "output", plan_.outputs, outputs));
  return checkOverlaps(inputs, outputs);
}

size_t Module::workspaceCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return workspaces_.size();
}

size_t Module::maxWorkspaces() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return maxWorkspaces_;
}

void Module::setMaxWorkspaces(size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  maxWorkspaces_ = std::max<size_t>(count, 1);
}

Status Module::acquireWorkspace(Stream stream, Workspace *&workspace) {
  const DriverApi &api = device_->api();
  CUstream cuStream = static_cast<CUstream>(stream);
  workspace = nullptr;
  // In order of preference: the one this stream used last (its runs are
  // ordered anyway, and its tensor maps stay encoded), one whose last run
  // has finished, a new one, and last the least recently used.
  Workspace *idle = nullptr, *oldest = nullptr;
  for (Workspace &w : workspaces_) {
    if (w.lastRun && w.stream == stream) {
      workspace = &w;
      break;
    }
    if (!oldest || w.lastRun < oldest->lastRun)
      oldest = &w;
    if (idle)
      continue;
    CUresult result = w.lastRun ? api.cuEventQuery(static_cast<CUevent>(w.done))
                                : CUDA_SUCCESS;
    if (result == CUDA_SUCCESS)
      idle = &w;
    else if (result != CUDA_ERROR_NOT_READY)
      return driverError(api, result, "cuEventQuery",
                         sourceName_ + ": asking whether a run has finished");
  }
  if (!workspace)
    workspace = idle;
  if (!workspace && workspaces_.size() < maxWorkspaces_) {
    Workspace fresh;
    Status status = allocateWorkspace(fresh);
    if (status) {
      workspaces_.push_back(fresh);
      workspace = &workspaces_.back();
      return Status::success();
    }
    // Out of memory for another: share an existing one, in order.
    if (fresh.base)
      (void)api.cuMemFree(fresh.base);
    if (fresh.done)
      (void)api.cuEventDestroy(static_cast<CUevent>(fresh.done));
    if (workspaces_.empty())
      return status;
  }
  if (!workspace)
    workspace = oldest;
  // Ordered after the workspace's last run. On its own stream this costs
  // nothing and keeps a destroyed stream's pending work from racing a new
  // stream that got the same handle.
  if (workspace->lastRun)
    FUSEC_CU_CHECK(api, cuStreamWaitEvent,
                   (cuStream, static_cast<CUevent>(workspace->done), 0),
                   sourceName_ + ": ordering a run after the last run that "
                                 "used its workspace");
  return Status::success();
}

Status Module::run(Stream stream, Span<BufferRef> inputs,
                   Span<BufferRef> outputs) {
  FUSEC_RETURN_IF_ERROR(checkBindings(inputs, outputs));
  const DriverApi &api = device_->api();
  CUstream cuStream = static_cast<CUstream>(stream);
  FUSEC_RETURN_IF_ERROR(device_->makeCurrent());
  std::lock_guard<std::mutex> lock(mutex_);
  if (!workspaceBytes_)
    return enqueue(stream, inputs, outputs, 0);

  // A captured run gets intermediates that the CUDA graph allocates and
  // frees itself: its replays then never share them with other runs, and
  // the memory lives as long as the graph.
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  FUSEC_CU_CHECK(api, cuStreamIsCapturing, (cuStream, &capture),
                 sourceName_ + ": asking whether the stream is being "
                               "captured into a CUDA graph");
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    CUdeviceptr base = 0;
    FUSEC_CU_CHECK(api, cuMemAllocAsync, (&base, workspaceBytes_, cuStream),
                   sourceName_ + ": allocating " +
                       bytesString(workspaceBytes_) +
                       " of intermediates inside the CUDA graph being "
                       "captured (or pass a workspace to run())");
    Status status = enqueue(stream, inputs, outputs, base);
    CUresult freed = api.cuMemFreeAsync(base, cuStream);
    FUSEC_RETURN_IF_ERROR(status);
    return check(api, freed, "cuMemFreeAsync",
                 sourceName_ + ": freeing the intermediates inside the CUDA "
                               "graph being captured");
  }

  // Event queries and allocations are unsafe calls in another thread's
  // capture; launches on this stream, which is not captured, are not.
  RelaxedCaptureMode relaxed(api);
  Workspace *workspace = nullptr;
  FUSEC_RETURN_IF_ERROR(acquireWorkspace(stream, workspace));
  Status status = enqueue(stream, inputs, outputs, workspace->base);
  // Recorded even when a step failed to enqueue: those before it may run.
  workspace->stream = stream;
  workspace->lastRun = ++runs_;
  CUresult recorded =
      api.cuEventRecord(static_cast<CUevent>(workspace->done), cuStream);
  FUSEC_RETURN_IF_ERROR(status);
  return check(api, recorded, "cuEventRecord",
               sourceName_ + ": recording the end of a run");
}

Status Module::run(Stream stream, Span<BufferRef> inputs,
                   Span<BufferRef> outputs, BufferRef workspace) {
  FUSEC_RETURN_IF_ERROR(checkBindings(inputs, outputs));
  if (workspace.bytes < workspaceBytes_)
    return Status::error(StatusCode::InvalidArgument,
                         "the workspace has " + bytesString(workspace.bytes) +
                             ", the plan needs " +
                             bytesString(workspaceBytes_));
  if (workspaceBytes_ && !workspace.ptr)
    return Status::error(StatusCode::InvalidArgument,
                         "the workspace is a null device pointer: allocate " +
                             bytesString(workspaceBytes_) + " for it");
  if (workspace.ptr % kWorkspaceAlignment)
    return Status::error(StatusCode::InvalidArgument,
                         "the workspace at 0x" + hexString(workspace.ptr) +
                             " is not " + std::to_string(kWorkspaceAlignment) +
                             "-byte aligned");
  BufferRef used{workspace.ptr, workspaceBytes_};
  for (size_t i = 0; i < inputs.size() + outputs.size(); ++i) {
    bool input = i < inputs.size();
    const BufferRef &ref = input ? inputs[i] : outputs[i - inputs.size()];
    if (overlaps(used, ref))
      return Status::error(
          StatusCode::InvalidArgument,
          "the workspace " + rangeString(used) + " overlaps " +
              (input ? "input " + std::to_string(i)
                     : "output " + std::to_string(i - inputs.size())) +
              " " + rangeString(ref) +
              ": pass a workspace that shares no memory with them");
  }
  FUSEC_RETURN_IF_ERROR(device_->makeCurrent());
  std::lock_guard<std::mutex> lock(mutex_);
  return enqueue(stream, inputs, outputs, workspace.ptr);
}

Status Module::enqueue(Stream stream, Span<BufferRef> inputs,
                       Span<BufferRef> outputs, DevicePtr workspace) {
  // The address of every buffer id for this run.
  std::vector<CUdeviceptr> addresses(plan_.buffers.size(), 0);
  for (const BufferDesc &buffer : plan_.buffers)
    if (buffer.role == BufferRole::Intermediate && buffer.bytes)
      addresses[buffer.id] = workspace + workspaceOffsets_[buffer.id];
  for (size_t i = 0; i < plan_.inputs.size(); ++i)
    addresses[plan_.inputs[i]] = inputs[i].ptr;
  for (size_t i = 0; i < plan_.outputs.size(); ++i)
    addresses[plan_.outputs[i]] = outputs[i].ptr;

  const DriverApi &api = device_->api();
  CUstream cuStream = static_cast<CUstream>(stream);
  std::vector<CUdeviceptr> argValues;
  std::vector<void *> params;
  size_t nextMap = 0;
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    const Step &step = plan_.steps[i];
    // Built only for an error message.
    auto stepName = [&] {
      return sourceName_ + ": steps[" + std::to_string(i) + "]";
    };
    if (step.kind == Step::Kind::Copy) {
      if (!step.bytes)
        continue;
      FUSEC_CU_CHECK(
          api, cuMemcpyDtoDAsync,
          (addresses[step.dst], addresses[step.src], step.bytes, cuStream),
          stepName() + ": copying " + bytesString(step.bytes) +
              " from buffer " + std::to_string(step.src) + " to buffer " +
              std::to_string(step.dst));
      continue;
    }
    // cuLaunchKernel takes one pointer per kernel parameter, pointing at the
    // parameter's value: here each value is a CUdeviceptr. Both vectors are
    // sized before any pointer into argValues is taken.
    argValues.assign(step.args.size(), 0);
    params.assign(step.args.size(), nullptr);
    for (size_t a = 0; a < step.args.size(); ++a) {
      argValues[a] = addresses[step.args[a]];
      params[a] = &argValues[a];
    }
    // Tensor-map parameters: 128 bytes each, encoded for this run's
    // address of their buffer (again only when it moved).
    for (const TensorMapDesc &desc : step.tensorMaps) {
      size_t slot = nextMap++;
      CUdeviceptr address = addresses[step.args[desc.param]] + desc.offset;
      auto *map = reinterpret_cast<CUtensorMap *>(&tensorMaps_[slot]);
      params[desc.param] = map;
      if (tensorMapAddresses_[slot] == address)
        continue;
      const BufferDesc &buffer = plan_.buffers[step.args[desc.param]];
      CUtensorMapDataType type = buffer.dtype == DType::F32
                                     ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                 : buffer.dtype == DType::F16
                                     ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                     : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
      std::vector<cuuint64_t> dims(desc.dims.begin(), desc.dims.end());
      std::vector<cuuint64_t> strides(desc.strides.begin(), desc.strides.end());
      std::vector<cuuint32_t> box(desc.box.begin(), desc.box.end());
      std::vector<cuuint32_t> elementStrides(dims.size(), 1);
      // Swizzle modes NONE, 32B, 64B, 128B are 0..3.
      CUtensorMapSwizzle swizzle =
          desc.swizzle == 0 ? CU_TENSOR_MAP_SWIZZLE_NONE
                            : desc.swizzle == 32 ? 1 : desc.swizzle == 64 ? 2 : 3;
      tensorMapAddresses_[slot] = 0;
      std::string doing =
          stepName() + ": encoding the tensor map of parameter " +
          std::to_string(desc.param) + " of kernel '" + step.kernel +
          "' over buffer " + std::to_string(step.args[desc.param]) +
          " at address 0x" + hexString(address) +
          " (TMA needs 16-byte aligned buffers)";
      auto rank = static_cast<cuuint32_t>(dims.size());
      void *base = reinterpret_cast<void *>(address);
      if (desc.im2col) {
        FUSEC_CU_CHECK(api, cuTensorMapEncodeIm2col,
                       (map, type, rank, base, dims.data(), strides.data(),
                        desc.lower.data(), desc.upper.data(), box[0], box[1],
                        elementStrides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE,
                        swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                       doing);
      } else {
        FUSEC_CU_CHECK(api, cuTensorMapEncodeTiled,
                       (map, type, rank, base, dims.data(), strides.data(),
                        box.data(), elementStrides.data(),
                        CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                       doing);
      }
      tensorMapAddresses_[slot] = address;
    }
    FUSEC_CU_CHECK(api, cuLaunchKernel,
                   (static_cast<CUfunction>(stepFunctions_[i]), step.grid[0],
                    step.grid[1], step.grid[2], step.block[0], step.block[1],
                    step.block[2], step.sharedBytes, cuStream,
                    params.empty() ? nullptr : params.data(), nullptr),
                   stepName() + ": launching kernel '" + step.kernel +
                       "' with grid " + dim3String(step.grid) + ", block " +
                       dim3String(step.block) + " and " +
                       bytesString(step.sharedBytes) + " of shared memory");
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

Status TrainingModule::load(std::shared_ptr<Device> device,
                            const std::string &artifact,
                            std::unique_ptr<TrainingModule> &module,
                            const std::string &sourceName) {
  module.reset();
  std::unique_ptr<TrainingModule> m(new TrainingModule());
  m->device_ = device;
  FUSEC_RETURN_IF_ERROR(parseTrainingArtifact(artifact, m->plan_, sourceName));
  FUSEC_RETURN_IF_ERROR(Module::load(device, artifact, m->plan_.forward,
                                     m->forward_, sourceName + " (forward)"));
  FUSEC_RETURN_IF_ERROR(Module::load(device, artifact, m->plan_.backward,
                                     m->backward_, sourceName + " (backward)"));
  module = std::move(m);
  return Status::success();
}

Status TrainingModule::loadFile(std::shared_ptr<Device> device,
                                const std::string &path,
                                std::unique_ptr<TrainingModule> &module) {
  std::string text;
  FUSEC_RETURN_IF_ERROR(readFile(path, text));
  return load(std::move(device), text, module, path);
}

uint64_t TrainingModule::savedBytes() const {
  uint64_t bytes = 0;
  for (size_t i = numResults(); i < plan_.forward.outputs.size(); ++i)
    bytes += plan_.forward.output(i).bytes;
  return bytes;
}

Status TrainingStep::create(const TrainingModule &module,
                            std::unique_ptr<TrainingStep> &step) {
  step.reset();
  std::unique_ptr<TrainingStep> s(new TrainingStep());
  s->module_ = &module;
  const Plan &fwd = module.plan().forward;
  for (size_t i = module.numResults(); i < fwd.outputs.size(); ++i) {
    DeviceBuffer buffer;
    FUSEC_RETURN_IF_ERROR(
        DeviceBuffer::allocate(module.device_, fwd.output(i).bytes, buffer)
            .withContext("allocating saved tensor " +
                         std::to_string(i - module.numResults()) + " (" +
                         fwd.output(i).typeString() + ")"));
    s->saved_.push_back(std::move(buffer));
  }
  step = std::move(s);
  return Status::success();
}

/// Checks `given` against the plan buffers they stand for, naming each as
/// `what` i and the value it is the buffer of.
static Status checkTrainingBuffers(const char *call, const char *what,
                                   const std::vector<const BufferDesc *> &descs,
                                   const std::vector<std::string> &names,
                                   Span<BufferRef> given) {
  if (given.size() != descs.size())
    return Status::error(StatusCode::InvalidArgument,
                         std::string(call) + ": expected " +
                             std::to_string(descs.size()) + " " + what +
                             (descs.size() == 1 ? "" : "s") + ", got " +
                             std::to_string(given.size()));
  for (size_t i = 0; i < descs.size(); ++i)
    if (given[i].bytes != descs[i]->bytes)
      return Status::error(
          StatusCode::InvalidArgument,
          std::string(call) + ": " + what + " " + std::to_string(i) + names[i] +
              " has " + std::to_string(given[i].bytes) +
              " bytes, the plan needs " + std::to_string(descs[i]->bytes) +
              " (" + descs[i]->typeString() + ")");
  return Status::success();
}

Status TrainingStep::forward(Stream stream, Span<BufferRef> args,
                             Span<BufferRef> results) {
  const Plan &fwd = module_->plan().forward;
  std::vector<const BufferDesc *> descs;
  std::vector<std::string> names;
  for (size_t i = 0; i < module_->numArgs(); ++i) {
    descs.push_back(&fwd.input(i));
    names.emplace_back();
  }
  FUSEC_RETURN_IF_ERROR(
      checkTrainingBuffers("forward", "argument", descs, names, args));
  descs.clear();
  for (size_t i = 0; i < module_->numResults(); ++i)
    descs.push_back(&fwd.output(i));
  names.resize(descs.size());
  FUSEC_RETURN_IF_ERROR(
      checkTrainingBuffers("forward", "result", descs, names, results));
  std::vector<BufferRef> outputs(results.begin(), results.end());
  for (const DeviceBuffer &buffer : saved_)
    outputs.push_back(buffer.ref());
  FUSEC_RETURN_IF_ERROR(
      module_->forward().run(stream, args, outputs).withContext("forward"));
  args_.assign(args.begin(), args.end());
  results_.assign(results.begin(), results.end());
  haveForward_ = true;
  return Status::success();
}

Status TrainingStep::backward(Stream stream, Span<BufferRef> resultGrads,
                              Span<BufferRef> argGrads) {
  if (!haveForward_)
    return Status::error(StatusCode::InvalidArgument,
                         "backward: no forward has run on this step; the "
                         "backward reads what the forward saves");
  const Plan &fwd = module_->plan().forward;
  const TrainingDesc &t = module_->plan().backward.training;
  std::vector<const BufferDesc *> descs;
  std::vector<std::string> names;
  for (int64_t r : t.gradResults) {
    descs.push_back(&fwd.output(r));
    names.push_back(" (of result " + std::to_string(r) + ")");
  }
  FUSEC_RETURN_IF_ERROR(checkTrainingBuffers("backward", "result gradient",
                                             descs, names, resultGrads));
  descs.clear();
  names.clear();
  for (int64_t a : t.wrt) {
    descs.push_back(&fwd.input(a));
    names.push_back(" (of argument " + std::to_string(a) + ")");
  }
  FUSEC_RETURN_IF_ERROR(checkTrainingBuffers("backward", "argument gradient",
                                             descs, names, argGrads));
  std::vector<BufferRef> inputs;
  for (int64_t a : t.forwardArgs)
    inputs.push_back(args_[a]);
  for (int64_t r : t.forwardResults)
    inputs.push_back(results_[r]);
  for (const DeviceBuffer &buffer : saved_)
    inputs.push_back(buffer.ref());
  inputs.insert(inputs.end(), resultGrads.begin(), resultGrads.end());
  return module_->backward()
      .run(stream, inputs, argGrads)
      .withContext("backward");
}
