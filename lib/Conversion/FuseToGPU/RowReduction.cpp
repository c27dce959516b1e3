//===- RowReduction.cpp - Normalisations and softmax ----------------------===//
//
// layer_norm, rms_norm and softmax: one block per row, reductions by warp
// shuffles then across warps in shared memory (mean then variance; max then
// sum). Contiguous rows move as 16-byte vectors:
//  - a row of up to 8 vectors per thread of 256 (4096 bf16, 2048 f32) is
//    read once into registers;
//  - longer rows, and rows no 16-byte vector divides, are streamed: each
//    row is split at its first 16-byte boundary into a vector body and at
//    most 2 x 7 edge elements; the statistics take one pass (shifted sums,
//    online softmax); the second pass reads the row again from registers
//    (one chunk per thread), shared memory (when the row's inputs fit), or
//    memory. A fused prologue's result is written once.
// Rows along a strided axis take one scalar pass per statistic.
//
//===----------------------------------------------------------------------===//

#include "ExtraLaunches.h"
#include "Families.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {
class RowReductionKernel : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

private:
  FailureOr<LaunchConfig> emitBody() override;
  /// Streams contiguous rows of `length` (see the file comment).
  LaunchConfig emitStreamed(Value input, ArrayRef<int64_t> shape,
                            int64_t length, int64_t rows);
  /// Shared-memory tree reduction of one f32 per thread across the block.
  Value blockReduce(Value partial, bool isMax);
  /// Butterfly reduction of one f32 per lane across a warp: every lane gets
  /// the result.
  Value warpReduce(Value partial, bool isMax);
  /// fuse.reduce_sum (see emitReduceSum's comment).
  LaunchConfig emitReduceSum(ReduceSumOp op);
  /// The anchor's value of input element `v` at `coords`, given the row's
  /// parameters: {max, 1 / sum} (softmax), {mean, 1 / deviation} (layer
  /// norm), {1 / root mean square} (rms norm).
  /// `affine`, when given, holds the element's scale (and shift) values,
  /// which are otherwise loaded.
  Value rowValue(Value v, ArrayRef<Value> coords, ArrayRef<Value> params,
                 ArrayRef<Value> affine = {});
  /// The layer norm's scale and shift, or the rms norm's scale, when they
  /// are 1-D kernel arguments.
  SmallVector<Value> affineOperands();
  /// Lanes [head, head + width) of those operands from row element
  /// `base` = vector * width on (`head` < width, the same for the whole
  /// block): two aligned vectors, the lanes picked per value of `head`.
  SmallVector<SmallVector<Value>> affineLanes(Value base, Value head,
                                              int64_t width, int64_t length);

  /// `m`, or 0 where it is -inf (a row, or a thread's part of one, whose
  /// elements are all masked).
  Value notNegInf(Value m);
  /// emitStreamed's per-thread statistics `acc` with runs of input values
  /// added (each run valid where `active`): {max, sum of exp(x - max)}
  /// (online softmax), {sum of x - k, sum of (x - k)^2} with k = `shiftK`,
  /// the row's first element (shifted sums: no cancellation when the mean
  /// is large), {sum of x^2}.
  SmallVector<Value> accumulateStatistics(ArrayRef<Value> acc,
                                          ArrayRef<SmallVector<Value>> runs,
                                          ArrayRef<Value> active, Value shiftK);
  /// The row's parameters (as rowValue takes them) from the threads'
  /// statistics `acc` of a row of `length`.
  SmallVector<Value> streamedParams(ArrayRef<Value> acc, Value shiftK,
                                    int64_t length);

  Value reduceBuffer;
  int64_t threads = kBlock;
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

Value RowReductionKernel::warpReduce(Value partial, bool isMax) {
  auto combine = [&](Value a, Value c) { return isMax ? maxf(a, c) : addf(a, c); };
  for (int32_t offset = 16; offset > 0; offset /= 2)
    partial = combine(partial, gpu::ShuffleOp::create(b, partial, offset, 32,
                                                      gpu::ShuffleMode::XOR)
                                   .getShuffleResult());
  return partial;
}

