//===- CApi.cpp - The C API over the C++ runtime --------------------------===//
//
// Handles own shared/unique pointers to the C++ objects; every failure is
// stored per thread for fusec_last_error_message(). No exception crosses
// the C boundary: the C++ API reports through Status, and the few standard
// library calls that may throw (allocation) are caught here.
//
//===----------------------------------------------------------------------===//

#include "fusec/runtime/fusec_runtime.h"
#include "fusec/runtime/Runtime.h"

#include "CudaDriver.h"

#include <cstddef>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

using namespace fusec::runtime;

struct fusec_device {
  std::shared_ptr<Device> device;
};

struct fusec_module {
  /// Null for the plans of a training module, which owns them
  /// (fusec_training_forward_plan): fusec_module_release ignores those.
  std::unique_ptr<Module> owned;
  Module *module = nullptr;
};

struct fusec_training_module {
  std::unique_ptr<TrainingModule> module;
  fusec_module forward, backward;
};

struct fusec_training_step {
  std::unique_ptr<TrainingStep> step;
};

namespace {

thread_local std::string lastError;

fusec_status report(const Status &status) {
  if (status.isOk())
    return FUSEC_OK;
  lastError = status.message();
  return static_cast<fusec_status>(status.code());
}

fusec_status invalidArgument(const char *function, const char *what) {
  return report(Status::error(StatusCode::InvalidArgument,
                              std::string(function) + ": " + what));
}

/// The C handle of a loaded training module, with borrowed handles of its
/// two plans.
fusec_training_module *wrapTraining(std::unique_ptr<TrainingModule> m) {
  auto *handle = new fusec_training_module{std::move(m), {}, {}};
  handle->forward.module = &handle->module->forward();
  handle->backward.module = &handle->module->backward();
  return handle;
}

/// Runs `body`, turning an escaping exception into an error status.
template <typename Body> fusec_status guarded(const char *function, Body body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return report(Status::error(StatusCode::InvalidArgument,
                                std::string(function) +
                                    ": out of host memory"));
  } catch (const std::exception &e) {
    return report(Status::error(StatusCode::InvalidArgument,
                                std::string(function) + ": " + e.what()));
  }
}

fusec_status planBufferInfo(const Plan &plan, size_t index, bool input,
                            fusec_buffer_info *info, const char *function) {
  const std::vector<int64_t> &ids = input ? plan.inputs : plan.outputs;
  if (index >= ids.size())
    return report(Status::error(
        StatusCode::InvalidArgument,
        std::string(function) + ": index " + std::to_string(index) +
            " is out of range: the graph has " + std::to_string(ids.size()) +
            (input ? " inputs" : " outputs")));
  const BufferDesc &desc = plan.buffers[ids[index]];
  info->dtype = static_cast<fusec_dtype>(desc.dtype);
  info->rank = desc.shape.size();
  info->shape = desc.shape.data();
  info->bytes = desc.bytes;
  return FUSEC_OK;
}

fusec_status bufferInfo(const fusec_module *module, size_t index, bool input,
                        fusec_buffer_info *info, const char *function) {
  if (!module || !info)
    return invalidArgument(function, "module and info must not be NULL");
  return planBufferInfo(module->module->plan(), index, input, info, function);
}

} // namespace

static_assert(static_cast<int>(DType::F32) == FUSEC_DTYPE_F32 &&
                  static_cast<int>(DType::F16) == FUSEC_DTYPE_F16 &&
                  static_cast<int>(DType::BF16) == FUSEC_DTYPE_BF16,
              "fusec_dtype must mirror DType");
static_assert(static_cast<int>(StatusCode::DriverError) == FUSEC_ERROR_DRIVER &&
                  static_cast<int>(StatusCode::CompileError) ==
                      FUSEC_ERROR_COMPILE,
              "fusec_status must mirror StatusCode");

