//===- KernelCodegen.cpp - fuse.kernel to gpu.func ------------------------===//
//
// Each kernel is generated as explicit loops in the scf, arith, math, memref
// and gpu dialects, all arithmetic in f32:
//
//  - the anchor computes one output element (or, for the GEMM, a register
//    tile of them);
//  - the epilogue evaluates the kernel's yielded values at that element's
//    coordinates: elementwise ops recursively, operands read at their
//    broadcast coordinates, the anchor's result taken from registers;
//  - every access is guarded, so any shape works (partial tiles, padding).
//
//===----------------------------------------------------------------------===//

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

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec;

static constexpr int64_t kBlock = 256;

static int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

FailureOr<std::optional<GemmTile>> fusec::getTileAttr(KernelOp kernel) {
  auto attr = kernel->getAttrOfType<DictionaryAttr>("tile");
  if (!attr)
    return std::optional<GemmTile>();
  GemmTile tile;
  for (NamedAttribute entry : attr) {
    auto value = dyn_cast<IntegerAttr>(entry.getValue());
    int64_t *field = llvm::StringSwitch<int64_t *>(entry.getName().strref())
                         .Case("bm", &tile.bm)
                         .Case("bn", &tile.bn)
                         .Case("bk", &tile.bk)
                         .Case("tm", &tile.tm)
                         .Case("tn", &tile.tn)
                         .Default(nullptr);
    if (!field || !value || value.getInt() < 1)
      return kernel.emitOpError("tile entry '")
             << entry.getName().strref()
             << "' is not one of bm, bn, bk, tm, tn with a positive integer";
    *field = value.getInt();
  }
  int64_t threads = (tile.bm / tile.tm) * (tile.bn / tile.tn);
  int64_t sharedBytes = 2 * tile.bk * (tile.bm + tile.bn) * 4;
  if (tile.bm % tile.tm || tile.bn % tile.tn || threads > 1024 ||
      threads % 32 || sharedBytes > 48 * 1024)
    return kernel.emitOpError("tile {bm = ")
           << tile.bm << ", bn = " << tile.bn << ", bk = " << tile.bk
           << ", tm = " << tile.tm << ", tn = " << tile.tn
           << "} is invalid: bm/tm and bn/tn must divide exactly, give a "
              "multiple of 32 threads up to 1024, and the two buffers must "
              "fit in 48 KiB of shared memory (needs "
           << sharedBytes << " bytes)";
  return std::optional<GemmTile>(tile);
}

GemmTile fusec::chooseGemmTile(int64_t m, int64_t n, int64_t batch) {
  // The largest register tile (most FMAs per shared-memory load) that still
  // gives every SM of an H100/H200 (132) a block.
  static const GemmTile candidates[] = {{128, 128, 16, 8, 8},
                                        {128, 64, 16, 8, 4},
                                        {64, 64, 16, 4, 4}};
  for (const GemmTile &t : candidates) {
    // A tile wider than the problem computes mostly padding.
    if ((t.bn > 64 && t.bn > n) || (t.bm > 64 && t.bm > m))
      continue;
    if (ceilDiv(m, t.bm) * ceilDiv(n, t.bn) * batch >= 132)
      return t;
  }
  return candidates[2];
}

namespace {

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
               function_ref<Value()> elseFn) {
    auto ifOp = scf::IfOp::create(b, b.getF32Type(), cond, true);
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

} // namespace

Value Codegen::evalUnary(Operation *op, Value x) {
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](ReluOp) { return maxf(x, f32(0)); })
      .Case([&](Relu6Op) { return minf(maxf(x, f32(0)), f32(6)); })
      .Case([&](ClampOp o) {
        return minf(maxf(x, f32(o.getMin().convertToDouble())),
                    f32(o.getMax().convertToDouble()));
      })
      .Case([&](LeakyReluOp o) {
        Value neg = mulf(x, f32(o.getAlpha().convertToDouble()));
        return select(
            arith::CmpFOp::create(b, arith::CmpFPredicate::OGE, x, f32(0)), x,
            neg);
      })
      .Case([&](GeluOp o) {
        Value half = mulf(x, f32(0.5));
        if (o.getApproximate() == GeluApproximation::Tanh) {
          Value x3 = mulf(mulf(x, x), x);
          Value inner = mulf(f32(std::sqrt(2.0 / M_PI)),
                             fma(x3, f32(0.044715), x));
          return mulf(half, addf(f32(1), math::TanhOp::create(b, inner)));
        }
        Value erf = math::ErfOp::create(b, mulf(x, f32(M_SQRT1_2)));
        return mulf(half, addf(f32(1), erf));
      })
      .Case([&](SiluOp) {
        return divf(x, addf(f32(1), exp(arith::NegFOp::create(b, x))));
      })
      .Case([&](SigmoidOp) {
        return divf(f32(1), addf(f32(1), exp(arith::NegFOp::create(b, x))));
      })
      .Case([&](TanhOp) { return math::TanhOp::create(b, x); })
      .Case([&](HardSwishOp) {
        Value r6 = minf(maxf(addf(x, f32(3)), f32(0)), f32(6));
        return mulf(x, mulf(r6, f32(1.0 / 6.0)));
      })
      .Case([&](CastOp o) {
        Type to = o.getType().getElementType();
        if (to.isF32())
          return x;
        return toF32(arith::TruncFOp::create(b, to, x));
      })
      .Default([](Operation *) { return Value(); });
}

