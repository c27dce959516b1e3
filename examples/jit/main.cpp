// Builds conv 3x3 + batch norm + ReLU with fusec's graph builder, compiles
// it (through the kernel cache), and, where there is a GPU, runs it on
// device buffers and compares the result with the reference interpreter.
#include "fusec/JIT.h"
#include "fusec/runtime/Runtime.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace fusec;

int main() {
  jit::GraphBuilder g("conv_bn_relu");
  auto x = g.input({1, 28, 28, 32}, jit::DType::F32);
  auto w = g.input({32, 3, 3, 32}, jit::DType::F32);
  std::vector<jit::Tensor> bn;
  for (int i = 0; i < 4; ++i)
    bn.push_back(g.input({32}, jit::DType::F32));
  jit::Conv2dOptions conv;
  conv.padding = {1, 1};
  g.output(g.relu(g.batchNorm(g.conv2d(x, w, conv), bn[0], bn[1], bn[2], bn[3])));

  // Compile for the GPU there is, else for sm_90.
  std::shared_ptr<runtime::Device> device;
  runtime::Status opened = runtime::Device::open(0, device);
  jit::Options options;
  if (opened)
    options.arch = device->arch();
  jit::Result compiled = jit::compile(g, options);
  if (!compiled.ok()) {
    std::fprintf(stderr, "%s\n", compiled.error.c_str());
    return 1;
  }
  const char *source[] = {"compiled", "memory cache", "disk cache"};
  std::printf("%s for %s in %.1f ms (%s)\n", "conv_bn_relu",
              options.arch.c_str(), compiled.milliseconds,
              source[static_cast<int>(compiled.source)]);
  if (!opened) {
    std::printf("no GPU (%s): compiled only\n", opened.message().c_str());
    return 0;
  }

  std::unique_ptr<runtime::Module> module;
  runtime::Status status =
      runtime::Module::load(device, compiled.artifact, module, "conv_bn_relu");
  // Inputs: a fixed pattern, variances (input 3) positive; every buffer is
  // f32 here.
  const runtime::Plan &plan = module->plan();
  std::vector<jit::HostTensor> hostInputs;
  std::vector<runtime::DeviceBuffer> buffers(plan.inputs.size() +
                                             plan.outputs.size());
  std::vector<runtime::BufferRef> inputs, outputs;
  for (size_t i = 0; status && i < buffers.size(); ++i) {
    bool isInput = i < plan.inputs.size();
    const runtime::BufferDesc &desc =
        isInput ? plan.input(i) : plan.output(i - plan.inputs.size());
    status = runtime::DeviceBuffer::allocate(device, desc.bytes, buffers[i]);
    if (status && isInput) {
      std::vector<float> values(desc.bytes / sizeof(float));
      for (size_t j = 0; j < values.size(); ++j) {
        float v = std::sin(0.37f * j + i);
        values[j] = i == 3 ? 1 + v * v : v;
      }
      status =
          device->copyToDevice(buffers[i].ptr(), values.data(), desc.bytes);
      hostInputs.push_back({desc.shape, jit::DType::F32,
                            std::vector<double>(values.begin(), values.end())});
    }
    (isInput ? inputs : outputs).push_back(buffers[i].ref());
  }
  if (status)
    status = module->run(nullptr, inputs, outputs);
  std::vector<float> y(outputs.empty() ? 0 : outputs[0].bytes / sizeof(float));
  if (status)
    status = device->copyToHost(y.data(), outputs[0].ptr, outputs[0].bytes);
  if (!status) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  jit::Evaluation reference = jit::evaluate(g.mlir(), hostInputs);
  if (!reference.ok()) {
    std::fprintf(stderr, "%s\n", reference.error.c_str());
    return 1;
  }
  double error = jit::relativeError(std::vector<double>(y.begin(), y.end()),
                                    reference.outputs[0].data);
  bool ok = error <= jit::tolerance(jit::DType::F32);
  std::printf("ran on %s: relative error against the reference %.2e (%s)\n",
              device->describe().c_str(), error, ok ? "ok" : "too large");
  return ok ? 0 : 1;
}
