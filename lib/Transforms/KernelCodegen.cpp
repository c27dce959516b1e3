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

#include "CodegenImpl.h"

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec;
using namespace fusec::detail;

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

namespace fusec::detail {

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
            Value scale = mulf(evalAt(o.getScale(), coords),
                               math::RsqrtOp::create(b, addf(var, eps)));
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


} // namespace fusec::detail

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

/// A grouped convolution whose groups are too narrow to fill a GEMM tile
/// (depthwise above all) runs one thread per output instead.
static bool useTiledConv(Conv2dOp op) {
  int64_t co = cast<RankedTensorType>(op.getFilter().getType()).getDimSize(0);
  return co / op.getGroups() >= 16;
}

/// An NHWC depthwise convolution whose channels split into vectors of 8
/// 16-bit values. (With f32, four channels per thread measured slower than
/// one: bench/results/2026-11-21-h200-0b8b9b3.)
static bool isVectorDepthwise(Conv2dOp op, int64_t width) {
  auto filter = cast<RankedTensorType>(op.getFilter().getType());
  int64_t channels = filter.getDimSize(0);
  return width >= 8 && op.getLayout() == Layout::NHWC &&
         op.getGroups() == channels && filter.getDimSize(3) == 1 &&
         channels % width == 0;
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
                      if (useTiledConv(op))
                        return emitTiledConv(op);
                      int64_t width = vectorWidth(shapeOf(op.getResult()));
                      return isVectorDepthwise(op, width)
                                 ? emitDepthwiseVector(op, width)
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