Value Codegen::evalAt(Value v, ArrayRef<Value> coords) {
  if (v == anchorResult)
    return anchorScalar;
  if (Value known = preloaded.lookup(v))
    return known;
  if (auto arg = dyn_cast<BlockArgument>(v))
    return load(argOf.lookup(arg), coords);
  // A value is always read at the same function of the element's
  // coordinates (broadcasting is consistent), so it is computed once per
  // element.
  if (Value hit = cache.lookup(v))
    return hit;
  Operation *op = v.getDefiningOp();
  auto at = [&](Value operand) {
    return evalAt(operand, broadcastCoords(coords, shapeOf(operand)));
  };
  auto channel = [&](Value vec, int64_t axis) {
    return evalAt(vec, {coords[axis]});
  };
  Value result =
      llvm::TypeSwitch<Operation *, Value>(op)
          .Case([&](AddOp o) { return addf(at(o.getLhs()), at(o.getRhs())); })
          .Case([&](SubOp o) { return subf(at(o.getLhs()), at(o.getRhs())); })
          .Case([&](MulOp o) { return mulf(at(o.getLhs()), at(o.getRhs())); })
          .Case([&](DivOp o) { return divf(at(o.getLhs()), at(o.getRhs())); })
          .Case([&](BiasAddOp o) {
            int64_t axis = static_cast<int64_t>(o.getAxis());
            if (axis < 0)
              axis += coords.size();
            return addf(evalAt(o.getInput(), coords),
                        channel(o.getBias(), axis));
          })
          .Case([&](ScaleShiftOp o) {
            int64_t axis = o.getChannelAxis();
            return fma(evalAt(o.getInput(), coords),
                       channel(o.getScale(), axis),
                       channel(o.getShift(), axis));
          })
          .Case([&](BatchNormOp o) {
            int64_t axis = o.getChannelAxis();
            Value x = evalAt(o.getInput(), coords);
            Value inv = math::RsqrtOp::create(
                b, addf(channel(o.getVariance(), axis),
                        f32(o.getEpsilon().convertToDouble())));
            Value scale = mulf(inv, channel(o.getScale(), axis));
            return fma(subf(x, channel(o.getMean(), axis)), scale,
                       channel(o.getShift(), axis));
          })
          .Case([&](BatchNormCoefficientsOp o) {
            Value var = evalAt(o.getVariance(), coords);
            Value eps = f32(o.getEpsilon().convertToDouble());
            Value scale = divf(evalAt(o.getScale(), coords),
                               math::SqrtOp::create(b, addf(var, eps)));
            if (v == o.getResultScale())
              return scale;
            return subf(evalAt(o.getShift(), coords),
                        mulf(evalAt(o.getMean(), coords), scale));
          })
          .Default([&](Operation *o) {
            return evalUnary(o, evalAt(o->getOperand(0), coords));
          });
  assert(result && "unexpected op in a kernel epilogue");
  cache[v] = result;
  return result;
}

//===----------------------------------------------------------------------===//
// Elementwise kernels and direct (one thread per output) anchors
//===----------------------------------------------------------------------===//

/// How many elements of the innermost axis one thread moves as a 16-byte
/// vector, or 0 when `shape` does not allow it.
int64_t Codegen::vectorWidth(ArrayRef<int64_t> shape) {
  int64_t widest = 0;
  for (Value out : outputs)
    widest = std::max<int64_t>(
        widest, cast<MemRefType>(out.getType()).getElementTypeBitWidth());
  for (BlockArgument arg : kernel.getBody().getArguments())
    if (shapeOf(arg) == shape)
      widest = std::max<int64_t>(
          widest, cast<RankedTensorType>(arg.getType()).getElementTypeBitWidth());
  int64_t width = 128 / widest;
  return !shape.empty() && shape.back() % width == 0 ? width : 0;
}

VectorType Codegen::vectorOf(Value memref, int64_t width) {
  return VectorType::get({width},
                         cast<MemRefType>(memref.getType()).getElementType());
}

llvm::MaybeAlign Codegen::alignOf(Value memref, int64_t width) {
  return llvm::MaybeAlign(
      width * cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8);
}

Value Codegen::loadVector(Value memref, ArrayRef<Value> coords,
                          int64_t width) {
  return vector::LoadOp::create(b, vectorOf(memref, width), memref, coords,
                                /*nontemporal=*/false, alignOf(memref, width));
}

SmallVector<std::pair<BlockArgument, Value>>
Codegen::loadFullInputs(ArrayRef<Value> coords, int64_t width) {
  ArrayRef<int64_t> shape = shapeOf(yield().getValues()[0]);
  SmallVector<std::pair<BlockArgument, Value>> full;
  for (BlockArgument arg : kernel.getBody().getArguments())
    if (shapeOf(arg) == shape && !arg.use_empty())
      full.emplace_back(arg, loadVector(argOf.lookup(arg), coords, width));
  return full;
}

void Codegen::selectLane(ArrayRef<std::pair<BlockArgument, Value>> full,
                         int64_t lane) {
  preloaded.clear();
  cache.clear();
  for (auto [arg, vec] : full)
    preloaded[arg] = toF32(vector::ExtractOp::create(b, vec, lane));
}

void Codegen::storeVectorResults(ArrayRef<Value> coords, int64_t width,
                                 ArrayRef<Value> anchorValues) {
  auto full = loadFullInputs(coords, width);
  SmallVector<SmallVector<Value>> lanes(outputs.size());
  for (int64_t i = 0; i < width; ++i) {
    SmallVector<Value> at(coords);
    at.back() = addi(coords.back(), idx(i));
    selectLane(full, i);
    Value anchor = anchorValues.empty() ? Value() : anchorValues[i];
    for (auto [k, value] : llvm::enumerate(evalResults(at, anchor))) {
      Type type = cast<MemRefType>(outputs[k].getType()).getElementType();
      lanes[k].push_back(value.getType() == type
                             ? value
                             : arith::TruncFOp::create(b, type, value)
                                   .getResult());
    }
  }
  preloaded.clear();
  for (auto [out, values] : llvm::zip_equal(outputs, lanes))
    vector::StoreOp::create(
        b, vector::FromElementsOp::create(b, vectorOf(out, width), values),
        out, coords, /*nontemporal=*/false, alignOf(out, width));
}

LaunchConfig Codegen::emitElementwise() {
  ArrayRef<int64_t> shape = shapeOf(yield().getValues()[0]);
  // Each thread handles `width` consecutive elements of the innermost axis
  // so that full-size inputs and outputs move as 16-byte vectors.
  int64_t width = vectorWidth(shape);
  if (!width)
    return perElement(product(shape), [&](Value linear) {
      storeResults(delinearize(linear, shape), Value());
    });
  return perElement(product(shape) / width, [&](Value group) {
    storeVectorResults(delinearize(muli(group, idx(width)), shape), width, {});
  });
}

/// Output coordinates (n, c, h, w) of a 4-D activation in `layout`.
struct NCHW {
  Value n, c, h, w;
};
static NCHW splitNCHW(ArrayRef<Value> coords, Layout layout) {
  if (layout == Layout::NHWC)
    return {coords[0], coords[3], coords[1], coords[2]};
  return {coords[0], coords[1], coords[2], coords[3]};
}
static SmallVector<Value> joinNCHW(Value n, Value c, Value h, Value w,
                                   Layout layout) {
  if (layout == Layout::NHWC)
    return {n, h, w, c};
  return {n, c, h, w};
}
/// (N, C, H, W) extents of a 4-D shape in `layout`.
static std::array<int64_t, 4> dimsNCHW(ArrayRef<int64_t> s, Layout layout) {
  if (layout == Layout::NHWC)
    return {s[0], s[3], s[1], s[2]};
  return {s[0], s[1], s[2], s[3]};
}

