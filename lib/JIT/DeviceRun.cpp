//===- DeviceRun.cpp - Checking and timing artifacts on a GPU -------------===//
//
// The GPU half of `fusec run` and `fusec tune`, as a library: host tensors
// in, through the runtime, host tensors out. It uses the runtime's public
// API alone, as any host program would.
//
//===----------------------------------------------------------------------===//

#include "fusec/JIT.h"

#include "fusec/Support/Float16.h"
#include "fusec/runtime/Runtime.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"

#include <chrono>
#include <thread>

using namespace fusec;
using namespace fusec::jit;
namespace rt = fusec::runtime;

// HostTensor's dtype is the plan's, cast.
static_assert(static_cast<int>(DType::F16) ==
                  static_cast<int>(rt::DType::F16) &&
              static_cast<int>(DType::BF16) ==
                  static_cast<int>(rt::DType::BF16));

namespace {
FloatFormat formatOf(rt::DType dtype) {
  switch (dtype) {
  case rt::DType::F32:
    return FloatFormat::F32;
  case rt::DType::F16:
    return FloatFormat::F16;
  case rt::DType::BF16:
    return FloatFormat::BF16;
  }
  llvm_unreachable("unknown dtype");
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text;
  for (int64_t d : shape)
    text += (text.empty() ? "" : ",") + std::to_string(d);
  return "[" + text + "]";
}
} // namespace

struct DeviceRun::Impl {
  std::shared_ptr<rt::Device> gpu;
  std::vector<rt::DeviceBuffer> buffers;
  std::vector<rt::BufferRef> in, out;
  std::vector<rt::BufferDesc> results;
};

DeviceRun::DeviceRun() : impl(std::make_unique<Impl>()) {}
DeviceRun::~DeviceRun() = default;

std::unique_ptr<DeviceRun>
DeviceRun::create(std::shared_ptr<rt::Device> gpu, const rt::Plan &plan,
                  const std::vector<HostTensor> &inputs, std::string &error) {
  if (inputs.size() != plan.inputs.size()) {
    error = "the graph takes " + std::to_string(plan.inputs.size()) +
            " inputs, " + std::to_string(inputs.size()) + " were given";
    return nullptr;
  }
  std::unique_ptr<DeviceRun> run(new DeviceRun());
  Impl &g = *run->impl;
  g.gpu = std::move(gpu);
  auto allocate = [&](uint64_t bytes) {
    g.buffers.emplace_back();
    rt::Status status =
        rt::DeviceBuffer::allocate(g.gpu, bytes, g.buffers.back());
    if (!status.isOk())
      error = status.message();
    return status.isOk();
  };
  for (auto [i, t] : llvm::enumerate(inputs)) {
    const rt::BufferDesc &desc = plan.input(i);
    if (t.shape != desc.shape) {
      error = "input " + std::to_string(i) + " has shape " +
              shapeString(t.shape) + ", the graph takes " + desc.typeString();
      return nullptr;
    }
    if (t.data.size() != static_cast<size_t>(desc.numel())) {
      error = "input " + std::to_string(i) + " holds " +
              std::to_string(t.data.size()) + " values, its shape " +
              std::to_string(desc.numel());
      return nullptr;
    }
    std::vector<uint8_t> bytes;
    std::vector<double> values = t.data;
    encodeFloats(values, formatOf(desc.dtype), bytes);
    if (!allocate(bytes.size()))
      return nullptr;
    if (rt::Status status = g.gpu->copyToDevice(g.buffers.back().ptr(),
                                                bytes.data(), bytes.size());
        !status.isOk()) {
      error = status.message();
      return nullptr;
    }
    g.in.push_back(g.buffers.back().ref());
  }
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    g.results.push_back(plan.output(i));
    if (!allocate(plan.output(i).bytes))
      return nullptr;
    g.out.push_back(g.buffers.back().ref());
  }
  return run;
}

