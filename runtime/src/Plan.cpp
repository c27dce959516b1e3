//===- Plan.cpp - Parsing and validating launch plans ---------------------===//
//
// The plan is checked strictly, field by field, so that a compiler bug or a
// damaged file fails at load with the name of the field ("buffers[1].bytes:
// ...") rather than as a wrong result or a fault on the GPU. Unknown fields
// are errors too: a new field comes with a new plan version.
//
//===----------------------------------------------------------------------===//

#include "fusec/runtime/Plan.h"

#include "Nvrtc.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <set>

using namespace fusec::runtime;
using json = nlohmann::json;

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

const char *fusec::runtime::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  }
  return "?";
}

size_t fusec::runtime::dtypeSize(DType dtype) {
  return dtype == DType::F32 ? 4 : 2;
}

const char *fusec::runtime::roleName(BufferRole role) {
  switch (role) {
  case BufferRole::Input:
    return "input";
  case BufferRole::Output:
    return "output";
  case BufferRole::Intermediate:
    return "intermediate";
  }
  return "?";
}

int64_t BufferDesc::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

static std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string BufferDesc::typeString() const {
  return std::string(dtypeName(dtype)) + " " + shapeString(shape);
}

namespace {

Status invalid(const std::string &path, const std::string &message) {
  return Status::error(StatusCode::InvalidArtifact,
                       path.empty() ? message : path + ": " + message);
}

std::string join(const std::string &path, const std::string &key) {
  return path.empty() ? key : path + "." + key;
}

std::string indexed(const std::string &path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

/// What a JSON value is, for "expected an integer, got a string".
std::string kindOf(const json &value) {
  switch (value.type()) {
  case json::value_t::null:
    return "null";
  case json::value_t::boolean:
    return "a boolean";
  case json::value_t::string:
    return "a string";
  case json::value_t::array:
    return "an array";
  case json::value_t::object:
    return "an object";
  case json::value_t::number_float:
    return "a fractional number";
  default:
    return "a number";
  }
}

/// Checks that `value` is an object with every key of `required`, and no
/// key outside `required` and `optional`.
Status checkObject(const json &value, const std::string &path,
                   std::initializer_list<const char *> required,
                   std::initializer_list<const char *> optional = {}) {
  if (!value.is_object())
    return invalid(path, "expected an object, got " + kindOf(value));
  for (const char *key : required)
    if (!value.contains(key))
      return invalid(path, std::string("missing field '") + key + "'");
  for (auto it = value.begin(); it != value.end(); ++it) {
    auto matches = [&](const char *key) { return it.key() == key; };
    if (std::any_of(required.begin(), required.end(), matches) ||
        std::any_of(optional.begin(), optional.end(), matches))
      continue;
    std::string known;
    for (auto list : {required, optional})
      for (const char *key : list)
        known += (known.empty() ? "" : ", ") + std::string(key);
    return invalid(path, "unknown field '" + it.key() + "' (expected " +
                             known + ")");
  }
  return Status::success();
}

/// Reads an integer in [lo, hi].
Status getInt(const json &value, const std::string &path, int64_t lo,
              int64_t hi, int64_t &out) {
  if (value.is_number_unsigned()) {
    uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return invalid(path, std::to_string(u) + " is too large");
    out = static_cast<int64_t>(u);
  } else if (value.is_number_integer()) {
    out = value.get<int64_t>();
  } else {
    return invalid(path, "expected an integer, got " + kindOf(value));
  }
  if (out < lo || out > hi) {
    std::string range = hi == std::numeric_limits<int64_t>::max()
                            ? "at least " + std::to_string(lo)
                            : "in [" + std::to_string(lo) + ", " +
                                  std::to_string(hi) + "]";
    return invalid(path, std::to_string(out) + " is out of range: expected " +
                             range);
  }
  return Status::success();
}

Status getString(const json &value, const std::string &path,
                 std::string &out) {
  if (!value.is_string())
    return invalid(path, "expected a string, got " + kindOf(value));
  out = value.get<std::string>();
  return Status::success();
}

/// Reads a buffer id of a plan with `numBuffers` buffers.
Status getBufferId(const json &value, const std::string &path,
                   size_t numBuffers, int64_t &id) {
  FUSEC_RETURN_IF_ERROR(getInt(value, path, std::numeric_limits<int64_t>::min(),
                               std::numeric_limits<int64_t>::max(), id));
  if (id < 0 || static_cast<size_t>(id) >= numBuffers)
    return invalid(path, "buffer " + std::to_string(id) +
                             " does not exist (the plan has " +
                             std::to_string(numBuffers) + " buffers, ids 0.." +
                             std::to_string(static_cast<int64_t>(numBuffers) -
                                            1) +
                             ")");
  return Status::success();
}

/// Reads an array of integers in [lo, hi], of `minSize` to `maxSize`
/// elements.
Status getInts(const json &value, const std::string &path, size_t minSize,
               size_t maxSize, int64_t lo, int64_t hi,
               std::vector<int64_t> &out) {
  if (!value.is_array() || value.size() < minSize || value.size() > maxSize)
    return invalid(path, "expected an array of " + std::to_string(minSize) +
                             (minSize == maxSize
                                  ? ""
                                  : " to " + std::to_string(maxSize)) +
                             " integers, got " +
                             (value.is_array()
                                  ? std::to_string(value.size()) + " elements"
                                  : kindOf(value)));
  out.clear();
  for (size_t i = 0; i < value.size(); ++i) {
    int64_t v;
    FUSEC_RETURN_IF_ERROR(getInt(value[i], indexed(path, i), lo, hi, v));
    out.push_back(v);
  }
  return Status::success();
}

/// Reads a tensor-map parameter (plan version 2) over a buffer, checking
/// what cuTensorMapEncodeTiled requires and that the view stays inside the
/// buffer.
Status parseTensorMap(const json &value, const std::string &path,
                      const Plan &plan, int64_t &buffer, TensorMapDesc &map) {
  FUSEC_RETURN_IF_ERROR(checkObject(
      value, path, {"buffer", "dims", "strides", "box", "offset", "swizzle"},
      {"im2col"}));
  FUSEC_RETURN_IF_ERROR(getBufferId(value["buffer"], join(path, "buffer"),
                                    plan.buffers.size(), buffer));
  const BufferDesc &desc = plan.buffers[buffer];
  std::vector<int64_t> dims, strides, box;
  FUSEC_RETURN_IF_ERROR(
      getInts(value["dims"], join(path, "dims"), 1, 5, 1, int64_t(1) << 32, dims));
  FUSEC_RETURN_IF_ERROR(getInts(value["strides"], join(path, "strides"),
                                dims.size() - 1, dims.size() - 1, 16,
                                int64_t(1) << 40, strides));
  // An im2col map copies box = {channels, pixels} between two corners of
  // each image (cuTensorMapEncodeIm2col's limits).
  map.im2col = value.contains("im2col");
  if (map.im2col) {
    std::string at = join(path, "im2col");
    const json &im2col = value["im2col"];
    FUSEC_RETURN_IF_ERROR(checkObject(im2col, at, {"lower", "upper"}));
    if (dims.size() < 3)
      return invalid(join(path, "dims"),
                     "an im2col map has rank 3 to 5, not " +
                         std::to_string(dims.size()));
    int64_t bound = dims.size() == 3 ? 32768 : dims.size() == 4 ? 128 : 16;
    for (const char *corner : {"lower", "upper"}) {
      std::vector<int64_t> values;
      FUSEC_RETURN_IF_ERROR(getInts(im2col[corner], join(at, corner),
                                    dims.size() - 2, dims.size() - 2, -bound,
                                    bound - 1, values));
      (std::string(corner) == "lower" ? map.lower : map.upper)
          .assign(values.begin(), values.end());
    }
    FUSEC_RETURN_IF_ERROR(
        getInts(value["box"], join(path, "box"), 2, 2, 1, 1024, box));
    if (box[0] > 256)
      return invalid(indexed(join(path, "box"), 0),
                     std::to_string(box[0]) +
                         " channels per pixel: at most 256");
  } else {
    FUSEC_RETURN_IF_ERROR(getInts(value["box"], join(path, "box"),
                                  dims.size(), dims.size(), 1, 256, box));
  }
  int64_t offset, swizzle;
  FUSEC_RETURN_IF_ERROR(getInt(value["offset"], join(path, "offset"), 0,
                               int64_t(1) << 48, offset));
  FUSEC_RETURN_IF_ERROR(
      getInt(value["swizzle"], join(path, "swizzle"), 0, 128, swizzle));
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return invalid(join(path, "swizzle"),
                   std::to_string(swizzle) + " is not 0, 32, 64 or 128");
  for (size_t i = 0; i < strides.size(); ++i)
    if (strides[i] % 16)
      return invalid(indexed(join(path, "strides"), i),
                     std::to_string(strides[i]) +
                         " is not a multiple of 16 bytes");
  if (offset % 16)
    return invalid(join(path, "offset"),
                   std::to_string(offset) + " is not a multiple of 16 bytes");
  int64_t bytes = static_cast<int64_t>(dtypeSize(desc.dtype));
  if (box[0] * bytes % 16 || (swizzle && box[0] * bytes > swizzle))
    return invalid(indexed(join(path, "box"), 0),
                   std::to_string(box[0]) + " elements span " +
                       std::to_string(box[0] * bytes) +
                       " bytes: a multiple of 16 is needed" +
                       (swizzle ? ", at most the swizzle's " +
                                      std::to_string(swizzle)
                                : std::string()));
  // The last byte the view reaches (each term is below 2^72 / 2^40: no
  // overflow in the sum of at most five with 128-bit headroom checked).
  unsigned __int128 end = static_cast<uint64_t>(offset) + bytes;
  end += static_cast<unsigned __int128>(dims[0] - 1) * bytes;
  for (size_t i = 1; i < dims.size(); ++i)
    end += static_cast<unsigned __int128>(dims[i] - 1) * strides[i - 1];
  if (end > desc.bytes)
    return invalid(path, "the tensor it views reaches past the end of buffer " +
                             std::to_string(buffer) + " (" +
                             std::to_string(desc.bytes) + " bytes, " +
                             desc.typeString() + ")");
  map.dims.assign(dims.begin(), dims.end());
  map.strides.assign(strides.begin(), strides.end());
  map.box.assign(box.begin(), box.end());
  map.offset = static_cast<uint64_t>(offset);
  map.swizzle = static_cast<uint32_t>(swizzle);
  return Status::success();
}

/// Reads [x, y, z], each in [1, 2^32 - 1].
Status getDim3(const json &value, const std::string &path,
               std::array<uint32_t, 3> &out) {
  if (!value.is_array() || value.size() != 3)
    return invalid(path, "expected an array of 3 positive integers, got " +
                             (value.is_array() ? "an array of " +
                                                     std::to_string(
                                                         value.size()) +
                                                     " elements"
                                               : kindOf(value)));
  for (size_t i = 0; i < 3; ++i) {
    int64_t v;
    FUSEC_RETURN_IF_ERROR(getInt(value[i], indexed(path, i), 1,
                                 std::numeric_limits<uint32_t>::max(), v));
    out[i] = static_cast<uint32_t>(v);
  }
  return Status::success();
}

/// "sm_90" -> 9.0, "sm_120" -> 12.0, "sm_90a" -> 9.0 arch-specific.
bool parseArch(const std::string &arch, int &major, int &minor,
               bool &specific) {
  if (arch.compare(0, 3, "sm_") != 0)
    return false;
  size_t end = 3;
  while (end < arch.size() && std::isdigit(static_cast<unsigned char>(arch[end])))
    ++end;
  size_t digits = end - 3;
  if (digits < 2 || digits > 3)
    return false;
  std::string suffix = arch.substr(end);
  // "a": arch-specific features (sm_90a); "f": family-specific (sm_100f).
  if (!suffix.empty() && suffix != "a" && suffix != "f")
    return false;
  int number = std::stoi(arch.substr(3, digits));
  major = number / 10;
  minor = number % 10;
  specific = !suffix.empty();
  return true;
}

//===----------------------------------------------------------------------===//
// Sections of the plan
//===----------------------------------------------------------------------===//

Status parseTarget(const json &value, Plan &plan) {
  FUSEC_RETURN_IF_ERROR(checkObject(value, "target", {"kind", "arch"}));
  FUSEC_RETURN_IF_ERROR(getString(value["kind"], "target.kind", plan.targetKind));
  if (plan.targetKind != "ptx" && plan.targetKind != "cuda")
    return invalid("target.kind", "unsupported target kind '" +
                                      plan.targetKind +
                                      "': this runtime loads \"ptx\" and "
                                      "\"cuda\"");
  FUSEC_RETURN_IF_ERROR(getString(value["arch"], "target.arch", plan.arch));
  if (!parseArch(plan.arch, plan.archMajor, plan.archMinor,
                 plan.archSpecific))
    return invalid("target.arch", "'" + plan.arch +
                                      "' is not a GPU architecture: expected "
                                      "sm_XY such as sm_80 or sm_90");
  return Status::success();
}

Status parseBuffer(const json &value, const std::string &path,
                   size_t numBuffers, BufferDesc &buffer) {
  FUSEC_RETURN_IF_ERROR(checkObject(value, path,
                                    {"id", "role", "dtype", "shape", "bytes"},
                                    {"index"}));
  FUSEC_RETURN_IF_ERROR(
      getBufferId(value["id"], join(path, "id"), numBuffers, buffer.id));

  std::string role;
  FUSEC_RETURN_IF_ERROR(getString(value["role"], join(path, "role"), role));
  if (role == "input")
    buffer.role = BufferRole::Input;
  else if (role == "output")
    buffer.role = BufferRole::Output;
  else if (role == "intermediate")
    buffer.role = BufferRole::Intermediate;
  else
    return invalid(join(path, "role"),
                   "unknown role '" + role +
                       "': expected input, output or intermediate");

  if (buffer.role == BufferRole::Intermediate) {
    if (value.contains("index"))
      return invalid(join(path, "index"),
                     "an intermediate buffer has no index (only inputs and "
                     "outputs are numbered)");
    buffer.index = -1;
  } else {
    if (!value.contains("index"))
      return invalid(path, std::string("missing field 'index' (the ") +
                               roleName(buffer.role) + "'s position among " +
                               (buffer.role == BufferRole::Input
                                    ? "the graph's arguments)"
                                    : "the graph's results)"));
    FUSEC_RETURN_IF_ERROR(getInt(value["index"], join(path, "index"), 0,
                                 std::numeric_limits<int32_t>::max(),
                                 buffer.index));
  }

  std::string dtype;
  FUSEC_RETURN_IF_ERROR(getString(value["dtype"], join(path, "dtype"), dtype));
  if (dtype == "f32")
    buffer.dtype = DType::F32;
  else if (dtype == "f16")
    buffer.dtype = DType::F16;
  else if (dtype == "bf16")
    buffer.dtype = DType::BF16;
  else
    return invalid(join(path, "dtype"), "unknown dtype '" + dtype +
                                            "': expected f32, f16 or bf16");

  const json &shape = value["shape"];
  std::string shapePath = join(path, "shape");
  if (!shape.is_array())
    return invalid(shapePath, "expected an array of non-negative integers, "
                              "got " +
                                  kindOf(shape));
  buffer.shape.clear();
  // Bound the element count so that bytes cannot overflow.
  constexpr int64_t kMaxNumel = int64_t(1) << 56;
  int64_t numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t dim;
    FUSEC_RETURN_IF_ERROR(getInt(shape[i], indexed(shapePath, i), 0,
                                 kMaxNumel, dim));
    buffer.shape.push_back(dim);
    // Saturates at kMaxNumel + 1; a zero dimension still gives 0.
    if (dim == 0 || numel == 0)
      numel = 0;
    else if (numel > kMaxNumel / dim)
      numel = kMaxNumel + 1;
    else
      numel *= dim;
  }
  if (numel > kMaxNumel)
    return invalid(shapePath, shapeString(buffer.shape) +
                                  " has more than 2^56 elements");

  int64_t bytes;
  FUSEC_RETURN_IF_ERROR(getInt(value["bytes"], join(path, "bytes"), 0,
                               std::numeric_limits<int64_t>::max(), bytes));
  buffer.bytes = static_cast<uint64_t>(bytes);
  uint64_t expected = static_cast<uint64_t>(numel) * dtypeSize(buffer.dtype);
  if (buffer.bytes != expected)
    return invalid(join(path, "bytes"),
                   std::to_string(buffer.bytes) + " does not match " +
                       buffer.typeString() + ", which is " +
                       std::to_string(expected) + " bytes");
  return Status::success();
}

/// Fills plan.inputs or plan.outputs from the buffers' indices, which must
/// be 0..n-1 with no gap and no repeat.
/// `positions` maps a buffer id to its position in the JSON array.
Status collectIndices(Plan &plan, BufferRole role,
                      const std::vector<size_t> &positions,
                      std::vector<int64_t> &ids) {
  size_t count = std::count_if(
      plan.buffers.begin(), plan.buffers.end(),
      [&](const BufferDesc &buffer) { return buffer.role == role; });
  std::vector<int64_t> byIndex(count, -1);
  for (const BufferDesc &buffer : plan.buffers) {
    if (buffer.role != role)
      continue;
    std::string path =
        "buffers[" + std::to_string(positions[buffer.id]) + "].index";
    size_t index = static_cast<size_t>(buffer.index);
    if (index >= count)
      return invalid(path, std::string(roleName(role)) + " index " +
                               std::to_string(index) + " leaves a gap: the "
                               "plan has " + std::to_string(count) + " " +
                               roleName(role) + "s, so their indices must "
                               "be 0.." + std::to_string(count - 1));
    if (byIndex[index] >= 0)
      return invalid(path, std::string(roleName(role)) + " index " +
                               std::to_string(index) +
                               " is also the index of buffer " +
                               std::to_string(byIndex[index]));
    byIndex[index] = buffer.id;
  }
  ids = std::move(byIndex);
  return Status::success();
}

Status parseStep(const json &value, const std::string &path, int64_t version,
                 Plan &plan, Step &step) {
  if (!value.is_object())
    return invalid(path, "expected an object, got " + kindOf(value));
  if (!value.contains("kind"))
    return invalid(path, "missing field 'kind'");
  std::string kind;
  FUSEC_RETURN_IF_ERROR(getString(value["kind"], join(path, "kind"), kind));
  size_t numBuffers = plan.buffers.size();

  if (kind == "launch") {
    step.kind = Step::Kind::Launch;
    FUSEC_RETURN_IF_ERROR(checkObject(
        value, path, {"kind", "kernel", "grid", "block", "shared_bytes", "args"}));
    FUSEC_RETURN_IF_ERROR(
        getString(value["kernel"], join(path, "kernel"), step.kernel));
    if (step.kernel.empty())
      return invalid(join(path, "kernel"), "the kernel name is empty");
    FUSEC_RETURN_IF_ERROR(getDim3(value["grid"], join(path, "grid"), step.grid));
    FUSEC_RETURN_IF_ERROR(
        getDim3(value["block"], join(path, "block"), step.block));
    int64_t shared;
    FUSEC_RETURN_IF_ERROR(getInt(value["shared_bytes"],
                                 join(path, "shared_bytes"), 0,
                                 std::numeric_limits<uint32_t>::max(), shared));
    step.sharedBytes = static_cast<uint32_t>(shared);
    const json &args = value["args"];
    std::string argsPath = join(path, "args");
    if (!args.is_array())
      return invalid(argsPath, "expected an array of buffer ids, got " +
                                   kindOf(args));
    for (size_t i = 0; i < args.size(); ++i) {
      std::string argPath = indexed(argsPath, i);
      int64_t id;
      if (!args[i].is_object()) {
        FUSEC_RETURN_IF_ERROR(getBufferId(args[i], argPath, numBuffers, id));
        step.args.push_back(id);
        continue;
      }
      if (version < 2)
        return invalid(argPath, "a tensor map needs plan version 2 or newer");
      FUSEC_RETURN_IF_ERROR(checkObject(args[i], argPath, {"tensor_map"}));
      TensorMapDesc map;
      map.param = i;
      FUSEC_RETURN_IF_ERROR(parseTensorMap(args[i]["tensor_map"],
                                           join(argPath, "tensor_map"), plan,
                                           id, map));
      step.args.push_back(id);
      step.tensorMaps.push_back(std::move(map));
    }
    if (std::find(plan.kernels.begin(), plan.kernels.end(), step.kernel) ==
        plan.kernels.end())
      plan.kernels.push_back(step.kernel);
    return Status::success();
  }

  if (kind == "copy") {
    step.kind = Step::Kind::Copy;
    FUSEC_RETURN_IF_ERROR(
        checkObject(value, path, {"kind", "src", "dst", "bytes"}));
    FUSEC_RETURN_IF_ERROR(
        getBufferId(value["src"], join(path, "src"), numBuffers, step.src));
    FUSEC_RETURN_IF_ERROR(
        getBufferId(value["dst"], join(path, "dst"), numBuffers, step.dst));
    if (step.src == step.dst)
      return invalid(path, "copies buffer " + std::to_string(step.src) +
                               " onto itself");
    int64_t bytes;
    FUSEC_RETURN_IF_ERROR(getInt(value["bytes"], join(path, "bytes"), 0,
                                 std::numeric_limits<int64_t>::max(), bytes));
    step.bytes = static_cast<uint64_t>(bytes);
    for (int64_t id : {step.src, step.dst}) {
      const BufferDesc &buffer = plan.buffers[id];
      if (step.bytes > buffer.bytes)
        return invalid(join(path, "bytes"),
                       std::to_string(step.bytes) + " is more than buffer " +
                           std::to_string(id) + " holds (" +
                           std::to_string(buffer.bytes) + " bytes, " +
                           buffer.typeString() + ")");
    }
    return Status::success();
  }

  return invalid(join(path, "kind"),
                 "unknown step kind '" + kind + "': expected launch or copy");
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

/// Reads the training object of a training artifact's plan: what its inputs
/// and outputs are to the other plan (checked against it by
/// parseTrainingArtifact).
static Status parseTraining(const json &value, const std::string &path,
                            Plan &plan) {
  TrainingDesc &t = plan.training;
  if (!value.is_object())
    return invalid(path, "expected an object, got " + kindOf(value));
  std::string role;
  FUSEC_RETURN_IF_ERROR(
      getString(value.contains("role") ? value["role"] : json(),
                join(path, "role"), role));
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  size_t numInputs = plan.inputs.size(), numOutputs = plan.outputs.size();
  if (role == "forward") {
    FUSEC_RETURN_IF_ERROR(checkObject(value, path, {"role", "num_results"}));
    t.role = TrainingDesc::Role::Forward;
    return getInt(value["num_results"], join(path, "num_results"), 1,
                  static_cast<int64_t>(numOutputs), t.numResults);
  }
  if (role != "backward")
    return invalid(join(path, "role"),
                   "expected \"forward\" or \"backward\", got \"" + role +
                       "\"");
  FUSEC_RETURN_IF_ERROR(checkObject(
      value, path, {"role", "forward_args", "num_saved", "grad_results", "wrt"},
      {"forward_results"}));
  t.role = TrainingDesc::Role::Backward;
  FUSEC_RETURN_IF_ERROR(getInts(value["forward_args"],
                                join(path, "forward_args"), 0, numInputs, 0,
                                kMax, t.forwardArgs));
  if (value.contains("forward_results"))
    FUSEC_RETURN_IF_ERROR(getInts(value["forward_results"],
                                  join(path, "forward_results"), 0, numInputs,
                                  0, kMax, t.forwardResults));
  FUSEC_RETURN_IF_ERROR(getInt(value["num_saved"], join(path, "num_saved"), 0,
                               static_cast<int64_t>(numInputs), t.numSaved));
  FUSEC_RETURN_IF_ERROR(getInts(value["grad_results"],
                                join(path, "grad_results"), 0, numInputs, 0,
                                kMax, t.gradResults));
  size_t accounted = t.forwardArgs.size() + t.forwardResults.size() +
                     size_t(t.numSaved) + t.gradResults.size();
  if (accounted != numInputs)
    return invalid(path, "forward_args, forward_results, num_saved and "
                         "grad_results name " +
                             std::to_string(accounted) +
                             " inputs, but the plan has " +
                             std::to_string(numInputs));
  return getInts(value["wrt"], join(path, "wrt"), numOutputs, numOutputs, 0,
                 kMax, t.wrt);
}

Status fusec::runtime::parsePlan(const std::string &text, Plan &plan) {
  plan = Plan();
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception &e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix.
    std::string what = e.what();
    size_t bracket = what.find("] ");
    if (what.rfind("[json.exception", 0) == 0 && bracket != std::string::npos)
      what = what.substr(bracket + 2);
    return invalid("", "the plan is not valid JSON: " + what);
  }

  FUSEC_RETURN_IF_ERROR(checkObject(
      root, "", {"format", "version", "graph", "target", "buffers", "steps"},
      {"training"}));

  std::string format;
  FUSEC_RETURN_IF_ERROR(getString(root["format"], "format", format));
  if (format != "fusec-plan")
    return invalid("format", "expected \"fusec-plan\", got \"" + format + "\"");

  int64_t version;
  FUSEC_RETURN_IF_ERROR(getInt(root["version"], "version",
                               std::numeric_limits<int64_t>::min(),
                               std::numeric_limits<int64_t>::max(), version));
  if (version > kPlanVersion)
    return invalid("version", "plan version " + std::to_string(version) +
                                  " is newer than this runtime reads (" +
                                  std::to_string(kPlanVersion) +
                                  "): update the fusec runtime");
  if (version < 1)
    return invalid("version", "plan version " + std::to_string(version) +
                                  " does not exist: expected 1 to " +
                                  std::to_string(kPlanVersion));

  FUSEC_RETURN_IF_ERROR(getString(root["graph"], "graph", plan.graph));
  FUSEC_RETURN_IF_ERROR(parseTarget(root["target"], plan));

  const json &buffers = root["buffers"];
  if (!buffers.is_array())
    return invalid("buffers", "expected an array, got " + kindOf(buffers));
  plan.buffers.resize(buffers.size());
  // Ids may come in any order; positions[id] is where the buffer was read.
  constexpr size_t kUnseen = ~size_t(0);
  std::vector<size_t> positions(buffers.size(), kUnseen);
  for (size_t i = 0; i < buffers.size(); ++i) {
    std::string path = indexed("buffers", i);
    BufferDesc buffer;
    FUSEC_RETURN_IF_ERROR(parseBuffer(buffers[i], path, buffers.size(), buffer));
    if (positions[buffer.id] != kUnseen)
      return invalid(join(path, "id"),
                     "buffer id " + std::to_string(buffer.id) +
                         " is also the id of buffers[" +
                         std::to_string(positions[buffer.id]) + "]");
    positions[buffer.id] = i;
    plan.buffers[buffer.id] = std::move(buffer);
  }
  FUSEC_RETURN_IF_ERROR(
      collectIndices(plan, BufferRole::Input, positions, plan.inputs));
  FUSEC_RETURN_IF_ERROR(
      collectIndices(plan, BufferRole::Output, positions, plan.outputs));
  if (plan.outputs.empty())
    return invalid("buffers", "the plan has no output buffer: a graph "
                              "returns at least one result");

  const json &steps = root["steps"];
  if (!steps.is_array())
    return invalid("steps", "expected an array, got " + kindOf(steps));
  for (size_t i = 0; i < steps.size(); ++i) {
    Step step;
    FUSEC_RETURN_IF_ERROR(
        parseStep(steps[i], indexed("steps", i), version, plan, step));
    plan.steps.push_back(std::move(step));
  }
  if (root.contains("training")) {
    if (version < 3)
      return invalid("training", "a training plan needs plan version 3 or "
                                 "newer");
    FUSEC_RETURN_IF_ERROR(parseTraining(root["training"], "training", plan));
  }
  return Status::success();
}

/// The kernels the PTX defines (".entry NAME(...)"), outside comments, and
/// how many parameters each declares.
static std::map<std::string, size_t> ptxEntries(const std::string &text) {
  // Without comments, as one string: parameter lists span lines.
  std::string code;
  size_t lineStart = 0;
  while (lineStart < text.size()) {
    size_t lineEnd = text.find('\n', lineStart);
    if (lineEnd == std::string::npos)
      lineEnd = text.size();
    std::string line = text.substr(lineStart, lineEnd - lineStart);
    lineStart = lineEnd + 1;
    size_t comment = line.find("//");
    if (comment != std::string::npos)
      line.resize(comment);
    code += line;
    code += '\n';
  }
  auto isSpace = [&](size_t p) {
    return std::isspace(static_cast<unsigned char>(code[p]));
  };
  std::map<std::string, size_t> entries;
  for (size_t at = code.find(".entry"); at != std::string::npos;
       at = code.find(".entry", at + 1)) {
    size_t p = at + 6;
    if (p >= code.size() || !isSpace(p))
      continue;
    while (p < code.size() && isSpace(p))
      ++p;
    size_t begin = p;
    while (p < code.size() && code[p] != '(' && !isSpace(p))
      ++p;
    if (p == begin)
      continue;
    std::string name = code.substr(begin, p - begin);
    while (p < code.size() && isSpace(p))
      ++p;
    size_t params = 0;
    if (p < code.size() && code[p] == '(') {
      size_t close = code.find(')', p);
      std::string list = code.substr(p, close == std::string::npos
                                            ? std::string::npos
                                            : close - p);
      for (size_t q = list.find(".param"); q != std::string::npos;
           q = list.find(".param", q + 1))
        ++params;
    }
    entries[name] = params;
  }
  return entries;
}

Status fusec::runtime::checkKernelParameters(const std::string &ptx,
                                             const Plan &plan,
                                             const std::string &sourceName) {
  std::map<std::string, size_t> entries = ptxEntries(ptx);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &step = plan.steps[i];
    if (step.kind != Step::Kind::Launch)
      continue;
    auto entry = entries.find(step.kernel);
    if (entry == entries.end())
      return invalid(sourceName,
                     "steps[" + std::to_string(i) + "].kernel: kernel '" +
                         step.kernel + "' is not defined in the PTX (no "
                         "'.entry " + step.kernel +
                         "'); the plan and the PTX do not match");
    // Launching with fewer would let the kernel read past the parameter
    // array; more would be ignored, so the plan is wrong either way.
    if (entry->second != step.args.size())
      return invalid(sourceName,
                     "steps[" + std::to_string(i) + "].args: kernel '" +
                         step.kernel + "' takes " +
                         std::to_string(entry->second) +
                         " parameters, the plan passes " +
                         std::to_string(step.args.size()) +
                         "; the plan and the kernel do not match");
  }
  return Status::success();
}