LaunchConfig Codegen::emitDirectConv(Conv2dOp op) {
  Layout layout = op.getLayout();
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  auto inDims = dimsNCHW(shapeOf(op.getInput()), layout);
  int64_t ci = inDims[1], h = inDims[2], w = inDims[3];
  int64_t co = dimsNCHW(outShape, layout)[1];
  ArrayRef<int64_t> fs = shapeOf(op.getFilter());
  bool nhwc = layout == Layout::NHWC;
  int64_t kh = nhwc ? fs[1] : fs[2], kw = nhwc ? fs[2] : fs[3];
  int64_t groups = op.getGroups(), cig = ci / groups, cog = co / groups;
  auto pads = op.getPads();
  ArrayRef<int64_t> s = op.getStrides(), d = op.getDilation();
  Value x = argOf.lookup(op.getInput()), filter = argOf.lookup(op.getFilter());
  return perElement(product(outShape), [&](Value linear) {
    SmallVector<Value> coords = delinearize(linear, outShape);
    NCHW o = splitNCHW(coords, layout);
    Value g = divi(o.c, cog);
    Value ih0 = subi(muli(o.h, idx(s[0])), idx(pads[0]));
    Value iw0 = subi(muli(o.w, idx(s[1])), idx(pads[2]));
    Value acc = loop(idx(0), idx(cig * kh * kw), idx(1), {f32(0)},
                     [&](Value r, ValueRange args) -> SmallVector<Value> {
                       Value c = divi(r, kh * kw);
                       Value khi = remi(divi(r, kw), kh);
                       Value kwi = remi(r, kw);
                       Value ih = addi(ih0, muli(khi, idx(d[0])));
                       Value iw = addi(iw0, muli(kwi, idx(d[1])));
                       Value ic = addi(muli(g, idx(cig)), c);
                       Value xv = loadOrZero(
                           andi(inRange(ih, h), inRange(iw, w)), x, [&] {
                             return joinNCHW(o.n, ic, ih, iw, layout);
                           });
                       SmallVector<Value> fi =
                           nhwc ? SmallVector<Value>{o.c, khi, kwi, c}
                                : SmallVector<Value>{o.c, c, khi, kwi};
                       return {fma(xv, load(filter, fi), args[0])};
                     })[0];
    if (Value bias = op.getBias())
      acc = addf(acc, load(argOf.lookup(bias), {o.c}));
    storeResults(coords, acc);
  });
}

LaunchConfig Codegen::emitPool(Operation *op) {
  bool isMax = isa<MaxPool2dOp>(op);
  auto get = [&](auto pool) {
    return std::tuple(pool.getInput(), pool.getLayout(),
                      SmallVector<int64_t>(pool.getKernel()),
                      SmallVector<int64_t>(pool.getEffectiveStrides()),
                      pool.getPads());
  };
  auto [input, layout, kernelSize, strides, pads] =
      isMax ? get(cast<MaxPool2dOp>(op)) : get(cast<AvgPool2dOp>(op));
  bool includePad = !isMax && cast<AvgPool2dOp>(op).getCountIncludePad();
  ArrayRef<int64_t> outShape = shapeOf(op->getResult(0));
  auto [n, c, h, w] = dimsNCHW(shapeOf(input), layout);
  (void)n;
  (void)c;
  Value x = argOf.lookup(input);
  return perElement(product(outShape), [&](Value linear) {
    SmallVector<Value> coords = delinearize(linear, outShape);
    NCHW o = splitNCHW(coords, layout);
    Value h0 = subi(muli(o.h, idx(strides[0])), idx(pads[0]));
    Value w0 = subi(muli(o.w, idx(strides[1])), idx(pads[2]));
    Value acc = isMax ? f32(-INFINITY) : f32(0);
    for (int64_t i = 0; i < kernelSize[0]; ++i) {
      for (int64_t j = 0; j < kernelSize[1]; ++j) {
        Value ih = addi(h0, idx(i)), iw = addi(w0, idx(j));
        Value ok = andi(inRange(ih, h), inRange(iw, w));
        Value v = ifElse(
            ok, [&] { return load(x, joinNCHW(o.n, o.c, ih, iw, layout)); },
            [&] { return isMax ? f32(-INFINITY) : f32(0); });
        acc = isMax ? maxf(acc, v) : addf(acc, v);
      }
    }
    if (!isMax) {
      // Window clipped to the padded input, then (without padding) to the
      // input itself.
      Value hEnd = mini(addi(h0, idx(kernelSize[0])), idx(h + pads[1]));
      Value wEnd = mini(addi(w0, idx(kernelSize[1])), idx(w + pads[3]));
      Value count;
      if (includePad) {
        count = muli(subi(hEnd, h0), subi(wEnd, w0));
      } else {
        Value hs = maxi(h0, idx(0)), ws = maxi(w0, idx(0));
        Value he = mini(hEnd, idx(h)), we = mini(wEnd, idx(w));
        count = muli(subi(he, hs), subi(we, ws));
      }
      Value countF = arith::SIToFPOp::create(
          b, b.getF32Type(), arith::IndexCastOp::create(b, b.getI32Type(), count));
      acc = divf(acc, countF);
    }
    storeResults(coords, acc);
  });
}

LaunchConfig Codegen::emitGlobalAvgPool(GlobalAvgPoolOp op) {
  Layout layout = op.getLayout();
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  auto [n, c, h, w] = dimsNCHW(shapeOf(op.getInput()), layout);
  (void)n;
  (void)c;
  Value x = argOf.lookup(op.getInput());
  return perElement(product(outShape), [&](Value linear) {
    SmallVector<Value> coords = delinearize(linear, outShape);
    NCHW o = splitNCHW(coords, layout);
    Value sum = loop(idx(0), idx(h * w), idx(1), {f32(0)},
                     [&](Value r, ValueRange args) -> SmallVector<Value> {
                       Value v = load(x, joinNCHW(o.n, o.c, divi(r, w),
                                                  remi(r, w), layout));
                       return {addf(args[0], v)};
                     })[0];
    storeResults(coords, mulf(sum, f32(1.0 / (h * w))));
  });
}

