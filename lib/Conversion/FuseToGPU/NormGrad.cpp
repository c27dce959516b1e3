//===- NormGrad.cpp - Layer and RMS norm backward -------------------------===//
//
// fuse.norm_grad in two launches over the same memrefs:
//  1. rows (`<kernel>_rows`): G blocks (about two an SM) each take a
//     contiguous share of the rows. Per row the block recomputes the
//     statistics from x, sums g and g * x^ (g = dy * scale) across its
//     threads, and stores the input gradient through the kernel's epilogue.
//     Each thread owns the same columns in every row and sums dy * x^ and
//     dy over its block's rows: the block's partials [2, G, D] (f32).
//  2. the kernel itself: the parameter gradients, adding each column's G
//     partials in a fixed order (deterministic, no atomics).
// Each row takes one block reduction of four sums: d = x - K with K the
// row's first value (no cancellation when the mean is large), d^2,
// g = dy * scale and g * d, from which the mean, rstd, mean(g) and
// mean(g * x^) follow. Rows of up to kResident elements a thread are read
// once, through cp.async into shared-memory stages a few rows ahead of
// their use. Longer rows, and rows no 16-byte vector divides, take two
// passes over memory (the sums, then the stores), the column sums kept in
// the partials.
//
//===----------------------------------------------------------------------===//

#include "ExtraLaunches.h"
#include "Families.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {
class NormGradKernel : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

private:
  FailureOr<LaunchConfig> emitBody() override;

  /// Sums each of `values` across the block (`threads` threads): every
  /// thread gets the totals. Shuffles within warps, one exchange in shared
  /// memory across them.
  SmallVector<Value> blockSums(ArrayRef<Value> values);
  /// The `w` lanes of `memref` from `coords` on, as f32; `vec`, when
  /// given, receives the vector loaded (w > 1).
  SmallVector<Value> lanesAt(Value memref, ArrayRef<Value> coords,
                             Value *vec = nullptr);
  /// Coordinates of element `j` of row `row` of the input.
  SmallVector<Value> elementCoords(Value row, Value j) {
    return delinearize(addi(muli(row, idx(length)), j), shape);
  }
  /// The scale's `w` lanes at column `j` (ones without a scale).
  SmallVector<Value> scaleAt(Value j);
  /// Stores the input gradient's lanes at `coords` through the epilogue,
  /// which takes dy's and x's vectors there from `loaded` ({dy, x}, either
  /// null) instead of loading them again.
  void storeGradient(ArrayRef<Value> coords, ArrayRef<Value> values,
                     std::pair<Value, Value> loaded = {},
                     EpilogueEvaluator::FullInputs *preloaded = nullptr);
  /// The epilogue's full-size inputs at `coords` (w > 1), dy's and x's
  /// vectors taken from `loaded`.
  EpilogueEvaluator::FullInputs gradientInputs(ArrayRef<Value> coords,
                                               std::pair<Value, Value> loaded);
  /// What a row's input gradient needs, {mean (0 for rms), rstd, mean(g),
  /// mean(g * x^)}, from the block's sums {d, d^2, g, g * d} with
  /// d = x - `shift` (the RMS norm's shift is 0): one reduction a row, as
  /// sum(g * x^) = rstd * (sum(g * d) - (mean - shift) * sum(g)).
  SmallVector<Value> rowParams(ArrayRef<Value> sums, Value shift);
  /// One row's input gradient from this thread's vectors of x, dy and the
  /// scale (vector i masked where `valid[i]` is false, if set): the four
  /// sums, reduced across the row's threads by `reduce`, then dx per vector,
  /// adding dy * x^ and dy to the column sums `q` (dy * x^ first).
  SmallVector<SmallVector<Value>>
  rowGradient(ArrayRef<SmallVector<Value>> xs, ArrayRef<SmallVector<Value>> dys,
              ArrayRef<SmallVector<Value>> scales, ArrayRef<Value> valid,
              Value shift,
              function_ref<SmallVector<Value>(ArrayRef<Value>)> reduce,
              MutableArrayRef<Value> q);
  /// Pass 1 over resident rows, a warp a row, or over memory.
  void emitResidentRows(Value partials);
  void emitWarpRows(Value partials);
  void emitStreamedRows(Value partials);
  /// Pass 2.
  LaunchConfig emitFinalize(Value partials);

  NormGradOp op;
  SmallVector<int64_t> shape, rowShape;
  int64_t length = 0, rows = 0;
  /// Lanes a thread moves at once (1 where no 16-byte vector fits), the
  /// block's threads, vectors a thread keeps per row (resident), the row
  /// blocks and rows each.
  int64_t w = 1, threads = kBlock, perThread = 0, groups = 1, chunk = 1;
  Value dyM, xM, scaleM;
  bool needColumns = false;

  /// The finalize stores the per-column results; the rows pass evaluates
  /// the full-size ones.
  SplitResults perChannel;

  /// The most elements of a row one thread keeps in registers (with its
  /// column sums: 4 floats an element).
  static constexpr int64_t kResident = 16;
  /// The same for a warp a row, whose thread holds no stages: rows of up to
  /// 768 f32 or bf16.
  static constexpr int64_t kWarpResident = 24;
  /// The rows pass's staging: the most shared memory a block's stages take
  /// (two blocks an SM), and the most rows in flight.
  static constexpr int64_t kStagingBytes = 96 * 1024, kMaxStages = 4;
  /// The finalize's blocks: 32 columns x 32 shares of the partials.
  static constexpr int64_t kFinalizeThreads = kColumnSumThreads;
};
} // namespace

