//===- NormGrad.cpp - Layer and RMS norm backward
//--------------------------===//
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
// Rows of up to kResident elements a thread stay in registers: dy and x
// are read once, a row ahead of its use, and the statistics take one
// reduction of sums shifted by the row's first value (no cancellation when
// the mean is large). Longer rows, and rows no 16-byte vector divides,
// take three passes over memory (the statistics as sums shifted by the
// row's first value, then the two sums, then the stores), the column sums
// kept in the partials.
//
//===----------------------------------------------------------------------===//

#include "ExtraLaunches.h"
#include "Families.h"

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
                     std::pair<Value, Value> loaded = {});
  /// The row statistics {mean (0 for rms), rstd} from the threads' sums.
  std::pair<Value, Value> statistics(Value s1, Value s2, Value shift);
  /// Pass 1 over resident rows, or over memory.
  void emitResidentRows(Value partials);
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
  /// Per anchor result, the kernel result it is (-1): the per-column ones
  /// the finalize stores.
  SmallVector<int64_t> resultAt;
  bool needColumns = false;

  // The rows pass evaluates the full-size results only: over a copy of the
  // kernel that yields just them.
  OwningOpRef<KernelOp> narrowed;
  IRMapping narrowedArgs;
  SmallVector<Value> fullOutputs;
  std::unique_ptr<EpilogueEvaluator> elements;

  /// The most elements of a row one thread keeps in registers (with its
  /// column sums: 4 floats an element).
  static constexpr int64_t kResident = 16;
  /// The finalize's blocks: 32 columns x 32 shares of the partials.
  static constexpr int64_t kFinalizeThreads = 1024;
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

void NormGradKernel::storeGradient(ArrayRef<Value> coords,
                                   ArrayRef<Value> values,
                                   std::pair<Value, Value> loaded) {
  if (fullOutputs.empty())
    return;
  if (w == 1) {
    elements->storeResults(coords, values[0]);
    return;
  }
  EpilogueEvaluator::FullInputs full;
  for (BlockArgument arg : elements->fullInputs()) {
    Value memref = narrowedArgs.lookup(arg);
    Value vec = memref == dyM  ? loaded.first
                : memref == xM ? loaded.second
                               : Value();
    full.emplace_back(arg, vec ? vec : loadVector(memref, coords, w));
  }
  elements->storeVectorResults(coords, w, values, &full);
}

std::pair<Value, Value> NormGradKernel::statistics(Value s1, Value s2,
                                                   Value shift) {
  Value inv = f32(1.0 / static_cast<double>(length));
  Value eps = f32(op.getEpsilon().convertToDouble());
  if (op.getRms())
    return {f32(0), math::RsqrtOp::create(b, addf(mulf(s2, inv), eps))};
  // Sums of d = x - shift: mean = shift + S1/D, var = S2/D - (S1/D)^2.
  Value m1 = mulf(s1, inv);
  Value var = maxf(subf(mulf(s2, inv), mulf(m1, m1)), f32(0));
  return {addf(shift, m1), math::RsqrtOp::create(b, addf(var, eps))};
}