LaunchConfig Codegen::emitUpsample(UpsampleOp op) {
  Layout layout = op.getLayout();
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  auto inDims = dimsNCHW(shapeOf(op.getInput()), layout);
  auto outDims = dimsNCHW(outShape, layout);
  std::array<double, 2> step;
  for (int i = 0; i < 2; ++i)
    step[i] = op.getScale() ? 1.0 / (*op.getScale())[i]
                            : static_cast<double>(inDims[2 + i]) /
                                  static_cast<double>(outDims[2 + i]);
  bool bilinear = op.getMode() == UpsampleMode::Bilinear;
  bool alignCorners = op.getAlignCorners();
  Value x = argOf.lookup(op.getInput());
  auto toF = [&](Value i) {
    return arith::UIToFPOp::create(
        b, b.getF32Type(), arith::IndexCastOp::create(b, b.getI32Type(), i));
  };
  auto toIdx = [&](Value f) {
    return arith::IndexCastOp::create(
        b, b.getIndexType(), arith::FPToSIOp::create(b, b.getI32Type(), f));
  };
  return perElement(product(outShape), [&](Value linear) {
    SmallVector<Value> coords = delinearize(linear, outShape);
    NCHW o = splitNCHW(coords, layout);
    std::array<Value, 2> dst = {o.h, o.w};
    if (!bilinear) {
      // PyTorch's nearest index, in f32.
      std::array<Value, 2> src;
      for (int i = 0; i < 2; ++i) {
        int64_t in = inDims[2 + i], out = outDims[2 + i];
        if (out == in)
          src[i] = dst[i];
        else if (out == 2 * in)
          src[i] = divi(dst[i], 2);
        else
          src[i] = mini(toIdx(math::FloorOp::create(
                            b, mulf(toF(dst[i]),
                                    f32(static_cast<float>(step[i]))))),
                        idx(in - 1));
      }
      storeResults(coords,
                   load(x, joinNCHW(o.n, o.c, src[0], src[1], layout)));
      return;
    }
    std::array<Value, 2> i0, i1, frac;
    for (int i = 0; i < 2; ++i) {
      int64_t in = inDims[2 + i], out = outDims[2 + i];
      Value src;
      if (alignCorners)
        src = out > 1 ? mulf(toF(dst[i]),
                             f32(static_cast<double>(in - 1) / (out - 1)))
                      : f32(0);
      else
        src = maxf(subf(mulf(addf(toF(dst[i]), f32(0.5)), f32(step[i])),
                        f32(0.5)),
                   f32(0));
      Value lo = mini(toIdx(math::FloorOp::create(b, src)), idx(in - 1));
      i0[i] = lo;
      i1[i] = mini(addi(lo, idx(1)), idx(in - 1));
      frac[i] = subf(src, toF(lo));
    }
    auto at = [&](Value hh, Value ww) {
      return load(x, joinNCHW(o.n, o.c, hh, ww, layout));
    };
    Value top = fma(frac[1], subf(at(i0[0], i1[1]), at(i0[0], i0[1])),
                    at(i0[0], i0[1]));
    Value bottom = fma(frac[1], subf(at(i1[0], i1[1]), at(i1[0], i0[1])),
                       at(i1[0], i0[1]));
    storeResults(coords, fma(frac[0], subf(bottom, top), top));
  });
}

LaunchConfig Codegen::emitTranspose(TransposeOp op) {
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  ArrayRef<int64_t> perm = op.getPermutation();
  Value x = argOf.lookup(op.getInput());
  return perElement(product(outShape), [&](Value linear) {
    SmallVector<Value> coords = delinearize(linear, outShape);
    SmallVector<Value> in(coords.size());
    for (auto [i, p] : llvm::enumerate(perm))
      in[p] = coords[i];
    storeResults(coords, load(x, in));
  });
}

LaunchConfig Codegen::emitRope(RopeOp op) {
  ArrayRef<int64_t> shape = shapeOf(op.getResult());
  int64_t d = shape.back(), half = d / 2;
  bool interleaved = op.getInterleaved();
  Value x = argOf.lookup(op.getInput());
  Value cosT = argOf.lookup(op.getCos()), sinT = argOf.lookup(op.getSin());
  return perElement(product(shape), [&](Value linear) {
    SmallVector<Value> coords = delinearize(linear, shape);
    Value pos = coords[coords.size() - 2], feature = coords.back();
    // This element is the first (x0) or second (x1) of its pair.
    Value pair, first, partner;
    if (interleaved) {
      pair = divi(feature, 2);
      first = cmpi(arith::CmpIPredicate::eq, remi(feature, 2), idx(0));
      partner = select(first, addi(feature, idx(1)), subi(feature, idx(1)));
    } else {
      first = ltc(feature, half);
      pair = select(first, feature, subi(feature, idx(half)));
      partner = select(first, addi(feature, idx(half)),
                       subi(feature, idx(half)));
    }
    SmallVector<Value> partnerCoords(coords);
    partnerCoords.back() = partner;
    Value self = load(x, coords), other = load(x, partnerCoords);
    Value c = load(cosT, {pos, pair}), s = load(sinT, {pos, pair});
    // x0' = x0 c - x1 s; x1' = x1 c + x0 s.
    Value signedOther = select(first, arith::NegFOp::create(b, other), other);
    storeResults(coords, fma(self, c, mulf(signedOther, s)));
  });
}

LaunchConfig Codegen::emitAttention(AttentionOp op) {
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  ArrayRef<int64_t> ks = shapeOf(op.getKey());
  int64_t hq = outShape[1], hkv = ks[1], nk = ks[2], dim = ks[3];
  int64_t groupSize = hq / hkv;
  double scale = op.getEffectiveScale();
  bool causal = op.getCausal();
  Value q = argOf.lookup(op.getQuery()), k = argOf.lookup(op.getKey()),
        v = argOf.lookup(op.getValue());
  Value mask = op.getMask() ? argOf.lookup(op.getMask()) : Value();
  // One thread per output element, online softmax over the keys.
  return perElement(product(outShape), [&](Value linear) {
    SmallVector<Value> c = delinearize(linear, outShape);
    Value bi = c[0], h = c[1], i = c[2], dv = c[3];
    Value hk = divi(h, groupSize);
    Value end = causal ? mini(addi(i, idx(1)), idx(nk)) : idx(nk);
    SmallVector<Value> init = {f32(-INFINITY), f32(0), f32(0)};
    SmallVector<Value> state = loop(
        idx(0), end, idx(1), init,
        [&](Value j, ValueRange args) -> SmallVector<Value> {
          Value dot = loop(idx(0), idx(dim), idx(1), {f32(0)},
                           [&](Value e, ValueRange acc) -> SmallVector<Value> {
                             return {fma(load(q, {bi, h, i, e}),
                                         load(k, {bi, hk, j, e}), acc[0])};
                           })[0];
          Value s = mulf(dot, f32(scale));
          if (mask)
            s = addf(s, load(mask, broadcastCoords({bi, h, i, j},
                                                   shapeOf(op.getMask()))));
          // A -inf score adds nothing; skipping it keeps exp(-inf - -inf)
          // out of the running sums.
          Value live = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, s,
                                             f32(-INFINITY));
          Value m = args[0], l = args[1], acc = args[2];
          Value mNew = select(live, maxf(m, s), m);
          Value alpha = exp(subf(m, mNew));
          Value p = select(live, exp(subf(s, mNew)), f32(0));
          Value vv = load(v, {bi, hk, j, dv});
          // alpha is NaN only while m and mNew are both -inf: nothing yet.
          Value keep = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT,
                                             mNew, f32(-INFINITY));
          alpha = select(keep, alpha, f32(0));
          return {mNew, fma(l, alpha, p), fma(acc, alpha, mulf(p, vv))};
        });
    Value l = state[1];
    Value nonEmpty =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, l, f32(0));
    storeResults(c, select(nonEmpty, divf(state[2], l), f32(0)));
  });
}