SmallVector<Value> NormGradKernel::blockSums(ArrayRef<Value> values) {
  SmallVector<Value> sums(values);
  for (Value &s : sums)
    for (int32_t offset = 16; offset > 0; offset /= 2)
      s = addf(s,
               gpu::ShuffleOp::create(b, s, offset, 32, gpu::ShuffleMode::XOR)
                   .getShuffleResult());
  int64_t warps = threads / 32, n = sums.size();
  if (warps == 1)
    return sums;
  Value red = allocShared({n, warps}, b.getF32Type(), /*align=*/16);
  Value tid = threadId();
  ifThen(
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, remi(tid, 32), idx(0)),
      [&] {
        for (int64_t k = 0; k < n; ++k)
          memref::StoreOp::create(b, sums[k], red,
                                  ValueRange{idx(k), divi(tid, 32)});
      });
  gpu::BarrierOp::create(b);
  for (int64_t k = 0; k < n; ++k) {
    Value total = memref::LoadOp::create(b, red, ValueRange{idx(k), idx(0)});
    for (int64_t i = 1; i < warps; ++i)
      total = addf(total,
                   memref::LoadOp::create(b, red, ValueRange{idx(k), idx(i)}));
    sums[k] = total;
  }
  // Nobody may overwrite the buffer (the next row's sums) before everyone
  // has read it.
  gpu::BarrierOp::create(b);
  return sums;
}

SmallVector<Value> NormGradKernel::lanesAt(Value memref, ArrayRef<Value> coords,
                                           Value *out) {
  if (w == 1)
    return {load(memref, coords)};
  Value vec = loadVector(memref, coords, w);
  if (out)
    *out = vec;
  SmallVector<Value> lanes;
  for (int64_t l = 0; l < w; ++l)
    lanes.push_back(toF32(vector::ExtractOp::create(b, vec, l)));
  return lanes;
}

SmallVector<Value> NormGradKernel::scaleAt(Value j) {
  if (!scaleM)
    return SmallVector<Value>(w, f32(1));
  return lanesAt(scaleM, delinearize(j, rowShape));
}

EpilogueEvaluator::FullInputs
NormGradKernel::gradientInputs(ArrayRef<Value> coords,
                               std::pair<Value, Value> loaded) {
  EpilogueEvaluator::FullInputs full;
  for (BlockArgument arg : perChannel.evaluator->fullInputs()) {
    Value memref = perChannel.args.lookup(arg);
    Value vec = memref == dyM  ? loaded.first
                : memref == xM ? loaded.second
                               : Value();
    full.emplace_back(arg, vec ? vec : loadVector(memref, coords, w));
  }
  return full;
}