Evaluation DeviceRun::run(rt::Module &module) {
  Impl &g = *impl;
  Evaluation result;
  auto failed = [&](const rt::Status &status) {
    if (!status.isOk())
      result.error = status.message();
    return !status.isOk();
  };
  for (const rt::BufferRef &ref : g.out)
    if (failed(g.gpu->fill(ref.ptr, 0xFF, ref.bytes)))
      return result;
  if (failed(module.run(nullptr, g.in, g.out)) ||
      failed(g.gpu->synchronize()))
    return result;
  for (auto [ref, desc] : llvm::zip_equal(g.out, g.results)) {
    std::vector<uint8_t> bytes(ref.bytes);
    if (failed(g.gpu->copyToHost(bytes.data(), ref.ptr, ref.bytes))) {
      result.outputs.clear();
      return result;
    }
    HostTensor t;
    t.shape = desc.shape;
    t.dtype = static_cast<DType>(desc.dtype);
    decodeFloats(bytes.data(), desc.numel(), formatOf(desc.dtype), t.data);
    result.outputs.push_back(std::move(t));
  }
  return result;
}

double DeviceRun::time(rt::Module &module, unsigned repeat,
                       std::string &error) {
  Impl &g = *impl;
  auto failed = [&](const rt::Status &status) {
    if (!status.isOk())
      error = status.message();
    return !status.isOk();
  };
  rt::Event start = nullptr, end = nullptr;
  llvm::scope_exit cleanup([&] {
    if (start)
      (void)g.gpu->destroyEvent(start);
    if (end)
      (void)g.gpu->destroyEvent(end);
  });
  if (failed(g.gpu->createEvent(start)) || failed(g.gpu->createEvent(end)))
    return -1;
  // An idle moment first: a power-limited GPU lowers its clocks under load,
  // and each configuration should start from the same state, not from the
  // heat of the one timed before it.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (int warm = 0; warm < 2; ++warm)
    if (failed(module.run(nullptr, g.in, g.out)))
      return -1;
  std::vector<double> times;
  for (int round = 0; round < 5; ++round) {
    if (failed(g.gpu->recordEvent(start)))
      return -1;
    for (unsigned r = 0; r < repeat; ++r)
      if (failed(module.run(nullptr, g.in, g.out)))
        return -1;
    float ms = 0;
    if (failed(g.gpu->recordEvent(end)) || failed(g.gpu->synchronize()) ||
        failed(g.gpu->elapsedMs(start, end, ms)))
      return -1;
    times.push_back(ms / repeat);
  }
  llvm::sort(times);
  return times[times.size() / 2];
}

Evaluation fusec::jit::run(const std::string &artifact,
                           const std::vector<HostTensor> &inputs, int device,
                           const std::string &name) {
  Evaluation result;
  std::shared_ptr<rt::Device> gpu;
  std::unique_ptr<rt::Module> module;
  if (rt::Status status = rt::Device::open(device, gpu); !status.isOk()) {
    result.error = status.message();
    return result;
  }
  if (rt::Status status = rt::Module::load(gpu, artifact, module, name);
      !status.isOk()) {
    result.error = status.message();
    return result;
  }
  std::unique_ptr<DeviceRun> buffers =
      DeviceRun::create(gpu, module->plan(), inputs, result.error);
  if (!buffers)
    return result;
  return buffers->run(*module);
}