//===----------------------------------------------------------------------===//
// Row reductions: layer_norm, rms_norm, softmax (one block per row)
//===----------------------------------------------------------------------===//

Value Codegen::blockReduce(Value partial, bool isMax) {
  Value tid = threadId();
  memref::StoreOp::create(b, partial, reduceBuffer, ValueRange{tid});
  gpu::BarrierOp::create(b);
  for (int64_t stride = kBlock / 2; stride > 0; stride /= 2) {
    ifThen(ltc(tid, stride), [&] {
      Value other = memref::LoadOp::create(b, reduceBuffer,
                                           ValueRange{addi(tid, idx(stride))});
      Value mine = memref::LoadOp::create(b, reduceBuffer, ValueRange{tid});
      memref::StoreOp::create(b, isMax ? maxf(mine, other) : addf(mine, other),
                              reduceBuffer, ValueRange{tid});
    });
    gpu::BarrierOp::create(b);
  }
  Value result = memref::LoadOp::create(b, reduceBuffer, ValueRange{idx(0)});
  // Nobody may overwrite the buffer before everyone has read the result.
  gpu::BarrierOp::create(b);
  return result;
}

LaunchConfig Codegen::emitRowReduction(Operation *op) {
  Value input = op->getOperand(0);
  ArrayRef<int64_t> shape = shapeOf(input);
  int64_t length, inner;
  if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
    int64_t axis = static_cast<int64_t>(softmax.getAxis());
    if (axis < 0)
      axis += shape.size();
    length = shape[axis];
    inner = product(shape.drop_front(axis + 1));
  } else {
    int64_t normRank = isa<LayerNormOp>(op)
                           ? cast<LayerNormOp>(op).getNormalizedRank()
                           : cast<RmsNormOp>(op).getNormalizedRank();
    length = product(shape.take_back(normRank));
    inner = 1;
  }
  int64_t rows = product(shape) / length;
  auto wgType = MemRefType::get(
      {kBlock}, b.getF32Type(), AffineMap(),
      gpu::AddressSpaceAttr::get(b.getContext(),
                                 gpu::AddressSpace::Workgroup));
  reduceBuffer = func.addWorkgroupAttribution(wgType, b.getLoc());
  Value row = blockId(gpu::Dimension::x), tid = threadId();
  Value outer = divi(row, inner), in = remi(row, inner);
  // Linear offset of element j of this row.
  auto offset = [&](Value j) {
    return addi(muli(addi(muli(outer, idx(length)), j), idx(inner)), in);
  };
  auto elementCoords = [&](Value j) { return delinearize(offset(j), shape); };
  // Contiguous rows move as 16-byte vectors of `width` elements.
  int64_t width = inner == 1 ? vectorWidth(shape) : 0;
  int64_t step = width ? width : 1;
  // The `step` input values from `coords` on: read from memory, or computed
  // by the fused prologue (elementwise ops producing the input).
  auto inputLanes = [&](ArrayRef<Value> coords) {
    SmallVector<Value> lanes;
    if (auto arg = dyn_cast<BlockArgument>(input)) {
      Value x = argOf.lookup(arg);
      if (!width)
        return SmallVector<Value>{load(x, coords)};
      Value vec = loadVector(x, coords, width);
      for (int64_t i = 0; i < width; ++i)
        lanes.push_back(toF32(vector::ExtractOp::create(b, vec, i)));
      return lanes;
    }
    auto full = width ? loadFullInputs(coords, width)
                      : SmallVector<std::pair<BlockArgument, Value>>();
    for (int64_t i = 0; i < step; ++i) {
      SmallVector<Value> at(coords);
      at.back() = addi(coords.back(), idx(i));
      selectLane(full, i);
      lanes.push_back(evalAt(input, at));
    }
    preloaded.clear();
    cache.clear();
    return lanes;
  };
  auto rowSum = [&](std::function<Value(Value)> term, bool isMax) {
    Value partial =
        loop(tid, idx(length / step), idx(kBlock),
             {isMax ? f32(-INFINITY) : f32(0)},
             [&](Value g, ValueRange acc) -> SmallVector<Value> {
               Value a = acc[0];
               for (Value v : inputLanes(elementCoords(muli(g, idx(step))))) {
                 Value t = term(v);
                 a = isMax ? maxf(a, t) : addf(a, t);
               }
               return {a};
             })[0];
    return blockReduce(partial, isMax);
  };
  auto writeRow = [&](std::function<Value(Value, ArrayRef<Value>)> value) {
    (void)loop(tid, idx(length / step), idx(kBlock), {},
               [&](Value g, ValueRange) -> SmallVector<Value> {
                 SmallVector<Value> coords =
                     elementCoords(muli(g, idx(step)));
                 SmallVector<Value> lanes = inputLanes(coords);
                 if (!width) {
                   storeResults(coords, value(lanes[0], coords));
                   return {};
                 }
                 SmallVector<Value> anchorValues;
                 for (int64_t i = 0; i < width; ++i) {
                   SmallVector<Value> at(coords);
                   at.back() = addi(coords.back(), idx(i));
                   anchorValues.push_back(value(lanes[i], at));
                 }
                 storeVectorResults(coords, width, anchorValues);
                 return {};
               });
  };
  Value invLength = f32(1.0 / static_cast<double>(length));
  if (isa<SoftmaxOp>(op)) {
    Value max = rowSum([](Value v) { return v; }, /*isMax=*/true);
    Value sum = rowSum([&](Value v) { return exp(subf(v, max)); }, false);
    Value inv = divf(f32(1), sum);
    writeRow([&](Value v, ArrayRef<Value>) {
      return mulf(exp(subf(v, max)), inv);
    });
  } else if (auto ln = dyn_cast<LayerNormOp>(op)) {
    Value mean = mulf(rowSum([](Value v) { return v; }, false), invLength);
    Value var = mulf(rowSum(
                         [&](Value v) {
                           Value dv = subf(v, mean);
                           return mulf(dv, dv);
                         },
                         false),
                     invLength);
    Value inv = math::RsqrtOp::create(
        b, addf(var, f32(ln.getEpsilon().convertToDouble())));
    int64_t normRank = ln.getNormalizedRank();
    writeRow([&](Value v, ArrayRef<Value> coords) {
      Value y = mulf(subf(v, mean), inv);
      ArrayRef<Value> trailing = coords.take_back(normRank);
      if (Value scale = ln.getScale())
        y = mulf(y, load(argOf.lookup(scale), trailing));
      if (Value shift = ln.getShift())
        y = addf(y, load(argOf.lookup(shift), trailing));
      return y;
    });
  } else {
    auto rms = cast<RmsNormOp>(op);
    Value meanSq =
        mulf(rowSum([&](Value v) { return mulf(v, v); }, false), invLength);
    Value inv = math::RsqrtOp::create(
        b, addf(meanSq, f32(rms.getEpsilon().convertToDouble())));
    int64_t normRank = rms.getNormalizedRank();
    writeRow([&](Value v, ArrayRef<Value> coords) {
      Value y = mulf(v, inv);
      if (Value scale = rms.getScale())
        y = mulf(y, load(argOf.lookup(scale), coords.take_back(normRank)));
      return y;
    });
  }
  return {{rows, 1, 1}, {kBlock, 1, 1}};
}