namespace {
/// A '// fusec-plan: ' line: its number and the JSON after the prefix.
struct PlanLine {
  size_t number = 0;
  std::string json;
};
} // namespace

static std::vector<PlanLine> planLines(const std::string &text) {
  const std::string prefix = kPlanLinePrefix;
  std::vector<PlanLine> lines;
  size_t lineNumber = 0, lineStart = 0;
  while (lineStart < text.size()) {
    ++lineNumber;
    size_t lineEnd = text.find('\n', lineStart);
    if (lineEnd == std::string::npos)
      lineEnd = text.size();
    if (text.compare(lineStart, prefix.size(), prefix) == 0) {
      PlanLine line{lineNumber,
                    text.substr(lineStart + prefix.size(),
                                lineEnd - lineStart - prefix.size())};
      if (!line.json.empty() && line.json.back() == '\r')
        line.json.pop_back();
      lines.push_back(std::move(line));
    }
    lineStart = lineEnd + 1;
  }
  return lines;
}

/// Parses one plan line and checks that the code defines its kernels.
static Status parsePlanLine(const std::string &text, const PlanLine &line,
                            Plan &plan, const std::string &sourceName) {
  Status status = parsePlan(line.json, plan);
  if (!status)
    return status.withContext(sourceName + ":" + std::to_string(line.number) +
                              ": invalid launch plan");

  if (plan.targetKind != "cuda")
    return checkKernelParameters(text, plan, sourceName);
  // CUDA C: the names now, the parameters once NVRTC made PTX of it.
  std::set<std::string> kernels = detail::cudaKernels(text);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &step = plan.steps[i];
    if (step.kind == Step::Kind::Launch && !kernels.count(step.kernel))
      return invalid(sourceName,
                     "steps[" + std::to_string(i) + "].kernel: kernel '" +
                         step.kernel +
                         "' is not defined in the CUDA C (no '__global__' "
                         "function '" +
                         step.kernel + "'); the plan and the CUDA C do not "
                         "match");
  }
  return Status::success();
}