void NormGradKernel::storeGradient(ArrayRef<Value> coords,
                                   ArrayRef<Value> values,
                                   std::pair<Value, Value> loaded,
                                   EpilogueEvaluator::FullInputs *preloaded) {
  if (perChannel.outputs.empty())
    return;
  if (w == 1) {
    perChannel.evaluator->storeResults(coords, values[0]);
    return;
  }
  EpilogueEvaluator::FullInputs full =
      preloaded ? std::move(*preloaded) : gradientInputs(coords, loaded);
  perChannel.evaluator->storeVectorResults(coords, w, values, &full);
}

SmallVector<Value> NormGradKernel::rowParams(ArrayRef<Value> sums,
                                             Value shift) {
  Value inv = f32(1.0 / static_cast<double>(length));
  Value eps = f32(op.getEpsilon().convertToDouble());
  Value m1 = op.getRms() ? f32(0) : mulf(sums[0], inv);
  Value var = maxf(subf(mulf(sums[1], inv), mulf(m1, m1)), f32(0));
  Value rstd = math::RsqrtOp::create(b, addf(var, eps));
  Value meanG = mulf(sums[2], inv);
  Value meanGX = mulf(rstd, subf(mulf(sums[3], inv), mulf(m1, meanG)));
  if (op.getRms())
    return {f32(0), rstd, f32(0), meanGX};
  return {addf(shift, m1), rstd, meanG, meanGX};
}

SmallVector<SmallVector<Value>> NormGradKernel::rowGradient(
    ArrayRef<SmallVector<Value>> xs, ArrayRef<SmallVector<Value>> dys,
    ArrayRef<SmallVector<Value>> scales, ArrayRef<Value> valid, Value shift,
    function_ref<SmallVector<Value>(ArrayRef<Value>)> reduce,
    MutableArrayRef<Value> q) {
  int64_t n = xs.size();
  auto masked = [&](Value v, int64_t i) {
    return valid[i] ? select(valid[i], v, f32(0)) : v;
  };
  // One reduction: sums of d = x - K (K the row's first value), d^2,
  // g = dy * scale and g * d.
  SmallVector<Value> acc4(4, f32(0));
  SmallVector<SmallVector<Value>> gs(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t l = 0; l < w; ++l) {
      Value d = masked(subf(xs[i][l], shift), i);
      Value g = mulf(dys[i][l], scales[i][l]);
      gs[i].push_back(g);
      acc4[0] = addf(acc4[0], d);
      acc4[1] = fma(d, d, acc4[1]);
      acc4[2] = addf(acc4[2], masked(g, i));
      acc4[3] = fma(g, d, acc4[3]);
    }
  SmallVector<Value> p = rowParams(reduce(acc4), shift);
  Value mean = p[0], rstd = p[1], meanG = p[2], meanGX = p[3];
  // x^ = x * rstd - mean * rstd and dx = g * rstd - x^ * (rstd *
  // mean(g x^)) - rstd * mean(g): fused multiply-adds (ncu counted 5
  // plain FP32 instructions for each fused one).
  Value xOff = mulf(subf(f32(0), mean), rstd);
  Value gOff = mulf(subf(f32(0), meanG), rstd);
  Value xCoef = mulf(subf(f32(0), meanGX), rstd);
  SmallVector<SmallVector<Value>> dx(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t l = 0; l < w; ++l) {
      Value xh = fma(xs[i][l], rstd, xOff);
      dx[i].push_back(fma(xh, xCoef, fma(gs[i][l], rstd, gOff)));
      int64_t k = i * w + l;
      q[k] = fma(masked(dys[i][l], i), xh, q[k]);
      q[n * w + k] = addf(q[n * w + k], masked(dys[i][l], i));
    }
  return dx;
}