void NormGradKernel::emitResidentRows(Value partials) {
  Value tid = threadId(), bx = blockId(gpu::Dimension::x);
  Value inv = f32(1.0 / static_cast<double>(length));
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
  auto masked = [&](Value v, int64_t i) {
    return valid[i] ? select(valid[i], v, f32(0)) : v;
  };
  Value begin = muli(bx, idx(chunk));
  Value end = mini(addi(begin, idx(chunk)), idx(rows));
  // The loads of a row: {dy, x} vectors per vector of the thread, then the
  // row's first x (the statistics' shift). A row is loaded one iteration
  // ahead, so that its loads are in flight while the block reduces and
  // stores the row before: one row at a time left the loads' latency
  // exposed (0.55 of copy bandwidth at 16k x 4k bf16 on an H200).
  auto loadRow = [&](Value row) {
    SmallVector<Value> v;
    for (Value j : cols) {
      SmallVector<Value> coords = elementCoords(row, j);
      v.push_back(loadVector(dyM, coords, w));
      v.push_back(loadVector(xM, coords, w));
    }
    v.push_back(op.getRms() ? f32(0) : load(xM, elementCoords(row, idx(0))));
    return v;
  };
  int64_t numAcc = 2 * perThread * w;
  SmallVector<Value> init(numAcc, f32(0));
  llvm::append_range(init, loadRow(begin));
  SmallVector<Value> acc = loop(
      begin, end, idx(1), init,
      [&](Value row, ValueRange iters) -> SmallVector<Value> {
        SmallVector<Value> q(iters.take_front(numAcc));
        ValueRange cur = iters.drop_front(numAcc);
        // The last iteration loads its own row again (in bounds, unused).
        SmallVector<Value> next =
            loadRow(mini(addi(row, idx(1)), subi(end, idx(1))));
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
          vecs[i] = {cur[2 * i], cur[2 * i + 1]};
          dys.push_back(lanes(cur[2 * i]));
          xs.push_back(lanes(cur[2 * i + 1]));
        }
        // The statistics in one reduction: sums of d = x - K (K the row's
        // first value) and of d^2.
        Value shift = cur.back();
        Value s1 = f32(0), s2 = f32(0);
        for (int64_t i = 0; i < perThread; ++i)
          for (Value v : xs[i]) {
            Value d = masked(subf(v, shift), i);
            s1 = addf(s1, d);
            s2 = fma(d, d, s2);
          }
        SmallVector<Value> st = blockSums({s1, s2});
        auto [mean, rstd] = statistics(st[0], st[1], shift);
        // x^ replaces x; the sums of g and g * x^.
        Value sg = f32(0), sgx = f32(0);
        SmallVector<SmallVector<Value>> gs(perThread);
        for (int64_t i = 0; i < perThread; ++i)
          for (int64_t l = 0; l < w; ++l) {
            xs[i][l] = mulf(subf(xs[i][l], mean), rstd);
            gs[i].push_back(mulf(dys[i][l], scales[i][l]));
            sg = addf(sg, masked(gs[i][l], i));
            sgx = fma(masked(gs[i][l], i), xs[i][l], sgx);
          }
        SmallVector<Value> sums = blockSums({sg, sgx});
        Value meanG = op.getRms() ? f32(0) : mulf(sums[0], inv);
        Value meanGX = mulf(sums[1], inv);
        for (int64_t i = 0; i < perThread; ++i) {
          SmallVector<Value> dx;
          for (int64_t l = 0; l < w; ++l) {
            dx.push_back(mulf(
                rstd, subf(subf(gs[i][l], meanG), mulf(xs[i][l], meanGX))));
            int64_t k = i * w + l;
            q[k] = fma(masked(dys[i][l], i), xs[i][l], q[k]);
            q[perThread * w + k] =
                addf(q[perThread * w + k], masked(dys[i][l], i));
          }
          if (valid[i])
            ifThen(valid[i], [&] { storeGradient(coords[i], dx, vecs[i]); });
          else
            storeGradient(coords[i], dx, vecs[i]);
        }
        llvm::append_range(q, next);
        return q;
      });
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
  Value inv = f32(1.0 / static_cast<double>(length));
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
    // The statistics: sums of x - K with K the row's first value.
    Value shift = op.getRms() ? f32(0) : load(xM, elementCoords(row, idx(0)));
    SmallVector<Value> s = overColumns(
        {f32(0), f32(0)}, [&](Value j, ValueRange a) -> SmallVector<Value> {
          Value s1 = a[0], s2 = a[1];
          for (Value v : lanesAt(xM, elementCoords(row, j))) {
            Value d = subf(v, shift);
            s1 = addf(s1, d);
            s2 = fma(d, d, s2);
          }
          return {s1, s2};
        });
    s = blockSums(s);
    auto [mean, rstd] = statistics(s[0], s[1], shift);
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
    SmallVector<Value> t = overColumns(
        {f32(0), f32(0)}, [&](Value j, ValueRange a) -> SmallVector<Value> {
          SmallVector<Value> dy, xh, g;
          (void)lanes(j, dy, xh, g);
          Value sg = a[0], sgx = a[1];
          for (int64_t l = 0; l < w; ++l) {
            sg = addf(sg, g[l]);
            sgx = fma(g[l], xh[l], sgx);
          }
          return {sg, sgx};
        });
    t = blockSums(t);
    Value meanG = op.getRms() ? f32(0) : mulf(t[0], inv);
    Value meanGX = mulf(t[1], inv);
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
  // A block takes 32 columns; its 32 warps' lanes add every 32nd partial,
  // then the warps' sums meet in shared memory in a fixed order.
  constexpr int64_t kWarps = kFinalizeThreads / 32, kLoads = 4;
  Value tid = threadId();
  Value lane = remi(tid, 32), warp = divi(tid, 32);
  Value c = addi(muli(blockId(gpu::Dimension::x), idx(32)), lane);
  Value cc = mini(c, idx(length - 1));
  SmallVector<Value> sums =
      loop(warp, idx(groups), idx(kWarps * kLoads), {f32(0), f32(0)},
           [&](Value g, ValueRange acc) -> SmallVector<Value> {
             SmallVector<Value> s(acc);
             for (int64_t u = 0; u < kLoads; ++u) {
               Value gu = addi(g, idx(u * kWarps));
               Value ok = lt(gu, idx(groups));
               gu = mini(gu, idx(groups - 1));
               for (int64_t k = 0; k < 2; ++k) {
                 Value p = memref::LoadOp::create(b, partials,
                                                  ValueRange{idx(k), gu, cc});
                 s[k] = addf(s[k], select(ok, p, f32(0)));
               }
             }
             return s;
           });
  Value red = allocShared({2, kFinalizeThreads}, b.getF32Type());
  for (int64_t k = 0; k < 2; ++k)
    memref::StoreOp::create(b, sums[k], red, ValueRange{idx(k), tid});
  gpu::BarrierOp::create(b);
  ifThen(
      andi(ltc(c, length),
           arith::CmpIOp::create(b, arith::CmpIPredicate::eq, warp, idx(0))),
      [&] {
        for (int64_t k = 0; k < 2; ++k) {
          if (resultAt[k + 1] < 0)
            continue;
          Value total = f32(0);
          for (int64_t i = 0; i < kWarps; ++i)
            total =
                addf(total,
                     memref::LoadOp::create(
                         b, red, ValueRange{idx(k), addi(idx(i * 32), lane)}));
          store(total,
                func.getArgument(kernel.getInputs().size() + resultAt[k + 1]),
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

  // Which kernel results are the per-column ones (the finalize stores
  // them); the others are full-size, computed per element.
  resultAt.assign(anchor->getNumResults(), -1);
  IRMapping cloned;
  narrowed = OwningOpRef<KernelOp>(cast<KernelOp>(kernel->clone(cloned)));
  SmallVector<Value> kept;
  for (auto [k, value] : llvm::enumerate(yield().getValues())) {
    auto result = dyn_cast<OpResult>(value);
    if (result && result.getOwner() == anchor && result.getResultNumber()) {
      resultAt[result.getResultNumber()] = k;
    } else if (shapeOf(value) == ArrayRef<int64_t>(shape)) {
      kept.push_back(cloned.lookup(value));
      fullOutputs.push_back(outputs[k]);
    } else {
      return kernel.emitOpError("result #")
             << k << " has neither the input's shape nor a row's";
    }
  }
  for (Operation &inner : kernel.getBody().front().without_terminator())
    for (Value operand : inner.getOperands())
      if (operand.getDefiningOp() == anchor &&
          cast<OpResult>(operand).getResultNumber())
        return kernel.emitOpError("computes with the per-column results of ")
               << anchor->getName() << " per element, which its family does "
               << "not";
  narrowed->getBody().front().getTerminator()->setOperands(kept);
  for (auto [original, copy] : llvm::zip_equal(
           kernel.getBody().getArguments(), narrowed->getBody().getArguments()))
    narrowedArgs.map(copy, argOf.lookup(original));
  elements = std::make_unique<EpilogueEvaluator>(
      b, *narrowed, narrowedArgs, fullOutputs, cloned.lookup(anchorResult));
  needColumns = resultAt[1] >= 0 || resultAt[2] >= 0;

  // 16 bytes of the widest full-size tensor a vector, where the innermost
  // axis holds whole vectors.
  int64_t widest = cast<MemRefType>(xM.getType()).getElementTypeBitWidth();
  for (Value out : fullOutputs)
    widest = std::max<int64_t>(
        widest, cast<MemRefType>(out.getType()).getElementTypeBitWidth());
  for (BlockArgument arg : elements->fullInputs())
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
  if (perThread)
    emitResidentRows(partials);
  else
    emitStreamedRows(partials);
  LaunchConfig rowsLaunch{{groups, 1, 1}, {threads, 1, 1}};
  if (!needColumns) {
    rowsLaunch.sharedBytes = sharedBytes;
    return rowsLaunch;
  }
  ExtraLaunch first = splitOffFirstLaunch("_rows", rowsLaunch);
  recordExtraLaunches(func, workspaces, {first});
  return emitFinalize(partials);
}

namespace fusec::tiling {
std::unique_ptr<KernelBuilder>
makeNormGradKernel(KernelOp kernel, gpu::GPUModuleOp module,
                   const TargetDescription &target) {
  return std::make_unique<NormGradKernel>(kernel, module, target);
}
} // namespace fusec::tiling