//===----------------------------------------------------------------------===//
// Shared-memory tiled GEMM: convolution (implicit GEMM), linear, matmul
//===----------------------------------------------------------------------===//

LaunchConfig Codegen::emitGemm(const GemmSpec &spec) {
  const GemmTile t =
      tileAttr ? *tileAttr : chooseGemmTile(spec.m, spec.n, spec.batch);
  func->setAttr("fusec.tile",
                b.getDictionaryAttr({b.getNamedAttr("bm", b.getI64IntegerAttr(t.bm)),
                                     b.getNamedAttr("bn", b.getI64IntegerAttr(t.bn)),
                                     b.getNamedAttr("bk", b.getI64IntegerAttr(t.bk)),
                                     b.getNamedAttr("tm", b.getI64IntegerAttr(t.tm)),
                                     b.getNamedAttr("tn", b.getI64IntegerAttr(t.tn))}));
  int64_t threadsM = t.bm / t.tm, threadsN = t.bn / t.tn;
  int64_t threads = threadsM * threadsN;
  int64_t aPerThread = ceilDiv(t.bk * t.bm, threads);
  int64_t bPerThread = ceilDiv(t.bk * t.bn, threads);
  auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                       gpu::AddressSpace::Workgroup);
  // Two buffers of each operand tile, k-major so that a thread's TM (or TN)
  // values for one k sit side by side.
  Value aTile = func.addWorkgroupAttribution(
      MemRefType::get({2, t.bk, t.bm}, b.getF32Type(), AffineMap(), wg),
      b.getLoc());
  Value bTile = func.addWorkgroupAttribution(
      MemRefType::get({2, t.bk, t.bn}, b.getF32Type(), AffineMap(), wg),
      b.getLoc());

  Value tid = threadId();
  Value tileM = muli(blockId(gpu::Dimension::x), idx(t.bm));
  Value tileN = muli(blockId(gpu::Dimension::y), idx(t.bn));
  Value batch = blockId(gpu::Dimension::z);
  // A thread's register rows (and columns) come in runs of 4, one run per
  // quarter of its tile, so that a warp's shared-memory reads of one run are
  // contiguous 16-byte vectors; with tm (tn) not a multiple of 4, one run.
  Value ty = divi(tid, threadsN), tx = remi(tid, threadsN);
  auto regIndex = [&](Value thread, int64_t i, int64_t perThread,
                      int64_t threadsAlong) -> Value {
    if (perThread % 4 != 0)
      return addi(muli(thread, idx(perThread)), idx(i));
    return addi(muli(thread, idx(4)),
                idx((i / 4) * threadsAlong * 4 + i % 4));
  };
  auto readRegs = [&](Value tileBuf, Value buf, int64_t kk, Value thread,
                      int64_t perThread, int64_t threadsAlong) {
    SmallVector<Value> regs;
    if (perThread % 4 != 0) {
      for (int64_t i = 0; i < perThread; ++i)
        regs.push_back(memref::LoadOp::create(
            b, tileBuf,
            ValueRange{buf, idx(kk),
                       regIndex(thread, i, perThread, threadsAlong)}));
      return regs;
    }
    auto vecType = VectorType::get({4}, b.getF32Type());
    for (int64_t i = 0; i < perThread; i += 4) {
      Value v = vector::LoadOp::create(
          b, vecType, tileBuf,
          ValueRange{buf, idx(kk), regIndex(thread, i, perThread, threadsAlong)},
          /*nontemporal=*/false, llvm::MaybeAlign(16));
      for (int64_t l = 0; l < 4; ++l)
        regs.push_back(vector::ExtractOp::create(b, v, l));
    }
    return regs;
  };

  // The (k, m) or (k, n) position of the r-th element a thread loads.
  auto tilePos = [&](int64_t r, int64_t extent, bool kContiguous) {
    Value e = addi(tid, idx(r * threads));
    Value k = kContiguous ? remi(e, t.bk) : divi(e, extent);
    Value other = kContiguous ? divi(e, t.bk) : remi(e, extent);
    return std::pair(k, other);
  };
  auto loadTiles = [&](Value k0) {
    SmallVector<Value> regs;
    for (int64_t r = 0; r < aPerThread; ++r) {
      auto [k, m] = tilePos(r, t.bm, spec.aKContiguous);
      regs.push_back(spec.loadA(batch, addi(tileM, m), addi(k0, k)));
    }
    for (int64_t r = 0; r < bPerThread; ++r) {
      auto [k, n] = tilePos(r, t.bn, spec.bKContiguous);
      regs.push_back(spec.loadB(batch, addi(k0, k), addi(tileN, n)));
    }
    return regs;
  };
  auto storeTiles = [&](ArrayRef<Value> regs, Value buf) {
    for (int64_t r = 0; r < aPerThread; ++r) {
      auto [k, m] = tilePos(r, t.bm, spec.aKContiguous);
      ifThen(ltc(addi(tid, idx(r * threads)), t.bk * t.bm), [&] {
        memref::StoreOp::create(b, regs[r], aTile, ValueRange{buf, k, m});
      });
    }
    for (int64_t r = 0; r < bPerThread; ++r) {
      auto [k, n] = tilePos(r, t.bn, spec.bKContiguous);
      ifThen(ltc(addi(tid, idx(r * threads)), t.bk * t.bn), [&] {
        memref::StoreOp::create(b, regs[aPerThread + r], bTile,
                                ValueRange{buf, k, n});
      });
    }
  };

  storeTiles(loadTiles(idx(0)), idx(0));
  gpu::BarrierOp::create(b);
  int64_t numK = ceilDiv(spec.k, t.bk);
  SmallVector<Value> zeros(t.tm * t.tn, f32(0));
  SmallVector<Value> acc = loop(
      idx(0), idx(numK), idx(1), zeros,
      [&](Value kt, ValueRange accIn) -> SmallVector<Value> {
        Value buf = remi(kt, 2);
        // Prefetch the next slice into registers while this one computes;
        // past the end the guarded loads read nothing.
        SmallVector<Value> next =
            loadTiles(muli(addi(kt, idx(1)), idx(t.bk)));
        SmallVector<Value> accOut(accIn.begin(), accIn.end());
        for (int64_t kk = 0; kk < t.bk; ++kk) {
          SmallVector<Value> av = readRegs(aTile, buf, kk, ty, t.tm, threadsM);
          SmallVector<Value> bv = readRegs(bTile, buf, kk, tx, t.tn, threadsN);
          for (int64_t i = 0; i < t.tm; ++i)
            for (int64_t j = 0; j < t.tn; ++j)
              accOut[i * t.tn + j] = fma(av[i], bv[j], accOut[i * t.tn + j]);
        }
        storeTiles(next, subi(idx(1), buf));
        gpu::BarrierOp::create(b);
        return accOut;
      });

  for (int64_t i = 0; i < t.tm; ++i) {
    for (int64_t j = 0; j < t.tn; ++j) {
      Value m = addi(tileM, regIndex(ty, i, t.tm, threadsM));
      Value n = addi(tileN, regIndex(tx, j, t.tn, threadsN));
      ifThen(andi(ltc(m, spec.m), ltc(n, spec.n)),
             [&] { spec.epilogue(batch, m, n, acc[i * t.tn + j]); });
    }
  }
  return {{ceilDiv(spec.m, t.bm), ceilDiv(spec.n, t.bn), spec.batch},
          {threads, 1, 1}};
}