Value RowReductionKernel::blockReduce(Value partial, bool isMax) {
  // Within each warp by shuffles, then across the warps' partials in
  // shared memory: two barriers instead of one per halving.
  auto combine = [&](Value a, Value c) { return isMax ? maxf(a, c) : addf(a, c); };
  partial = warpReduce(partial, isMax);
  Value tid = threadId();
  ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, remi(tid, 32),
                               idx(0)),
         [&] {
           memref::StoreOp::create(b, partial, reduceBuffer,
                                   ValueRange{divi(tid, 32)});
         });
  gpu::BarrierOp::create(b);
  Value result = memref::LoadOp::create(b, reduceBuffer, ValueRange{idx(0)});
  for (int64_t w = 1; w < threads / 32; ++w)
    result = combine(result, memref::LoadOp::create(b, reduceBuffer,
                                                    ValueRange{idx(w)}));
  // Nobody may overwrite the buffer before everyone has read the result.
  gpu::BarrierOp::create(b);
  return result;
}

Value RowReductionKernel::rowValue(Value v, ArrayRef<Value> coords,
                                   ArrayRef<Value> params,
                                   ArrayRef<Value> affine) {
  if (isa<SoftmaxOp>(anchor))
    return mulf(exp(subf(v, params[0])), params[1]);
  auto ln = dyn_cast<LayerNormOp>(anchor);
  Value y = ln ? mulf(subf(v, params[0]), params[1]) : mulf(v, params[0]);
  int64_t normRank = ln ? ln.getNormalizedRank()
                        : cast<RmsNormOp>(anchor).getNormalizedRank();
  Value scale = ln ? ln.getScale() : cast<RmsNormOp>(anchor).getScale();
  Value shift = ln ? ln.getShift() : Value();
  unsigned next = 0;
  auto operand = [&](Value t) {
    return affine.empty() ? load(argOf.lookup(t), coords.take_back(normRank))
                          : affine[next++];
  };
  if (scale)
    y = mulf(y, operand(scale));
  if (shift)
    y = addf(y, operand(shift));
  return y;
}

SmallVector<Value> RowReductionKernel::affineOperands() {
  SmallVector<Value> operands;
  if (auto ln = dyn_cast<LayerNormOp>(anchor))
    operands = {ln.getScale(), ln.getShift()};
  else if (auto rms = dyn_cast<RmsNormOp>(anchor))
    operands = {rms.getScale()};
  llvm::erase(operands, Value());
  bool vectorisable = llvm::all_of(operands, [&](Value v) {
    return isa<BlockArgument>(v) && shapeOf(v).size() == 1;
  });
  return vectorisable ? operands : SmallVector<Value>();
}

SmallVector<SmallVector<Value>>
RowReductionKernel::affineLanes(Value base, Value head, int64_t width,
                                int64_t length) {
  SmallVector<Value> lo, hi;
  for (Value operand : affineOperands()) {
    Value m = argOf.lookup(operand);
    VectorType type = vectorOf(m, width);
    lo.push_back(vector::LoadOp::create(b, type, m, ValueRange{base},
                                        /*nontemporal=*/false,
                                        alignOf(m, width)));
    if (length % width == 0)
      continue;
    // The second vector can pass the end of the operand near the row's
    // end (only lanes before it are used): gather those lanes one by one.
    Value next = addi(base, idx(width));
    hi.push_back(ifElse(
        ltc(addi(next, idx(width - 1)), length),
        [&]() -> Value {
          return vector::LoadOp::create(b, type, m, ValueRange{next},
                                        /*nontemporal=*/false,
                                        alignOf(m, width));
        },
        [&]() -> Value {
          SmallVector<Value> elems;
          for (int64_t i = 0; i < width; ++i)
            elems.push_back(memref::LoadOp::create(
                b, m, ValueRange{mini(addi(next, idx(i)), idx(length - 1))}));
          return vector::FromElementsOp::create(b, type, elems);
        },
        type));
  }
  SmallVector<SmallVector<Value>> lanes(lo.size());
  if (length % width == 0) {
    for (auto [k, vec] : llvm::enumerate(lo))
      for (int64_t i = 0; i < width; ++i)
        lanes[k].push_back(toF32(vector::ExtractOp::create(b, vec, i)));
    return lanes;
  }
  // `head` is uniform across the block: one branch per block, constant
  // lane positions in each case.
  SmallVector<int64_t> cases = llvm::to_vector(llvm::seq<int64_t>(1, width));
  SmallVector<Type> types(lo.size() * width, b.getF32Type());
  auto sw = scf::IndexSwitchOp::create(b, types, head, cases, cases.size());
  auto fill = [&](Region &region, int64_t h) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&region.emplaceBlock());
    SmallVector<Value> values;
    for (auto [a, c] : llvm::zip_equal(lo, hi))
      for (int64_t i = 0; i < width; ++i)
        values.push_back(toF32(vector::ExtractOp::create(
            b, h + i < width ? a : c, (h + i) % width)));
    scf::YieldOp::create(b, values);
  };
  fill(sw.getDefaultRegion(), 0);
  for (auto [region, h] : llvm::zip_equal(sw.getCaseRegions(), cases))
    fill(region, h);
  for (auto [k, lane] : llvm::enumerate(lanes))
    for (int64_t i = 0; i < width; ++i)
      lane.push_back(sw.getResult(k * width + i));
  return lanes;
}

