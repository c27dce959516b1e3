//===- RuntimeTest.cpp - Unit tests for the fusec runtime -----------------===//
//
// Three parts, none of which needs a GPU:
//   - launch plan parsing: a valid plan, and each kind of invalid plan with
//     the message that names its field;
//   - the paths taken on a machine without the NVIDIA driver (C++ and C API);
//   - the launch path, driven through a table of fake driver entry points
//     that record what the runtime asks of the driver: kernel parameters,
//     grid and block sizes, shared memory opt-in, copies, allocations.
//
//===----------------------------------------------------------------------===//

#include "fusec/JIT.h"
#include "fusec/runtime/Runtime.h"
#include "fusec/runtime/fusec_runtime.h"

// Internal: the driver table the fakes fill, and NVRTC.
#include "CudaDriver.h"
#include "Nvrtc.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace fusec::runtime;
using json = nlohmann::json;

namespace {

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

/// The plan of docs/Artifact.md's example: conv into an intermediate, then
/// a kernel and a copy into the output.
json validPlan() {
  return json::parse(R"({
    "format": "fusec-plan", "version": 1, "graph": "resnet_block",
    "target": {"kind": "ptx", "arch": "sm_90"},
    "buffers": [
      {"id": 0, "role": "input", "index": 0, "dtype": "f32",
       "shape": [1, 56, 56, 64], "bytes": 802816},
      {"id": 1, "role": "intermediate", "dtype": "f32",
       "shape": [1, 56, 56, 64], "bytes": 802816},
      {"id": 2, "role": "output", "index": 0, "dtype": "f32",
       "shape": [1, 56, 56, 64], "bytes": 802816}
    ],
    "steps": [
      {"kind": "launch", "kernel": "k0_conv2d", "grid": [98, 1, 1],
       "block": [256, 1, 1], "shared_bytes": 16384, "args": [0, 1, 2]},
      {"kind": "copy", "src": 0, "dst": 2, "bytes": 802816}
    ]
  })");
}

/// The message of parsePlan on `plan`, or "ok".
std::string planError(const json &plan) {
  Plan parsed;
  Status status = parsePlan(plan.dump(), parsed);
  if (status)
    return "ok";
  EXPECT_EQ(status.code(), StatusCode::InvalidArtifact);
  return status.message();
}

/// PTX that defines `kernels`, each taking `arity[kernel]` pointers (1 when
/// not given).
std::string ptxDefining(const std::vector<std::string> &kernels,
                        const std::map<std::string, size_t> &arity = {}) {
  std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n";
  for (const std::string &k : kernels) {
    auto it = arity.find(k);
    size_t n = it == arity.end() ? 1 : it->second;
    ptx += "\n.visible .entry " + k + "(";
    for (size_t i = 0; i < n; ++i)
      ptx += std::string(i ? "," : "") + "\n\t.param .u64 " + k + "_param_" +
             std::to_string(i);
    ptx += "\n)\n{\n\tret;\n}\n";
  }
  return ptx;
}

/// An artifact of `plan` whose PTX defines `kernels`, each with the
/// parameters the plan's steps pass it.
std::string artifactOf(const json &plan,
                       const std::vector<std::string> &kernels) {
  std::map<std::string, size_t> arity;
  for (const json &step : plan["steps"])
    if (step.value("kind", "") == "launch")
      arity[step["kernel"]] = step["args"].size();
  return "// fusec artifact v1\n// fusec-plan: " + plan.dump() + "\n" +
         ptxDefining(kernels, arity);
}

TEST(RuntimePlan, ParsesValidPlan) {
  Plan plan;
  Status status = parsePlan(validPlan().dump(), plan);
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(plan.graph, "resnet_block");
  EXPECT_EQ(plan.targetKind, "ptx");
  EXPECT_EQ(plan.arch, "sm_90");
  EXPECT_EQ(plan.archMajor, 9);
  EXPECT_EQ(plan.archMinor, 0);
  EXPECT_FALSE(plan.archSpecific);
  ASSERT_EQ(plan.buffers.size(), 3u);
  EXPECT_EQ(plan.buffers[1].role, BufferRole::Intermediate);
  EXPECT_EQ(plan.buffers[1].index, -1);
  EXPECT_EQ(plan.buffers[0].shape, (std::vector<int64_t>{1, 56, 56, 64}));
  EXPECT_EQ(plan.buffers[0].numel(), 200704);
  EXPECT_EQ(plan.buffers[0].typeString(), "f32 [1,56,56,64]");
  EXPECT_EQ(plan.inputs, (std::vector<int64_t>{0}));
  EXPECT_EQ(plan.outputs, (std::vector<int64_t>{2}));
  EXPECT_EQ(plan.kernels, (std::vector<std::string>{"k0_conv2d"}));
  ASSERT_EQ(plan.steps.size(), 2u);
  const Step &launch = plan.steps[0];
  EXPECT_EQ(launch.kind, Step::Kind::Launch);
  EXPECT_EQ(launch.kernel, "k0_conv2d");
  EXPECT_EQ(launch.grid, (std::array<uint32_t, 3>{98, 1, 1}));
  EXPECT_EQ(launch.block, (std::array<uint32_t, 3>{256, 1, 1}));
  EXPECT_EQ(launch.sharedBytes, 16384u);
  EXPECT_EQ(launch.args, (std::vector<int64_t>{0, 1, 2}));
  const Step &copy = plan.steps[1];
  EXPECT_EQ(copy.kind, Step::Kind::Copy);
  EXPECT_EQ(copy.src, 0);
  EXPECT_EQ(copy.dst, 2);
  EXPECT_EQ(copy.bytes, 802816u);
}

TEST(RuntimePlan, DTypesIndicesAndArches) {
  json p = validPlan();
  // Listed out of id order; two inputs in reverse index order; f16/bf16.
  p["buffers"] = json::parse(R"([
    {"id": 2, "role": "output", "index": 0, "dtype": "bf16", "shape": [3, 5],
     "bytes": 30},
    {"id": 1, "role": "input", "index": 0, "dtype": "f16", "shape": [],
     "bytes": 2},
    {"id": 0, "role": "input", "index": 1, "dtype": "f32", "shape": [0, 4],
     "bytes": 0}
  ])");
  p["steps"] = json::array();
  p["target"]["arch"] = "sm_90a";
  Plan plan;
  Status status = parsePlan(p.dump(), plan);
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(plan.inputs, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(plan.outputs, (std::vector<int64_t>{2}));
  EXPECT_EQ(plan.buffers[1].dtype, DType::F16);
  EXPECT_EQ(plan.buffers[1].numel(), 1);
  EXPECT_EQ(plan.buffers[2].dtype, DType::BF16);
  EXPECT_TRUE(plan.archSpecific);

  p["target"]["arch"] = "sm_120";
  ASSERT_TRUE(parsePlan(p.dump(), plan));
  EXPECT_EQ(plan.archMajor, 12);
  EXPECT_EQ(plan.archMinor, 0);
  p["target"]["arch"] = "sm_86";
  ASSERT_TRUE(parsePlan(p.dump(), plan));
  EXPECT_EQ(plan.archMajor, 8);
  EXPECT_EQ(plan.archMinor, 6);
}

TEST(RuntimePlan, RejectsMalformedJson) {
  Plan plan;
  Status status = parsePlan("{\"format\": ", plan);
  EXPECT_EQ(status.code(), StatusCode::InvalidArtifact);
  EXPECT_EQ(status.message().rfind("the plan is not valid JSON: parse error "
                                   "at line 1, column 12",
                                   0),
            0u)
      << status.message();
  EXPECT_EQ(planError(json::array()), "expected an object, got an array");
}

TEST(RuntimePlan, RejectsMissingAndUnknownFields) {
  json p = validPlan();
  p.erase("steps");
  EXPECT_EQ(planError(p), "missing field 'steps'");

  p = validPlan();
  p["buffers"][1].erase("shape");
  EXPECT_EQ(planError(p), "buffers[1]: missing field 'shape'");

  p = validPlan();
  p["steps"][0].erase("shared_bytes");
  EXPECT_EQ(planError(p), "steps[0]: missing field 'shared_bytes'");

  p = validPlan();
  p["buffers"][0]["dtyp"] = "f32";
  EXPECT_EQ(planError(p),
            "buffers[0]: unknown field 'dtyp' (expected id, role, dtype, "
            "shape, bytes, index)");

  p = validPlan();
  p["buffers"][2].erase("index");
  EXPECT_EQ(planError(p), "buffers[2]: missing field 'index' (the output's "
                          "position among the graph's results)");

  p = validPlan();
  p["buffers"][1]["index"] = 0;
  EXPECT_EQ(planError(p), "buffers[1].index: an intermediate buffer has no "
                          "index (only inputs and outputs are numbered)");
}

TEST(RuntimePlan, RejectsWrongFormatAndVersion) {
  json p = validPlan();
  p["format"] = "onnx";
  EXPECT_EQ(planError(p), "format: expected \"fusec-plan\", got \"onnx\"");
  p = validPlan();
  p["version"] = 4;
  EXPECT_EQ(planError(p), "version: plan version 4 is newer than this "
                          "runtime reads (3): update the fusec runtime");
  // Version 2 only adds tensor maps: a version-1 plan reads the same.
  p["version"] = 2;
  EXPECT_EQ(planError(p), "ok");
  p["version"] = 0;
  EXPECT_EQ(planError(p),
            "version: plan version 0 does not exist: expected 1 to 3");
  p["version"] = "1";
  EXPECT_EQ(planError(p), "version: expected an integer, got a string");
}

TEST(RuntimePlan, RejectsBadTarget) {
  json p = validPlan();
  p["target"]["kind"] = "cubin";
  EXPECT_EQ(planError(p), "target.kind: unsupported target kind 'cubin': "
                          "this runtime loads \"ptx\" and \"cuda\"");
  for (const char *arch : {"sm90", "sm_9", "sm_90x", "compute_90", "sm_1000"}) {
    p = validPlan();
    p["target"]["arch"] = arch;
    EXPECT_EQ(planError(p), std::string("target.arch: '") + arch +
                                "' is not a GPU architecture: expected "
                                "sm_XY such as sm_80 or sm_90");
  }
}

TEST(RuntimePlan, RejectsBadBuffers) {
  json p = validPlan();
  p["buffers"][1]["dtype"] = "f64";
  EXPECT_EQ(planError(p), "buffers[1].dtype: unknown dtype 'f64': expected "
                          "f32, f16 or bf16");

  p = validPlan();
  p["buffers"][1]["role"] = "weight";
  EXPECT_EQ(planError(p), "buffers[1].role: unknown role 'weight': expected "
                          "input, output or intermediate");

  p = validPlan();
  p["buffers"][1]["bytes"] = 800;
  EXPECT_EQ(planError(p), "buffers[1].bytes: 800 does not match f32 "
                          "[1,56,56,64], which is 802816 bytes");

  p = validPlan();
  p["buffers"][1]["dtype"] = "f16";
  EXPECT_EQ(planError(p), "buffers[1].bytes: 802816 does not match f16 "
                          "[1,56,56,64], which is 401408 bytes");

  p = validPlan();
  p["buffers"][1]["shape"][2] = -56;
  EXPECT_EQ(planError(p), "buffers[1].shape[2]: -56 is out of range: "
                          "expected in [0, 72057594037927936]");

  p = validPlan();
  p["buffers"][1]["shape"][2] = 5.5;
  EXPECT_EQ(planError(p),
            "buffers[1].shape[2]: expected an integer, got a fractional "
            "number");

  p = validPlan();
  p["buffers"][1]["shape"] = json::array({1 << 30, 1 << 30, 1 << 30});
  EXPECT_EQ(planError(p), "buffers[1].shape: [1073741824,1073741824,"
                          "1073741824] has more than 2^56 elements");
}

