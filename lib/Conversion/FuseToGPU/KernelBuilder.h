//===- KernelBuilder.h - What every kernel family builds with ---*- C++ -*-===//
//
// The base of every kernel family: it creates the gpu.func of one
// fuse.kernel, maps the kernel's operands to the function's memrefs, and
// offers the small builders, structured control flow, vector I/O, shared
// memory and the fused epilogue (the kernel's elementwise ops evaluated at
// one output element) that the families share. A family derives from it and
// emits the body (Families.h).
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_KERNELBUILDER_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_KERNELBUILDER_H

#include "Fuse/FuseOps.h"
#include "fusec/Target/TargetDescription.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <array>
#include <cmath>
#include <functional>

namespace fusec::tiling {

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;

/// A TMA tensor map the kernel takes by value, over one of its memref
/// parameters (fuse.tensor_map says what each field means).
struct TensorMapParam {
  /// The gpu.func parameter (a kernel input or result) the map views.
  unsigned memref = 0;
  SmallVector<int64_t> dims, strides, box;
  int64_t offset = 0, swizzle = 128;
  /// An im2col map's bounding-box corners (empty for a tiled map).
  SmallVector<int64_t> im2colLower, im2colUpper;
};

/// Kernels index in 32 bits (faster) while every tensor they read or write
/// has fewer than 2^30 elements: offsets, and a tile's overhang past a
/// tensor's end, then stay below 2^31. Larger tensors take 64-bit index
/// arithmetic, for the whole gpu.module (its data layout's `index` entry,
/// which both backends lower by).
constexpr int64_t kNarrowIndexElements = int64_t(1) << 30;

/// Sets the width of `index` in `module`'s data layout.
void setIndexBitwidth(gpu::GPUModuleOp module, unsigned bits);

/// How the host launches a generated kernel.
struct LaunchConfig {
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  /// Dynamic shared memory, in bytes (the kernel's only shared memory).
  int64_t sharedBytes = 0;
  /// The tensor maps the kernel takes after its memrefs, in order.
  std::vector<TensorMapParam> tensorMaps;
};

inline int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

/// (N, C, H, W) extents of a 4-D shape in `layout`.
inline std::array<int64_t, 4> dimsNCHW(ArrayRef<int64_t> s, Layout layout) {
  if (layout == Layout::NHWC)
    return {s[0], s[3], s[1], s[2]};
  return {s[0], s[1], s[2], s[3]};
}

struct NCHW {
  Value n, c, h, w;
};
inline NCHW splitNCHW(ArrayRef<Value> coords, Layout layout) {
  if (layout == Layout::NHWC)
    return {coords[0], coords[3], coords[1], coords[2]};
  return {coords[0], coords[1], coords[2], coords[3]};
}
inline SmallVector<Value> joinNCHW(Value n, Value c, Value h, Value w,
                                   Layout layout) {
  if (layout == Layout::NHWC)
    return {n, h, w, c};
  return {n, c, h, w};
}

class KernelBuilder {
public:
  KernelBuilder(KernelOp kernel, gpu::GPUModuleOp module,
                const TargetDescription &target)
      : kernel(kernel), module(module), target(target),
        b(kernel.getLoc(), kernel.getContext()) {}
  virtual ~KernelBuilder() = default;

  /// Appends to the module a gpu.func named after the kernel that computes
  /// its results, taking one memref per kernel input, then one per result.
  /// Fails with an error at the kernel.
  FailureOr<LaunchConfig> build();
  /// Launches a grid whose y or z passes 65535 along x alone, rewriting the
  /// body's block ids; fails past 2^31 - 1 blocks.
  LogicalResult foldGridIntoX(LaunchConfig &config);

protected:
  /// Emits the function body (the entry block is the insertion point; the
  /// terminator comes after) and says how to launch it.
  virtual FailureOr<LaunchConfig> emitBody() = 0;