FailureOr<LaunchConfig> RowReductionKernel::emitBody() {
  Operation *op = anchor;
  if (auto sum = dyn_cast<ReduceSumOp>(op))
    return emitReduceSum(sum);
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
  int64_t lanes = vectorLanes(shape);
  bool resident = length % lanes == 0 && length / lanes % kBlock == 0 &&
                  length / lanes / kBlock <= kResident;
  // Contiguous rows move as 16-byte vectors of `width` elements.
  int64_t width = inner == 1 ? vectorWidth(shape) : 0;
  int64_t step = width ? width : 1;
  // A row of at most kResident vectors a lane takes one warp, kBlock / 32
  // rows a block: warp shuffles alone reduce it, and an SM keeps as many
  // rows in flight as it holds warps. A block per row of 768 f32 (GPT's
  // layer norms, streamed) took 27 us for 8192 rows, a quarter of the
  // bandwidth (H200).
  int64_t groups = length / step;
  bool warpRows = width && groups % 32 == 0 && groups / 32 <= kResident;
  int64_t rowThreads = warpRows ? 32 : kBlock;
  if (inner == 1 && !resident && !warpRows && length >= 2 * lanes)
    return emitStreamed(input, shape, length, rows);
  if (!warpRows)
    reduceBuffer = allocShared({kBlock}, b.getF32Type());
  Value row = blockId(gpu::Dimension::x), tid = threadId();
  // Warps past the last row compute the last row again and store nothing.
  Value rowInside;
  if (warpRows) {
    row = addi(muli(row, idx(kBlock / 32)), divi(tid, 32));
    rowInside = ltc(row, rows);
    row = mini(row, idx(rows - 1));
    tid = remi(tid, 32);
  }
  Value outer = divi(row, inner), in = remi(row, inner);
  // Linear offset of element j of this row.
  auto offset = [&](Value j) {
    return addi(muli(addi(muli(outer, idx(length)), j), idx(inner)), in);
  };
  auto elementCoords = [&](Value j) { return delinearize(offset(j), shape); };
  // The `step` input values from `coords` on: read from memory, or computed
  // by the fused prologue (elementwise ops producing the input).
  using Full = EpilogueEvaluator::FullInputs;
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
    Full full = width ? epilogue.loadFullInputs(coords, width) : Full();
    for (int64_t i = 0; i < step; ++i) {
      SmallVector<Value> at(coords);
      at.back() = addi(coords.back(), idx(i));
      EpilogueEvaluator::ElementScope element(epilogue, full, i);
      lanes.push_back(epilogue.evalAt(input, at));
    }
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
    epilogue.storeVectorResults(coords, width, anchorValues, full);
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
                   epilogue.storeResults(coords, value(lanes[0], coords));
                   return {};
                 }
                 storeLanes(coords, lanes, value, nullptr);
                 return {};
               });
  };
  // A row of at most kResident vectors per thread stays in registers: the
  // input (and a prologue's operands) is read once, not once per pass.
  int64_t perThread =
      width && groups % rowThreads == 0 ? groups / rowThreads : 0;
  SmallVector<SmallVector<Value>> residentCoords, residentLanes;
  SmallVector<Full> residentFull;
  if (perThread >= 1 && perThread <= kResident) {
    for (int64_t i = 0; i < perThread; ++i) {
      residentCoords.push_back(
          elementCoords(muli(addi(tid, idx(i * rowThreads)), idx(step))));
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
      return warpRows ? warpReduce(partial, isMax)
                      : blockReduce(partial, isMax);
    };
    writeRow = [&](std::function<Value(Value, ArrayRef<Value>)> value) {
      for (auto [coords, lanes, full] :
           llvm::zip_equal(residentCoords, residentLanes, residentFull))
        storeLanes(coords, lanes, value, &full);
    };
  }
  Value invLength = f32(1.0 / static_cast<double>(length));
  SmallVector<Value> params;
  if (isa<SoftmaxOp>(op)) {
    Value max = rowSum([](Value v) { return v; }, /*isMax=*/true);
    Value sum = rowSum([&](Value v) { return exp(subf(v, max)); }, false);
    params = {max, divf(f32(1), sum)};
  } else if (auto ln = dyn_cast<LayerNormOp>(op)) {
    Value mean = mulf(rowSum([](Value v) { return v; }, false), invLength);
    Value var = mulf(rowSum(
                         [&](Value v) {
                           Value dv = subf(v, mean);
                           return mulf(dv, dv);
                         },
                         false),
                     invLength);
    params = {mean, math::RsqrtOp::create(
                        b, addf(var, f32(ln.getEpsilon().convertToDouble())))};
  } else {
    Value meanSq =
        mulf(rowSum([&](Value v) { return mulf(v, v); }, false), invLength);
    params = {math::RsqrtOp::create(
        b, addf(meanSq,
                f32(cast<RmsNormOp>(op).getEpsilon().convertToDouble())))};
  }
  auto write = [&] {
    writeRow([&](Value v, ArrayRef<Value> coords) {
      return rowValue(v, coords, params);
    });
  };
  if (!warpRows) {
    write();
    return LaunchConfig{{rows, 1, 1}, {kBlock, 1, 1}};
  }
  ifThen(rowInside, write);
  return LaunchConfig{{ceilDiv(rows, kBlock / 32), 1, 1}, {kBlock, 1, 1}};
}

