//===- RowReduction.cpp - Normalisations and softmax ----------------------===//
//
// layer_norm, rms_norm and softmax: one block per row, reductions by warp
// shuffles then across warps in shared memory (mean then variance; max then
// sum), contiguous rows moving as 16-byte vectors. A row of up to 8 vectors
// per thread (4096 bf16, 2048 f32) is read once into registers; longer rows
// are read once per pass, a fused prologue (a residual add, say) computed per
// element in every pass. The prologue's result is written once.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

using namespace fusec::tiling;

namespace {
class RowReductionKernel : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

private:
  FailureOr<LaunchConfig> emitBody() override;
  /// Shared-memory tree reduction of one f32 per thread across the block.
  Value blockReduce(Value partial, bool isMax);

  Value reduceBuffer;
  /// The most 16-byte vectors of a row one thread keeps in registers.
  static constexpr int64_t kResident = 8;
};
} // namespace

std::unique_ptr<KernelBuilder>
fusec::tiling::makeRowReductionKernel(KernelOp kernel,
                                      gpu::GPUModuleOp module,
                                      const TargetDescription &target) {
  return std::make_unique<RowReductionKernel>(kernel, module, target);
}

Value RowReductionKernel::blockReduce(Value partial, bool isMax) {
  // Within each warp by shuffles, then across the warps' partials in
  // shared memory: two barriers instead of one per halving.
  auto combine = [&](Value a, Value c) { return isMax ? maxf(a, c) : addf(a, c); };
  for (int32_t offset = 16; offset > 0; offset /= 2)
    partial = combine(partial, gpu::ShuffleOp::create(b, partial, offset, 32,
                                                      gpu::ShuffleMode::XOR)
                                   .getShuffleResult());
  Value tid = threadId();
  ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, remi(tid, 32),
                               idx(0)),
         [&] {
           memref::StoreOp::create(b, partial, reduceBuffer,
                                   ValueRange{divi(tid, 32)});
         });
  gpu::BarrierOp::create(b);
  Value result = memref::LoadOp::create(b, reduceBuffer, ValueRange{idx(0)});
  for (int64_t w = 1; w < kBlock / 32; ++w)
    result = combine(result, memref::LoadOp::create(b, reduceBuffer,
                                                    ValueRange{idx(w)}));
  // Nobody may overwrite the buffer before everyone has read the result.
  gpu::BarrierOp::create(b);
  return result;
}

FailureOr<LaunchConfig> RowReductionKernel::emitBody() {
  Operation *op = anchor;
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
  reduceBuffer = allocShared({kBlock}, b.getF32Type());
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
  using Full = SmallVector<std::pair<BlockArgument, Value>>;
  // With `keep`, the full-size inputs loaded on the way are kept there for
  // the stores (register-resident rows).
  auto inputLanes = [&](ArrayRef<Value> coords, Full *keep = nullptr) {
    SmallVector<Value> lanes;
    if (auto arg = dyn_cast<BlockArgument>(input); arg && !keep) {
      Value x = argOf.lookup(arg);
      if (!width)
        return SmallVector<Value>{load(x, coords)};
      Value vec = loadVector(x, coords, width);
      for (int64_t i = 0; i < width; ++i)
        lanes.push_back(toF32(vector::ExtractOp::create(b, vec, i)));
      return lanes;
    }
    Full full = width ? loadFullInputs(coords, width) : Full();
    for (int64_t i = 0; i < step; ++i) {
      SmallVector<Value> at(coords);
      at.back() = addi(coords.back(), idx(i));
      selectLane(full, i);
      lanes.push_back(evalAt(input, at));
    }
    preloaded.clear();
    cache.clear();
    if (keep)
      *keep = std::move(full);
    return lanes;
  };
  // Stores the `width` results from `coords` on, the anchor's value of each
  // computed by `value` from its input lane.
  auto storeLanes = [&](ArrayRef<Value> coords, ArrayRef<Value> lanes,
                        function_ref<Value(Value, ArrayRef<Value>)> value,
                        const Full *full) {
    SmallVector<Value> anchorValues;
    for (int64_t i = 0; i < width; ++i) {
      SmallVector<Value> at(coords);
      at.back() = addi(coords.back(), idx(i));
      anchorValues.push_back(value(lanes[i], at));
    }
    storeVectorResults(coords, width, anchorValues, full);
  };
  std::function<Value(std::function<Value(Value)>, bool)> rowSum =
      [&](std::function<Value(Value)> term, bool isMax) {
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
  std::function<void(std::function<Value(Value, ArrayRef<Value>)>)> writeRow =
      [&](std::function<Value(Value, ArrayRef<Value>)> value) {
    (void)loop(tid, idx(length / step), idx(kBlock), {},
               [&](Value g, ValueRange) -> SmallVector<Value> {
                 SmallVector<Value> coords =
                     elementCoords(muli(g, idx(step)));
                 SmallVector<Value> lanes = inputLanes(coords);
                 if (!width) {
                   storeResults(coords, value(lanes[0], coords));
                   return {};
                 }
                 storeLanes(coords, lanes, value, nullptr);
                 return {};
               });
  };
  // A row of at most kResident vectors per thread stays in registers: the
  // input (and a prologue's operands) is read once, not once per pass.
  int64_t groups = length / step;
  int64_t perThread = width && groups % kBlock == 0 ? groups / kBlock : 0;
  SmallVector<SmallVector<Value>> residentCoords, residentLanes;
  SmallVector<Full> residentFull;
  if (perThread >= 1 && perThread <= kResident) {
    for (int64_t i = 0; i < perThread; ++i) {
      residentCoords.push_back(
          elementCoords(muli(addi(tid, idx(i * kBlock)), idx(step))));
      residentLanes.push_back(
          inputLanes(residentCoords.back(), &residentFull.emplace_back()));
    }
    rowSum = [&](std::function<Value(Value)> term, bool isMax) {
      Value partial = isMax ? f32(-INFINITY) : f32(0);
      for (ArrayRef<Value> lanes : residentLanes)
        for (Value v : lanes) {
          Value t = term(v);
          partial = isMax ? maxf(partial, t) : addf(partial, t);
        }
      return blockReduce(partial, isMax);
    };
    writeRow = [&](std::function<Value(Value, ArrayRef<Value>)> value) {
      for (auto [coords, lanes, full] :
           llvm::zip_equal(residentCoords, residentLanes, residentFull))
        storeLanes(coords, lanes, value, &full);
    };
  }
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
  return LaunchConfig{{rows, 1, 1}, {kBlock, 1, 1}};
}