  //===--------------------------------------------------------------------===//
  // Small builders
  //===--------------------------------------------------------------------===//

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  /// The integer type an index converts through to and from floats: as wide
  /// as the kernel's index arithmetic.
  IntegerType indexInt() { return wideIndex ? b.getI64Type() : b.getI32Type(); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value addi(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value subi(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value muli(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value divi(Value x, int64_t y) {
    return y == 1 ? x : arith::DivUIOp::create(b, x, idx(y)).getResult();
  }
  Value remi(Value x, int64_t y) {
    return y == 1 ? idx(0) : arith::RemUIOp::create(b, x, idx(y)).getResult();
  }
  Value mini(Value x, Value y) { return arith::MinSIOp::create(b, x, y); }
  Value maxi(Value x, Value y) { return arith::MaxSIOp::create(b, x, y); }
  Value cmpi(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, p, x, y);
  }
  Value lt(Value x, Value y) { return cmpi(arith::CmpIPredicate::slt, x, y); }
  Value ltc(Value x, int64_t y) { return lt(x, idx(y)); }
  Value andi(Value x, Value y) { return arith::AndIOp::create(b, x, y); }
  /// 0 <= x < n for a signed index.
  Value inRange(Value x, int64_t n) {
    return andi(cmpi(arith::CmpIPredicate::sge, x, idx(0)), ltc(x, n));
  }
  Value addf(Value x, Value y) { return arith::AddFOp::create(b, x, y); }
  Value subf(Value x, Value y) { return arith::SubFOp::create(b, x, y); }
  Value mulf(Value x, Value y) { return arith::MulFOp::create(b, x, y); }
  Value divf(Value x, Value y) { return arith::DivFOp::create(b, x, y); }
  Value fma(Value x, Value y, Value z) {
    return math::FmaOp::create(b, x, y, z);
  }
  Value maxf(Value x, Value y) { return arith::MaximumFOp::create(b, x, y); }
  Value minf(Value x, Value y) { return arith::MinimumFOp::create(b, x, y); }
  Value exp(Value x) { return math::ExpOp::create(b, x); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, c, x, y);
  }
  Value threadId() { return gpu::ThreadIdOp::create(b, gpu::Dimension::x); }
  Value blockId(gpu::Dimension d) { return gpu::BlockIdOp::create(b, d); }

  Value toF32(Value v) {
    if (v.getType().isF32())
      return v;
    return arith::ExtFOp::create(b, b.getF32Type(), v);
  }
  Value load(Value memref, ValueRange indices) {
    return toF32(memref::LoadOp::create(b, memref, indices));
  }
  void store(Value value, Value memref, ValueRange indices) {
    Type type = cast<MemRefType>(memref.getType()).getElementType();
    if (type != value.getType())
      value = arith::TruncFOp::create(b, type, value);
    memref::StoreOp::create(b, value, memref, indices);
  }
  /// The `width` elements at memref[indices...] (consecutive in the
  /// innermost dimension) as f32 values where `inBounds`, zeros elsewhere.
  SmallVector<Value>
  loadVectorOrZero(Value inBounds, Value memref,
                   std::function<SmallVector<Value>()> indices,
                   int64_t width);
  /// Loads memref[indices] where `inBounds`, 0 elsewhere.
  Value loadOrZero(Value inBounds, Value memref,
                   std::function<SmallVector<Value>()> indices) {
    return ifElse(
        inBounds, [&] { return load(memref, indices()); },
        [&] { return f32(0.0); });
  }
  /// Row-major coordinates of `linear` in `shape`.
  SmallVector<Value> delinearize(Value linear, ArrayRef<int64_t> shape);

  //===--------------------------------------------------------------------===//
  // Structured control flow
  //===--------------------------------------------------------------------===//

  SmallVector<Value>
  loop(Value lb, Value ub, Value step, ValueRange init,
       function_ref<SmallVector<Value>(Value, ValueRange)> body);
  void loop(int64_t lb, int64_t ub, function_ref<void(Value)> body) {
    (void)loop(idx(lb), idx(ub), idx(1), {}, [&](Value iv, ValueRange) {
      body(iv);
      return SmallVector<Value>();
    });
  }
  void ifThen(Value cond, function_ref<void()> body);
  Value ifElse(Value cond, function_ref<Value()> thenFn,
               function_ref<Value()> elseFn, Type type = Type());

  //===--------------------------------------------------------------------===//
  // Shared memory
  //===--------------------------------------------------------------------===//

  /// A shared-memory buffer of `shape`, aligned to `align` bytes. Every
  /// buffer is a view into the kernel's one dynamic shared memory
  /// allocation (gpu.dynamic_shared_memory next to static attributions would
  /// overlap them), whose size the launch records.
  Value allocShared(ArrayRef<int64_t> shape, Type elementType,
                    int64_t align = 128);
  /// A view of `shape` at byte `offset` of the shared memory, which may
  /// overlap buffers allocated before (for a phase that follows their use).
  Value aliasShared(int64_t offset, ArrayRef<int64_t> shape, Type elementType);
  /// Bytes of shared memory allocated so far.
  int64_t sharedBytes = 0;

  //===--------------------------------------------------------------------===//
  // TMA tensor maps
  //===--------------------------------------------------------------------===//

  /// Appends a parameter to the function for `map`, a tensor map the host
  /// makes over one of its memrefs and passes by value (the PTX backend
  /// marks it a grid constant), and returns it: a generic pointer to the
  /// map, what cp.async.bulk.tensor takes.
  Value addTensorMap(TensorMapParam map);
  /// The tensor maps added so far.
  std::vector<TensorMapParam> tensorMaps;

  //===--------------------------------------------------------------------===//
  // The epilogue: the kernel's yielded values at one element
  //===--------------------------------------------------------------------===//

  /// Coordinates of an operand of shape `shape` broadcast to `coords`.
  SmallVector<Value> broadcastCoords(ArrayRef<Value> coords,
                                     ArrayRef<int64_t> shape);
  Value evalUnary(Operation *op, Value x);
  Value evalAt(Value v, ArrayRef<Value> coords);
  /// Every kernel result at `coords` (f32), given the anchor's value there.
  SmallVector<Value> evalResults(ArrayRef<Value> coords, Value anchorValue);
  /// Stores every kernel result at `coords`, given the anchor's value there.
  void storeResults(ArrayRef<Value> coords, Value anchorValue);

  /// The per-channel operands (bias, scale, shift, batch-norm statistics)
  /// of the kernel's elementwise ops whose channel axis is `axis` of the
  /// result.
  SmallVector<Value> channelOperands(int64_t axis);
  /// Their values at channel `c`: a family that knows a thread's channels
  /// stay fixed (a GEMM column) computes them once, and sets them as
  /// `channelValues` (one map per vector lane) for evalAt to use.
  llvm::DenseMap<Value, Value> evalChannel(int64_t axis, Value c);
  /// The axis whose coordinate `channelValues` hold values for, or -1.
  int64_t channelAxis = -1;
  ArrayRef<llvm::DenseMap<Value, Value>> channelValues;
  /// The lane of channelValues the element being computed reads.
  int64_t channelLane = 0;

  //===--------------------------------------------------------------------===//
  // Views an attention anchor applies on the way (isAnchorView)
  //===--------------------------------------------------------------------===//

  /// Where the anchor's element at `coords` is stored: permuted by the
  /// transposes between the anchor and the kernel's results.
  SmallVector<Value> storedCoords(ArrayRef<Value> coords);
  /// `v`, computed from kernel arguments through views (slices, concats),
  /// at `coords`, read anew on each call (unlike evalAt, which computes a
  /// value once per element).
  Value readThroughViews(Value v, ArrayRef<Value> coords) {
    cache.clear();
    Value value = evalAt(v, coords);
    cache.clear();
    return value;
  }
  /// `coords` of `op`'s result mapped to its input.
  SmallVector<Value> sliceSourceCoords(SliceOp op, ArrayRef<Value> coords);
  /// A concat's element at `coords`, read from the operand that holds it.
  Value evalConcat(ConcatOp op, ArrayRef<Value> coords);
  /// The kernel argument (a memref) under `v`'s transposes and slices, and `coords`
  /// (in `v`'s shape) mapped to it.
  std::pair<Value, SmallVector<Value>> viewSource(Value v,
                                                  ArrayRef<Value> coords);
  /// `v`, a kernel argument under transposes and a rope, at `coords` (f32),
  /// read from memory on every call.
  Value loadThroughViews(Value v, ArrayRef<Value> coords);
  /// Whether loadVectorThroughViews can read `v` in runs of `width` along
  /// the innermost axis: every view keeps that axis innermost and aligned.
  bool canLoadVectorThroughViews(Value v, int64_t width);
  /// The `width` elements of `v` from `coords` on along the innermost axis
  /// (f32), read as aligned vectors.
  SmallVector<Value> loadVectorThroughViews(Value v, ArrayRef<Value> coords,
                                            int64_t width);
  /// The `width` angles of a rope's cos or sin `table` ([N, D/2]) at row
  /// `pos` from column `pair` on (f32). The table is a kernel argument or
  /// was fused into the kernel (a slice that applies a position offset, a
  /// cast): read as one aligned vector where its views allow, else element
  /// by element through them.
  SmallVector<Value> loadRopeAngles(Value table, Value pos, Value pair,
                                    int64_t width);

  YieldOp yield() {
    return cast<YieldOp>(kernel.getBody().front().getTerminator());
  }

  //===--------------------------------------------------------------------===//
  // Element and vector parallelism
  //===--------------------------------------------------------------------===//

  /// Threads per block of the one-thread-per-output families.
  static constexpr int64_t kBlock = 256;

  /// Runs `body(linear)` for every linear index below `total`, one per
  /// thread of a 1-D grid of kBlock-thread blocks.
  LaunchConfig perElement(int64_t total, function_ref<void(Value)> body);

  /// How many elements of the innermost axis one thread moves as a 16-byte
  /// vector, or 0 when `shape` does not allow it.
  int64_t vectorWidth(ArrayRef<int64_t> shape);
  /// How many elements of the widest operand of `shape` fill 16 bytes.
  int64_t vectorLanes(ArrayRef<int64_t> shape);
  VectorType vectorOf(Value memref, int64_t width);
  llvm::MaybeAlign alignOf(Value memref, int64_t width);
  Value loadVector(Value memref, ArrayRef<Value> coords, int64_t width);
  /// Computes and stores `width` consecutive elements along the innermost
  /// axis from `coords` as aligned vectors, reading full-size kernel inputs
  /// as vectors too (or taking them from `full`, loadFullInputs' result at
  /// `coords`); `anchorValues` holds the anchor's value per element.
  void storeVectorResults(
      ArrayRef<Value> coords, int64_t width, ArrayRef<Value> anchorValues,
      const SmallVector<std::pair<BlockArgument, Value>> *full = nullptr);
  /// The kernel inputs of the iteration shape that are read in place.
  SmallVector<BlockArgument> fullInputs();
  /// The kernel inputs of the iteration shape, as vectors at `coords`.
  SmallVector<std::pair<BlockArgument, Value>>
  loadFullInputs(ArrayRef<Value> coords, int64_t width);
  /// Makes evalAt read lane `lane` of those vectors.
  void selectLane(ArrayRef<std::pair<BlockArgument, Value>> full,
                  int64_t lane);

  KernelOp kernel;
  gpu::GPUModuleOp module;
  const TargetDescription &target;
  ImplicitLocOpBuilder b;
  gpu::GPUFuncOp func;
  /// Whether a tensor of the kernel has kNarrowIndexElements or more.
  bool wideIndex = false;
  /// The anchor, or null for a chain of elementwise ops.
  Operation *anchor = nullptr;
  IRMapping argOf; // kernel body argument -> gpu.func memref argument
  SmallVector<Value> outputs;
  Value anchorResult, anchorScalar;
  llvm::DenseMap<Value, Value> cache;
  /// Kernel inputs already read (as f32) for the element being computed.
  llvm::DenseMap<Value, Value> preloaded;

private:
  Value dynamicShared;
};

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_KERNELBUILDER_H