TEST(RuntimePlan, RejectsBadBufferIds) {
  json p = validPlan();
  p["buffers"][1]["id"] = 7;
  EXPECT_EQ(planError(p), "buffers[1].id: buffer 7 does not exist (the plan "
                          "has 3 buffers, ids 0..2)");
  p["buffers"][1]["id"] = -1;
  EXPECT_EQ(planError(p), "buffers[1].id: buffer -1 does not exist (the plan "
                          "has 3 buffers, ids 0..2)");
  p["buffers"][1]["id"] = 0;
  EXPECT_EQ(planError(p),
            "buffers[1].id: buffer id 0 is also the id of buffers[0]");
}

TEST(RuntimePlan, RejectsNonContiguousIndices) {
  // Inputs numbered 0 and 2: index 1 is missing.
  json p = validPlan();
  p["buffers"][1] = json::parse(R"({"id": 1, "role": "input", "index": 2,
    "dtype": "f32", "shape": [1, 56, 56, 64], "bytes": 802816})");
  EXPECT_EQ(planError(p), "buffers[1].index: input index 2 leaves a gap: the "
                          "plan has 2 inputs, so their indices must be 0..1");

  p["buffers"][1]["index"] = 0;
  EXPECT_EQ(planError(p), "buffers[1].index: input index 0 is also the index "
                          "of buffer 0");

  p = validPlan();
  p["buffers"][2]["index"] = 1;
  EXPECT_EQ(planError(p), "buffers[2].index: output index 1 leaves a gap: the "
                          "plan has 1 outputs, so their indices must be 0..0");

  p = validPlan();
  p["buffers"][2]["role"] = "intermediate";
  p["buffers"][2].erase("index");
  EXPECT_EQ(planError(p), "buffers: the plan has no output buffer: a graph "
                          "returns at least one result");
}

TEST(RuntimePlan, RejectsBadSteps) {
  json p = validPlan();
  p["steps"][0]["args"][2] = 3;
  EXPECT_EQ(planError(p), "steps[0].args[2]: buffer 3 does not exist (the "
                          "plan has 3 buffers, ids 0..2)");

  p = validPlan();
  p["steps"][0]["grid"] = json::array({98, 1});
  EXPECT_EQ(planError(p), "steps[0].grid: expected an array of 3 positive "
                          "integers, got an array of 2 elements");

  p = validPlan();
  p["steps"][0]["block"][0] = 0;
  EXPECT_EQ(planError(p), "steps[0].block[0]: 0 is out of range: expected in "
                          "[1, 4294967295]");

  p = validPlan();
  p["steps"][0]["shared_bytes"] = -1;
  EXPECT_EQ(planError(p), "steps[0].shared_bytes: -1 is out of range: "
                          "expected in [0, 4294967295]");

  p = validPlan();
  p["steps"][0]["kernel"] = "";
  EXPECT_EQ(planError(p), "steps[0].kernel: the kernel name is empty");

  p = validPlan();
  p["steps"][0]["kind"] = "memset";
  EXPECT_EQ(planError(p), "steps[0].kind: unknown step kind 'memset': "
                          "expected launch or copy");

  p = validPlan();
  p["steps"][1]["bytes"] = 802817;
  EXPECT_EQ(planError(p), "steps[1].bytes: 802817 is more than buffer 0 "
                          "holds (802816 bytes, f32 [1,56,56,64])");

  p = validPlan();
  p["steps"][1]["dst"] = 0;
  EXPECT_EQ(planError(p), "steps[1]: copies buffer 0 onto itself");

  p = validPlan();
  p["steps"][1]["kernel"] = "k1";
  EXPECT_EQ(planError(p), "steps[1]: unknown field 'kernel' (expected kind, "
                          "src, dst, bytes)");
}

/// validPlan() in version 2, the conv taking a tensor map over its input
/// after its three pointers: [1, 56, 56, 64] f32 seen as 3136 rows of 64.
json tensorMapPlan() {
  json p = validPlan();
  p["version"] = 2;
  p["steps"][0]["args"].push_back(json::parse(R"({"tensor_map": {
      "buffer": 0, "dims": [64, 3136], "strides": [256], "box": [32, 128],
      "offset": 0, "swizzle": 128}})"));
  return p;
}

TEST(RuntimePlan, ParsesTensorMaps) {
  Plan plan;
  Status status = parsePlan(tensorMapPlan().dump(), plan);
  ASSERT_TRUE(status) << status.message();
  const Step &launch = plan.steps[0];
  // The map's parameter names its buffer in args, like a pointer's.
  EXPECT_EQ(launch.args, (std::vector<int64_t>{0, 1, 2, 0}));
  ASSERT_EQ(launch.tensorMaps.size(), 1u);
  const TensorMapDesc &map = launch.tensorMaps[0];
  EXPECT_EQ(map.param, 3u);
  EXPECT_EQ(map.dims, (std::vector<uint64_t>{64, 3136}));
  EXPECT_EQ(map.strides, (std::vector<uint64_t>{256}));
  EXPECT_EQ(map.box, (std::vector<uint32_t>{32, 128}));
  EXPECT_EQ(map.offset, 0u);
  EXPECT_EQ(map.swizzle, 128u);
}

TEST(RuntimePlan, RejectsBadTensorMaps) {
  auto withMap = [](const char *key, const json &value) {
    json p = tensorMapPlan();
    p["steps"][0]["args"][3]["tensor_map"][key] = value;
    return planError(p);
  };
  const std::string at = "steps[0].args[3].tensor_map";
  json p = tensorMapPlan();
  p["version"] = 1;
  EXPECT_EQ(planError(p),
            "steps[0].args[3]: a tensor map needs plan version 2 or newer");
  EXPECT_EQ(withMap("swizzle", 48), at + ".swizzle: 48 is not 0, 32, 64 or 128");
  EXPECT_EQ(withMap("strides", json::array({200})),
            at + ".strides[0]: 200 is not a multiple of 16 bytes");
  EXPECT_EQ(withMap("strides", json::array({256, 256})),
            at + ".strides: expected an array of 1 integers, got 2 elements");
  EXPECT_EQ(withMap("box", json::array({64, 128})),
            at + ".box[0]: 64 elements span 256 bytes: a multiple of 16 is "
                 "needed, at most the swizzle's 128");
  EXPECT_EQ(withMap("box", json::array({32, 512})),
            at + ".box[1]: 512 is out of range: expected in [1, 256]");
  EXPECT_EQ(withMap("dims", json::array({64, 3137})),
            at + ": the tensor it views reaches past the end of buffer 0 "
                 "(802816 bytes, f32 [1,56,56,64])");
  EXPECT_EQ(withMap("offset", 8),
            at + ".offset: 8 is not a multiple of 16 bytes");
  EXPECT_EQ(withMap("buffer", 7),
            at + ".buffer: buffer 7 does not exist (the plan has 3 buffers, "
                 "ids 0..2)");
  p = tensorMapPlan();
  p["steps"][0]["args"][3]["tensor_map"]["mode"] = "im2col";
  EXPECT_EQ(planError(p), at + ": unknown field 'mode' (expected buffer, dims, "
                               "strides, box, offset, swizzle, im2col)");
}

/// A version-2 plan whose conv takes an im2col map over its [1,56,56,64]
/// f32 input: 128 pixels of 32 channels per copy, padding 1.
json im2colPlan() {
  json p = validPlan();
  p["version"] = 2;
  p["steps"][0]["args"].push_back(json::parse(R"({"tensor_map": {
      "buffer": 0, "dims": [64, 56, 56, 1], "strides": [256, 14336, 802816],
      "box": [32, 128], "offset": 0, "swizzle": 128,
      "im2col": {"lower": [-1, -1], "upper": [-1, -1]}}})"));
  return p;
}

TEST(RuntimePlan, ParsesAndChecksIm2colMaps) {
  Plan plan;
  Status status = parsePlan(im2colPlan().dump(), plan);
  ASSERT_TRUE(status) << status.message();
  const TensorMapDesc &map = plan.steps[0].tensorMaps[0];
  EXPECT_TRUE(map.im2col);
  EXPECT_EQ(map.box, (std::vector<uint32_t>{32, 128}));
  EXPECT_EQ(map.lower, (std::vector<int32_t>{-1, -1}));
  EXPECT_EQ(map.upper, (std::vector<int32_t>{-1, -1}));

  const std::string at = "steps[0].args[3].tensor_map";
  json p = im2colPlan();
  p["steps"][0]["args"][3]["tensor_map"]["im2col"]["lower"] = {-1, -200};
  EXPECT_EQ(planError(p), at + ".im2col.lower[1]: -200 is out of range: "
                               "expected in [-128, 127]");
  p = im2colPlan();
  p["steps"][0]["args"][3]["tensor_map"]["im2col"]["upper"] = {-1};
  EXPECT_EQ(planError(p), at + ".im2col.upper: expected an array of 2 "
                               "integers, got 1 elements");
  p = im2colPlan();
  p["steps"][0]["args"][3]["tensor_map"]["box"] = {32, 2048};
  EXPECT_EQ(planError(p), at + ".box[1]: 2048 is out of range: expected in "
                               "[1, 1024]");
}

TEST(RuntimeArtifact, FindsThePlanLineAndChecksKernels) {
  Plan plan;
  std::string artifact = artifactOf(validPlan(), {"k0_conv2d"});
  Status status = parseArtifact(artifact, plan, "a.ptx");
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(plan.graph, "resnet_block");

  // Windows line endings.
  std::string crlf;
  for (char c : artifact)
    crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  status = parseArtifact(crlf, plan, "a.ptx");
  EXPECT_TRUE(status) << status.message();

  status = parseArtifact(ptxDefining({"k0_conv2d"}), plan, "a.ptx");
  EXPECT_EQ(status.code(), StatusCode::InvalidArtifact);
  EXPECT_EQ(status.message(),
            "a.ptx: not a fusec artifact: it has no '// fusec-plan: ' line "
            "(compile the graph with fusec to get an artifact)");

  status = parseArtifact("// fusec-plan: {}\n" + artifact, plan, "a.ptx");
  EXPECT_EQ(status.message(),
            "a.ptx:3: a second '// fusec-plan: ' line; an artifact carries "
            "exactly one plan (a training artifact, from fusec --train, "
            "carries two: load it with TrainingModule or "
            "fusec_training_load)");

  status = parseArtifact("// fusec-plan: {\"format\"\n", plan, "a.ptx");
  EXPECT_EQ(status.message().rfind("a.ptx:1: invalid launch plan: the plan "
                                   "is not valid JSON: ",
                                   0),
            0u)
      << status.message();

  json p = validPlan();
  p["buffers"][0]["dtype"] = "i8";
  status = parseArtifact(artifactOf(p, {"k0_conv2d"}), plan, "a.ptx");
  EXPECT_EQ(status.message(), "a.ptx:2: invalid launch plan: "
                              "buffers[0].dtype: unknown dtype 'i8': expected "
                              "f32, f16 or bf16");

  // A kernel the PTX lacks; an .entry in a comment does not count.
  status = parseArtifact(artifactOf(validPlan(), {"k1_other"}) +
                             "// .entry k0_conv2d(\n",
                         plan, "a.ptx");
  EXPECT_EQ(status.message(),
            "a.ptx: steps[0].kernel: kernel 'k0_conv2d' is not defined in the "
            "PTX (no '.entry k0_conv2d'); the plan and the PTX do not match");

  // A kernel declaring fewer (or more) parameters than its step passes: the
  // launch would read past the parameter array.
  std::string twoParams =
      "// fusec artifact v1\n// fusec-plan: " + validPlan().dump() + "\n" +
      ptxDefining({"k0_conv2d"}, {{"k0_conv2d", 2}});
  status = parseArtifact(twoParams, plan, "a.ptx");
  EXPECT_EQ(status.code(), StatusCode::InvalidArtifact);
  EXPECT_EQ(status.message(),
            "a.ptx: steps[0].args: kernel 'k0_conv2d' takes 2 parameters, the "
            "plan passes 3; the plan and the kernel do not match");
  status = parseArtifact("// fusec artifact v1\n// fusec-plan: " +
                             validPlan().dump() + "\n" +
                             ptxDefining({"k0_conv2d"}, {{"k0_conv2d", 4}}),
                         plan, "a.ptx");
  EXPECT_EQ(status.message(),
            "a.ptx: steps[0].args: kernel 'k0_conv2d' takes 4 parameters, the "
            "plan passes 3; the plan and the kernel do not match");
}