void NormGradKernel::emitWarpRows(Value partials) {
  constexpr int64_t kWarps = kBlock / 32;
  Value tid = threadId(), bx = blockId(gpu::Dimension::x);
  Value lane = remi(tid, 32), warp = divi(tid, 32);
  // Vector i of a lane starts at column (lane + 32 i) * w; only the last may
  // pass the row's end (then it is clamped and masked).
  SmallVector<Value> cols, valid;
  for (int64_t i = 0; i < perThread; ++i) {
    Value j = muli(addi(lane, idx(i * 32)), idx(w));
    bool partial = (i + 1) * 32 * w > length;
    valid.push_back(partial ? ltc(j, length) : Value());
    cols.push_back(partial ? mini(j, idx(length - w)) : j);
  }
  Value begin = muli(bx, idx(chunk));
  Value end = mini(addi(begin, idx(chunk)), idx(rows));
  int64_t numAcc = 2 * perThread * w;
  SmallVector<Value> init(numAcc, f32(0));
  SmallVector<Value> acc = loop(
      addi(begin, warp), end, idx(kWarps), init,
      [&](Value row, ValueRange iters) -> SmallVector<Value> {
        SmallVector<Value> q(iters);
        Value shift =
            op.getRms() ? f32(0) : load(xM, elementCoords(row, idx(0)));
        // The scale is read again per row (from L1): kept in registers with
        // the row, it took the kernel past 128 registers, to one block an SM.
        SmallVector<SmallVector<Value>> coords, dys, xs, scales;
        SmallVector<std::pair<Value, Value>> vecs(perThread);
        for (Value j : cols)
          scales.push_back(scaleAt(j));
        for (auto [i, j] : llvm::enumerate(cols)) {
          coords.push_back(elementCoords(row, j));
          dys.push_back(lanesAt(dyM, coords.back(), &vecs[i].first));
          xs.push_back(lanesAt(xM, coords.back(), &vecs[i].second));
        }
        SmallVector<SmallVector<Value>> dx = rowGradient(
            xs, dys, scales, valid, shift,
            [&](ArrayRef<Value> sums) {
              SmallVector<Value> out;
              for (Value sum : sums)
                out.push_back(shuffleReduce(sum, 32));
              return out;
            },
            q);
        // The epilogue's other full-size inputs (a residual gradient) are
        // loaded before any store: the stores may alias them as far as the
        // compiler knows, so a load between two stores waits out the memory
        // latency (48 us against 46 for the block a row, with a residual).
        SmallVector<EpilogueEvaluator::FullInputs> fulls;
        if (!perChannel.outputs.empty())
          for (int64_t i = 0; i < perThread; ++i)
            fulls.push_back(gradientInputs(coords[i], vecs[i]));
        for (int64_t i = 0; i < perThread; ++i) {
          EpilogueEvaluator::FullInputs *full =
              fulls.empty() ? nullptr : &fulls[i];
          if (valid[i])
            ifThen(valid[i],
                   [&] { storeGradient(coords[i], dx[i], vecs[i], full); });
          else
            storeGradient(coords[i], dx[i], vecs[i], full);
        }
        return q;
      });
  // Two blocks an SM (16 rows in flight) where a lane's vectors are few:
  // 8192 x 768 bf16 (3 a lane) took 16.3 us with two, 17.3 with one; f32
  // (6 a lane) spilled at two and took 30.0 us, 26.9 with one (H200).
  if (perThread <= 4)
    func->setAttr("nvvm.minctasm", b.getI32IntegerAttr(2));
  if (!needColumns)
    return;
  // The warps' column sums meet in shared memory and are added in warp
  // order (deterministic): [warp][k][column].
  Value red = allocShared({kWarps, 2, perThread * 32 * w}, b.getF32Type(), 16);
  for (int64_t i = 0; i < perThread; ++i)
    for (int64_t l = 0; l < w; ++l) {
      Value j = addi(muli(addi(lane, idx(i * 32)), idx(w)), idx(l));
      for (int64_t k = 0; k < 2; ++k)
        memref::StoreOp::create(b, acc[k * perThread * w + i * w + l], red,
                                ValueRange{warp, idx(k), j});
    }
  gpu::BarrierOp::create(b);
  loop(tid, idx(2 * length), idx(kBlock), {},
       [&](Value e, ValueRange) -> SmallVector<Value> {
         Value k = divi(e, length), j = remi(e, length);
         Value sum = memref::LoadOp::create(b, red, ValueRange{idx(0), k, j});
         for (int64_t v = 1; v < kWarps; ++v)
           sum = addf(sum, memref::LoadOp::create(b, red,
                                                  ValueRange{idx(v), k, j}));
         memref::StoreOp::create(b, sum, partials, ValueRange{k, bx, j});
         return {};
       });
}