static Status noPlanLine(const std::string &sourceName) {
  return invalid(sourceName,
                 "not a fusec artifact: it has no '// fusec-plan: ' line "
                 "(compile the graph with fusec to get an artifact)");
}

Status fusec::runtime::parseArtifact(const std::string &text, Plan &plan,
                                     const std::string &sourceName) {
  std::vector<PlanLine> lines = planLines(text);
  if (lines.empty())
    return noPlanLine(sourceName);
  if (lines.size() > 1)
    return invalid(sourceName + ":" + std::to_string(lines[1].number),
                   "a second '// fusec-plan: ' line; an artifact carries "
                   "exactly one plan (a training artifact, from fusec "
                   "--train, carries two: load it with TrainingModule or "
                   "fusec_training_load)");
  return parsePlanLine(text, lines.front(), plan, sourceName);
}

Status fusec::runtime::parseTrainingArtifact(const std::string &text,
                                             TrainingPlan &plans,
                                             const std::string &sourceName) {
  std::vector<PlanLine> lines = planLines(text);
  if (lines.empty())
    return noPlanLine(sourceName);
  if (lines.size() != 2)
    return invalid(sourceName,
                   "not a training artifact: it has " +
                       std::to_string(lines.size()) +
                       " '// fusec-plan: ' lines, a training artifact two "
                       "(the forward's and the backward's; compile the "
                       "graph with fusec --train)");
  Plan &fwd = plans.forward, &bwd = plans.backward;
  fwd = Plan();
  bwd = Plan();
  FUSEC_RETURN_IF_ERROR(parsePlanLine(text, lines[0], fwd, sourceName));
  FUSEC_RETURN_IF_ERROR(parsePlanLine(text, lines[1], bwd, sourceName));
  auto where = [&](size_t i, const std::string &field) {
    return sourceName + ":" + std::to_string(lines[i].number) + ": " +
           (i ? "backward" : "forward") + " plan: " + field;
  };
  if (fwd.training.role != TrainingDesc::Role::Forward)
    return invalid(where(0, "training"),
                   "the first plan of a training artifact is the forward's "
                   "(training.role \"forward\")");
  if (bwd.training.role != TrainingDesc::Role::Backward)
    return invalid(where(1, "training"),
                   "the second plan of a training artifact is the "
                   "backward's (training.role \"backward\")");
  if (fwd.targetKind != bwd.targetKind || fwd.arch != bwd.arch)
    return invalid(where(1, "target"), "differs from the forward plan's");
  const TrainingDesc &t = bwd.training;
  int64_t numResults = fwd.training.numResults;
  int64_t numSaved = int64_t(fwd.outputs.size()) - numResults;
  if (t.numSaved != numSaved)
    return invalid(where(1, "training.num_saved"),
                   std::to_string(t.numSaved) + ", but the forward saves " +
                       std::to_string(numSaved) + " tensors");
  // Each backward input and output has the type of the forward value it
  // stands for.
  auto same = [&](const BufferDesc &a, const BufferDesc &b,
                  const std::string &field, const std::string &what) -> Status {
    if (a.dtype == b.dtype && a.shape == b.shape)
      return Status::success();
    return invalid(where(1, field), "is " + a.typeString() + ", but " + what +
                                        " is " + b.typeString());
  };
  size_t in = 0;
  for (size_t i = 0; i < t.forwardArgs.size(); ++i, ++in) {
    std::string field = indexed("training.forward_args", i);
    int64_t arg = t.forwardArgs[i];
    if (arg >= int64_t(fwd.inputs.size()))
      return invalid(where(1, field), "input " + std::to_string(arg) +
                                          " does not exist; the forward has " +
                                          std::to_string(fwd.inputs.size()));
    FUSEC_RETURN_IF_ERROR(same(bwd.input(in), fwd.input(arg), field,
                               "forward input " + std::to_string(arg)));
  }
  // The next inputs stand for the forward results `results` lists.
  auto resultInputs = [&](const std::string &name,
                          const std::vector<int64_t> &results) -> Status {
    for (size_t i = 0; i < results.size(); ++i, ++in) {
      std::string field = indexed(name, i);
      int64_t result = results[i];
      if (result >= numResults)
        return invalid(where(1, field),
                       "result " + std::to_string(result) +
                           " does not exist; the forward has " +
                           std::to_string(numResults));
      FUSEC_RETURN_IF_ERROR(same(bwd.input(in), fwd.output(result), field,
                                 "forward result " + std::to_string(result)));
    }
    return Status::success();
  };
  FUSEC_RETURN_IF_ERROR(
      resultInputs("training.forward_results", t.forwardResults));
  for (int64_t i = 0; i < numSaved; ++i, ++in)
    FUSEC_RETURN_IF_ERROR(same(bwd.input(in), fwd.output(numResults + i),
                               "input " + std::to_string(in),
                               "saved tensor " + std::to_string(i) +
                                   " (forward output " +
                                   std::to_string(numResults + i) + ")"));
  FUSEC_RETURN_IF_ERROR(resultInputs("training.grad_results", t.gradResults));
  for (size_t i = 0; i < t.wrt.size(); ++i) {
    std::string field = indexed("training.wrt", i);
    int64_t arg = t.wrt[i];
    if (arg >= int64_t(fwd.inputs.size()))
      return invalid(where(1, field), "input " + std::to_string(arg) +
                                          " does not exist; the forward has " +
                                          std::to_string(fwd.inputs.size()));
    FUSEC_RETURN_IF_ERROR(same(bwd.output(i), fwd.input(arg), field,
                               "forward input " + std::to_string(arg)));
  }
  return Status::success();
}