LaunchConfig Codegen::emitTiledConv(Conv2dOp op) {
  Layout layout = op.getLayout();
  bool nhwc = layout == Layout::NHWC;
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  auto [n, ci, h, w] = dimsNCHW(shapeOf(op.getInput()), layout);
  auto outDims = dimsNCHW(outShape, layout);
  int64_t co = outDims[1], ho = outDims[2], wo = outDims[3];
  ArrayRef<int64_t> fs = shapeOf(op.getFilter());
  int64_t kh = nhwc ? fs[1] : fs[2], kw = nhwc ? fs[2] : fs[3];
  int64_t groups = op.getGroups(), cig = ci / groups, cog = co / groups;
  auto pads = op.getPads();
  ArrayRef<int64_t> s = op.getStrides(), d = op.getDilation();
  Value x = argOf.lookup(op.getInput()), filter = argOf.lookup(op.getFilter());
  Value bias = op.getBias() ? argOf.lookup(op.getBias()) : Value();
  int64_t kTotal = cig * kh * kw;

  // The reduction index k runs over the filter's contiguous dimensions:
  // (kh, kw, ci) for OHWI, (ci, kh, kw) for OIHW.
  auto splitK = [&](Value k) {
    if (nhwc)
      return std::tuple(remi(k, cig), remi(divi(k, cig * kw), kh),
                        remi(divi(k, cig), kw));
    return std::tuple(divi(k, kh * kw), remi(divi(k, kw), kh), remi(k, kw));
  };
  GemmSpec spec;
  spec.batch = groups;
  spec.m = n * ho * wo;
  spec.n = cog;
  spec.k = kTotal;
  spec.aKContiguous = nhwc;
  spec.bKContiguous = true;
  spec.loadA = [&](Value g, Value m, Value k) {
    SmallVector<Value> p = delinearize(m, {n, ho, wo});
    auto [c, khi, kwi] = splitK(k);
    Value ih = addi(subi(muli(p[1], idx(s[0])), idx(pads[0])),
                    muli(khi, idx(d[0])));
    Value iw = addi(subi(muli(p[2], idx(s[1])), idx(pads[2])),
                    muli(kwi, idx(d[1])));
    Value ok = andi(andi(ltc(m, spec.m), ltc(k, kTotal)),
                    andi(inRange(ih, h), inRange(iw, w)));
    return loadOrZero(ok, x, [&] {
      return joinNCHW(p[0], addi(muli(g, idx(cig)), c), ih, iw, layout);
    });
  };
  spec.loadB = [&](Value g, Value k, Value nn) {
    auto [c, khi, kwi] = splitK(k);
    Value ok = andi(ltc(k, kTotal), ltc(nn, cog));
    return loadOrZero(ok, filter, [&]() -> SmallVector<Value> {
      Value o = addi(muli(g, idx(cog)), nn);
      if (nhwc)
        return {o, khi, kwi, c};
      return {o, c, khi, kwi};
    });
  };
  spec.epilogue = [&](Value g, Value m, Value nn, Value acc) {
    SmallVector<Value> p = delinearize(m, {n, ho, wo});
    Value o = addi(muli(g, idx(cog)), nn);
    if (bias)
      acc = addf(acc, load(bias, {o}));
    storeResults(joinNCHW(p[0], o, p[1], p[2], layout), acc);
  };
  return emitGemm(spec);
}

LaunchConfig Codegen::emitLinear(LinearOp op) {
  ArrayRef<int64_t> inShape = shapeOf(op.getInput());
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  int64_t k = inShape.back(), n = outShape.back();
  int64_t m = product(inShape) / k;
  ArrayRef<int64_t> lead = inShape.drop_back();
  Value x = argOf.lookup(op.getInput()), weight = argOf.lookup(op.getWeight());
  Value bias = op.getBias() ? argOf.lookup(op.getBias()) : Value();
  GemmSpec spec;
  spec.batch = 1;
  spec.m = m;
  spec.n = n;
  spec.k = k;
  spec.aKContiguous = true;
  spec.bKContiguous = true;
  spec.loadA = [&](Value, Value mi, Value ki) {
    return loadOrZero(andi(ltc(mi, m), ltc(ki, k)), x, [&] {
      SmallVector<Value> c = delinearize(mi, lead);
      c.push_back(ki);
      return c;
    });
  };
  spec.loadB = [&](Value, Value ki, Value ni) {
    return loadOrZero(andi(ltc(ki, k), ltc(ni, n)), weight, [&] {
      return SmallVector<Value>{ni, ki};
    });
  };
  spec.epilogue = [&](Value, Value mi, Value ni, Value acc) {
    if (bias)
      acc = addf(acc, load(bias, {ni}));
    SmallVector<Value> c = delinearize(mi, lead);
    c.push_back(ni);
    storeResults(c, acc);
  };
  return emitGemm(spec);
}