void NormGradKernel::emitResidentRows(Value partials) {
  Value tid = threadId(), bx = blockId(gpu::Dimension::x);
  // Vector i of a thread starts at column (tid + i * threads) * w; only the
  // last may pass the row's end (then it is clamped and masked).
  SmallVector<Value> cols, valid;
  for (int64_t i = 0; i < perThread; ++i) {
    Value j = muli(addi(tid, idx(i * threads)), idx(w));
    bool partial = (i + 1) * threads * w > length;
    valid.push_back(partial ? ltc(j, length) : Value());
    cols.push_back(partial ? mini(j, idx(length - w)) : j);
  }
  SmallVector<SmallVector<Value>> scales;
  for (Value j : cols)
    scales.push_back(scaleAt(j));
  Value begin = muli(bx, idx(chunk));
  Value end = mini(addi(begin, idx(chunk)), idx(rows));
  // Rows land in shared memory through cp.async, `stages - 1` rows ahead
  // of their use: each thread copies its own vectors of dy and x (and reads
  // back only those, so no barrier guards a stage). On an H200 at 16k x 4k
  // bf16 the rows pass took 160 us loading a row at a time, 121 loading
  // the next row into registers and 118 with 3 rows in flight here (ncu);
  // column sums in shared memory for 3 blocks an SM (80 registers) took
  // 152 (bench/results/2026-11-27-h200-norm-grad).
  Type elementType = cast<MemRefType>(xM.getType()).getElementType();
  int64_t elementBytes = elementType.getIntOrFloatBitWidth() / 8;
  int64_t padded = perThread * threads * w;
  int64_t stages = std::clamp<int64_t>(
      kStagingBytes / (2 * padded * elementBytes), 2, kMaxStages);
  Value staging = allocShared({stages, 2, padded}, elementType, 16);
  auto vecType = VectorType::get({w}, elementType);
  Value sources[] = {dyM, xM};
  auto issueRow = [&](Value row, Value stage) {
    for (auto [i, j] : llvm::enumerate(cols)) {
      SmallVector<Value> coords = elementCoords(row, j);
      Value at = muli(addi(tid, idx(int64_t(i) * threads)), idx(w));
      for (auto [t, src] : llvm::enumerate(sources))
        nvgpu::DeviceAsyncCopyOp::create(
            b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), staging,
            ValueRange{stage, idx(int64_t(t)), at}, src, coords,
            b.getIndexAttr(w), Value(),
            w * elementBytes == 16 ? b.getUnitAttr() : UnitAttr());
    }
    NVVM::CpAsyncCommitGroupOp::create(b);
  };
  // The statistics' shift, the row's first x, is loaded a row ahead into a
  // register (every thread needs it; it lands in one thread's stage).
  auto shiftOf = [&](Value row) {
    return op.getRms() ? f32(0) : load(xM, elementCoords(row, idx(0)));
  };
  Value last = subi(end, idx(1));
  for (int64_t s = 0; s + 1 < stages; ++s)
    issueRow(mini(addi(begin, idx(s)), last), idx(s));
  int64_t numAcc = 2 * perThread * w;
  SmallVector<Value> init(numAcc, f32(0));
  init.push_back(shiftOf(begin));
  SmallVector<Value> acc = loop(
      begin, end, idx(1), init,
      [&](Value row, ValueRange iters) -> SmallVector<Value> {
        SmallVector<Value> q(iters.take_front(numAcc));
        Value shift = iters.back();
        Value k = subi(row, begin);
        // Rows past the block's last load it again (in bounds, unused).
        issueRow(mini(addi(row, idx(stages - 1)), last),
                 remi(addi(k, idx(stages - 1)), stages));
        Value nextShift = shiftOf(mini(addi(row, idx(1)), last));
        NVVM::CpAsyncWaitGroupOp::create(b, stages - 1);
        Value stage = remi(k, stages);
        SmallVector<SmallVector<Value>> coords, dys, xs;
        SmallVector<std::pair<Value, Value>> vecs(perThread);
        auto lanes = [&](Value vec) {
          SmallVector<Value> out;
          for (int64_t l = 0; l < w; ++l)
            out.push_back(toF32(vector::ExtractOp::create(b, vec, l)));
          return out;
        };
        for (auto [i, j] : llvm::enumerate(cols)) {
          coords.push_back(elementCoords(row, j));
          Value at = muli(addi(tid, idx(int64_t(i) * threads)), idx(w));
          Value dyv = vector::LoadOp::create(b, vecType, staging,
                                             ValueRange{stage, idx(0), at});
          Value xv = vector::LoadOp::create(b, vecType, staging,
                                            ValueRange{stage, idx(1), at});
          vecs[i] = {dyv, xv};
          dys.push_back(lanes(dyv));
          xs.push_back(lanes(xv));
        }
        SmallVector<SmallVector<Value>> dx = rowGradient(
            xs, dys, scales, valid, shift,
            [&](ArrayRef<Value> sums) { return blockSums(sums); }, q);
        for (int64_t i = 0; i < perThread; ++i) {
          if (valid[i])
            ifThen(valid[i],
                   [&] { storeGradient(coords[i], dx[i], vecs[i]); });
          else
            storeGradient(coords[i], dx[i], vecs[i]);
        }
        q.push_back(nextShift);
        return q;
      });
  // No copy may be pending when the block exits.
  NVVM::CpAsyncWaitGroupOp::create(b, 0);
  if (!needColumns)
    return;
  for (int64_t i = 0; i < perThread; ++i) {
    auto write = [&] {
      for (int64_t l = 0; l < w; ++l) {
        Value j = addi(cols[i], idx(l));
        for (int64_t k = 0; k < 2; ++k)
          memref::StoreOp::create(b, acc[k * perThread * w + i * w + l],
                                  partials, ValueRange{idx(k), bx, j});
      }
    };
    if (valid[i])
      ifThen(valid[i], write);
    else
      write();
  }
}