extern "C" {

const char *fusec_status_name(fusec_status status) {
  switch (status) {
  case FUSEC_OK:
    return "FUSEC_OK";
  case FUSEC_ERROR_INVALID_ARGUMENT:
    return "FUSEC_ERROR_INVALID_ARGUMENT";
  case FUSEC_ERROR_IO:
    return "FUSEC_ERROR_IO";
  case FUSEC_ERROR_INVALID_ARTIFACT:
    return "FUSEC_ERROR_INVALID_ARTIFACT";
  case FUSEC_ERROR_NO_DRIVER:
    return "FUSEC_ERROR_NO_DRIVER";
  case FUSEC_ERROR_NO_DEVICE:
    return "FUSEC_ERROR_NO_DEVICE";
  case FUSEC_ERROR_UNSUPPORTED_DEVICE:
    return "FUSEC_ERROR_UNSUPPORTED_DEVICE";
  case FUSEC_ERROR_DRIVER:
    return "FUSEC_ERROR_DRIVER";
  case FUSEC_ERROR_NO_COMPILER:
    return "FUSEC_ERROR_NO_COMPILER";
  case FUSEC_ERROR_COMPILE:
    return "FUSEC_ERROR_COMPILE";
  }
  return "FUSEC_ERROR_UNKNOWN";
}

const char *fusec_last_error_message(void) { return lastError.c_str(); }

fusec_status fusec_device_count(int *count) {
  if (!count)
    return invalidArgument("fusec_device_count", "count must not be NULL");
  return guarded("fusec_device_count",
                 [&] { return report(Device::count(*count)); });
}

fusec_status fusec_device_open(int ordinal, fusec_device **device) {
  if (!device)
    return invalidArgument("fusec_device_open", "device must not be NULL");
  *device = nullptr;
  return guarded("fusec_device_open", [&] {
    std::shared_ptr<Device> d;
    fusec_status status = report(Device::open(ordinal, d));
    if (status == FUSEC_OK)
      *device = new fusec_device{std::move(d)};
    return status;
  });
}

void fusec_device_release(fusec_device *device) { delete device; }

const char *fusec_device_name(const fusec_device *device) {
  return device ? device->device->name().c_str() : "";
}

void fusec_device_compute_capability(const fusec_device *device, int *major,
                                     int *minor) {
  if (major)
    *major = device ? device->device->computeCapabilityMajor() : 0;
  if (minor)
    *minor = device ? device->device->computeCapabilityMinor() : 0;
}

int fusec_device_multiprocessor_count(const fusec_device *device) {
  return device ? device->device->multiprocessorCount() : 0;
}

fusec_status fusec_device_alloc(fusec_device *device, uint64_t bytes,
                                fusec_device_ptr *ptr) {
  if (!device || !ptr)
    return invalidArgument("fusec_device_alloc",
                           "device and ptr must not be NULL");
  return guarded("fusec_device_alloc", [&] {
    return report(device->device->allocate(bytes, *ptr));
  });
}

fusec_status fusec_device_free(fusec_device *device, fusec_device_ptr ptr) {
  if (!device)
    return invalidArgument("fusec_device_free", "device must not be NULL");
  return guarded("fusec_device_free",
                 [&] { return report(device->device->free(ptr)); });
}

fusec_status fusec_device_copy_to_device(fusec_device *device,
                                         fusec_device_ptr dst, const void *src,
                                         uint64_t bytes) {
  if (!device || (!src && bytes))
    return invalidArgument("fusec_device_copy_to_device",
                           "device and src must not be NULL");
  return guarded("fusec_device_copy_to_device", [&] {
    return report(device->device->copyToDevice(dst, src, bytes));
  });
}

fusec_status fusec_device_copy_to_host(fusec_device *device, void *dst,
                                       fusec_device_ptr src, uint64_t bytes) {
  if (!device || (!dst && bytes))
    return invalidArgument("fusec_device_copy_to_host",
                           "device and dst must not be NULL");
  return guarded("fusec_device_copy_to_host", [&] {
    return report(device->device->copyToHost(dst, src, bytes));
  });
}

fusec_status fusec_device_synchronize(fusec_device *device,
                                      fusec_stream stream) {
  if (!device)
    return invalidArgument("fusec_device_synchronize",
                           "device must not be NULL");
  return guarded("fusec_device_synchronize",
                 [&] { return report(device->device->synchronize(stream)); });
}

fusec_status fusec_module_load(fusec_device *device, const char *artifact,
                               size_t length, fusec_module **module) {
  if (!module)
    return invalidArgument("fusec_module_load", "module must not be NULL");
  *module = nullptr;
  if (!device || (!artifact && length))
    return invalidArgument("fusec_module_load",
                           "device and artifact must not be NULL");
  return guarded("fusec_module_load", [&] {
    std::unique_ptr<Module> m;
    fusec_status status = report(Module::load(
        device->device, std::string(artifact ? artifact : "", length), m));
    if (status == FUSEC_OK) {
      Module *raw = m.get();
      *module = new fusec_module{std::move(m), raw};
    }
    return status;
  });
}

fusec_status fusec_module_load_file(fusec_device *device, const char *path,
                                    fusec_module **module) {
  if (!module)
    return invalidArgument("fusec_module_load_file",
                           "module must not be NULL");
  *module = nullptr;
  if (!device || !path)
    return invalidArgument("fusec_module_load_file",
                           "device and path must not be NULL");
  return guarded("fusec_module_load_file", [&] {
    std::unique_ptr<Module> m;
    fusec_status status = report(Module::loadFile(device->device, path, m));
    if (status == FUSEC_OK) {
      Module *raw = m.get();
      *module = new fusec_module{std::move(m), raw};
    }
    return status;
  });
}

void fusec_module_release(fusec_module *module) {
  if (module && module->owned)
    delete module;
}

size_t fusec_module_num_inputs(const fusec_module *module) {
  return module ? module->module->plan().inputs.size() : 0;
}

size_t fusec_module_num_outputs(const fusec_module *module) {
  return module ? module->module->plan().outputs.size() : 0;
}

fusec_status fusec_module_input_info(const fusec_module *module, size_t index,
                                     fusec_buffer_info *info) {
  return bufferInfo(module, index, /*input=*/true, info,
                    "fusec_module_input_info");
}

fusec_status fusec_module_output_info(const fusec_module *module, size_t index,
                                      fusec_buffer_info *info) {
  return bufferInfo(module, index, /*input=*/false, info,
                    "fusec_module_output_info");
}

static_assert(sizeof(fusec_buffer) == sizeof(BufferRef) &&
                  offsetof(fusec_buffer, ptr) == offsetof(BufferRef, ptr) &&
                  offsetof(fusec_buffer, bytes) == offsetof(BufferRef, bytes),
              "fusec_buffer must mirror BufferRef");

/// The C arrays as Spans, without copies (fusec_buffer mirrors BufferRef).
static Span<BufferRef> buffers(const fusec_buffer *buffers, size_t count) {
  return {reinterpret_cast<const BufferRef *>(buffers), count};
}

fusec_status fusec_module_run(fusec_module *module, fusec_stream stream,
                              const fusec_buffer *inputs, size_t num_inputs,
                              const fusec_buffer *outputs,
                              size_t num_outputs) {
  if (!module || (!inputs && num_inputs) || (!outputs && num_outputs))
    return invalidArgument("fusec_module_run",
                           "module, inputs and outputs must not be NULL");
  return guarded("fusec_module_run", [&] {
    return report(module->module->run(stream, buffers(inputs, num_inputs),
                                      buffers(outputs, num_outputs)));
  });
}

uint64_t fusec_module_workspace_bytes(const fusec_module *module) {
  return module ? module->module->workspaceBytes() : 0;
}

size_t fusec_module_workspace_count(const fusec_module *module) {
  return module ? module->module->workspaceCount() : 0;
}

void fusec_module_set_max_workspaces(fusec_module *module, size_t count) {
  if (module)
    module->module->setMaxWorkspaces(count);
}

fusec_status
fusec_module_run_with_workspace(fusec_module *module, fusec_stream stream,
                                const fusec_buffer *inputs, size_t num_inputs,
                                const fusec_buffer *outputs, size_t num_outputs,
                                fusec_buffer workspace) {
  if (!module || (!inputs && num_inputs) || (!outputs && num_outputs))
    return invalidArgument("fusec_module_run_with_workspace",
                           "module, inputs and outputs must not be NULL");
  return guarded("fusec_module_run_with_workspace", [&] {
    return report(module->module->run(
        stream, buffers(inputs, num_inputs), buffers(outputs, num_outputs),
        BufferRef{workspace.ptr, workspace.bytes}));
  });
}

fusec_status fusec_pointer_device(fusec_device_ptr ptr, int *ordinal) {
  if (!ordinal)
    return invalidArgument("fusec_pointer_device", "ordinal must not be NULL");
  return guarded("fusec_pointer_device", [&] {
    const detail::DriverApi *api = nullptr;
    fusec_status status = report(detail::loadDriverApi(api));
    if (status != FUSEC_OK)
      return status;
    constexpr int kDeviceOrdinal = 9; // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    int value = -1;
    detail::CUresult result =
        api->cuPointerGetAttribute(&value, kDeviceOrdinal, ptr);
    if (result == detail::CUDA_ERROR_INVALID_VALUE) {
      char address[32];
      std::snprintf(address, sizeof(address), "0x%llx",
                    static_cast<unsigned long long>(ptr));
      return report(Status::error(
          StatusCode::InvalidArgument,
          std::string("fusec_pointer_device: ") + address +
              " is not memory the CUDA driver knows (not a device, managed "
              "or registered host allocation)"));
    }
    status = report(detail::check(*api, result, "cuPointerGetAttribute",
                                  "fusec_pointer_device: cannot find the "
                                  "device of an address"));
    if (status == FUSEC_OK)
      *ordinal = value;
    return status;
  });
}

fusec_status fusec_training_load(fusec_device *device, const char *artifact,
                                 size_t length,
                                 fusec_training_module **module) {
  if (!module)
    return invalidArgument("fusec_training_load", "module must not be NULL");
  *module = nullptr;
  if (!device || (!artifact && length))
    return invalidArgument("fusec_training_load",
                           "device and artifact must not be NULL");
  return guarded("fusec_training_load", [&] {
    std::unique_ptr<TrainingModule> m;
    fusec_status status = report(TrainingModule::load(
        device->device, std::string(artifact ? artifact : "", length), m));
    if (status == FUSEC_OK)
      *module = wrapTraining(std::move(m));
    return status;
  });
}

fusec_status fusec_training_load_file(fusec_device *device, const char *path,
                                      fusec_training_module **module) {
  if (!module)
    return invalidArgument("fusec_training_load_file",
                           "module must not be NULL");
  *module = nullptr;
  if (!device || !path)
    return invalidArgument("fusec_training_load_file",
                           "device and path must not be NULL");
  return guarded("fusec_training_load_file", [&] {
    std::unique_ptr<TrainingModule> m;
    fusec_status status =
        report(TrainingModule::loadFile(device->device, path, m));
    if (status == FUSEC_OK)
      *module = wrapTraining(std::move(m));
    return status;
  });
}

void fusec_training_release(fusec_training_module *module) { delete module; }

size_t fusec_training_num_args(const fusec_training_module *module) {
  return module ? module->module->numArgs() : 0;
}

size_t fusec_training_num_results(const fusec_training_module *module) {
  return module ? module->module->numResults() : 0;
}

fusec_status fusec_training_arg_info(const fusec_training_module *module,
                                     size_t index, fusec_buffer_info *info) {
  if (!module || !info)
    return invalidArgument("fusec_training_arg_info",
                           "module and info must not be NULL");
  return planBufferInfo(module->module->plan().forward, index,
                        /*input=*/true, info, "fusec_training_arg_info");
}

fusec_status fusec_training_result_info(const fusec_training_module *module,
                                        size_t index, fusec_buffer_info *info) {
  if (!module || !info)
    return invalidArgument("fusec_training_result_info",
                           "module and info must not be NULL");
  if (index >= module->module->numResults())
    return report(Status::error(
        StatusCode::InvalidArgument,
        "fusec_training_result_info: index " + std::to_string(index) +
            " is out of range: the graph has " +
            std::to_string(module->module->numResults()) + " results"));
  return planBufferInfo(module->module->plan().forward, index,
                        /*input=*/false, info, "fusec_training_result_info");
}

size_t fusec_training_num_grads(const fusec_training_module *module) {
  return module ? module->module->gradResults().size() : 0;
}

int64_t fusec_training_grad_result(const fusec_training_module *module,
                                   size_t index) {
  if (!module || index >= module->module->gradResults().size())
    return -1;
  return module->module->gradResults()[index];
}

size_t fusec_training_num_wrt(const fusec_training_module *module) {
  return module ? module->module->wrt().size() : 0;
}

int64_t fusec_training_wrt(const fusec_training_module *module, size_t index) {
  if (!module || index >= module->module->wrt().size())
    return -1;
  return module->module->wrt()[index];
}

size_t fusec_training_num_forward_results(const fusec_training_module *module) {
  return module ? module->module->forwardResults().size() : 0;
}

int64_t fusec_training_forward_result(const fusec_training_module *module,
                                      size_t index) {
  if (!module || index >= module->module->forwardResults().size())
    return -1;
  return module->module->forwardResults()[index];
}

size_t fusec_training_num_forward_args(const fusec_training_module *module) {
  return module ? module->module->forwardArgs().size() : 0;
}

int64_t fusec_training_forward_arg(const fusec_training_module *module,
                                   size_t index) {
  if (!module || index >= module->module->forwardArgs().size())
    return -1;
  return module->module->forwardArgs()[index];
}

fusec_module *fusec_training_forward_plan(fusec_training_module *module) {
  return module ? &module->forward : nullptr;
}

fusec_module *fusec_training_backward_plan(fusec_training_module *module) {
  return module ? &module->backward : nullptr;
}

size_t fusec_training_num_saved(const fusec_training_module *module) {
  return module ? module->module->numSaved() : 0;
}

uint64_t fusec_training_saved_bytes(const fusec_training_module *module) {
  return module ? module->module->savedBytes() : 0;
}

fusec_status fusec_training_step_create(fusec_training_module *module,
                                        fusec_training_step **step) {
  if (!step)
    return invalidArgument("fusec_training_step_create",
                           "step must not be NULL");
  *step = nullptr;
  if (!module)
    return invalidArgument("fusec_training_step_create",
                           "module must not be NULL");
  return guarded("fusec_training_step_create", [&] {
    std::unique_ptr<TrainingStep> s;
    fusec_status status = report(TrainingStep::create(*module->module, s));
    if (status == FUSEC_OK)
      *step = new fusec_training_step{std::move(s)};
    return status;
  });
}

void fusec_training_step_release(fusec_training_step *step) { delete step; }

fusec_status
fusec_training_step_forward(fusec_training_step *step, fusec_stream stream,
                            const fusec_buffer *args, size_t num_args,
                            const fusec_buffer *results, size_t num_results) {
  if (!step || (!args && num_args) || (!results && num_results))
    return invalidArgument("fusec_training_step_forward",
                           "step, args and results must not be NULL");
  return guarded("fusec_training_step_forward", [&] {
    return report(step->step->forward(stream, buffers(args, num_args),
                                      buffers(results, num_results)));
  });
}

fusec_status fusec_training_step_backward(
    fusec_training_step *step, fusec_stream stream, const fusec_buffer *grads,
    size_t num_grads, const fusec_buffer *arg_grads, size_t num_arg_grads) {
  if (!step || (!grads && num_grads) || (!arg_grads && num_arg_grads))
    return invalidArgument("fusec_training_step_backward",
                           "step, grads and arg_grads must not be NULL");
  return guarded("fusec_training_step_backward", [&] {
    return report(step->step->backward(stream, buffers(grads, num_grads),
                                       buffers(arg_grads, num_arg_grads)));
  });
}

} // extern "C"