//===----------------------------------------------------------------------===//
// Without the NVIDIA driver
//===----------------------------------------------------------------------===//

bool driverLoadable() {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library)
    dlclose(library);
  return library != nullptr;
}

//===----------------------------------------------------------------------===//
// CUDA C artifacts (NVRTC runs without a GPU)
//===----------------------------------------------------------------------===//

/// A CUDA C artifact of validPlan() defining `kernels`, self-contained the
/// way fusec --emit=cuda writes one (NVRTC gets no include path): a bf16
/// round trip through inline PTX.
std::string cudaArtifactOf(const std::vector<std::string> &kernels,
                           const std::string &body = "") {
  json p = validPlan();
  p["target"]["kind"] = "cuda";
  std::string text = std::string(kPlanLinePrefix) + p.dump() + "\n" +
                     "// __global__ void k_in_a_comment(float *p) {}\n";
  for (const std::string &k : kernels)
    text += "extern \"C\" __global__ void __launch_bounds__(256)\n" + k +
            "(const float *__restrict__ in, float *out, float *x) {\n"
            "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "  unsigned short h;\n"
            "  asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(in[i]));\n" +
            body +
            "  out[i] = __uint_as_float(unsigned(h) << 16);\n"
            "}\n";
  return text;
}

TEST(RuntimeCuda, FindsTheKernelsOfACudaArtifact) {
  Plan plan;
  Status status =
      parseArtifact(cudaArtifactOf({"k0_conv2d"}), plan, "a.cu");
  EXPECT_TRUE(status) << status.message();
  EXPECT_EQ(plan.targetKind, "cuda");
  // A __global__ function in a comment does not count.
  std::string text = cudaArtifactOf({"k1_add"});
  status = parseArtifact(text, plan, "a.cu");
  EXPECT_EQ(status.message(),
            "a.cu: steps[0].kernel: kernel 'k0_conv2d' is not defined in the "
            "CUDA C (no '__global__' function 'k0_conv2d'); the plan and the "
            "CUDA C do not match");
  EXPECT_EQ(detail::cudaKernels(text), std::set<std::string>{"k1_add"});
}

/// NVRTC's PTX for `source`, or a skip where this machine has no NVRTC.
#define COMPILE_OR_SKIP(source, arch, ptx, status)                             \
  Status status = detail::compileCudaToPtx(source, arch, "a.cu", ptx);         \
  if (status.code() == StatusCode::NoCompiler)                                 \
    GTEST_SKIP() << status.message();

