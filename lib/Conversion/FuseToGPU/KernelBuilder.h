//===- KernelBuilder.h - What every kernel family builds with ---*- C++ -*-===//
//
// The base of every kernel family: it creates the gpu.func of one
// fuse.kernel, maps the kernel's operands to the function's memrefs, and
// offers the small builders and structured control flow (Builders.h), shared
// memory, TMA tensor maps and the launch shapes that the families share. The
// fused epilogue (the kernel's elementwise ops evaluated at one output
// element) is its member `epilogue` (EpilogueEvaluator.h), the reads through
// the views an anchor applies on the way its member `views` (ViewReader.h).
// A family derives from it and emits the body (Families.h).
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_KERNELBUILDER_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_KERNELBUILDER_H

#include "Builders.h"
#include "EpilogueEvaluator.h"
#include "ViewReader.h"
#include "fusec/Target/TargetDescription.h"

#include "mlir/IR/IRMapping.h"

#include <array>
#include <cmath>

namespace fusec::tiling {

/// A TMA tensor map the kernel takes by value, over one of its memref
/// parameters (fuse.tensor_map says what each field means).
struct TensorMapParam {
  /// The gpu.func parameter (a kernel input or result) the map views.
  unsigned memref = 0;
  llvm::SmallVector<int64_t> dims, strides, box;
  int64_t offset = 0, swizzle = 128;
  /// An im2col map's bounding-box corners (empty for a tiled map).
  llvm::SmallVector<int64_t> im2colLower, im2colUpper;
};

/// Kernels index in 32 bits (faster) while every tensor they read or write
/// has fewer than 2^30 elements: offsets, and a tile's overhang past a
/// tensor's end, then stay below 2^31. Larger tensors take 64-bit index
/// arithmetic, for the whole gpu.module (its data layout's `index` entry,
/// which both backends lower by).
constexpr int64_t kNarrowIndexElements = int64_t(1) << 30;

/// Sets the width of `index` in `module`'s data layout.
void setIndexBitwidth(mlir::gpu::GPUModuleOp module, unsigned bits);

/// How the host launches a generated kernel.
struct LaunchConfig {
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  /// Dynamic shared memory, in bytes (the kernel's only shared memory).
  int64_t sharedBytes = 0;
  /// The tensor maps the kernel takes after its memrefs, in order.
  std::vector<TensorMapParam> tensorMaps;
};

/// (N, C, H, W) extents of a 4-D shape in `layout`.
inline std::array<int64_t, 4> dimsNCHW(llvm::ArrayRef<int64_t> s,
                                       mlir::fuse::Layout layout) {
  if (layout == mlir::fuse::Layout::NHWC)
    return {s[0], s[3], s[1], s[2]};
  return {s[0], s[1], s[2], s[3]};
}

struct NCHW {
  mlir::Value n, c, h, w;
};
inline NCHW splitNCHW(llvm::ArrayRef<mlir::Value> coords,
                      mlir::fuse::Layout layout) {
  if (layout == mlir::fuse::Layout::NHWC)
    return {coords[0], coords[3], coords[1], coords[2]};
  return {coords[0], coords[1], coords[2], coords[3]};
}
inline llvm::SmallVector<mlir::Value> joinNCHW(mlir::Value n, mlir::Value c,
                                               mlir::Value h, mlir::Value w,
                                               mlir::fuse::Layout layout) {
  if (layout == mlir::fuse::Layout::NHWC)
    return {n, h, w, c};
  return {n, c, h, w};
}

namespace detail {
/// Owns the OpBuilder that KernelBuilder and its members build with: a base
/// of KernelBuilder listed before Builders, so that it exists when Builders
/// refers to it.
struct OwnedBuilder {
  OwnedBuilder(mlir::Location loc, mlir::MLIRContext *context)
      : builder(loc, context) {}
  mlir::ImplicitLocOpBuilder builder;
};
} // namespace detail

struct ExtraLaunch;

class KernelBuilder : private detail::OwnedBuilder, protected Builders {
public:
  KernelBuilder(mlir::fuse::KernelOp kernel, mlir::gpu::GPUModuleOp module,
                const TargetDescription &target);
  virtual ~KernelBuilder() = default;
  // The members refer to each other.
  KernelBuilder(const KernelBuilder &) = delete;
  KernelBuilder &operator=(const KernelBuilder &) = delete;

  /// Appends to the module a gpu.func named after the kernel that computes
  /// its results, taking one memref per kernel input, then one per result.
  /// Fails with an error at the kernel.
  mlir::FailureOr<LaunchConfig> build();
  /// Launches a grid whose y or z passes 65535 along x alone, rewriting the
  /// body's block ids; fails past 2^31 - 1 blocks.
  mlir::LogicalResult foldGridIntoX(LaunchConfig &config);

protected:
  /// Emits the function body (the entry block is the insertion point; the
  /// terminator comes after) and says how to launch it.
  virtual mlir::FailureOr<LaunchConfig> emitBody() = 0;

  /// The integer type an index converts through to and from floats: as wide
  /// as the kernel's index arithmetic.
  mlir::IntegerType indexInt() {
    return wideIndex ? b.getI64Type() : b.getI32Type();
  }

  //===--------------------------------------------------------------------===//
  // Shared memory
  //===--------------------------------------------------------------------===//

  /// A shared-memory buffer of `shape`, aligned to `align` bytes. Every
  /// buffer is a view into the kernel's one dynamic shared memory
  /// allocation (gpu.dynamic_shared_memory next to static attributions would
  /// overlap them), whose size the launch records.
  mlir::Value allocShared(llvm::ArrayRef<int64_t> shape, mlir::Type elementType,
                          int64_t align = 128);
  /// A view of `shape` at byte `offset` of the shared memory, which may
  /// overlap buffers allocated before (for a phase that follows their use).
  mlir::Value aliasShared(int64_t offset, llvm::ArrayRef<int64_t> shape,
                          mlir::Type elementType);
  /// Bytes of shared memory allocated so far.
  int64_t sharedBytes = 0;