Value RowReductionKernel::notNegInf(Value m) {
  return select(
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, f32(-INFINITY)),
      f32(0), m);
}

SmallVector<Value>
RowReductionKernel::accumulateStatistics(ArrayRef<Value> acc,
                                         ArrayRef<SmallVector<Value>> runs,
                                         ArrayRef<Value> active, Value shiftK) {
  if (isa<SoftmaxOp>(anchor)) {
    Value m = acc[0];
    for (auto [run, on] : llvm::zip_equal(runs, active)) {
      Value runMax = f32(-INFINITY);
      for (Value v : run)
        runMax = maxf(runMax, v);
      m = maxf(m, select(on, runMax, f32(-INFINITY)));
    }
    // Rescale the running sum to the new maximum (exp(-inf) = 0 for a
    // thread that has seen only masked elements).
    Value safe = notNegInf(m);
    Value sum = mulf(acc[1], exp(subf(acc[0], safe)));
    for (auto [run, on] : llvm::zip_equal(runs, active)) {
      Value t = f32(0);
      for (Value v : run)
        t = addf(t, exp(subf(v, safe)));
      sum = addf(sum, select(on, t, f32(0)));
    }
    return {m, sum};
  }
  SmallVector<Value> out(acc);
  for (auto [run, on] : llvm::zip_equal(runs, active)) {
    Value s1 = f32(0), s2 = f32(0);
    for (Value v : run) {
      Value d = shiftK ? subf(v, shiftK) : v;
      s1 = addf(s1, d);
      s2 = fma(d, d, s2);
    }
    if (shiftK) {
      out[0] = addf(out[0], select(on, s1, f32(0)));
      out[1] = addf(out[1], select(on, s2, f32(0)));
    } else {
      out[0] = addf(out[0], select(on, s2, f32(0)));
    }
  }
  return out;
}

SmallVector<Value> RowReductionKernel::streamedParams(ArrayRef<Value> acc,
                                                      Value shiftK,
                                                      int64_t length) {
  Value invLength = f32(1.0 / static_cast<double>(length));
  if (isa<SoftmaxOp>(anchor)) {
    Value max = notNegInf(blockReduce(acc[0], /*isMax=*/true));
    Value sum = blockReduce(mulf(acc[1], exp(subf(acc[0], max))), false);
    return {max, divf(f32(1), sum)};
  }
  double epsilon =
      isa<LayerNormOp>(anchor)
          ? cast<LayerNormOp>(anchor).getEpsilon().convertToDouble()
          : cast<RmsNormOp>(anchor).getEpsilon().convertToDouble();
  Value meanSq = mulf(blockReduce(acc.back(), false), invLength);
  if (!shiftK)
    return {math::RsqrtOp::create(b, addf(meanSq, f32(epsilon)))};
  Value meanShift = mulf(blockReduce(acc[0], false), invLength);
  Value var = maxf(subf(meanSq, mulf(meanShift, meanShift)), f32(0));
  return {addf(shiftK, meanShift),
          math::RsqrtOp::create(b, addf(var, f32(epsilon)))};
}

