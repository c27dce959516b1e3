//===- Plan.h - The launch plan of a fusec artifact -------------*- C++ -*-===//
//
// An artifact is PTX text whose leading comments carry a launch plan as one
// line of JSON (docs/Artifact.md). This header holds the plan's in-memory
// form and its parser. Parsing needs no GPU and no driver, so tools and tests
// can check an artifact anywhere.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_PLAN_H
#define FUSEC_RUNTIME_PLAN_H

#include "fusec/runtime/Status.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fusec {
namespace runtime {

/// The newest plan format version this runtime reads (it reads every older
/// one too). Version 2 added tensor-map kernel parameters, version 3 the
/// training object of a training artifact's plans.
constexpr int kPlanVersion = 3;

/// The prefix of the artifact line that carries the plan.
constexpr const char *kPlanLinePrefix = "// fusec-plan: ";

/// Element types of plan buffers.
enum class DType { F32, F16, BF16 };

/// "f32", "f16" or "bf16".
const char *dtypeName(DType dtype);
/// Size of one element in bytes.
size_t dtypeSize(DType dtype);

enum class BufferRole { Input, Output, Intermediate };

/// "input", "output" or "intermediate".
const char *roleName(BufferRole role);

/// One device buffer the plan reads or writes.
struct BufferDesc {
  int64_t id = 0;
  BufferRole role = BufferRole::Intermediate;
  /// Graph argument index (inputs) or result index (outputs); -1 for
  /// intermediates.
  int64_t index = -1;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// numel * dtypeSize(dtype), checked by the parser.
  uint64_t bytes = 0;

  /// Product of the shape (1 for a scalar).
  int64_t numel() const;
  /// "f32 [1,56,56,64]": how messages name the buffer's type.
  std::string typeString() const;
};

/// A kernel parameter that is a TMA tensor map over a buffer (128 bytes,
/// passed by value), encoded by the runtime at each run with the buffer's
/// address (docs/Artifact.md).
struct TensorMapDesc {
  /// The parameter's position in Step::args.
  size_t param = 0;
  /// Extents, innermost first (1 to 5); byte strides of all but the
  /// innermost; the tile one copy moves, innermost first.
  std::vector<uint64_t> dims, strides;
  std::vector<uint32_t> box;
  /// Byte offset of the first element in the buffer.
  uint64_t offset = 0;
  /// Shared-memory swizzle in bytes: 0, 32, 64 or 128.
  uint32_t swizzle = 128;
  /// An im2col map (over [C, W, H(, D), N]): the bounding-box corners, one
  /// per spatial dim, innermost first; `box` is then {channels, pixels}.
  bool im2col = false;
  std::vector<int32_t> lower, upper;
};

/// One step of the plan. Steps run in order on one stream.
struct Step {
  enum class Kind { Launch, Copy };
  Kind kind = Kind::Launch;

  // Launch: `kernel` with one parameter per entry of `args` (buffer ids), in
  // order: the buffer's 64-bit device address, or a tensor map over the
  // buffer where `tensorMaps` has one for that parameter.
  std::string kernel;
  std::array<uint32_t, 3> grid = {1, 1, 1};
  std::array<uint32_t, 3> block = {1, 1, 1};
  /// Dynamic shared memory in bytes.
  uint32_t sharedBytes = 0;
  std::vector<int64_t> args;
  std::vector<TensorMapDesc> tensorMaps;

  // Copy: `bytes` from the start of buffer `src` to the start of `dst`.
  int64_t src = -1;
  int64_t dst = -1;
  uint64_t bytes = 0;
};

/// What a plan of a training artifact is to the other plan (plan version
/// 3, docs/Training.md).
struct TrainingDesc {
  enum class Role { None, Forward, Backward };
  /// None for an ordinary (inference) plan.
  Role role = Role::None;
  /// Forward: the first numResults outputs are the graph's results, the
  /// rest are the tensors saved for the backward.
  int64_t numResults = 0;
  /// Backward: its inputs are the forward inputs listed in forwardArgs (by
  /// index), then the forward results listed in forwardResults (by index),
  /// then numSaved saved tensors, then the gradients of the results listed
  /// in gradResults; its outputs are the gradients of the forward inputs
  /// listed in wrt, in that order.
  std::vector<int64_t> forwardArgs;
  std::vector<int64_t> forwardResults;
  int64_t numSaved = 0;
  std::vector<int64_t> gradResults;
  std::vector<int64_t> wrt;
};

struct Plan {
  std::string graph;
  /// "ptx".
  std::string targetKind;
  /// As written, e.g. "sm_90" or "sm_90a".
  std::string arch;
  /// Compute capability parsed from `arch`: sm_90 -> 9.0, sm_120 -> 12.0.
  int archMajor = 0;
  int archMinor = 0;
  /// True for arch-specific targets ("sm_90a"), whose PTX runs only on
  /// exactly that compute capability.
  bool archSpecific = false;

  /// Indexed by buffer id.
  std::vector<BufferDesc> buffers;
  std::vector<Step> steps;
  /// Buffer ids of the graph inputs and outputs, by index.
  std::vector<int64_t> inputs;
  std::vector<int64_t> outputs;
  /// Every kernel named by a launch step, once, in order of first use.
  std::vector<std::string> kernels;
  /// A training artifact's plans say what they are to each other.
  TrainingDesc training;

  const BufferDesc &input(size_t i) const { return buffers[inputs[i]]; }
  const BufferDesc &output(size_t i) const { return buffers[outputs[i]]; }
};

/// Parses and validates the plan JSON (the text after "// fusec-plan: ").
/// Every error names the offending field, e.g. "buffers[1].dtype: unknown
/// dtype 'f64'; expected f32, f16 or bf16".
Status parsePlan(const std::string &json, Plan &plan);

/// Finds the plan line in an artifact, parses it, and checks that every
/// kernel it launches is defined (".entry NAME") in the PTX. `sourceName`
/// (a file name) starts every message.
Status parseArtifact(const std::string &text, Plan &plan,
                     const std::string &sourceName = "artifact");

/// The two plans of a training artifact (`fusec --train`): the forward,
/// which returns the graph's results and the saved tensors, and the
/// backward, which takes them and returns the arguments' gradients.
struct TrainingPlan {
  Plan forward, backward;
};

/// Parses a training artifact: its two plan lines (the forward's, then the
/// backward's), each checked as parseArtifact checks one, and the contract
/// between them (the backward's inputs and outputs have the types of the
/// forward values they stand for). Errors name the plan and the field:
/// "backward plan: training.wrt[1]: ...".
Status parseTrainingArtifact(const std::string &text, TrainingPlan &plans,
                             const std::string &sourceName = "artifact");

/// Checks that `ptx` defines every kernel `plan` launches, each with as many
/// parameters as its step passes. parseArtifact does this for PTX artifacts;
/// Module::load does it for CUDA C ones on the PTX that NVRTC makes.
Status checkKernelParameters(const std::string &ptx, const Plan &plan,
                             const std::string &sourceName = "artifact");

} // namespace runtime
} // namespace fusec

#endif // FUSEC_RUNTIME_PLAN_H