void NormGradKernel::emitStreamedRows(Value partials) {
  Value tid = threadId(), bx = blockId(gpu::Dimension::x);
  Value begin = muli(bx, idx(chunk));
  Value end = mini(addi(begin, idx(chunk)), idx(rows));
  // Each thread's columns: j = (tid + k * threads) * w, the same every row.
  Value first = muli(tid, idx(w)), stride = idx(threads * w);
  auto overColumns =
      [&](ValueRange init,
          function_ref<SmallVector<Value>(Value, ValueRange)> body) {
        return loop(first, idx(length), stride, init, body);
      };
  if (needColumns)
    (void)overColumns({}, [&](Value j, ValueRange) {
      for (int64_t l = 0; l < w; ++l)
        for (int64_t k = 0; k < 2; ++k)
          memref::StoreOp::create(b, f32(0), partials,
                                  ValueRange{idx(k), bx, addi(j, idx(l))});
      return SmallVector<Value>();
    });
  (void)loop(begin, end, idx(1), {}, [&](Value row, ValueRange) {
    // One pass for the sums of d = x - K (K the row's first value), d^2,
    // g = dy * scale and g * d; a second for the stores.
    Value shift = op.getRms() ? f32(0) : load(xM, elementCoords(row, idx(0)));
    SmallVector<Value> sums =
        overColumns(SmallVector<Value>(4, f32(0)),
                    [&](Value j, ValueRange a) -> SmallVector<Value> {
                      SmallVector<Value> acc(a);
                      SmallVector<Value> coords = elementCoords(row, j);
                      SmallVector<Value> dy = lanesAt(dyM, coords);
                      SmallVector<Value> xs = lanesAt(xM, coords);
                      SmallVector<Value> sc = scaleAt(j);
                      for (int64_t l = 0; l < w; ++l) {
                        Value d = subf(xs[l], shift), g = mulf(dy[l], sc[l]);
                        acc[0] = addf(acc[0], d);
                        acc[1] = fma(d, d, acc[1]);
                        acc[2] = addf(acc[2], g);
                        acc[3] = fma(g, d, acc[3]);
                      }
                      return acc;
                    });
    SmallVector<Value> p = rowParams(blockSums(sums), shift);
    Value mean = p[0], rstd = p[1], meanG = p[2], meanGX = p[3];
    std::pair<Value, Value> vecs;
    auto lanes = [&](Value j, SmallVector<Value> &dy, SmallVector<Value> &xh,
                     SmallVector<Value> &g) {
      SmallVector<Value> coords = elementCoords(row, j);
      dy = lanesAt(dyM, coords, &vecs.first);
      xh = lanesAt(xM, coords, &vecs.second);
      SmallVector<Value> sc = scaleAt(j);
      for (int64_t l = 0; l < w; ++l) {
        xh[l] = mulf(subf(xh[l], mean), rstd);
        g.push_back(mulf(dy[l], sc[l]));
      }
      return coords;
    };
    (void)overColumns({}, [&](Value j, ValueRange) {
      SmallVector<Value> dy, xh, g;
      SmallVector<Value> coords = lanes(j, dy, xh, g);
      SmallVector<Value> dx;
      for (int64_t l = 0; l < w; ++l) {
        dx.push_back(mulf(rstd, subf(subf(g[l], meanG), mulf(xh[l], meanGX))));
        if (!needColumns)
          continue;
        Value c = addi(j, idx(l));
        Value p0 =
            memref::LoadOp::create(b, partials, ValueRange{idx(0), bx, c});
        Value p1 =
            memref::LoadOp::create(b, partials, ValueRange{idx(1), bx, c});
        memref::StoreOp::create(b, fma(dy[l], xh[l], p0), partials,
                                ValueRange{idx(0), bx, c});
        memref::StoreOp::create(b, addf(p1, dy[l]), partials,
                                ValueRange{idx(1), bx, c});
      }
      storeGradient(coords, dx, vecs);
      return SmallVector<Value>();
    });
    return SmallVector<Value>();
  });
}