LaunchConfig RowReductionKernel::emitStreamed(Value input,
                                              ArrayRef<int64_t> shape,
                                              int64_t length, int64_t rows) {
  int64_t width = vectorLanes(shape);
  int64_t maxVectors = length / width;
  // The fewest threads that take the row in one chunk of `unroll` vectors
  // each; 1024 threads keep 4 (they have 64 registers each).
  int64_t unroll = kResident;
  threads = 256;
  while (maxVectors > threads * unroll && threads < 1024) {
    threads *= 2;
    unroll = threads == 1024 ? 4 : kResident;
  }
  unroll = std::min<int64_t>(unroll, llvm::divideCeil(maxVectors, threads));
  int64_t chunks = llvm::divideCeil(maxVectors, threads * unroll);
  reduceBuffer = allocShared({threads / 32}, b.getF32Type());
  // Rows of several chunks keep their inputs in shared memory for the
  // second pass when they fit; otherwise that pass reads them again.
  SmallVector<BlockArgument> full = epilogue.fullInputs();
  llvm::DenseMap<BlockArgument, Value> staged;
  int64_t stagedBytes = 0;
  for (BlockArgument arg : full)
    stagedBytes += maxVectors * width *
                   cast<RankedTensorType>(arg.getType()).getElementTypeBitWidth() / 8;
  if (chunks > 1 &&
      stagedBytes + sharedBytes + 1024 <= target.sharedBytesPerBlockOptIn)
    for (BlockArgument arg : full)
      staged[arg] = allocShared(
          {maxVectors, width},
          cast<RankedTensorType>(arg.getType()).getElementType(), 16);

  Value row = blockId(gpu::Dimension::x), tid = threadId();
  Value base = muli(row, idx(length));
  auto coordsAt = [&](Value j) { return delinearize(addi(base, j), shape); };
  // The row's elements before its first 16-byte boundary (`head`), its
  // whole vectors after it, and the elements left at either end.
  Value head = length % width == 0
                   ? idx(0)
                   : remi(subi(idx(width), remi(base, width)), width);
  Value vectors = divi(subi(idx(length), head), width);
  Value edges = subi(idx(length), muli(vectors, idx(width)));
  // Thread t < edges takes edge element t (a head element, or one past the
  // vectors); the others compute element 0 and discard it.
  Value hasEdge = lt(tid, edges);
  Value edge = select(hasEdge,
                      select(lt(tid, head), tid,
                             addi(tid, muli(vectors, idx(width)))),
                      idx(0));
  auto inputAt = [&](Value j) {
    EpilogueEvaluator::ElementScope element(epilogue);
    return epilogue.evalAt(input, coordsAt(j));
  };

  Value shiftK = isa<LayerNormOp>(anchor) ? inputAt(idx(0)) : Value();
  SmallVector<Value> init = isa<SoftmaxOp>(anchor)
                                ? SmallVector<Value>{f32(-INFINITY), f32(0)}
                                : (shiftK ? SmallVector<Value>{f32(0), f32(0)}
                                          : SmallVector<Value>{f32(0)});
  auto accumulate = [&](ArrayRef<Value> acc, ArrayRef<SmallVector<Value>> runs,
                        ArrayRef<Value> active) {
    return accumulateStatistics(acc, runs, active, shiftK);
  };

  // Vector `u` of chunk `c` of this thread: its index (clamped so that the
  // loads of a chunk issue unconditionally), whether it exists, and where.
  struct Slot {
    Value vector, active;
    SmallVector<Value> coords;
  };
  auto slotOf = [&](Value c, int64_t u) {
    Value v = addi(tid, muli(addi(muli(c, idx(unroll)), idx(u)),
                             idx(threads)));
    Value active = lt(v, vectors);
    v = mini(v, subi(vectors, idx(1)));
    return Slot{v, active, coordsAt(addi(head, muli(v, idx(width))))};
  };
  using Full = EpilogueEvaluator::FullInputs;
  auto laneValues = [&](const Slot &slot, const Full &loaded) {
    SmallVector<Value> values;
    for (int64_t i = 0; i < width; ++i) {
      SmallVector<Value> at(slot.coords);
      at.back() = addi(at.back(), idx(i));
      EpilogueEvaluator::ElementScope element(epilogue, loaded, i);
      values.push_back(epilogue.evalAt(input, at));
    }
    return values;
  };
  auto sharedType = [&](BlockArgument arg) {
    return VectorType::get({width}, cast<MemRefType>(staged[arg].getType())
                                        .getElementType());
  };

  // First pass: the statistics, staging or keeping the inputs on the way.
  SmallVector<SmallVector<Value>> edgeRun{{inputAt(edge)}};
  SmallVector<Value> acc = accumulate(init, edgeRun, {hasEdge});
  SmallVector<Slot> kept;
  SmallVector<Full> keptFull;
  auto firstPass = [&](Value c, ValueRange carried) {
    SmallVector<Slot> slots;
    SmallVector<Full> loaded;
    for (int64_t u = 0; u < unroll; ++u) {
      slots.push_back(slotOf(c, u));
      loaded.push_back(epilogue.loadFullInputs(slots.back().coords, width));
    }
    for (auto [slot, vecs] : llvm::zip_equal(slots, loaded))
      for (auto [arg, vec] : vecs)
        if (Value buffer = staged.lookup(arg))
          vector::StoreOp::create(b, vec, buffer,
                                  ValueRange{slot.vector, idx(0)},
                                  /*nontemporal=*/false,
                                  alignOf(buffer, width));
    SmallVector<SmallVector<Value>> runs;
    SmallVector<Value> active;
    for (auto [slot, vecs] : llvm::zip_equal(slots, loaded)) {
      runs.push_back(laneValues(slot, vecs));
      active.push_back(slot.active);
    }
    if (chunks == 1) {
      kept = slots;
      keptFull = loaded;
    }
    return accumulate(SmallVector<Value>(carried), runs, active);
  };
  if (chunks == 1)
    acc = firstPass(idx(0), acc);
  else
    acc = loop(idx(0), idx(chunks), idx(1), acc,
               [&](Value c, ValueRange carried) {
                 return firstPass(c, carried);
               });

  SmallVector<Value> params = streamedParams(acc, shiftK, length);

  // Second pass: the results.
  ifThen(hasEdge, [&] {
    Value v = inputAt(edge);
    SmallVector<Value> coords = coordsAt(edge);
    epilogue.storeResults(coords, rowValue(v, coords, params));
  });
  auto secondPass = [&](Value c) {
    SmallVector<Slot> slots = kept;
    SmallVector<Full> loaded = keptFull;
    if (chunks > 1)
      for (int64_t u = 0; u < unroll; ++u) {
        slots.push_back(slotOf(c, u));
        if (staged.empty()) {
          loaded.push_back(epilogue.loadFullInputs(slots.back().coords, width));
          continue;
        }
        Full &vecs = loaded.emplace_back();
        for (BlockArgument arg : full)
          vecs.emplace_back(
              arg, vector::LoadOp::create(
                       b, sharedType(arg), staged[arg],
                       ValueRange{slots.back().vector, idx(0)},
                       /*nontemporal=*/false, alignOf(staged[arg], width)));
      }
    for (auto [slot, vecs] : llvm::zip_equal(slots, loaded))
      ifThen(slot.active, [&] {
        // Scale and shift as vectors too.
        SmallVector<SmallVector<Value>> affine;
        if (!affineOperands().empty())
          affine = affineLanes(muli(slot.vector, idx(width)), head, width,
                               length);
        SmallVector<Value> anchorValues;
        for (auto [i, v] : llvm::enumerate(laneValues(slot, vecs))) {
          SmallVector<Value> at(slot.coords);
          at.back() = addi(at.back(), idx(i));
          SmallVector<Value> perLane;
          for (ArrayRef<Value> operandLanes : affine)
            perLane.push_back(operandLanes[i]);
          anchorValues.push_back(rowValue(v, at, params, perLane));
        }
        epilogue.storeVectorResults(slot.coords, width, anchorValues, &vecs);
      });
  };
  if (chunks == 1)
    secondPass(idx(0));
  else
    loop(0, chunks, secondPass);
  return LaunchConfig{{rows, 1, 1}, {threads, 1, 1}};
}