LaunchConfig Codegen::emitMatmul(MatmulOp op) {
  ArrayRef<int64_t> ls = shapeOf(op.getLhs()), rs = shapeOf(op.getRhs());
  ArrayRef<int64_t> os = shapeOf(op.getResult());
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  int64_t m = os.end()[-2], n = os.back();
  int64_t k = ta ? ls.end()[-2] : ls.back();
  ArrayRef<int64_t> batchShape = os.drop_back(2);
  Value lhs = argOf.lookup(op.getLhs()), rhs = argOf.lookup(op.getRhs());
  auto operandIndex = [&](Value batchIdx, ArrayRef<int64_t> shape, Value r,
                          Value c) {
    SmallVector<Value> bc = broadcastCoords(delinearize(batchIdx, batchShape),
                                            shape.drop_back(2));
    bc.push_back(r);
    bc.push_back(c);
    return bc;
  };
  GemmSpec spec;
  spec.batch = product(batchShape);
  spec.m = m;
  spec.n = n;
  spec.k = k;
  spec.aKContiguous = !ta;
  spec.bKContiguous = tb;
  spec.loadA = [&](Value bi, Value mi, Value ki) {
    return loadOrZero(andi(ltc(mi, m), ltc(ki, k)), lhs, [&] {
      return ta ? operandIndex(bi, ls, ki, mi) : operandIndex(bi, ls, mi, ki);
    });
  };
  spec.loadB = [&](Value bi, Value ki, Value ni) {
    return loadOrZero(andi(ltc(ki, k), ltc(ni, n)), rhs, [&] {
      return tb ? operandIndex(bi, rs, ni, ki) : operandIndex(bi, rs, ki, ni);
    });
  };
  spec.epilogue = [&](Value bi, Value mi, Value ni, Value acc) {
    SmallVector<Value> c = delinearize(bi, batchShape);
    c.push_back(mi);
    c.push_back(ni);
    storeResults(c, acc);
  };
  return emitGemm(spec);
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

/// A grouped convolution whose groups are too narrow to fill a GEMM tile
/// (depthwise above all) runs one thread per output instead.
static bool useTiledConv(Conv2dOp op) {
  int64_t co = cast<RankedTensorType>(op.getFilter().getType()).getDimSize(0);
  return co / op.getGroups() >= 16;
}

FailureOr<LaunchConfig> Codegen::run() {
  Block &body = kernel.getBody().front();
  SmallVector<Type> argTypes;
  for (Type t : kernel.getInputs().getTypes()) {
    auto tensor = cast<RankedTensorType>(t);
    argTypes.push_back(
        MemRefType::get(tensor.getShape(), tensor.getElementType()));
  }
  for (Type t : kernel.getResultTypes()) {
    auto tensor = cast<RankedTensorType>(t);
    argTypes.push_back(
        MemRefType::get(tensor.getShape(), tensor.getElementType()));
    if (tensor.getNumElements() >= (int64_t(1) << 31))
      return kernel.emitOpError("result ")
             << t << " has 2^31 elements or more; 32-bit indexing cannot "
                     "address it";
  }
  b.setInsertionPointToEnd(module.getBody());
  func = gpu::GPUFuncOp::create(b, kernel.getName(),
                                b.getFunctionType(argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  Block &entry = func.getBody().front();
  for (auto [arg, memref] : llvm::zip(body.getArguments(), entry.getArguments()))
    argOf.map(arg, memref);
  for (Value memref : entry.getArguments().drop_front(body.getNumArguments()))
    outputs.push_back(memref);
  b.setInsertionPointToEnd(&entry);

  Operation *anchor = nullptr;
  for (Operation &op : body)
    if (!isa<YieldOp>(op) &&
        isa<Conv2dOp, MatmulOp, LinearOp, AttentionOp, LayerNormOp, RmsNormOp,
            SoftmaxOp, MaxPool2dOp, AvgPool2dOp, GlobalAvgPoolOp, UpsampleOp,
            RopeOp, TransposeOp>(op))
      anchor = &op;
  if (anchor)
    anchorResult = anchor->getResult(0);
  for (Value v : yield().getValues())
    if (shapeOf(v) != shapeOf(yield().getValues()[0]))
      return kernel.emitOpError("results of different shapes cannot share "
                                "one GPU kernel");

  FailureOr<std::optional<GemmTile>> attr = getTileAttr(kernel);
  if (failed(attr))
    return failure();
  tileAttr = *attr;
  LaunchConfig config =
      !anchor ? emitElementwise()
              : llvm::TypeSwitch<Operation *, LaunchConfig>(anchor)
                    .Case([&](Conv2dOp op) {
                      return useTiledConv(op) ? emitTiledConv(op)
                                                    : emitDirectConv(op);
                    })
                    .Case([&](LinearOp op) { return emitLinear(op); })
                    .Case([&](MatmulOp op) { return emitMatmul(op); })
                    .Case<MaxPool2dOp, AvgPool2dOp>(
                        [&](Operation *op) { return emitPool(op); })
                    .Case([&](GlobalAvgPoolOp op) {
                      return emitGlobalAvgPool(op);
                    })
                    .Case([&](UpsampleOp op) { return emitUpsample(op); })
                    .Case([&](TransposeOp op) { return emitTranspose(op); })
                    .Case([&](RopeOp op) { return emitRope(op); })
                    .Case([&](AttentionOp op) { return emitAttention(op); })
                    .Default([&](Operation *op) {
                      return emitRowReduction(op);
                    });
  gpu::ReturnOp::create(b);
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(config.block[0]),
       static_cast<int32_t>(config.block[1]),
       static_cast<int32_t>(config.block[2])}));
  for (int64_t g : config.grid)
    if (g < 1 || g >= (int64_t(1) << 31))
      return kernel.emitOpError("needs a grid of ")
             << config.grid[0] << " x " << config.grid[1] << " x "
             << config.grid[2] << " blocks, beyond what CUDA launches";
  if (config.grid[1] > 65535 || config.grid[2] > 65535)
    return kernel.emitOpError("needs ")
           << config.grid[1] << " x " << config.grid[2]
           << " blocks in y and z, beyond CUDA's 65535";
  return config;
}

FailureOr<LaunchConfig> fusec::emitKernel(KernelOp kernel,
                                          gpu::GPUModuleOp module) {
  return Codegen(kernel, module).run();
}