LaunchConfig NormGradKernel::emitFinalize(Value partials) {
  // A block takes 32 columns (sumPartialColumns: a fixed order).
  Value tid = threadId();
  Value lane = remi(tid, 32), warp = divi(tid, 32);
  Value c = addi(muli(blockId(gpu::Dimension::x), idx(32)), lane);
  SmallVector<Value> totals =
      sumPartialColumns(partials, 2, groups, mini(c, idx(length - 1)),
                        allocShared({2 * kFinalizeThreads}, b.getF32Type()));
  ifThen(andi(ltc(c, length),
              arith::CmpIOp::create(b, arith::CmpIPredicate::eq, warp, idx(0))),
         [&] {
           for (int64_t k = 0; k < 2; ++k) {
             if (perChannel.resultAt[k + 1] < 0)
               continue;
             store(totals[k],
                   func.getArgument(kernel.getInputs().size() +
                                    perChannel.resultAt[k + 1]),
                   delinearize(c, rowShape));
           }
         });
  return LaunchConfig{{ceilDiv(length, 32), 1, 1}, {kFinalizeThreads, 1, 1}};
}

FailureOr<LaunchConfig> NormGradKernel::emitBody() {
  op = cast<NormGradOp>(anchor);
  for (Value operand : anchor->getOperands())
    if (!isa<BlockArgument>(operand))
      return kernel.emitOpError("reads ")
             << anchor->getName()
             << "'s operands from memory, but one is computed in the kernel";
  llvm::append_range(shape, shapeOf(op.getInput()));
  length = op.getRowLength();
  llvm::append_range(
      rowShape, ArrayRef<int64_t>(shape).take_back(op.getNormalizedRank()));
  rows = length ? product(shape) / length : 0;
  if (rows == 0 || length == 0) {
    // Nothing to sum: the parameter gradients are zero, stored by the
    // finalize over no partials.
    return kernel.emitOpError("has an empty row or no rows");
  }
  dyM = argOf.lookup(op.getOutputGrad());
  xM = argOf.lookup(op.getInput());
  scaleM = op.getScale() ? argOf.lookup(op.getScale()) : Value();

  if (failed(splitResults(shape, "column", perChannel)))
    return failure();
  needColumns = perChannel.resultAt[1] >= 0 || perChannel.resultAt[2] >= 0;

  // 16 bytes of the widest full-size tensor a vector, where the innermost
  // axis holds whole vectors.
  int64_t widest = cast<MemRefType>(xM.getType()).getElementTypeBitWidth();
  for (Value out : perChannel.outputs)
    widest = std::max<int64_t>(
        widest, cast<MemRefType>(out.getType()).getElementTypeBitWidth());
  for (BlockArgument arg : perChannel.evaluator->fullInputs())
    widest = std::max<int64_t>(
        widest, cast<RankedTensorType>(arg.getType()).getElementTypeBitWidth());
  w = 128 / widest;
  if (shape.back() % w)
    w = 1;
  int64_t vectors = ceilDiv(length, w);
  threads = std::clamp<int64_t>(llvm::PowerOf2Ceil(vectors), 32, kBlock);
  int64_t perRow = ceilDiv(vectors, threads);
  perThread = w > 1 && perRow * w <= kResident ? perRow : 0;
  // About two blocks an SM, each with a few rows at least.
  groups = std::min<int64_t>(rows, 2 * target.smCount);
  chunk = ceilDiv(rows, groups);
  groups = ceilDiv(rows, chunk);

  Value partials;
  SmallVector<MemRefType> workspaces;
  if (needColumns) {
    workspaces.push_back(MemRefType::get({2, groups, length}, b.getF32Type()));
    partials = addWorkspaceArgument(workspaces.back());
  }
  // Short rows take a warp each, kBlock / 32 to a block: shuffles alone
  // reduce a row, and a block has as many rows in flight as warps. A block
  // a row (its reduction through shared memory and barriers, one row at a
  // time) took 34 us for GPT's 8192 rows of 768 f32 (H200).
  int64_t warpPerThread = ceilDiv(vectors, 32);
  if (w > 1 && warpPerThread * w <= kWarpResident) {
    threads = kBlock;
    perThread = warpPerThread;
    emitWarpRows(partials);
  } else if (perThread) {
    emitResidentRows(partials);
  } else {
    emitStreamedRows(partials);
  }
  LaunchConfig rowsLaunch{{groups, 1, 1}, {threads, 1, 1}};
  if (!needColumns) {
    rowsLaunch.sharedBytes = sharedBytes;
    return rowsLaunch;
  }
  ExtraLaunch first = splitOffFirstLaunch("_rows", rowsLaunch);
  recordExtraLaunches(func, workspaces, {first});
  // The rows pass's occupancy hint is not the finalize's (1024 threads).
  func->removeAttr("nvvm.minctasm");
  return emitFinalize(partials);
}

namespace fusec::tiling {
std::unique_ptr<KernelBuilder>
makeNormGradKernel(KernelOp kernel, gpu::GPUModuleOp module,
                   const TargetDescription &target) {
  return std::make_unique<NormGradKernel>(kernel, module, target);
}
} // namespace fusec::tiling