  //===--------------------------------------------------------------------===//
  // TMA tensor maps
  //===--------------------------------------------------------------------===//

  /// Appends a parameter to the function for `map`, a tensor map the host
  /// makes over one of its memrefs and passes by value (the PTX backend
  /// marks it a grid constant), and returns it: a generic pointer to the
  /// map, what cp.async.bulk.tensor takes.
  mlir::Value addTensorMap(TensorMapParam map);
  /// The tensor maps added so far.
  std::vector<TensorMapParam> tensorMaps;

  mlir::fuse::YieldOp yield() { return epilogue.yield(); }

  /// Adds a scratch-buffer parameter of `type` to the function after its
  /// results and earlier workspaces, before any tensor map (the plan's
  /// order; ExtraLaunches.h), and returns it.
  mlir::Value addWorkspaceArgument(mlir::MemRefType type);
  /// Records on `f` the block size it is launched with.
  void setBlockSize(mlir::gpu::GPUFuncOp f,
                    const std::array<int64_t, 3> &block);

  /// Ends the function emitted so far, launched as `config`, as a sibling
  /// `<kernel><suffix>` that the plan launches before this function (a
  /// split-K mainloop before its reduction), and empties this function's
  /// body and shared memory for what comes after. Returns the launch for
  /// recordExtraLaunches (ExtraLaunches.h).
  ExtraLaunch splitOffFirstLaunch(llvm::StringRef suffix,
                                  const LaunchConfig &config);

  /// A kernel whose anchor's results past the first are per channel (batch
  /// norm in training) or per column (norm backward): the family stores
  /// those itself and computes the full-size ones element by element.
  struct SplitResults {
    /// Per anchor result, the kernel result it is (-1 where none is).
    llvm::SmallVector<int64_t> resultAt;
    /// A copy of the kernel that yields only the full-size results, its
    /// body arguments mapped to the function's memrefs.
    mlir::OwningOpRef<mlir::fuse::KernelOp> narrowed;
    mlir::IRMapping args;
    /// The full-size results' memrefs, and their evaluator (over
    /// `narrowed`, given the anchor's first result).
    llvm::SmallVector<mlir::Value> outputs;
    std::unique_ptr<EpilogueEvaluator> evaluator;
  };
  /// Fills `into` for full-size results of `shape`; fails at the kernel for
  /// a result of neither kind, or an op that reads a per-`unit` result.
  mlir::LogicalResult splitResults(llvm::ArrayRef<int64_t> shape,
                                   llvm::StringRef unit, SplitResults &into);

  /// splitResults for an anchor that may have results the family stores
  /// itself (an attention's row log-sum-exp): the full-size shape is that
  /// of the other yielded values. Returns the evaluator of the full-size
  /// results: `into`'s, or `epilogue` where the anchor has one result.
  mlir::FailureOr<EpilogueEvaluator *> splitFamilyResults(llvm::StringRef unit,
                                                          SplitResults &into);

  /// Threads of a block that adds per-column partials (sumPartialColumns).
  static constexpr int64_t kColumnSumThreads = 1024;
  /// The totals over the groups of `partials` [n, groups, C] at `column` (in
  /// range), added by a block of kColumnSumThreads threads taking 32
  /// columns: lane = column; the 32 warps each add every 32nd group, 4 loads
  /// in flight; then the warps' sums meet in `staging` (n *
  /// kColumnSumThreads floats of shared memory) in a fixed order, so the
  /// totals do not depend on block timing (no atomics). Every thread gets
  /// its lane's totals. Batch norm's finalize and the norm backward's
  /// parameter sums share it.
  llvm::SmallVector<mlir::Value> sumPartialColumns(mlir::Value partials,
                                                   int64_t n, int64_t groups,
                                                   mlir::Value column,
                                                   mlir::Value staging);

  //===--------------------------------------------------------------------===//
  // Element and vector parallelism
  //===--------------------------------------------------------------------===//

  /// Threads per block of the one-thread-per-output families.
  static constexpr int64_t kBlock = 256;

  /// Runs `body(linear)` for every linear index below `total`, one per
  /// thread of a 1-D grid of kBlock-thread blocks.
  LaunchConfig perElement(int64_t total,
                          llvm::function_ref<void(mlir::Value)> body);

  /// How many elements of the innermost axis one thread moves as a 16-byte
  /// vector, or 0 when `shape` does not allow it.
  int64_t vectorWidth(llvm::ArrayRef<int64_t> shape);
  /// How many elements of the widest operand of `shape` fill 16 bytes.
  int64_t vectorLanes(llvm::ArrayRef<int64_t> shape);

  mlir::fuse::KernelOp kernel;
  mlir::gpu::GPUModuleOp module;
  const TargetDescription &target;
  mlir::gpu::GPUFuncOp func;
  /// Whether a tensor of the kernel has kNarrowIndexElements or more.
  bool wideIndex = false;
  /// The anchor, or null for a chain of elementwise ops.
  mlir::Operation *anchor = nullptr;
  mlir::IRMapping argOf; // kernel body argument -> gpu.func memref argument
  llvm::SmallVector<mlir::Value> outputs;
  mlir::Value anchorResult;
  /// The kernel's yielded values at one element.
  EpilogueEvaluator epilogue;
  /// Reads through the views an anchor applies on the way.
  ViewReader views;

private:
  mlir::Value dynamicShared;
};

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_KERNELBUILDER_H