TrainingEvaluation
fusec::jit::runTraining(const std::string &artifact,
                        const std::vector<HostTensor> &inputs,
                        const std::vector<HostTensor> &resultGrads, int device,
                        const std::string &name) {
  TrainingEvaluation result;
  auto failed = [&](const rt::Status &status) {
    if (!status.isOk())
      result.error = status.message();
    return !status.isOk();
  };
  std::shared_ptr<rt::Device> gpu;
  std::unique_ptr<rt::TrainingModule> module;
  std::unique_ptr<rt::TrainingStep> step;
  if (failed(rt::Device::open(device, gpu)) ||
      failed(rt::TrainingModule::load(gpu, artifact, module, name)) ||
      failed(rt::TrainingStep::create(*module, step)))
    return result;
  const rt::Plan &fwd = module->plan().forward;
  std::vector<rt::DeviceBuffer> buffers;
  // Uploads `t`, rounded to `desc`'s dtype, into a new buffer.
  auto upload = [&](const HostTensor &t, const rt::BufferDesc &desc,
                    const std::string &what, rt::BufferRef &ref) {
    if (t.shape != desc.shape ||
        t.data.size() != static_cast<size_t>(desc.numel())) {
      result.error = what + " has shape " + shapeString(t.shape) + " (" +
                     std::to_string(t.data.size()) + " values), the graph " +
                     "takes " + desc.typeString();
      return false;
    }
    std::vector<uint8_t> bytes;
    std::vector<double> values = t.data;
    encodeFloats(values, formatOf(desc.dtype), bytes);
    buffers.emplace_back();
    if (failed(rt::DeviceBuffer::allocate(gpu, bytes.size(), buffers.back())) ||
        failed(gpu->copyToDevice(buffers.back().ptr(), bytes.data(),
                                 bytes.size())))
      return false;
    ref = buffers.back().ref();
    return true;
  };
  // Allocates an output, NaN-filled so that a value left unwritten shows.
  auto output = [&](const rt::BufferDesc &desc, rt::BufferRef &ref) {
    buffers.emplace_back();
    if (failed(rt::DeviceBuffer::allocate(gpu, desc.bytes, buffers.back())) ||
        failed(gpu->fill(buffers.back().ptr(), 0xFF, desc.bytes)))
      return false;
    ref = buffers.back().ref();
    return true;
  };
  auto download = [&](const rt::BufferRef &ref, const rt::BufferDesc &desc,
                      std::vector<HostTensor> &into) {
    std::vector<uint8_t> bytes(ref.bytes);
    if (failed(gpu->copyToHost(bytes.data(), ref.ptr, ref.bytes)))
      return false;
    HostTensor t;
    t.shape = desc.shape;
    t.dtype = static_cast<DType>(desc.dtype);
    decodeFloats(bytes.data(), desc.numel(), formatOf(desc.dtype), t.data);
    into.push_back(std::move(t));
    return true;
  };
  if (inputs.size() != module->numArgs() ||
      resultGrads.size() != module->numResults()) {
    result.error = "the graph takes " + std::to_string(module->numArgs()) +
                   " inputs and " + std::to_string(module->numResults()) +
                   " result gradients, " + std::to_string(inputs.size()) +
                   " and " + std::to_string(resultGrads.size()) + " were given";
    return result;
  }
  std::vector<rt::BufferRef> args(inputs.size()), results(module->numResults());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!upload(inputs[i], fwd.input(i), "input " + std::to_string(i), args[i]))
      return result;
  for (size_t i = 0; i < results.size(); ++i)
    if (!output(fwd.output(i), results[i]))
      return result;
  std::vector<rt::BufferRef> grads, argGrads(module->wrt().size());
  for (int64_t r : module->gradResults()) {
    grads.emplace_back();
    if (!upload(resultGrads[r], fwd.output(r),
                "result gradient " + std::to_string(r), grads.back()))
      return result;
  }
  for (size_t i = 0; i < argGrads.size(); ++i)
    if (!output(fwd.input(module->wrt()[i]), argGrads[i]))
      return result;
  if (failed(step->forward(nullptr, args, results)) ||
      failed(step->backward(nullptr, grads, argGrads)) ||
      failed(gpu->synchronize()))
    return result;
  for (size_t i = 0; i < results.size(); ++i)
    if (!download(results[i], fwd.output(i), result.outputs))
      return result;
  for (size_t i = 0; i < step->saved().size(); ++i)
    if (!download(step->saved()[i].ref(), fwd.output(module->numResults() + i),
                  result.saved))
      return result;
  for (size_t i = 0; i < argGrads.size(); ++i)
    if (!download(argGrads[i], fwd.input(module->wrt()[i]), result.gradients))
      return result;
  result.wrt = module->wrt();
  result.gradResults = module->gradResults();
  return result;
}