//===----------------------------------------------------------------------===//
// reduce_sum
//===----------------------------------------------------------------------===//

LaunchConfig RowReductionKernel::emitReduceSum(ReduceSumOp op) {
  // The input's axes split into kept ones (the result's, in order; `o`
  // indexes them) and summed ones (`r`), f32 accumulation. Two shapes:
  //  - the innermost axis summed (rows): a warp per result, or a block when
  //    the results are too few to fill the GPU and the rows long, lanes
  //    striding along the row (coalesced), then shuffles;
  //  - the innermost axis kept (columns: the per-channel sum over N, H, W of
  //    an NHWC tensor, a bias gradient): consecutive threads take
  //    consecutive results, in 16-byte vectors where the innermost extent
  //    allows, so each row of the sum is read coalesced; the block's rows of
  //    threads split the sum, whose partials are added by a tree in shared
  //    memory. When the results fill too few blocks for the GPU (a bias of
  //    768), the sum is split over a grid's second axis too: a first launch
  //    writes each block's partials, and the kernel adds them per result
  //    (sumPartialColumns). Fixed order everywhere: the result is
  //    deterministic.
  Value input = op.getInput();
  ArrayRef<int64_t> shape = shapeOf(input);
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  int64_t rank = shape.size();
  SmallVector<int64_t> keptShape, sumShape;
  for (int64_t i = 0; i < rank; ++i)
    (op.isReduced(i) ? sumShape : keptShape).push_back(shape[i]);
  int64_t results = product(keptShape), length = product(sumShape);
  Value x = argOf.lookup(input);
  auto inputCoords = [&](Value o, Value r) {
    SmallVector<Value> kept = delinearize(o, keptShape);
    SmallVector<Value> summed = delinearize(r, sumShape);
    SmallVector<Value> coords;
    unsigned k = 0, s = 0;
    for (int64_t i = 0; i < rank; ++i)
      coords.push_back(op.isReduced(i) ? summed[s++] : kept[k++]);
    return coords;
  };
  Value tid = threadId();
  Value block = blockId(gpu::Dimension::x);

  if (op.isReduced(rank - 1)) {
    int64_t warpsPerBlock = kBlock / 32;
    bool wholeBlock = length >= 1024 &&
                      ceilDiv(results, warpsPerBlock) < 2 * target.smCount;
    int64_t group = wholeBlock ? kBlock : 32;
    int64_t perBlock = kBlock / group;
    Value o = addi(muli(block, idx(perBlock)), divi(tid, group));
    Value lane = remi(tid, group);
    auto sumRow = [&] {
      Value partial =
          loop(lane, idx(length), idx(group), {f32(0)},
               [&](Value r, ValueRange acc) -> SmallVector<Value> {
                 return {addf(acc[0], load(x, inputCoords(o, r)))};
               })[0];
      return wholeBlock ? blockReduce(partial, /*isMax=*/false)
                        : warpReduce(partial, /*isMax=*/false);
    };
    auto storeSum = [&](Value sum) {
      ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, idx(0)),
             [&] { epilogue.storeResults(delinearize(o, outShape), sum); });
    };
    if (wholeBlock) {
      reduceBuffer = allocShared({kBlock}, b.getF32Type());
      storeSum(sumRow());
    } else {
      // Warp-uniform: the shuffles see the whole warp.
      ifThen(ltc(o, results), [&] { storeSum(sumRow()); });
    }
    return {{ceilDiv(results, perBlock), 1, 1}, {kBlock, 1, 1}};
  }

  int64_t width = vectorWidth(outShape);
  int64_t step = std::max<int64_t>(width, 1);
  int64_t units = results / step;
  // Contiguous results after the last summed axis, in units of `step`.
  int64_t inner = 1;
  for (int64_t i = rank - 1; i >= 0 && !op.isReduced(i); --i)
    inner *= shape[i];
  int64_t columns = std::min<int64_t>(
      32, llvm::PowerOf2Ceil(std::min(ceilDiv(inner, step), units)));
  int64_t columnBlocks = ceilDiv(units, columns);
  // Too few blocks over the results for the bytes: the sum's rows split
  // into `groups` of at least kMinGroupRows, about two blocks an SM in all.
  // (A bias gradient of 768 over 1576 rows, 2.4 MB, took 11.6 us in 3
  // blocks of 1024 threads; under kSplitBytes a block, one launch is
  // quicker than two.)
  constexpr int64_t kMinGroupRows = 32, kSplitBytes = 256 * 1024;
  int64_t bytes = length * results *
                  cast<MemRefType>(x.getType()).getElementTypeBitWidth() / 8;
  int64_t groups = 1;
  if (columnBlocks < target.smCount && bytes >= kSplitBytes * columnBlocks)
    groups =
        std::clamp<int64_t>(std::min(ceilDiv(2 * target.smCount, columnBlocks),
                                     length / kMinGroupRows),
                            1, length);
  int64_t chunk = ceilDiv(length, groups);
  groups = ceilDiv(length, chunk);
  // Few blocks (few channels): bigger ones pull more of the SM's bandwidth.
  int64_t threads =
      groups == 1 && columnBlocks < target.smCount ? 1024 : kBlock;
  int64_t rows = threads / columns;
  Value column = remi(tid, columns), row = divi(tid, columns);
  Value unit = addi(muli(block, idx(columns)), column);
  Value active = ltc(unit, units);
  Value o = muli(unit, idx(step));
  // This block's rows of the sum: its group's.
  Value begin = idx(0), end = idx(length);
  if (groups > 1) {
    begin = muli(blockId(gpu::Dimension::y), idx(chunk));
    end = mini(addi(begin, idx(chunk)), idx(length));
  }
  SmallVector<Value> init(step, f32(0));
  SmallVector<Value> partial =
      loop(addi(begin, row), select(active, end, idx(0)), idx(rows), init,
           [&](Value r, ValueRange acc) -> SmallVector<Value> {
             SmallVector<Value> coords = inputCoords(o, r), sums(acc);
             if (!width) {
               sums[0] = addf(sums[0], load(x, coords));
               return sums;
             }
             Value vec = loadVector(x, coords, width);
             for (int64_t l = 0; l < width; ++l)
               sums[l] = addf(
                   sums[l], toF32(vector::ExtractOp::create(b, vec, l)));
             return sums;
           });
  Value buffer = allocShared({rows, columns * step}, b.getF32Type());
  auto slot = [&](Value r, int64_t l) {
    return SmallVector<Value>{r, addi(muli(column, idx(step)), idx(l))};
  };
  for (int64_t l = 0; l < step; ++l)
    memref::StoreOp::create(b, partial[l], buffer, slot(row, l));
  gpu::BarrierOp::create(b);
  for (int64_t half = rows / 2; half >= 1; half /= 2) {
    ifThen(ltc(row, half), [&] {
      for (int64_t l = 0; l < step; ++l) {
        Value sum =
            addf(memref::LoadOp::create(b, buffer, slot(row, l)),
                 memref::LoadOp::create(b, buffer,
                                        slot(addi(row, idx(half)), l)));
        memref::StoreOp::create(b, sum, buffer, slot(row, l));
      }
    });
    gpu::BarrierOp::create(b);
  }
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, row, idx(0));
  if (groups > 1) {
    // The group's partials [1, groups, results], then their totals.
    MemRefType type = MemRefType::get({1, groups, results}, b.getF32Type());
    Value partials = addWorkspaceArgument(type);
    Value group = blockId(gpu::Dimension::y);
    ifThen(andi(first, active), [&] {
      for (int64_t l = 0; l < step; ++l)
        memref::StoreOp::create(
            b, memref::LoadOp::create(b, buffer, slot(idx(0), l)), partials,
            ValueRange{idx(0), group, addi(o, idx(l))});
    });
    ExtraLaunch partialsLaunch = splitOffFirstLaunch(
        "_partials", {{columnBlocks, groups, 1}, {threads, 1, 1}});
    recordExtraLaunches(func, {type}, {partialsLaunch});
    Value lane = remi(threadId(), 32), warp = divi(threadId(), 32);
    Value c = addi(muli(blockId(gpu::Dimension::x), idx(32)), lane);
    Value total =
        sumPartialColumns(partials, 1, groups, mini(c, idx(results - 1)),
                          allocShared({kColumnSumThreads}, b.getF32Type()))[0];
    ifThen(
        andi(ltc(c, results),
             arith::CmpIOp::create(b, arith::CmpIPredicate::eq, warp, idx(0))),
        [&] { epilogue.storeResults(delinearize(c, outShape), total); });
    return {{ceilDiv(results, 32), 1, 1}, {kColumnSumThreads, 1, 1}};
  }
  ifThen(andi(first, active), [&] {
    SmallVector<Value> sums;
    for (int64_t l = 0; l < step; ++l)
      sums.push_back(memref::LoadOp::create(b, buffer, slot(idx(0), l)));
    SmallVector<Value> coords = delinearize(o, outShape);
    if (width)
      epilogue.storeVectorResults(coords, width, sums);
    else
      epilogue.storeResults(coords, sums[0]);
  });
  return {{columnBlocks, 1, 1}, {threads, 1, 1}};
}
