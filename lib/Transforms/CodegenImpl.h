//===- CodegenImpl.h - The kernel generator's internals ---------*- C++ -*-===//
//
// The class that builds one gpu.func from one fuse.kernel, shared by the
// files that generate each kind of anchor (KernelCodegen.cpp: epilogue and
// driver; CodegenDirect.cpp: one thread per output; CodegenReduction.cpp:
// row reductions; CodegenGemm.cpp: the shared-memory GEMM).
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_TRANSFORMS_CODEGENIMPL_H
#define FUSEC_LIB_TRANSFORMS_CODEGENIMPL_H

#include "KernelCodegen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <functional>

namespace fusec::detail {

using namespace mlir;
using namespace mlir::fuse;

inline constexpr int64_t kBlock = 256;

inline int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

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
/// (N, C, H, W) extents of a 4-D shape in `layout`.
inline std::array<int64_t, 4> dimsNCHW(ArrayRef<int64_t> s, Layout layout) {
  if (layout == Layout::NHWC)
    return {s[0], s[3], s[1], s[2]};
  return {s[0], s[1], s[2], s[3]};
}


/// Builds one gpu.func. The epilogue machinery (evalAt) is shared by every
/// anchor kind.
class Codegen {
public:
  Codegen(KernelOp kernel, gpu::GPUModuleOp module)
      : kernel(kernel), module(module),
        b(kernel.getLoc(), kernel.getContext()) {}

  FailureOr<LaunchConfig> run();

private:
  //===--------------------------------------------------------------------===//
  // Small builders
  //===--------------------------------------------------------------------===//

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
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
  Value fma(Value x, Value y, Value z) { return math::FmaOp::create(b, x, y, z); }
  Value maxf(Value x, Value y) { return arith::MaximumFOp::create(b, x, y); }
  Value minf(Value x, Value y) { return arith::MinimumFOp::create(b, x, y); }
  Value exp(Value x) { return math::ExpOp::create(b, x); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, c, x, y);
  }
  Value threadId() {
    return gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  }
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
  SmallVector<Value> loadVectorOrZero(Value inBounds, Value memref,
                                      std::function<SmallVector<Value>()> indices,
                                      int64_t width) {
    auto type = VectorType::get(
        {width}, cast<MemRefType>(memref.getType()).getElementType());
    int64_t bytes =
        width * cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8;
    Value vec = ifElse(
        inBounds,
        [&]() -> Value {
          return vector::LoadOp::create(b, type, memref, indices(),
                                        /*nontemporal=*/false,
                                        llvm::MaybeAlign(bytes));
        },
        [&]() -> Value {
          return arith::ConstantOp::create(
              b, type, DenseElementsAttr::get(type, b.getZeroAttr(
                                                        type.getElementType())));
        },
        type);
    SmallVector<Value> lanes;
    for (int64_t i = 0; i < width; ++i)
      lanes.push_back(toF32(vector::ExtractOp::create(b, vec, i)));
    return lanes;
  }

  /// Loads memref[indices] where `inBounds`, 0 elsewhere.
  Value loadOrZero(Value inBounds, Value memref,
                   std::function<SmallVector<Value>()> indices) {
    return ifElse(
        inBounds, [&] { return load(memref, indices()); },
        [&] { return f32(0.0); });
  }

  /// Row-major coordinates of `linear` in `shape`.
  SmallVector<Value> delinearize(Value linear, ArrayRef<int64_t> shape) {
    SmallVector<Value> coords(shape.size());
    int64_t stride = 1;
    for (int64_t i = shape.size() - 1; i >= 0; --i) {
      Value q = divi(linear, stride);
      coords[i] = i == 0 ? q : remi(q, shape[i]);
      stride *= shape[i];
    }
    return coords;
  }

  //===--------------------------------------------------------------------===//
  // Structured control flow
  //===--------------------------------------------------------------------===//

  SmallVector<Value>
  loop(Value lb, Value ub, Value step, ValueRange init,
       function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto forOp = scf::ForOp::create(b, lb, ub, step, init);
    OpBuilder::InsertionGuard guard(b);
    Block *block = forOp.getBody();
    if (!block->empty())
      block->back().erase();
    b.setInsertionPointToEnd(block);
    scf::YieldOp::create(b, body(forOp.getInductionVar(),
                                 forOp.getRegionIterArgs()));
    return forOp.getResults();
  }
  void loop(int64_t lb, int64_t ub, function_ref<void(Value)> body) {
    (void)loop(idx(lb), idx(ub), idx(1), {}, [&](Value iv, ValueRange) {
      body(iv);
      return SmallVector<Value>();
    });
  }
  void ifThen(Value cond, function_ref<void()> body) {
    auto ifOp = scf::IfOp::create(b, TypeRange(), cond, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    body();
  }
  Value ifElse(Value cond, function_ref<Value()> thenFn,
               function_ref<Value()> elseFn, Type type = Type()) {
    auto ifOp =
        scf::IfOp::create(b, type ? type : b.getF32Type(), cond, true);
    OpBuilder::InsertionGuard guard(b);
    for (auto [block, fn] : {std::pair{ifOp.thenBlock(), thenFn},
                             std::pair{ifOp.elseBlock(), elseFn}}) {
      if (!block->empty())
        block->back().erase();
      b.setInsertionPointToEnd(block);
      scf::YieldOp::create(b, fn());
    }
    return ifOp.getResult(0);
  }

  //===--------------------------------------------------------------------===//
  // Epilogue: the kernel's yielded values at one element
  //===--------------------------------------------------------------------===//

  /// Coordinates of an operand of shape `shape` broadcast to `coords`.
  SmallVector<Value> broadcastCoords(ArrayRef<Value> coords,
                                     ArrayRef<int64_t> shape) {
    SmallVector<Value> result;
    size_t offset = coords.size() - shape.size();
    for (auto [i, dim] : llvm::enumerate(shape))
      result.push_back(dim == 1 ? idx(0) : coords[offset + i]);
    return result;
  }

  static ArrayRef<int64_t> shapeOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  }