TEST(RuntimeCuda, CompilesCudaCWithNvrtc) {
  std::string ptx;
  COMPILE_OR_SKIP(cudaArtifactOf({"k0_conv2d", "k1_add"}), "compute_90a", ptx,
                  status);
  ASSERT_TRUE(status) << status.message();
  EXPECT_NE(ptx.find(".target sm_90a"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find(".entry k0_conv2d("), std::string::npos);
  EXPECT_NE(ptx.find(".entry k1_add("), std::string::npos);
  EXPECT_EQ(ptx.find('\0'), std::string::npos);
}

TEST(RuntimeCuda, ReportsTheNvrtcLogAndTheKernel) {
  std::string ptx;
  COMPILE_OR_SKIP(cudaArtifactOf({"k0_conv2d"}) +
                      cudaArtifactOf({"k1_add"}, "  undeclared = 1;\n")
                          .substr(cudaArtifactOf({}).size()),
                  "compute_80", ptx, status);
  EXPECT_EQ(status.code(), StatusCode::CompileError);
  EXPECT_EQ(status.message().rfind("a.cu: NVRTC cannot compile the CUDA C for "
                                   "compute_80 (first error in kernel "
                                   "'k1_add'): NVRTC_ERROR_COMPILATION\n"
                                   "NVRTC log:\n",
                                   0),
            0u)
      << status.message();
  EXPECT_NE(status.message().find("undeclared"), std::string::npos);
}

TEST(RuntimeNoDriver, DeviceOpenSaysWhatIsMissing) {
  if (driverLoadable())
    GTEST_SKIP() << "libcuda.so.1 is present on this machine";
  std::shared_ptr<Device> device;
  Status status = Device::open(0, device);
  EXPECT_EQ(status.code(), StatusCode::NoDriver);
  EXPECT_FALSE(device);
  EXPECT_EQ(status.message().rfind("cannot load libcuda.so.1 (", 0), 0u)
      << status.message();
  EXPECT_NE(status.message().find("): no NVIDIA driver on this machine; "
                                  "install the NVIDIA driver or run on a "
                                  "machine with an NVIDIA GPU"),
            std::string::npos)
      << status.message();

  int count = -1;
  EXPECT_EQ(Device::count(count).code(), StatusCode::NoDriver);
  EXPECT_EQ(count, 0);
}

TEST(RuntimeNoDriver, CApi) {
  if (driverLoadable())
    GTEST_SKIP() << "libcuda.so.1 is present on this machine";
  fusec_device *device = reinterpret_cast<fusec_device *>(1);
  EXPECT_EQ(fusec_device_open(0, &device), FUSEC_ERROR_NO_DRIVER);
  EXPECT_EQ(device, nullptr);
  EXPECT_NE(std::string(fusec_last_error_message())
                .find("no NVIDIA driver on this machine"),
            std::string::npos)
      << fusec_last_error_message();
  int count = -1;
  EXPECT_EQ(fusec_device_count(&count), FUSEC_ERROR_NO_DRIVER);
  EXPECT_STREQ(fusec_status_name(FUSEC_ERROR_NO_DRIVER),
               "FUSEC_ERROR_NO_DRIVER");
}

TEST(RuntimeCApi, ChecksArguments) {
  fusec_module *module = reinterpret_cast<fusec_module *>(1);
  EXPECT_EQ(fusec_module_load(nullptr, "x", 1, &module),
            FUSEC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(module, nullptr);
  EXPECT_STREQ(fusec_last_error_message(),
               "fusec_module_load: device and artifact must not be NULL");
  EXPECT_EQ(fusec_device_open(0, nullptr), FUSEC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(fusec_module_num_inputs(nullptr), 0u);
  fusec_module_release(nullptr);
  fusec_device_release(nullptr);
}

//===----------------------------------------------------------------------===//
// The launch path, against a fake driver
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Training artifacts
//===----------------------------------------------------------------------===//

/// The forward of f(x [4]) = y [4], saving s [4]: kernel fwd_k0 (x, y, s).
json forwardPlan() {
  return json::parse(R"({
    "format": "fusec-plan", "version": 3, "graph": "f_forward",
    "target": {"kind": "ptx", "arch": "sm_90"},
    "buffers": [
      {"id": 0, "role": "input", "index": 0, "dtype": "f32", "shape": [4],
       "bytes": 16},
      {"id": 1, "role": "output", "index": 0, "dtype": "f32", "shape": [4],
       "bytes": 16},
      {"id": 2, "role": "output", "index": 1, "dtype": "f32", "shape": [4],
       "bytes": 16}
    ],
    "steps": [{"kind": "launch", "kernel": "fwd_k0", "grid": [1, 1, 1],
               "block": [32, 1, 1], "shared_bytes": 0, "args": [0, 1, 2]}],
    "training": {"role": "forward", "num_results": 1}
  })");
}

/// Its backward: (x, s, dy) -> dx, kernel bwd_k0 (x, s, dy, dx).
json backwardPlan() {
  return json::parse(R"({
    "format": "fusec-plan", "version": 3, "graph": "f_backward",
    "target": {"kind": "ptx", "arch": "sm_90"},
    "buffers": [
      {"id": 0, "role": "input", "index": 0, "dtype": "f32", "shape": [4],
       "bytes": 16},
      {"id": 1, "role": "input", "index": 1, "dtype": "f32", "shape": [4],
       "bytes": 16},
      {"id": 2, "role": "input", "index": 2, "dtype": "f32", "shape": [4],
       "bytes": 16},
      {"id": 3, "role": "output", "index": 0, "dtype": "f32", "shape": [4],
       "bytes": 16}
    ],
    "steps": [{"kind": "launch", "kernel": "bwd_k0", "grid": [1, 1, 1],
               "block": [32, 1, 1], "shared_bytes": 0,
               "args": [0, 1, 2, 3]}],
    "training": {"role": "backward", "forward_args": [0], "num_saved": 1,
                 "grad_results": [0], "wrt": [0]}
  })");
}

std::string trainingArtifactOf(const json &forward, const json &backward) {
  return "// fusec artifact v1\n// fusec-plan: " + forward.dump() +
         "\n// fusec-plan: " + backward.dump() + "\n" +
         ptxDefining({"fwd_k0", "bwd_k0"}, {{"fwd_k0", 3}, {"bwd_k0", 4}});
}

/// The message of parseTrainingArtifact, or "ok".
std::string trainingError(const json &forward, const json &backward) {
  TrainingPlan plans;
  Status status = parseTrainingArtifact(trainingArtifactOf(forward, backward),
                                        plans, "step.ptx");
  return status ? "ok" : status.message();
}

TEST(RuntimeTraining, ParsesBothPlansAndTheirContract) {
  TrainingPlan plans;
  std::string artifact = trainingArtifactOf(forwardPlan(), backwardPlan());
  Status status = parseTrainingArtifact(artifact, plans, "step.ptx");
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(plans.forward.graph, "f_forward");
  EXPECT_EQ(plans.forward.training.role, TrainingDesc::Role::Forward);
  EXPECT_EQ(plans.forward.training.numResults, 1);
  const TrainingDesc &t = plans.backward.training;
  EXPECT_EQ(t.role, TrainingDesc::Role::Backward);
  EXPECT_EQ(t.forwardArgs, std::vector<int64_t>{0});
  EXPECT_EQ(t.numSaved, 1);
  EXPECT_EQ(t.gradResults, std::vector<int64_t>{0});
  EXPECT_EQ(t.wrt, std::vector<int64_t>{0});

  // An inference load refuses it; a training load refuses an inference
  // artifact.
  Plan plan;
  status = parseArtifact(artifact, plan, "step.ptx");
  EXPECT_EQ(status.message().rfind("step.ptx:3: a second '// fusec-plan: ' "
                                   "line",
                                   0),
            0u)
      << status.message();
  status = parseTrainingArtifact(artifactOf(validPlan(), {"k0_conv2d"}), plans,
                                 "one.ptx");
  EXPECT_EQ(status.message(),
            "one.ptx: not a training artifact: it has 1 '// fusec-plan: ' "
            "lines, a training artifact two (the forward's and the "
            "backward's; compile the graph with fusec --train)");
}

TEST(RuntimeTraining, ReadsForwardResultsAgain) {
  // The forward returns s as a second result instead of saving it; the
  // backward reads it from there (forward_results).
  json f = forwardPlan(), b = backwardPlan();
  f["training"]["num_results"] = 2;
  b["training"]["num_saved"] = 0;
  b["training"]["forward_results"] = json::array({1});
  TrainingPlan plans;
  Status status =
      parseTrainingArtifact(trainingArtifactOf(f, b), plans, "step.ptx");
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(plans.backward.training.forwardResults, std::vector<int64_t>{1});
  EXPECT_EQ(plans.backward.training.numSaved, 0);
  b["training"]["forward_results"] = json::array({2});
  EXPECT_EQ(trainingError(f, b),
            "step.ptx:3: backward plan: training.forward_results[0]: result "
            "2 does not exist; the forward has 2");
  b["training"]["forward_results"] = json::array({0});
  f["buffers"][1]["shape"] = json::array({2, 2});
  EXPECT_EQ(trainingError(f, b).rfind("step.ptx:3: backward plan: "
                                      "training.forward_results[0]: is f32 "
                                      "[4], but forward result 0 is",
                                      0),
            0u)
      << trainingError(f, b);
}

TEST(RuntimeTraining, RejectsABrokenContract) {
  json f = forwardPlan(), b = backwardPlan();
  // The training object is version 3.
  f["version"] = 2;
  EXPECT_EQ(trainingError(f, b),
            "step.ptx:2: invalid launch plan: training: a training plan "
            "needs plan version 3 or newer");
  f = forwardPlan();
  f["training"]["role"] = "sideways";
  EXPECT_EQ(trainingError(f, b),
            "step.ptx:2: invalid launch plan: training.role: expected "
            "\"forward\" or \"backward\", got \"sideways\"");
  // The plans in the wrong order.
  f = forwardPlan();
  EXPECT_EQ(trainingError(b, f).rfind("step.ptx:2: forward plan: training: "
                                      "the first plan",
                                      0),
            0u);
  f = forwardPlan();
  f["training"]["num_results"] = 2;
  EXPECT_EQ(trainingError(f, b),
            "step.ptx:3: backward plan: training.num_saved: 1, but the "
            "forward saves 0 tensors");
  // Inputs the contract does not account for.
  b["training"]["num_saved"] = 0;
  EXPECT_EQ(trainingError(forwardPlan(), b),
            "step.ptx:3: invalid launch plan: training: forward_args, "
            "forward_results, num_saved and grad_results name 2 inputs, but "
            "the plan has 3");
  // A gradient of another type than its argument.
  b = backwardPlan();
  b["buffers"][3]["shape"] = json::array({2, 2});
  EXPECT_EQ(trainingError(forwardPlan(), b),
            "step.ptx:3: backward plan: training.wrt[0]: is f32 [2,2], but "
            "forward input 0 is f32 [4]");
  b = backwardPlan();
  b["training"]["grad_results"] = json::array({1});
  EXPECT_EQ(trainingError(forwardPlan(), b),
            "step.ptx:3: backward plan: training.grad_results[0]: result 1 "
            "does not exist; the forward has 1");
}

namespace fake {
using namespace fusec::runtime::detail;

struct Launch {
  std::string kernel;
  std::array<unsigned, 3> grid, block;
  unsigned shared;
  CUstream stream;
  /// Pointer parameters; for a tensor map, the address it was encoded for.
  std::vector<CUdeviceptr> args;
  bool extraIsNull;
};

/// What one cuTensorMapEncodeTiled or cuTensorMapEncodeIm2col call was
/// asked for (an im2col map's box is {channels, pixels}).
struct Encode {
  CUtensorMapDataType type;
  CUdeviceptr address;
  std::vector<cuuint64_t> dims, strides;
  std::vector<cuuint32_t> box, elementStrides;
  CUtensorMapSwizzle swizzle;
  std::vector<int> lower, upper;
};

struct Copy {
  CUdeviceptr dst, src;
  size_t bytes;
  CUstream stream;
};

/// What the fake GPU looks like and what the runtime asked of it.
struct State {
  // The device.
  int deviceCount = 1;
  int ccMajor = 9, ccMinor = 0;
  int sharedOptin = 232448;
  // Knobs.
  CUresult loadResult = CUDA_SUCCESS;
  std::string jitErrorLog;
  CUresult launchResult = CUDA_SUCCESS;
  size_t failAllocAbove = ~size_t(0);
  /// Streams being captured into a CUDA graph; what cuStreamIsCapturing
  /// returns (the legacy stream during another's capture: an error).
  std::set<CUstream> capturing;
  CUresult captureQueryResult = CUDA_SUCCESS;
  /// Events whose recorded work has finished (cuEventQuery succeeds).
  std::set<CUevent> finished;
  /// Parameters of each kernel, as the real driver knows from the PTX, and
  /// which of them are tensor maps.
  std::map<std::string, size_t> arity;
  std::map<std::string, std::set<size_t>> tensorMapParams;

  // Record.
  std::vector<std::string> calls;
  std::string image;
  std::set<CUjit_option> jitOptions;
  bool moduleLoaded = false;
  std::vector<std::string> kernels; // a CUfunction is 1 + its index here
  std::map<std::string, int> maxDynamicShared;
  std::vector<Launch> launches;
  std::vector<Copy> copies;
  std::vector<Encode> encodes;
  std::map<CUdeviceptr, size_t> live; // allocations not yet freed
  std::set<CUdeviceptr> liveAsync;    // stream-ordered ones not yet freed
  int liveEvents = 0;
  std::vector<CUevent> events; // every event created
  /// The calling thread's capture mode, as cuThreadExchangeStreamCaptureMode
  /// sees it.
  CUstreamCaptureMode captureMode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  /// Calls made while the mode was global, that would invalidate a capture
  /// under way on another thread.
  std::vector<std::string> unsafeCalls;
  CUdeviceptr nextPtr = 0x7f0000000000;
  int contextRefs = 0;
};

State state;

const char *errorName(CUresult r) {
  switch (r) {
  case CUDA_ERROR_OUT_OF_MEMORY:
    return "CUDA_ERROR_OUT_OF_MEMORY";
  case CUDA_ERROR_INVALID_PTX:
    return "CUDA_ERROR_INVALID_PTX";
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
  default:
    return nullptr;
  }
}

CUcontext theContext = reinterpret_cast<CUcontext>(0xc0);
CUmodule theModule = reinterpret_cast<CUmodule>(0x30);

DriverApi makeApi() {
  DriverApi api;
  api.cuInit = [](unsigned int) -> CUresult { return CUDA_SUCCESS; };
  api.cuDriverGetVersion = [](int *v) -> CUresult {
    *v = 13000;
    return CUDA_SUCCESS;
  };
  api.cuDeviceGetCount = [](int *n) -> CUresult {
    *n = state.deviceCount;
    return CUDA_SUCCESS;
  };
  api.cuDeviceGet = [](CUdevice *d, int ordinal) -> CUresult {
    *d = 100 + ordinal;
    return CUDA_SUCCESS;
  };
  api.cuDeviceGetName = [](char *name, int length, CUdevice) -> CUresult {
    std::strncpy(name, "Fake GPU", length);
    return CUDA_SUCCESS;
  };
  api.cuDeviceGetAttribute = [](int *value, CUdevice_attribute attribute,
                                CUdevice) -> CUresult {
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = state.ccMajor;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = state.ccMinor;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = state.sharedOptin;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 132;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
    }
  };
  api.cuDevicePrimaryCtxRetain = [](CUcontext *c, CUdevice) -> CUresult {
    *c = theContext;
    ++state.contextRefs;
    return CUDA_SUCCESS;
  };
  api.cuDevicePrimaryCtxRelease = [](CUdevice) -> CUresult {
    --state.contextRefs;
    return CUDA_SUCCESS;
  };
  api.cuCtxSetCurrent = [](CUcontext c) -> CUresult {
    return c == theContext ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  };
  api.cuCtxSynchronize = []() -> CUresult { return CUDA_SUCCESS; };
  api.cuModuleLoadDataEx = [](CUmodule *module, const void *image,
                              unsigned int numOptions, CUjit_option *options,
                              void **values) -> CUresult {
    state.calls.push_back("load");
    // The driver reads the image up to its NUL.
    state.image = static_cast<const char *>(image);
    for (unsigned i = 0; i < numOptions; ++i) {
      state.jitOptions.insert(options[i]);
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER && !state.jitErrorLog.empty()) {
        size_t capacity = 0;
        for (unsigned j = 0; j < numOptions; ++j)
          if (options[j] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            capacity = reinterpret_cast<size_t>(values[j]);
        std::strncpy(static_cast<char *>(values[i]), state.jitErrorLog.c_str(),
                     capacity);
      }
    }
    if (state.loadResult != CUDA_SUCCESS)
      return state.loadResult;
    state.moduleLoaded = true;
    *module = theModule;
    return CUDA_SUCCESS;
  };
  api.cuModuleUnload = [](CUmodule module) -> CUresult {
    EXPECT_EQ(module, theModule);
    state.moduleLoaded = false;
    return CUDA_SUCCESS;
  };
  api.cuModuleGetFunction = [](CUfunction *function, CUmodule,
                               const char *name) -> CUresult {
    state.kernels.push_back(name);
    *function = reinterpret_cast<CUfunction>(state.kernels.size());
    return CUDA_SUCCESS;
  };
  api.cuFuncSetAttribute = [](CUfunction function,
                              CUfunction_attribute attribute,
                              int value) -> CUresult {
    EXPECT_EQ(attribute, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
    const std::string &kernel =
        state.kernels.at(reinterpret_cast<size_t>(function) - 1);
    state.maxDynamicShared[kernel] = value;
    return CUDA_SUCCESS;
  };
  api.cuLaunchKernel = [](CUfunction function, unsigned gx, unsigned gy,
                          unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, CUstream stream, void **params,
                          void **extra) -> CUresult {
    Launch launch;
    launch.kernel = state.kernels.at(reinterpret_cast<size_t>(function) - 1);
    state.calls.push_back("launch " + launch.kernel);
    launch.grid = {gx, gy, gz};
    launch.block = {bx, by, bz};
    launch.shared = shared;
    launch.stream = stream;
    // As the driver does: one pointer per parameter, each pointing at the
    // parameter's value (a 64-bit device pointer).
    // A tensor map is 128 bytes, 64-byte aligned; the fake encoding keeps
    // the address in its first word.
    for (size_t i = 0; i < state.arity.at(launch.kernel); ++i) {
      if (state.tensorMapParams[launch.kernel].count(i))
        EXPECT_EQ(reinterpret_cast<uintptr_t>(params[i]) % 64, 0u);
      launch.args.push_back(*static_cast<CUdeviceptr *>(params[i]));
    }
    launch.extraIsNull = extra == nullptr;
    state.launches.push_back(launch);
    return state.launchResult;
  };
  api.cuTensorMapEncodeTiled =
      [](CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
         void *address, const cuuint64_t *dims, const cuuint64_t *strides,
         const cuuint32_t *box, const cuuint32_t *elementStrides,
         CUtensorMapInterleave, CUtensorMapSwizzle swizzle,
         CUtensorMapL2promotion, CUtensorMapFloatOOBfill) -> CUresult {
    state.calls.push_back("encode");
    Encode e{type,
             reinterpret_cast<CUdeviceptr>(address),
             {dims, dims + rank},
             {strides, strides + rank - 1},
             {box, box + rank},
             {elementStrides, elementStrides + rank},
             swizzle};
    state.encodes.push_back(e);
    map->opaque[0] = e.address;
    return CUDA_SUCCESS;
  };
  api.cuTensorMapEncodeIm2col =
      [](CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
         void *address, const cuuint64_t *dims, const cuuint64_t *strides,
         const int *lower, const int *upper, cuuint32_t channels,
         cuuint32_t pixels, const cuuint32_t *elementStrides,
         CUtensorMapInterleave, CUtensorMapSwizzle swizzle,
         CUtensorMapL2promotion, CUtensorMapFloatOOBfill) -> CUresult {
    state.calls.push_back("encode im2col");
    Encode e{type,
             reinterpret_cast<CUdeviceptr>(address),
             {dims, dims + rank},
             {strides, strides + rank - 1},
             {channels, pixels},
             {elementStrides, elementStrides + rank},
             swizzle,
             {lower, lower + rank - 2},
             {upper, upper + rank - 2}};
    state.encodes.push_back(e);
    map->opaque[0] = e.address;
    return CUDA_SUCCESS;
  };
  api.cuMemAlloc = [](CUdeviceptr *ptr, size_t bytes) -> CUresult {
    if (state.captureMode != CU_STREAM_CAPTURE_MODE_RELAXED)
      state.unsafeCalls.push_back("cuMemAlloc");
    if (bytes > state.failAllocAbove)
      return CUDA_ERROR_OUT_OF_MEMORY;
    state.calls.push_back("alloc " + std::to_string(bytes));
    *ptr = state.nextPtr;
    state.live[*ptr] = bytes;
    state.nextPtr += 0x100000;
    return CUDA_SUCCESS;
  };
  api.cuMemFree = [](CUdeviceptr ptr) -> CUresult {
    if (state.captureMode != CU_STREAM_CAPTURE_MODE_RELAXED)
      state.unsafeCalls.push_back("cuMemFree");
    EXPECT_EQ(state.live.erase(ptr), 1u) << "freeing unknown pointer " << ptr;
    return CUDA_SUCCESS;
  };
  api.cuMemcpyHtoD = [](CUdeviceptr, const void *, size_t) -> CUresult {
    return CUDA_SUCCESS;
  };
  api.cuMemcpyDtoH = [](void *, CUdeviceptr, size_t) -> CUresult {
    return CUDA_SUCCESS;
  };
  api.cuMemcpyDtoDAsync = [](CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                             CUstream stream) -> CUresult {
    state.calls.push_back("copy");
    state.copies.push_back({dst, src, bytes, stream});
    return CUDA_SUCCESS;
  };
  api.cuMemsetD8Async = [](CUdeviceptr dst, unsigned char value, size_t,
                           CUstream) -> CUresult {
    state.calls.push_back("fill " + std::to_string(dst) + " " +
                          std::to_string(value));
    return CUDA_SUCCESS;
  };
  api.cuStreamSynchronize = [](CUstream) -> CUresult { return CUDA_SUCCESS; };
  api.cuMemAllocAsync = [](CUdeviceptr *ptr, size_t bytes,
                           CUstream stream) -> CUresult {
    EXPECT_TRUE(state.capturing.count(stream)) << "only captured runs";
    state.calls.push_back("alloc async " + std::to_string(bytes));
    *ptr = state.nextPtr;
    state.liveAsync.insert(*ptr);
    state.nextPtr += 0x100000;
    return CUDA_SUCCESS;
  };
  api.cuMemFreeAsync = [](CUdeviceptr ptr, CUstream) -> CUresult {
    state.calls.push_back("free async");
    EXPECT_EQ(state.liveAsync.erase(ptr), 1u);
    return CUDA_SUCCESS;
  };
  api.cuEventCreate = [](CUevent *event, unsigned int) -> CUresult {
    ++state.liveEvents;
    *event = reinterpret_cast<CUevent>(0xe0 + state.events.size());
    state.events.push_back(*event);
    return CUDA_SUCCESS;
  };
  api.cuEventDestroy = [](CUevent) -> CUresult {
    --state.liveEvents;
    return CUDA_SUCCESS;
  };
  api.cuEventRecord = [](CUevent event, CUstream stream) -> CUresult {
    state.calls.push_back("record");
    state.finished.erase(event);
    EXPECT_FALSE(state.capturing.count(stream));
    return CUDA_SUCCESS;
  };
  api.cuEventQuery = [](CUevent event) -> CUresult {
    if (state.captureMode != CU_STREAM_CAPTURE_MODE_RELAXED)
      state.unsafeCalls.push_back("cuEventQuery");
    return state.finished.count(event) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  };
  api.cuStreamWaitEvent = [](CUstream, CUevent, unsigned int) -> CUresult {
    state.calls.push_back("wait");
    return CUDA_SUCCESS;
  };
  api.cuStreamIsCapturing = [](CUstream stream,
                               CUstreamCaptureStatus *status) -> CUresult {
    *status = state.capturing.count(stream) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                            : CU_STREAM_CAPTURE_STATUS_NONE;
    return state.captureQueryResult;
  };
  api.cuThreadExchangeStreamCaptureMode =
      [](CUstreamCaptureMode *mode) -> CUresult {
    std::swap(*mode, state.captureMode);
    return CUDA_SUCCESS;
  };
  api.cuGetErrorName = [](CUresult r, const char **name) -> CUresult {
    *name = errorName(r);
    return *name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  };
  api.cuGetErrorString = [](CUresult r, const char **description) -> CUresult {
    *description = errorName(r) ? "fake description" : nullptr;
    return *description ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  };
  return api;
}

const DriverApi api = makeApi();

} // namespace fake

class RuntimeLaunch : public ::testing::Test {
protected:
  void SetUp() override {
    fake::state = fake::State();
    fake::state.arity = {{"k0_conv2d", 3}, {"k1_epilogue", 2}};
  }

  void TearDown() override {
    // Every resource acquired was released.
    EXPECT_TRUE(fake::state.live.empty());
    EXPECT_TRUE(fake::state.liveAsync.empty());
    EXPECT_EQ(fake::state.liveEvents, 0);
    // The capture mode was restored, and nothing that would invalidate
    // another thread's capture ran in the global mode.
    EXPECT_EQ(fake::state.captureMode, fake::CU_STREAM_CAPTURE_MODE_GLOBAL);
    EXPECT_EQ(fake::state.unsafeCalls, std::vector<std::string>());
    EXPECT_FALSE(fake::state.moduleLoaded);
    EXPECT_EQ(fake::state.contextRefs, 0);
  }

  std::shared_ptr<Device> openDevice() {
    std::shared_ptr<Device> device;
    Status status = Device::openWithDriver(fake::api, 0, device);
    EXPECT_TRUE(status) << status.message();
    return device;
  }

  /// validPlan() with a second kernel that needs 64 KiB of shared memory.
  static json twoKernelPlan() {
    json p = validPlan();
    p["steps"].push_back(json::parse(R"({"kind": "launch",
      "kernel": "k1_epilogue", "grid": [7, 2, 3], "block": [32, 4, 2],
      "shared_bytes": 65536, "args": [1, 2]})"));
    return p;
  }
};

TEST_F(RuntimeLaunch, OpensDevice) {
  std::shared_ptr<Device> device = openDevice();
  ASSERT_TRUE(device);
  EXPECT_EQ(device->name(), "Fake GPU");
  EXPECT_EQ(device->arch(), "sm_90");
  EXPECT_EQ(device->describe(), "device 0 (Fake GPU, sm_90)");
  EXPECT_EQ(device->maxSharedBytesPerBlock(), 232448u);
  EXPECT_EQ(fake::state.contextRefs, 1);

  std::shared_ptr<Device> other;
  Status status = Device::openWithDriver(fake::api, 3, other);
  EXPECT_EQ(status.code(), StatusCode::NoDevice);
  EXPECT_EQ(status.message(), "device 3 does not exist: this machine has 1 "
                              "CUDA device (0..0)");
  fake::state.deviceCount = 0;
  status = Device::openWithDriver(fake::api, 0, other);
  EXPECT_EQ(status.code(), StatusCode::NoDevice);
  EXPECT_EQ(status.message().rfind("no CUDA device found", 0), 0u);
}

TEST_F(RuntimeLaunch, RunsThePlanAsWritten) {
  std::shared_ptr<Device> device = openDevice();
  std::string artifact =
      artifactOf(twoKernelPlan(), {"k0_conv2d", "k1_epilogue"});
  std::unique_ptr<Module> module;
  Status status = Module::load(device, artifact, module, "two.ptx");
  ASSERT_TRUE(status) << status.message();

  // The whole artifact went to the JIT, with both logs captured.
  EXPECT_EQ(fake::state.image, artifact);
  for (auto option : {fake::CU_JIT_ERROR_LOG_BUFFER,
                      fake::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                      fake::CU_JIT_INFO_LOG_BUFFER,
                      fake::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES})
    EXPECT_TRUE(fake::state.jitOptions.count(option)) << option;
  EXPECT_EQ(fake::state.kernels,
            (std::vector<std::string>{"k0_conv2d", "k1_epilogue"}));
  // Only the kernel above 48 KiB opts in to more shared memory.
  EXPECT_EQ(fake::state.maxDynamicShared,
            (std::map<std::string, int>{{"k1_epilogue", 65536}}));
  // One intermediate, allocated at load.
  ASSERT_EQ(fake::state.live.size(), 1u);
  fake::CUdeviceptr intermediate = fake::state.live.begin()->first;
  EXPECT_EQ(fake::state.live.begin()->second, 802816u);

  const DevicePtr x = 0xA000000, y = 0xB000000;
  Stream stream = reinterpret_cast<Stream>(0x5);
  for (int run = 0; run < 2; ++run) {
    fake::state.calls.clear();
    fake::state.launches.clear();
    fake::state.copies.clear();
    status = module->run(stream, {{x, 802816}}, {{y, 802816}});
    ASSERT_TRUE(status) << status.message();
    // Steps in plan order, then the event that marks the workspace's last
    // use; the second run is ordered after it (on its own stream).
    std::vector<std::string> expected = {"launch k0_conv2d", "copy",
                                         "launch k1_epilogue", "record"};
    if (run)
      expected.insert(expected.begin(), "wait");
    EXPECT_EQ(fake::state.calls, expected);
    ASSERT_EQ(fake::state.launches.size(), 2u);
    const fake::Launch &conv = fake::state.launches[0];
    EXPECT_EQ(conv.grid, (std::array<unsigned, 3>{98, 1, 1}));
    EXPECT_EQ(conv.block, (std::array<unsigned, 3>{256, 1, 1}));
    EXPECT_EQ(conv.shared, 16384u);
    EXPECT_EQ(conv.stream, reinterpret_cast<fake::CUstream>(stream));
    EXPECT_EQ(conv.args, (std::vector<fake::CUdeviceptr>{x, intermediate, y}));
    EXPECT_TRUE(conv.extraIsNull);
    const fake::Launch &epilogue = fake::state.launches[1];
    EXPECT_EQ(epilogue.grid, (std::array<unsigned, 3>{7, 2, 3}));
    EXPECT_EQ(epilogue.block, (std::array<unsigned, 3>{32, 4, 2}));
    EXPECT_EQ(epilogue.shared, 65536u);
    EXPECT_EQ(epilogue.args,
              (std::vector<fake::CUdeviceptr>{intermediate, y}));
    ASSERT_EQ(fake::state.copies.size(), 1u);
    EXPECT_EQ(fake::state.copies[0].dst, y);
    EXPECT_EQ(fake::state.copies[0].src, x);
    EXPECT_EQ(fake::state.copies[0].bytes, 802816u);
    EXPECT_EQ(fake::state.copies[0].stream,
              reinterpret_cast<fake::CUstream>(stream));
  }
  // The intermediate is reused, not reallocated.
  EXPECT_EQ(fake::state.live.size(), 1u);
  module.reset();
  EXPECT_TRUE(fake::state.live.empty());
  EXPECT_FALSE(fake::state.moduleLoaded);
}

TEST_F(RuntimeLaunch, RunsATrainingStep) {
  fake::state.arity = {{"fwd_k0", 3}, {"bwd_k0", 4}};
  std::shared_ptr<Device> device = openDevice();
  std::unique_ptr<TrainingModule> module;
  Status status = TrainingModule::load(
      device, trainingArtifactOf(forwardPlan(), backwardPlan()), module,
      "step.ptx");
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(module->numArgs(), 1u);
  EXPECT_EQ(module->numResults(), 1u);
  EXPECT_EQ(module->numSaved(), 1u);
  EXPECT_EQ(module->savedBytes(), 16u);
  size_t before = fake::state.live.size();
  std::unique_ptr<TrainingStep> step;
  status = TrainingStep::create(*module, step);
  ASSERT_TRUE(status) << status.message();
  // The step owns its saved tensor, on the device.
  ASSERT_EQ(fake::state.live.size(), before + 1);
  ASSERT_EQ(step->saved().size(), 1u);
  DevicePtr saved = step->saved()[0].ptr();
  EXPECT_EQ(fake::state.live.at(saved), 16u);

  const DevicePtr x = 0xA000000, y = 0xB000000, dy = 0xC000000, dx = 0xD000000;
  Stream stream = reinterpret_cast<Stream>(0x5);
  status = step->backward(stream, {{dy, 16}}, {{dx, 16}});
  EXPECT_EQ(status.message(), "backward: no forward has run on this step; "
                              "the backward reads what the forward saves");
  status = step->forward(stream, {{x, 16}}, {{y, 16}, {dx, 16}});
  EXPECT_EQ(status.message(), "forward: expected 1 result, got 2");
  fake::state.launches.clear();
  status = step->forward(stream, {{x, 16}}, {{y, 16}});
  ASSERT_TRUE(status) << status.message();
  ASSERT_EQ(fake::state.launches.size(), 1u);
  EXPECT_EQ(fake::state.launches[0].kernel, "fwd_k0");
  EXPECT_EQ(fake::state.launches[0].args,
            (std::vector<fake::CUdeviceptr>{x, y, saved}));
  status = step->backward(stream, {{dy, 8}}, {{dx, 16}});
  EXPECT_EQ(status.message(),
            "backward: result gradient 0 (of result 0) has 8 bytes, the plan "
            "needs 16 (f32 [4])");
  // The backward reads the forward's argument and saved tensor.
  status = step->backward(stream, {{dy, 16}}, {{dx, 16}});
  ASSERT_TRUE(status) << status.message();
  ASSERT_EQ(fake::state.launches.size(), 2u);
  EXPECT_EQ(fake::state.launches[1].kernel, "bwd_k0");
  EXPECT_EQ(fake::state.launches[1].args,
            (std::vector<fake::CUdeviceptr>{x, saved, dy, dx}));
  step.reset();
  EXPECT_FALSE(fake::state.live.count(saved));
  module.reset();
}

TEST_F(RuntimeLaunch, TrainingStepPassesForwardResultsToTheBackward) {
  // f(x) = (y, s), the backward reading s where the caller holds it.
  fake::state.arity = {{"fwd_k0", 3}, {"bwd_k0", 4}};
  json f = forwardPlan(), b = backwardPlan();
  f["training"]["num_results"] = 2;
  b["training"]["num_saved"] = 0;
  b["training"]["forward_results"] = json::array({1});
  std::shared_ptr<Device> device = openDevice();
  std::unique_ptr<TrainingModule> module;
  Status status = TrainingModule::load(device, trainingArtifactOf(f, b), module,
                                       "step.ptx");
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(module->numSaved(), 0u);
  EXPECT_EQ(module->savedBytes(), 0u);
  EXPECT_EQ(module->forwardResults(), std::vector<int64_t>{1});
  std::unique_ptr<TrainingStep> step;
  ASSERT_TRUE(TrainingStep::create(*module, step));
  const DevicePtr x = 0xA000000, y = 0xB000000, s = 0xB100000, dy = 0xC000000,
                  dx = 0xD000000;
  fake::state.launches.clear();
  status = step->forward(nullptr, {{x, 16}}, {{y, 16}, {s, 16}});
  ASSERT_TRUE(status) << status.message();
  status = step->backward(nullptr, {{dy, 16}}, {{dx, 16}});
  ASSERT_TRUE(status) << status.message();
  ASSERT_EQ(fake::state.launches.size(), 2u);
  EXPECT_EQ(fake::state.launches[1].args,
            (std::vector<fake::CUdeviceptr>{x, s, dy, dx}));
  step.reset();
  module.reset();
}

TEST_F(RuntimeLaunch, EncodesTensorMapsWhenTheirBufferMoves) {
  fake::state.arity["k0_conv2d"] = 4;
  fake::state.tensorMapParams["k0_conv2d"] = {3};
  std::shared_ptr<Device> device = openDevice();
  std::unique_ptr<Module> module;
  Status status = Module::load(device, artifactOf(tensorMapPlan(), {"k0_conv2d"}),
                               module, "tma.ptx");
  ASSERT_TRUE(status) << status.message();
  const DevicePtr y = 0xB000000;
  // Two runs on one input encode once; a new input address, again.
  for (DevicePtr x : {DevicePtr(0xA000000), DevicePtr(0xA000000),
                      DevicePtr(0xC000000)}) {
    fake::state.launches.clear();
    status = module->run(nullptr, {{x, 802816}}, {{y, 802816}});
    ASSERT_TRUE(status) << status.message();
    ASSERT_EQ(fake::state.launches.size(), 1u);
    EXPECT_EQ(fake::state.launches[0].args[0], x);
    EXPECT_EQ(fake::state.launches[0].args[3], x);
  }
  ASSERT_EQ(fake::state.encodes.size(), 2u);
  const fake::Encode &e = fake::state.encodes[0];
  EXPECT_EQ(e.type, fake::CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  EXPECT_EQ(e.address, 0xA000000u);
  EXPECT_EQ(e.dims, (std::vector<fake::cuuint64_t>{64, 3136}));
  EXPECT_EQ(e.strides, (std::vector<fake::cuuint64_t>{256}));
  EXPECT_EQ(e.box, (std::vector<fake::cuuint32_t>{32, 128}));
  EXPECT_EQ(e.elementStrides, (std::vector<fake::cuuint32_t>{1, 1}));
  EXPECT_EQ(e.swizzle, 3); // CU_TENSOR_MAP_SWIZZLE_128B
  EXPECT_EQ(fake::state.encodes[1].address, 0xC000000u);
}

TEST_F(RuntimeLaunch, EncodesIm2colMaps) {
  fake::state.arity["k0_conv2d"] = 4;
  fake::state.tensorMapParams["k0_conv2d"] = {3};
  std::shared_ptr<Device> device = openDevice();
  std::unique_ptr<Module> module;
  Status status =
      Module::load(device, artifactOf(im2colPlan(), {"k0_conv2d"}), module, "i.ptx");
  ASSERT_TRUE(status) << status.message();
  status = module->run(nullptr, {{0xA000000, 802816}}, {{0xB000000, 802816}});
  ASSERT_TRUE(status) << status.message();
  ASSERT_EQ(fake::state.encodes.size(), 1u);
  const fake::Encode &e = fake::state.encodes[0];
  // Encoded before the launch that takes it (then a copy and the event).
  EXPECT_EQ(fake::state.calls[fake::state.calls.size() - 4], "encode im2col");
  EXPECT_EQ(e.dims, (std::vector<fake::cuuint64_t>{64, 56, 56, 1}));
  EXPECT_EQ(e.box, (std::vector<fake::cuuint32_t>{32, 128}));
  EXPECT_EQ(e.elementStrides, (std::vector<fake::cuuint32_t>{1, 1, 1, 1}));
  EXPECT_EQ(e.lower, (std::vector<int>{-1, -1}));
  EXPECT_EQ(e.upper, (std::vector<int>{-1, -1}));
  EXPECT_EQ(fake::state.launches[0].args[3], 0xA000000u);
}

TEST_F(RuntimeLaunch, ChecksBindingsBeforeEnqueueing) {
  std::shared_ptr<Device> device = openDevice();
  std::unique_ptr<Module> module;
  ASSERT_TRUE(Module::load(device, artifactOf(validPlan(), {"k0_conv2d"}),
                           module, "a.ptx"));
  auto runError = [&](std::vector<BufferRef> inputs,
                      std::vector<BufferRef> outputs) {
    Status status = module->run(nullptr, inputs, outputs);
    EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
    return status.message();
  };
  EXPECT_EQ(runError({}, {{0x100, 802816}}),
            "expected 1 input, got 0: pass one device buffer per graph "
            "argument, in order");
  EXPECT_EQ(runError({{0x100, 802816}}, {{0x100, 802816}, {0x200, 4}}),
            "expected 1 output, got 2: pass one device buffer per graph "
            "result, in order");
  EXPECT_EQ(runError({{0x100, 800}}, {{0x200, 802816}}),
            "input 0 has 800 bytes, the plan needs 802816 (f32 [1,56,56,64])");
  EXPECT_EQ(runError({{0x100, 802816}}, {{0, 802816}}),
            "output 0 is a null device pointer: allocate 802816 bytes (f32 "
            "[1,56,56,64]) for it");
  EXPECT_TRUE(fake::state.launches.empty());
  EXPECT_TRUE(fake::state.copies.empty());
}

TEST_F(RuntimeLaunch, RefusesOutputsThatShareMemoryWithOtherBuffers) {
  std::shared_ptr<Device> device = openDevice();
  json p = validPlan();
  // A second output, 4 f32 values.
  p["buffers"].push_back(json::parse(R"({"id": 3, "role": "output",
    "index": 1, "dtype": "f32", "shape": [4], "bytes": 16})"));
  std::unique_ptr<Module> module;
  ASSERT_TRUE(
      Module::load(device, artifactOf(p, {"k0_conv2d"}), module, "a.ptx"));
  auto runError = [&](std::vector<BufferRef> inputs,
                      std::vector<BufferRef> outputs) {
    Status status = module->run(nullptr, inputs, outputs);
    EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
    return status.message();
  };
  const uint64_t n = 802816;
  // The output is the input.
  EXPECT_EQ(runError({{0x1000000, n}}, {{0x1000000, n}, {0x3000000, 16}}),
            "output 0 [0x1000000, +802816 bytes) overlaps input 0 "
            "[0x1000000, +802816 bytes): fusec does not compute in place (a "
            "kernel may write the output while another still reads it); pass "
            "an output that shares no memory with the inputs or the other "
            "outputs");
  // A view that starts inside the input; one that ends inside it.
  EXPECT_EQ(
      runError({{0x1000000, n}}, {{0x2000000, n}, {0x1000000 + n - 4, 16}})
          .rfind("output 1 [0x10c3ffc, +16 bytes) overlaps input 0 "
                 "[0x1000000, +802816 bytes)",
                 0),
      0u);
  EXPECT_EQ(
      runError({{0x1000000, n}}, {{0x1000000 - n + 1, n}, {0x3000000, 16}})
          .rfind("output 0 [0xf3c001, +802816 bytes) overlaps input 0", 0),
      0u);
  // Two outputs over each other.
  EXPECT_EQ(runError({{0x1000000, n}}, {{0x2000000, n}, {0x2000010, 16}})
                .rfind("output 1 [0x2000010, +16 bytes) overlaps output 0 "
                       "[0x2000000, +802816 bytes)",
                       0),
            0u);
  EXPECT_TRUE(fake::state.launches.empty());
  // Adjacent buffers do not overlap; inputs may share memory.
  ASSERT_TRUE(module->run(nullptr, {{0x1000000, n}},
                          {{0x1000000 + n, n}, {0x1000000 - 16, 16}}));
}

TEST_F(RuntimeLaunch, RunsOnSeveralStreamsWithTheirOwnWorkspaces) {
  std::shared_ptr<Device> device = openDevice();
  std::unique_ptr<Module> module;
  ASSERT_TRUE(Module::load(device, artifactOf(validPlan(), {"k0_conv2d"}),
                           module, "a.ptx"));
  EXPECT_EQ(module->workspaceBytes(), 802816u);
  EXPECT_EQ(module->workspaceCount(), 1u);
  EXPECT_EQ(module->maxWorkspaces(), Module::kDefaultMaxWorkspaces);
  const fake::CUdeviceptr first = fake::state.live.begin()->first;
  const DevicePtr x = 0xA000000, y = 0xB000000;
  Stream a = reinterpret_cast<Stream>(0xa), b = reinterpret_cast<Stream>(0xb),
         c = reinterpret_cast<Stream>(0xc), d = reinterpret_cast<Stream>(0xd);
  // The intermediate each run used (args[1] of the conv).
  auto runOn = [&](Stream stream) {
    fake::state.calls.clear();
    fake::state.launches.clear();
    Status status = module->run(stream, {{x, 802816}}, {{y, 802816}});
    EXPECT_TRUE(status) << status.message();
    EXPECT_EQ(fake::state.launches.at(0).stream,
              reinterpret_cast<fake::CUstream>(stream));
    return fake::state.launches.at(0).args.at(1);
  };

  EXPECT_EQ(runOn(a), first);
  // Stream b runs while a's run is unfinished: a second workspace.
  fake::CUdeviceptr second = runOn(b);
  EXPECT_NE(second, first);
  EXPECT_EQ(fake::state.calls,
            (std::vector<std::string>{"alloc 802816", "launch k0_conv2d",
                                      "copy", "record"}));
  EXPECT_EQ(module->workspaceCount(), 2u);
  // Each stream keeps its own, ordered after its last run.
  EXPECT_EQ(runOn(a), first);
  EXPECT_EQ(fake::state.calls.front(), "wait");
  EXPECT_EQ(runOn(b), second);

  // Once a run has finished, another stream takes its workspace.
  fake::state.finished.insert(fake::state.events.begin(),
                              fake::state.events.end());
  fake::CUdeviceptr reused = runOn(c);
  EXPECT_TRUE(reused == first || reused == second);
  EXPECT_EQ(module->workspaceCount(), 2u);

  // At the maximum, a new stream waits for the least recently used.
  fake::state.finished.clear();
  module->setMaxWorkspaces(2);
  fake::CUdeviceptr waited = runOn(d);
  EXPECT_EQ(fake::state.calls.front(), "wait");
  EXPECT_EQ(waited, reused == first ? second : first);
  EXPECT_EQ(module->workspaceCount(), 2u);
  module->setMaxWorkspaces(0);
  EXPECT_EQ(module->maxWorkspaces(), 1u);
}

TEST_F(RuntimeLaunch, CapturedRunsAllocateTheirIntermediatesInTheGraph) {
  std::shared_ptr<Device> device = openDevice();
  std::unique_ptr<Module> module;
  Stream stream = reinterpret_cast<Stream>(0x5);
  // Loaded while the stream is captured (a first call inside a capture):
  // nothing of the load is unsafe in a capture (TearDown checks).
  fake::state.capturing.insert(reinterpret_cast<fake::CUstream>(stream));
  ASSERT_TRUE(Module::load(device, artifactOf(validPlan(), {"k0_conv2d"}),
                           module, "a.ptx"));
  const fake::CUdeviceptr own = fake::state.live.begin()->first;
  fake::state.calls.clear();
  ASSERT_TRUE(
      module->run(stream, {{0xA000000, 802816}}, {{0xB000000, 802816}}));
  // The graph allocates and frees them; no event (none may cross a capture).
  ASSERT_EQ(fake::state.calls,
            (std::vector<std::string>{"alloc async 802816", "launch k0_conv2d",
                                      "copy", "free async"}));
  EXPECT_NE(fake::state.launches.at(0).args.at(1), own);
  EXPECT_EQ(module->workspaceCount(), 1u);

  // The legacy stream while another stream is captured.
  fake::state.captureQueryResult = fake::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  fake::state.calls.clear();
  Status status =
      module->run(nullptr, {{0xA000000, 802816}}, {{0xB000000, 802816}});
  EXPECT_EQ(status.code(), StatusCode::DriverError);
  EXPECT_EQ(status.message(),
            "a.ptx: asking whether the stream is being captured into a CUDA "
            "graph: cuStreamIsCapturing failed with CUDA error 906; a CUDA "
            "graph capture is under way and this call is not allowed in it "
            "(or the capture failed before); run on the capturing stream, "
            "not the legacy default stream, or outside the capture");
  EXPECT_TRUE(fake::state.calls.empty());
}

TEST_F(RuntimeLaunch, RunsWithTheCallersWorkspace) {
  std::shared_ptr<Device> device = openDevice();
  json p = validPlan();
  // Two small intermediates more, each at a 256-byte aligned offset.
  p["buffers"].push_back(json::parse(R"({"id": 3, "role": "intermediate",
    "dtype": "f16", "shape": [3], "bytes": 6})"));
  p["buffers"].push_back(json::parse(R"({"id": 4, "role": "intermediate",
    "dtype": "f32", "shape": [1], "bytes": 4})"));
  p["steps"][0]["args"] = {0, 1, 2, 3, 4};
  fake::state.arity["k0_conv2d"] = 5;
  std::unique_ptr<Module> module;
  ASSERT_TRUE(
      Module::load(device, artifactOf(p, {"k0_conv2d"}), module, "a.ptx"));
  EXPECT_EQ(module->workspaceBytes(), 802816u + 256 + 4);
  const DevicePtr x = 0xA000000, y = 0xB000000, w = 0xC000000;
  const uint64_t n = 802816;
  auto runError = [&](BufferRef workspace) {
    Status status = module->run(nullptr, {{x, n}}, {{y, n}}, workspace);
    EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
    return status.message();
  };
  EXPECT_EQ(runError({w, n}), "the workspace has 802816 bytes, the plan needs "
                              "803076 bytes");
  EXPECT_EQ(runError({0, n + 260}), "the workspace is a null device pointer: "
                                    "allocate 803076 bytes for it");
  EXPECT_EQ(runError({w + 16, n + 260}),
            "the workspace at 0xc000010 is not 256-byte aligned");
  EXPECT_EQ(runError({y - 256, n + 260}),
            "the workspace [0xaffff00, +803076 bytes) overlaps output 0 "
            "[0xb000000, +802816 bytes): pass a workspace that shares no "
            "memory with them");
  EXPECT_TRUE(fake::state.launches.empty());

  fake::state.calls.clear();
  ASSERT_TRUE(module->run(nullptr, {{x, n}}, {{y, n}}, {w, n + 1000}));
  // Only the steps: the module's own workspaces are not touched.
  EXPECT_EQ(fake::state.calls,
            (std::vector<std::string>{"launch k0_conv2d", "copy"}));
  EXPECT_EQ(fake::state.launches.at(0).args,
            (std::vector<fake::CUdeviceptr>{x, w, y, w + n, w + n + 256}));
}

TEST_F(RuntimeLaunch, RefusesDevicesTooOldForTheArch) {
  fake::state.ccMajor = 8;
  fake::state.ccMinor = 6;
  std::shared_ptr<Device> device = openDevice();
  std::unique_ptr<Module> module;
  Status status = Module::load(
      device, artifactOf(validPlan(), {"k0_conv2d"}), module, "a.ptx");
  EXPECT_EQ(status.code(), StatusCode::UnsupportedDevice);
  EXPECT_EQ(status.message(),
            "a.ptx was compiled for sm_90 (target.arch), but device 0 (Fake "
            "GPU, sm_86) has compute capability 8.6: recompile the graph for "
            "sm_86 or run it on a device of compute capability 9.0 or newer");
  EXPECT_TRUE(fake::state.calls.empty()) << "nothing compiled or allocated";

  // Newer devices JIT the PTX forward...
  fake::state.ccMajor = 10;
  fake::state.ccMinor = 0;
  device = openDevice();
  EXPECT_TRUE(Module::load(device, artifactOf(validPlan(), {"k0_conv2d"}),
                           module, "a.ptx"));
  module.reset();
  // ...but not arch-specific PTX.
  json p = validPlan();
  p["target"]["arch"] = "sm_90a";
  status = Module::load(device, artifactOf(p, {"k0_conv2d"}), module, "a.ptx");
  EXPECT_EQ(status.code(), StatusCode::UnsupportedDevice);
  EXPECT_EQ(status.message(),
            "a.ptx was compiled for sm_90a (target.arch), whose code runs "
            "only on compute capability 9.0, but device 0 (Fake GPU, sm_100) "
            "has compute capability 10.0: recompile the graph for sm_100");
}

TEST_F(RuntimeLaunch, RefusesMoreSharedMemoryThanTheDeviceHas) {
  fake::state.sharedOptin = 65535;
  std::shared_ptr<Device> device = openDevice();
  std::unique_ptr<Module> module;
  Status status = Module::load(
      device, artifactOf(twoKernelPlan(), {"k0_conv2d", "k1_epilogue"}),
      module, "a.ptx");
  EXPECT_EQ(status.code(), StatusCode::UnsupportedDevice);
  EXPECT_EQ(status.message(),
            "a.ptx: steps[2] (kernel 'k1_epilogue') needs 65536 bytes of "
            "dynamic shared memory, but device 0 (Fake GPU, sm_90) allows at "
            "most 65535 bytes per block: recompile with smaller tiles for "
            "this device");
}

TEST_F(RuntimeLaunch, CompilesCudaCForTheDevice) {
  std::shared_ptr<Device> device = openDevice();
  std::unique_ptr<Module> module;
  Status status =
      Module::load(device, cudaArtifactOf({"k0_conv2d"}), module, "a.cu");
  if (status.code() == StatusCode::NoCompiler)
    GTEST_SKIP() << status.message();
  ASSERT_TRUE(status) << status.message();
  // The driver got NVRTC's PTX for the fake device's sm_90, not the source.
  EXPECT_NE(fake::state.image.find(".target sm_90\n"), std::string::npos)
      << fake::state.image;
  EXPECT_NE(fake::state.image.find(".entry k0_conv2d("), std::string::npos);
  EXPECT_EQ(fake::state.kernels, (std::vector<std::string>{"k0_conv2d"}));

  // NVRTC's PTX is held to the plan as a PTX artifact is.
  std::string twoParams = cudaArtifactOf({"k0_conv2d"});
  twoParams.replace(twoParams.find(", float *x)"), 11, ")");
  status = Module::load(device, twoParams, module, "a.cu");
  EXPECT_EQ(status.message(),
            "a.cu: steps[0].args: kernel 'k0_conv2d' takes 2 parameters, the "
            "plan passes 3; the plan and the kernel do not match");
}

TEST_F(RuntimeLaunch, ReportsTheJitLog) {
  fake::state.loadResult = fake::CUDA_ERROR_INVALID_PTX;
  fake::state.jitErrorLog =
      "ptxas application ptx input, line 9; error   : Unknown symbol 'x'\n";
  std::shared_ptr<Device> device = openDevice();
  std::unique_ptr<Module> module;
  Status status = Module::load(
      device, artifactOf(validPlan(), {"k0_conv2d"}), module, "a.ptx");
  EXPECT_EQ(status.code(), StatusCode::DriverError);
  EXPECT_EQ(status.message(),
            "a.ptx: cannot load the PTX on device 0 (Fake GPU, sm_90): "
            "cuModuleLoadDataEx failed with CUDA_ERROR_INVALID_PTX (fake "
            "description); the driver's PTX compiler rejected the artifact "
            "(see the JIT log); check it with 'ptxas -arch=<arch>' and report "
            "it as a fusec bug\n"
            "JIT log:\n"
            "ptxas application ptx input, line 9; error   : Unknown symbol "
            "'x'");
}

TEST_F(RuntimeLaunch, ReportsLaunchAndAllocationFailures) {
  std::shared_ptr<Device> device = openDevice();
  std::unique_ptr<Module> module;
  fake::state.failAllocAbove = 1000;
  Status status = Module::load(
      device, artifactOf(validPlan(), {"k0_conv2d"}), module, "a.ptx");
  EXPECT_EQ(status.code(), StatusCode::DriverError);
  EXPECT_EQ(status.message(),
            "a.ptx: allocating 802816 bytes for the intermediate buffers "
            "(workspace 0) on device 0 (Fake GPU, sm_90): cuMemAlloc failed "
            "with CUDA_ERROR_OUT_OF_MEMORY (fake description); free device "
            "memory (other processes may hold it: see nvidia-smi) or run a "
            "smaller graph");
  EXPECT_FALSE(fake::state.moduleLoaded) << "a failed load unloads";

  fake::state.failAllocAbove = ~size_t(0);
  ASSERT_TRUE(Module::load(device, artifactOf(validPlan(), {"k0_conv2d"}),
                           module, "a.ptx"));
  fake::state.launchResult = 12345; // a code the driver cannot name
  fake::state.calls.clear();
  status = module->run(nullptr, {{0x1000000, 802816}}, {{0x2000000, 802816}});
  // The workspace's event is recorded all the same: a later run on another
  // stream must wait for whatever was enqueued.
  EXPECT_EQ(fake::state.calls,
            (std::vector<std::string>{"launch k0_conv2d", "record"}));
  EXPECT_EQ(status.code(), StatusCode::DriverError);
  EXPECT_EQ(status.message(),
            "a.ptx: steps[0]: launching kernel 'k0_conv2d' with grid "
            "[98,1,1], block [256,1,1] and 16384 bytes of shared memory: "
            "cuLaunchKernel failed with CUDA error 12345");
}

TEST_F(RuntimeLaunch, DeviceRunPoisonsOutputsBeforeEachRun) {
  std::shared_ptr<Device> device = openDevice();
  std::unique_ptr<Module> module;
  ASSERT_TRUE(Module::load(device, artifactOf(validPlan(), {"k0_conv2d"}),
                           module, "a.ptx"));
  std::string error;
  // Inputs are checked against the plan before anything is allocated.
  EXPECT_FALSE(fusec::jit::DeviceRun::create(device, module->plan(), {},
                                             error));
  EXPECT_EQ(error, "the graph takes 1 inputs, 0 were given");
  fusec::jit::HostTensor x{{1, 56, 56, 63}, fusec::jit::DType::F32, {}};
  EXPECT_FALSE(
      fusec::jit::DeviceRun::create(device, module->plan(), {x}, error));
  EXPECT_EQ(error, "input 0 has shape [1,56,56,63], the graph takes f32 "
                   "[1,56,56,64]");
  x.shape = {1, 56, 56, 64};
  EXPECT_FALSE(
      fusec::jit::DeviceRun::create(device, module->plan(), {x}, error));
  EXPECT_EQ(error, "input 0 holds 0 values, its shape 200704");

  x.data.assign(200704, 1.5);
  std::unique_ptr<fusec::jit::DeviceRun> run =
      fusec::jit::DeviceRun::create(device, module->plan(), {x}, error);
  ASSERT_TRUE(run) << error;
  // The intermediate, then the graph's input and output.
  ASSERT_EQ(fake::state.live.size(), 3u);
  fake::CUdeviceptr output = std::prev(fake::state.live.end())->first;
  fake::state.calls.clear();
  fusec::jit::Evaluation result = run->run(*module);
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_EQ(fake::state.calls,
            (std::vector<std::string>{"fill " + std::to_string(output) + " 255",
                                      "launch k0_conv2d", "copy", "record"}));
  ASSERT_EQ(result.outputs.size(), 1u);
  EXPECT_EQ(result.outputs[0].shape, x.shape);
  EXPECT_EQ(result.outputs[0].data.size(), 200704u);

  // A failed launch is the run's error.
  fake::state.launchResult = 12345;
  result = run->run(*module);
  EXPECT_TRUE(result.outputs.empty());
  EXPECT_EQ(result.error,
            "a.ptx: steps[0]: launching kernel 'k0_conv2d' with grid "
            "[98,1,1], block [256,1,1] and 16384 bytes of shared memory: "
            "cuLaunchKernel failed with CUDA error 12345");
}

//===----------------------------------------------------------------------===//
// On a GPU (skipped without one)
//===----------------------------------------------------------------------===//

/// out = x + y over 1000 f32 elements, as a fusec artifact.
const char *const kAddArtifact = R"(// fusec artifact v1
// fusec-plan: {"format":"fusec-plan","version":1,"graph":"add","target":{"kind":"ptx","arch":"sm_80"},"buffers":[{"id":0,"role":"input","index":0,"dtype":"f32","shape":[1000],"bytes":4000},{"id":1,"role":"input","index":1,"dtype":"f32","shape":[1000],"bytes":4000},{"id":2,"role":"output","index":0,"dtype":"f32","shape":[1000],"bytes":4000}],"steps":[{"kind":"launch","kernel":"k0_add","grid":[4,1,1],"block":[256,1,1],"shared_bytes":0,"args":[0,1,2]}]}
.version 7.0
.target sm_80
.address_size 64

.visible .entry k0_add(.param .u64 x, .param .u64 y, .param .u64 out)
{
	.reg .pred %p<2>;
	.reg .b32 %r<5>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<10>;

	ld.param.u64 %rd1, [x];
	ld.param.u64 %rd2, [y];
	ld.param.u64 %rd3, [out];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mad.lo.s32 %r4, %r1, %r2, %r3;
	setp.ge.s32 %p1, %r4, 1000;
	@%p1 bra DONE;
	mul.wide.s32 %rd4, %r4, 4;
	cvta.to.global.u64 %rd5, %rd1;
	add.s64 %rd6, %rd5, %rd4;
	ld.global.f32 %f1, [%rd6];
	cvta.to.global.u64 %rd7, %rd2;
	add.s64 %rd8, %rd7, %rd4;
	ld.global.f32 %f2, [%rd8];
	add.f32 %f3, %f1, %f2;
	cvta.to.global.u64 %rd9, %rd3;
	add.s64 %rd9, %rd9, %rd4;
	st.global.f32 [%rd9], %f3;
DONE:
	ret;
}
)";

/// Device 0, or null (and the test skipped) where there is none.
std::shared_ptr<Device> openGpuOrSkip() {
  std::shared_ptr<Device> device;
  Status status = Device::open(0, device);
  if (status.code() == StatusCode::NoDriver ||
      status.code() == StatusCode::NoDevice)
    return nullptr;
  EXPECT_TRUE(status) << status.message();
  return device;
}

TEST(RuntimeGpu, RunsAnArtifactThroughTheCppApi) {
  std::shared_ptr<Device> device = openGpuOrSkip();
  if (!device)
    GTEST_SKIP() << "no CUDA device";
  std::unique_ptr<Module> module;
  Status status = Module::load(device, kAddArtifact, module, "add");
  ASSERT_TRUE(status) << status.message();

  std::vector<float> x(1000), y(1000), out(1000, 0.0f);
  for (int i = 0; i < 1000; ++i) {
    x[i] = 0.5f * i;
    y[i] = 1000.0f - i;
  }
  DeviceBuffer dx, dy, dout;
  ASSERT_TRUE(DeviceBuffer::allocate(device, 4000, dx));
  ASSERT_TRUE(DeviceBuffer::allocate(device, 4000, dy));
  ASSERT_TRUE(DeviceBuffer::allocate(device, 4000, dout));
  ASSERT_TRUE(device->copyToDevice(dx.ptr(), x.data(), 4000));
  ASSERT_TRUE(device->copyToDevice(dy.ptr(), y.data(), 4000));
  ASSERT_TRUE(device->fill(dout.ptr(), 0xFF, 4000));

  Event start, end;
  ASSERT_TRUE(device->createEvent(start));
  ASSERT_TRUE(device->createEvent(end));
  ASSERT_TRUE(device->recordEvent(start));
  status = module->run(nullptr, {dx.ref(), dy.ref()}, {dout.ref()});
  ASSERT_TRUE(status) << status.message();
  ASSERT_TRUE(device->recordEvent(end));
  status = device->synchronize();
  ASSERT_TRUE(status) << status.message();
  float ms = -1;
  ASSERT_TRUE(device->elapsedMs(start, end, ms));
  EXPECT_GE(ms, 0.0f);
  ASSERT_TRUE(device->destroyEvent(start));
  ASSERT_TRUE(device->destroyEvent(end));

  ASSERT_TRUE(device->copyToHost(out.data(), dout.ptr(), 4000));
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(out[i], x[i] + y[i]) << "at " << i;

  // Wrong sizes are refused before anything runs.
  status = module->run(nullptr, {dx.ref(), {dy.ptr(), 3996}}, {dout.ref()});
  EXPECT_EQ(status.message(),
            "input 1 has 3996 bytes, the plan needs 4000 (f32 [1000])");
}

TEST(RuntimeGpu, JitRunsAndTimesAnArtifactOnHostTensors) {
  std::shared_ptr<Device> device = openGpuOrSkip();
  if (!device)
    GTEST_SKIP() << "no CUDA device";
  fusec::jit::HostTensor x{{1000}, fusec::jit::DType::F32, {}}, y = x;
  for (int i = 0; i < 1000; ++i) {
    x.data.push_back(0.5 * i);
    y.data.push_back(1000.0 - i);
  }
  fusec::jit::Evaluation result = fusec::jit::run(kAddArtifact, {x, y});
  ASSERT_TRUE(result.ok()) << result.error;
  ASSERT_EQ(result.outputs.size(), 1u);
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(result.outputs[0].data[i], x.data[i] + y.data[i]) << "at " << i;

  std::unique_ptr<Module> module;
  ASSERT_TRUE(Module::load(device, kAddArtifact, module, "add"));
  std::string error;
  std::unique_ptr<fusec::jit::DeviceRun> run =
      fusec::jit::DeviceRun::create(device, module->plan(), {x, y}, error);
  ASSERT_TRUE(run) << error;
  double ms = run->time(*module, 10, error);
  EXPECT_GT(ms, 0.0) << error;
}

TEST(RuntimeGpu, RunsAnArtifactThroughTheCApi) {
  if (!openGpuOrSkip())
    GTEST_SKIP() << "no CUDA device";
  fusec_device *device = nullptr;
  ASSERT_EQ(fusec_device_open(0, &device), FUSEC_OK)
      << fusec_last_error_message();
  int major = 0, minor = -1;
  fusec_device_compute_capability(device, &major, &minor);
  EXPECT_GE(major, 8);
  EXPECT_GE(minor, 0);
  EXPECT_STRNE(fusec_device_name(device), "");

  fusec_module *module = nullptr;
  ASSERT_EQ(fusec_module_load(device, kAddArtifact, std::strlen(kAddArtifact),
                              &module),
            FUSEC_OK)
      << fusec_last_error_message();
  EXPECT_EQ(fusec_module_num_inputs(module), 2u);
  EXPECT_EQ(fusec_module_num_outputs(module), 1u);
  fusec_buffer_info info;
  ASSERT_EQ(fusec_module_output_info(module, 0, &info), FUSEC_OK);
  EXPECT_EQ(info.dtype, FUSEC_DTYPE_F32);
  ASSERT_EQ(info.rank, 1u);
  EXPECT_EQ(info.shape[0], 1000);
  EXPECT_EQ(info.bytes, 4000u);
  EXPECT_EQ(fusec_module_input_info(module, 2, &info),
            FUSEC_ERROR_INVALID_ARGUMENT);

  std::vector<float> x(1000, 1.5f), y(1000, -0.25f), out(1000, 0.0f);
  fusec_device_ptr px, py, pout;
  ASSERT_EQ(fusec_device_alloc(device, 4000, &px), FUSEC_OK);
  ASSERT_EQ(fusec_device_alloc(device, 4000, &py), FUSEC_OK);
  ASSERT_EQ(fusec_device_alloc(device, 4000, &pout), FUSEC_OK);
  ASSERT_EQ(fusec_device_copy_to_device(device, px, x.data(), 4000), FUSEC_OK);
  ASSERT_EQ(fusec_device_copy_to_device(device, py, y.data(), 4000), FUSEC_OK);
  fusec_buffer inputs[] = {{px, 4000}, {py, 4000}};
  fusec_buffer outputs[] = {{pout, 4000}};
  ASSERT_EQ(fusec_module_run(module, nullptr, inputs, 2, outputs, 1), FUSEC_OK)
      << fusec_last_error_message();
  EXPECT_EQ(fusec_module_run(module, nullptr, inputs, 1, outputs, 1),
            FUSEC_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(fusec_last_error_message(),
               "expected 2 inputs, got 1: pass one device buffer per graph "
               "argument, in order");
  ASSERT_EQ(fusec_device_synchronize(device, nullptr), FUSEC_OK);
  ASSERT_EQ(fusec_device_copy_to_host(device, out.data(), pout, 4000),
            FUSEC_OK);
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(out[i], 1.25f) << "at " << i;

  for (fusec_device_ptr p : {px, py, pout})
    EXPECT_EQ(fusec_device_free(device, p), FUSEC_OK);
  // The device handle may go first: the module keeps the device alive.
  fusec_device_release(device);
  fusec_module_release(module);
}

TEST(RuntimeGpu, RefusesAnArchTheDeviceLacks) {
  std::shared_ptr<Device> device = openGpuOrSkip();
  if (!device)
    GTEST_SKIP() << "no CUDA device";
  std::string artifact = kAddArtifact;
  artifact.replace(artifact.find("\"sm_80\""), 7, "\"sm_990\"");
  std::unique_ptr<Module> module;
  Status status = Module::load(device, artifact, module, "add");
  EXPECT_EQ(status.code(), StatusCode::UnsupportedDevice);
  EXPECT_EQ(status.message().rfind("add was compiled for sm_990 "
                                   "(target.arch), but device 0 (",
                                   0),
            0u)
      << status.message();
}

} // namespace