  Value evalUnary(Operation *op, Value x);
  Value evalAt(Value v, ArrayRef<Value> coords);

  /// Every kernel result at `coords` (f32), given the anchor's value there.
  SmallVector<Value> evalResults(ArrayRef<Value> coords, Value anchorValue) {
    anchorScalar = anchorValue;
    cache.clear();
    SmallVector<Value> values;
    for (Value value : yield().getValues())
      values.push_back(evalAt(value, coords));
    return values;
  }

  /// Stores every kernel result at `coords`, given the anchor's value there.
  void storeResults(ArrayRef<Value> coords, Value anchorValue) {
    for (auto [value, out] :
         llvm::zip_equal(evalResults(coords, anchorValue), outputs))
      store(value, out, coords);
  }

  YieldOp yield() {
    return cast<YieldOp>(kernel.getBody().front().getTerminator());
  }

  //===--------------------------------------------------------------------===//
  // Anchors
  //===--------------------------------------------------------------------===//

  /// Runs `body(linear)` for every linear index below `total`, one per thread
  /// of a 1-D grid.
  LaunchConfig perElement(int64_t total, function_ref<void(Value)> body) {
    Value linear = addi(muli(blockId(gpu::Dimension::x), idx(kBlock)),
                        threadId());
    ifThen(ltc(linear, total), [&] { body(linear); });
    return {{ceilDiv(total, kBlock), 1, 1}, {kBlock, 1, 1}};
  }

  int64_t vectorWidth(ArrayRef<int64_t> shape);
  VectorType vectorOf(Value memref, int64_t width);
  llvm::MaybeAlign alignOf(Value memref, int64_t width);
  Value loadVector(Value memref, ArrayRef<Value> coords, int64_t width);
  /// Computes and stores `width` consecutive elements along the innermost
  /// axis from `coords` as aligned vectors, reading full-size kernel inputs
  /// as vectors too; `anchorValues` holds the anchor's value per element.
  void storeVectorResults(ArrayRef<Value> coords, int64_t width,
                          ArrayRef<Value> anchorValues);
  /// The kernel inputs of the iteration shape, as vectors at `coords`.
  SmallVector<std::pair<BlockArgument, Value>>
  loadFullInputs(ArrayRef<Value> coords, int64_t width);
  /// Makes evalAt read lane `lane` of those vectors.
  void selectLane(ArrayRef<std::pair<BlockArgument, Value>> full,
                  int64_t lane);

  LaunchConfig emitElementwise();
  LaunchConfig emitDirectConv(Conv2dOp op);
  LaunchConfig emitDepthwiseVector(Conv2dOp op, int64_t width);
  LaunchConfig emitPool(Operation *op);
  LaunchConfig emitGlobalAvgPool(GlobalAvgPoolOp op);
  LaunchConfig emitUpsample(UpsampleOp op);
  LaunchConfig emitTranspose(TransposeOp op);
  LaunchConfig emitRope(RopeOp op);
  LaunchConfig emitAttention(AttentionOp op);
  LaunchConfig emitRowReduction(Operation *op);

  /// A batched GEMM C[batch][m][n] = sum_k A(batch, m, k) * B(batch, k, n),
  /// tiled through shared memory; `epilogue` consumes each C element.
  struct GemmSpec {
    int64_t batch, m, n, k;
    /// Whether consecutive k (rather than m, or n) are adjacent in memory:
    /// the tile loads then give consecutive k to consecutive threads.
    bool aKContiguous, bKContiguous;
    std::function<Value(Value batch, Value m, Value k)> loadA;
    std::function<Value(Value batch, Value k, Value n)> loadB;
    /// Where runs of `aVector` (`bVector`) consecutive k, starting at a
    /// multiple of it, are contiguous and 16-byte aligned in memory, the tile
    /// loads read them as one vector: loadAVec(batch, m, k0) gives the run's
    /// values (zeros where out of bounds). 1: element by element.
    int64_t aVector = 1, bVector = 1;
    std::function<SmallVector<Value>(Value batch, Value m, Value k0)> loadAVec;
    std::function<SmallVector<Value>(Value batch, Value k0, Value n)> loadBVec;
    std::function<void(Value batch, Value m, Value n, Value acc)> epilogue;
  };
  LaunchConfig emitGemm(const GemmSpec &spec);
  /// The kernel's own tile, if it has a tile attribute.
  std::optional<GemmTile> tileAttr;
  LaunchConfig emitTiledConv(Conv2dOp op);
  LaunchConfig emitLinear(LinearOp op);
  LaunchConfig emitMatmul(MatmulOp op);

  /// Shared-memory tree reduction of one f32 per thread across the block.
  Value blockReduce(Value partial, bool isMax);

  KernelOp kernel;
  gpu::GPUModuleOp module;
  ImplicitLocOpBuilder b;
  gpu::GPUFuncOp func;
  IRMapping argOf; // kernel body argument -> gpu.func memref argument
  SmallVector<Value> outputs;
  Value anchorResult, anchorScalar;
  Value reduceBuffer;
  llvm::DenseMap<Value, Value> cache;
  /// Kernel inputs already read (as f32) for the element being computed.
  llvm::DenseMap<Value, Value> preloaded;
};

} // namespace fusec::detail

#endif // FUSEC_LIB_TRANSFORMS_CODEGENIMPL_H
