//===- BatchNormTraining.cpp - Batch norm with batch statistics -----------===//
//
// fuse.batch_norm_train and fuse.batch_norm_grad: per-channel sums over the
// M = numel / C values of each channel, then one pass over the elements.
// Three launches over the same memrefs (the kernel's inputs, results and two
// workspaces):
//  1. statistics: the blocks split each channel's values and write
//     per-channel partial sums (f32) into a workspace [2, G, C]. NHWC (the
//     channel axis innermost): a block reads rows of up to 32 16-byte vectors
//     of channels, its threads walking rows; NCHW: a block reads a share of
//     one channel's N strided planes as 16-byte vectors along W. G is chosen
//     so that about 2 blocks per SM stream the input.
//  2. finalize: one thread per channel adds its G partials in a fixed order
//     (deterministic, no atomics), writes the per-channel results (saved mean
//     and inverse std and the running statistics; or the parameter
//     gradients) and the coefficients of pass 3 into a workspace [4, C].
//  3. the kernel itself: the normalised output (or the input gradient) per
//     element, with the kernel's fused epilogue (a ReLU), as 16-byte vectors
//     where the innermost extent allows.
// The forward sums shifted values, d = x - K with K the channel's first
// value, and d^2: mean = K + S1/M and var = S2/M - (S1/M)^2, which loses no
// precision to a large mean the way E[x^2] - E[x]^2 does (the shift is near
// the mean), and whose partials combine by addition since every block uses
// the same K. The backward sums dy and dy * (x - mean) around the saved mean.
//
//===----------------------------------------------------------------------===//

#include "ExtraLaunches.h"
#include "Families.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {
class BatchNormTrainingKernel : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

private:
  FailureOr<LaunchConfig> emitBody() override;

  /// Whether the anchor is the forward (else the gradient).
  bool forward() { return isa<BatchNormTrainOp>(anchor); }
  /// A gpu.func `<kernel><suffix>` taking the kernel function's memrefs,
  /// with the insertion point at its entry.
  gpu::GPUFuncOp addSibling(StringRef suffix);
  /// `v`'s memref (a kernel input) as parameter of `f`.
  Value param(gpu::GPUFuncOp f, Value v) {
    return f.getArgument(cast<BlockArgument>(argOf.lookup(v)).getArgNumber());
  }
  /// `f`'s shared memory as `n` floats.
  Value sharedFloats(int64_t n);

  /// Pass 1, channels innermost (rows of C) or strided planes.
  ExtraLaunch emitRowStatistics();
  ExtraLaunch emitPlaneStatistics();
  /// Adds one element's contributions to the two sums, `valid` masking it.
  void accumulate(Value x, Value dy, Value centre, Value valid, Value &q0,
                  Value &q1);
  /// The `v` lanes from `coords` on, as f32.
  SmallVector<Value> loadLanes(Value memref, ArrayRef<Value> coords, int64_t v);
  /// Pass 2.
  ExtraLaunch emitFinalize();
  /// Pass 3: the element at `x` (and `dy`) of channel coefficients `coef`.
  Value elementValue(Value x, Value dy, ArrayRef<Value> coef);
  SmallVector<Value> loadCoefficients(Value c);
  LaunchConfig emitElements();

  /// The coordinates of the element of channel `c` at row `row` of the
  /// outer axes and `in` (a linear index) of the inner ones.
  SmallVector<Value> coordsOf(Value row, Value c, Value in);

  // The geometry: input shape, channel axis, the extents before and after
  // it, and the values per channel.
  SmallVector<int64_t> shape;
  int64_t axis = 0, channels = 0, outer = 0, inner = 0, count = 0;
  /// The anchor's operands.
  Value x, dy, mean, invstd, scale;
  /// Whether the statistics pass runs (the evaluation form's gradient needs
  /// it only for the parameter gradients).
  bool needSums = true;
  /// Workspace parameter indices: partial sums [2, G, C], coefficients [4, C].
  int64_t partialsArg = -1, coefArg = -1;
  /// How pass 1 splits the work: `v` lanes per load (a 16-byte vector where
  /// the extents allow); rows of channels: `tx` threads across a row's
  /// vectors, `ty` rows at once, `gridX` blocks across the channels; planes:
  /// `perRow` vectors per outer index, `total` per channel. `groups` blocks
  /// (G) split each channel's values, `chunk` rows or vectors each.
  struct Split {
    int64_t v = 1, tx = 1, ty = 1, gridX = 1, perRow = 1, total = 1;
    int64_t groups = 1, chunk = 1;
  } split;
  void planSplit();
  gpu::GPUFuncOp current;
  /// The scratch buffers, as the functions take them after the results.
  SmallVector<MemRefType> workspaces;
  Value addWorkspace(MemRefType type);

  /// Pass 2 stores the per-channel results; the element pass evaluates the
  /// full-size ones.
  SplitResults perChannel;

  static constexpr int64_t kThreads = 256;
  /// The finalize's blocks: 32 channels x 32 shares of the partials.
  static constexpr int64_t kFinalizeThreads = kColumnSumThreads;
  /// Rows (or vectors) a thread of pass 1 loads per loop step.
  static constexpr int64_t kUnroll = 4;
  /// Rows a thread of pass 3 walks with its channels.
  static constexpr int64_t kRows = 4;
};
} // namespace

gpu::GPUFuncOp BatchNormTrainingKernel::addSibling(StringRef suffix) {
  b.setInsertionPointToEnd(module.getBody());
  auto f = gpu::GPUFuncOp::create(b, (Twine(kernel.getName()) + suffix).str(),
                                  func.getFunctionType());
  f->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  b.setInsertionPointToEnd(&f.getBody().front());
  current = f;
  return f;
}

Value BatchNormTrainingKernel::addWorkspace(MemRefType type) {
  workspaces.push_back(type);
  return addWorkspaceArgument(type);
}

Value BatchNormTrainingKernel::sharedFloats(int64_t n) {
  auto wg =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value dynamic = gpu::DynamicSharedMemoryOp::create(
      b,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(), wg));
  return memref::ViewOp::create(
      b, MemRefType::get({n}, b.getF32Type(), AffineMap(), wg), dynamic, idx(0),
      ValueRange());
}

SmallVector<Value> BatchNormTrainingKernel::coordsOf(Value row, Value c,
                                                     Value in) {
  SmallVector<Value> coords =
      delinearize(row, ArrayRef<int64_t>(shape).take_front(axis));
  coords.push_back(c);
  llvm::append_range(
      coords, delinearize(in, ArrayRef<int64_t>(shape).drop_front(axis + 1)));
  return coords;
}

SmallVector<Value> BatchNormTrainingKernel::loadLanes(Value memref,
                                                      ArrayRef<Value> coords,
                                                      int64_t v) {
  if (v == 1)
    return {load(memref, coords)};
  Value vec = loadVector(memref, coords, v);
  SmallVector<Value> lanes;
  for (int64_t l = 0; l < v; ++l)
    lanes.push_back(toF32(vector::ExtractOp::create(b, vec, l)));
  return lanes;
}

void BatchNormTrainingKernel::accumulate(Value xv, Value dyv, Value centre,
                                         Value valid, Value &q0, Value &q1) {
  Value zero = f32(0);
  if (forward()) {
    Value d = subf(xv, centre);
    if (valid)
      d = select(valid, d, zero);
    q0 = addf(q0, d);
    q1 = fma(d, d, q1);
    return;
  }
  Value g = valid ? select(valid, dyv, zero) : dyv;
  q0 = addf(q0, g);
  q1 = fma(g, subf(xv, centre), q1);
}

void BatchNormTrainingKernel::planSplit() {
  int64_t lanes =
      128 /
      cast<MemRefType>(argOf.lookup(x).getType()).getElementTypeBitWidth();
  // About 4 blocks of 256 threads per SM (each thread keeps kUnroll 16-byte
  // loads in flight: some 64 KiB per SM), each with kUnroll loads per
  // thread at least. At 2 blocks (25% occupancy) the statistics read at
  // 2.7-3.0 TB/s of an H200's 4.3 (ncu, bench/results); more blocks would
  // only lengthen the finalize's sums.
  int64_t blocks = 4 * target.smCount;
  Split &s = split;
  int64_t extent;
  if (inner == 1) {
    s.v = channels % lanes == 0 ? lanes : 1;
    s.tx = std::min<int64_t>(channels / s.v, 32);
    s.ty = kThreads / s.tx;
    s.gridX = ceilDiv(channels / s.v, s.tx);
    extent = outer;
    s.groups = std::clamp<int64_t>(ceilDiv(blocks, s.gridX), 1,
                                   ceilDiv(extent, s.ty * kUnroll));
  } else {
    s.v = shape.back() % lanes == 0 ? lanes : 1;
    s.perRow = inner / s.v;
    s.total = extent = outer * s.perRow;
    s.groups = std::clamp<int64_t>(ceilDiv(blocks, channels), 1,
                                   ceilDiv(extent, kThreads * kUnroll));
  }
  s.chunk = ceilDiv(extent, s.groups);
  s.groups = ceilDiv(extent, s.chunk);
}

ExtraLaunch BatchNormTrainingKernel::emitRowStatistics() {
  // Rows of C channels: a thread keeps `v` channels and walks rows; TX
  // threads cover up to 32 vectors of a row, TY rows go at once.
  int64_t v = split.v, tx = split.tx, ty = split.ty, gridX = split.gridX;
  int64_t groups = split.groups, chunk = split.chunk;
  int64_t threads = tx * ty, vectors = channels / v, rows = outer;
  gpu::GPUFuncOp f = addSibling("_stats");
  Value xm = param(f, x), dym = dy ? param(f, dy) : Value();
  Value tid = threadId();
  Value bx = blockId(gpu::Dimension::x), by = blockId(gpu::Dimension::y);
  Value txv = remi(tid, tx), tyv = divi(tid, tx);
  // Threads past the last vector repeat it and store nothing.
  Value vec = mini(addi(muli(bx, idx(tx)), txv), idx(vectors - 1));
  Value c0 = muli(vec, idx(v));
  SmallVector<Value> centre;
  for (int64_t l = 0; l < v; ++l) {
    Value c = addi(c0, idx(l));
    centre.push_back(forward() ? load(xm, coordsOf(idx(0), c, idx(0)))
                               : load(param(f, mean), {c}));
  }
  Value begin = muli(by, idx(chunk));
  Value end = mini(addi(begin, idx(chunk)), idx(rows));
  SmallVector<Value> init(2 * v, f32(0));
  SmallVector<Value> sums =
      loop(addi(begin, tyv), end, idx(ty * kUnroll), init,
           [&](Value row, ValueRange iters) {
             SmallVector<Value> q(iters);
             for (int64_t u = 0; u < kUnroll; ++u) {
               Value r = addi(row, idx(u * ty));
               Value valid;
               if (u) {
                 valid = lt(r, end);
                 r = mini(r, subi(end, idx(1)));
               }
               SmallVector<Value> coords = coordsOf(r, c0, idx(0));
               SmallVector<Value> xs = loadLanes(xm, coords, v);
               SmallVector<Value> dys =
                   dym ? loadLanes(dym, coords, v) : SmallVector<Value>(v);
               for (int64_t l = 0; l < v; ++l)
                 accumulate(xs[l], dys[l], centre[l], valid, q[l], q[v + l]);
             }
             return q;
           });
  // Across the TY rows in shared memory: a thread per (sum, lane, vector).
  Value red = sharedFloats(2 * v * threads);
  for (int64_t k = 0; k < 2 * v; ++k)
    memref::StoreOp::create(b, sums[k], red,
                            ValueRange{addi(idx(k * threads), tid)});
  gpu::BarrierOp::create(b);
  Value partials = f.getArgument(partialsArg);
  (void)loop(tid, idx(2 * v * tx), idx(threads), {}, [&](Value o, ValueRange) {
    Value k = divi(o, tx), t = remi(o, tx);
    SmallVector<Value> total = loop(
        idx(0), idx(ty), idx(1), {f32(0)},
        [&](Value y, ValueRange acc) -> SmallVector<Value> {
          Value at = addi(muli(k, idx(threads)), addi(muli(y, idx(tx)), t));
          return {addf(acc[0], memref::LoadOp::create(b, red, ValueRange{at}))};
        });
    Value vecO = addi(muli(bx, idx(tx)), t);
    ifThen(ltc(vecO, vectors), [&] {
      Value c = addi(muli(vecO, idx(v)), remi(k, v));
      memref::StoreOp::create(b, total[0], partials,
                              ValueRange{divi(k, v), by, c});
    });
    return SmallVector<Value>();
  });
  gpu::ReturnOp::create(b);
  ExtraLaunch pre;
  pre.func = f.getName().str();
  pre.grid = {gridX, groups, 1};
  pre.block = {threads, 1, 1};
  pre.sharedBytes = 2 * v * threads * 4;
  setBlockSize(f, {threads, 1, 1});
  return pre;
}

ExtraLaunch BatchNormTrainingKernel::emitPlaneStatistics() {
  // A block takes a share of one channel's N planes, 16-byte vectors along
  // the innermost axis where its extent allows.
  int64_t v = split.v, perRow = split.perRow, total = split.total;
  int64_t groups = split.groups, chunk = split.chunk;
  gpu::GPUFuncOp f = addSibling("_stats");
  Value xm = param(f, x), dym = dy ? param(f, dy) : Value();
  Value tid = threadId();
  Value c = blockId(gpu::Dimension::x), by = blockId(gpu::Dimension::y);
  Value centre = forward() ? load(xm, coordsOf(idx(0), c, idx(0)))
                           : load(param(f, mean), {c});
  Value begin = muli(by, idx(chunk));
  Value end = mini(addi(begin, idx(chunk)), idx(total));
  SmallVector<Value> sums =
      loop(addi(begin, tid), end, idx(kThreads * kUnroll), {f32(0), f32(0)},
           [&](Value j, ValueRange iters) {
             Value q0 = iters[0], q1 = iters[1];
             for (int64_t u = 0; u < kUnroll; ++u) {
               Value jj = addi(j, idx(u * kThreads));
               Value valid;
               if (u) {
                 valid = lt(jj, end);
                 jj = mini(jj, subi(end, idx(1)));
               }
               SmallVector<Value> coords = coordsOf(
                   divi(jj, perRow), c, muli(remi(jj, perRow), idx(v)));
               SmallVector<Value> xs = loadLanes(xm, coords, v);
               SmallVector<Value> dys =
                   dym ? loadLanes(dym, coords, v) : SmallVector<Value>(v);
               for (int64_t l = 0; l < v; ++l)
                 accumulate(xs[l], dys[l], centre, valid, q0, q1);
             }
             return SmallVector<Value>{q0, q1};
           });
  // Within each warp by shuffles, then across the 8 warps.
  Value red = sharedFloats(2 * kThreads / 32);
  for (int64_t k = 0; k < 2; ++k) {
    for (int32_t offset = 16; offset > 0; offset /= 2)
      sums[k] = addf(sums[k], gpu::ShuffleOp::create(b, sums[k], offset, 32,
                                                     gpu::ShuffleMode::XOR)
                                  .getShuffleResult());
  }
  ifThen(
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, remi(tid, 32), idx(0)),
      [&] {
        for (int64_t k = 0; k < 2; ++k)
          memref::StoreOp::create(
              b, sums[k], red,
              ValueRange{addi(idx(k * kThreads / 32), divi(tid, 32))});
      });
  gpu::BarrierOp::create(b);
  Value partials = f.getArgument(partialsArg);
  ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, idx(0)), [&] {
    for (int64_t k = 0; k < 2; ++k) {
      Value s =
          memref::LoadOp::create(b, red, ValueRange{idx(k * kThreads / 32)});
      for (int64_t w = 1; w < kThreads / 32; ++w)
        s = addf(s, memref::LoadOp::create(
                        b, red, ValueRange{idx(k * kThreads / 32 + w)}));
      memref::StoreOp::create(b, s, partials, ValueRange{idx(k), by, c});
    }
  });
  gpu::ReturnOp::create(b);
  ExtraLaunch pre;
  pre.func = f.getName().str();
  pre.grid = {channels, groups, 1};
  pre.block = {kThreads, 1, 1};
  pre.sharedBytes = 2 * kThreads / 32 * 4;
  setBlockSize(f, {kThreads, 1, 1});
  return pre;
}

ExtraLaunch BatchNormTrainingKernel::emitFinalize() {
  gpu::GPUFuncOp f = addSibling("_finalize");
  // A block takes 32 channels and adds their partials in a fixed order
  // (sumPartialColumns): the result does not depend on block timing.
  Value tid = threadId();
  Value lane = remi(tid, 32), warp = divi(tid, 32);
  Value c = addi(muli(blockId(gpu::Dimension::x), idx(32)), lane);
  Value cc = mini(c, idx(channels - 1));
  Value q0 = f32(0), q1 = f32(0);
  if (needSums) {
    Value partials = f.getArgument(partialsArg);
    int64_t groups = split.groups;
    SmallVector<Value> total = sumPartialColumns(
        partials, 2, groups, cc, sharedFloats(2 * kFinalizeThreads));
    q0 = total[0];
    q1 = total[1];
  }
  ifThen(
      andi(ltc(c, channels),
           arith::CmpIOp::create(b, arith::CmpIPredicate::eq, warp, idx(0))),
      [&] {
        Value coef = f.getArgument(coefArg);
        auto result = [&](int64_t k, Value value) {
          if (perChannel.resultAt[k] >= 0)
            store(value,
                  f.getArgument(kernel.getInputs().size() +
                                perChannel.resultAt[k]),
                  {c});
        };
        Value w = load(param(f, scale), {c});
        Value inv = f32(1.0 / double(count));
        SmallVector<Value> coefs;
        if (auto op = dyn_cast<BatchNormTrainOp>(anchor)) {
          Value shift = load(param(f, op.getShift()), {c});
          Value k = load(param(f, x), coordsOf(idx(0), c, idx(0)));
          Value m1 = mulf(q0, inv);
          Value mu = addf(k, m1);
          Value var = maxf(subf(mulf(q1, inv), mulf(m1, m1)), f32(0));
          Value is = math::RsqrtOp::create(
              b, addf(var, f32(op.getEpsilon().convertToDouble())));
          result(1, mu);
          result(2, is);
          Value momentum =
              op.getCumulative()
                  ? divf(f32(1),
                         load(param(f, op.getBatchesTracked()), {idx(0)}))
                  : f32(op.getMomentum().convertToDouble());
          Value keep = subf(f32(1), momentum);
          if (perChannel.resultAt[3] >= 0)
            result(3, addf(mulf(keep, load(param(f, op.getRunningMean()), {c})),
                           mulf(momentum, mu)));
          if (perChannel.resultAt[4] >= 0) {
            // The running estimate takes the unbiased variance.
            Value unbiased = mulf(var, f32(double(count) / double(count - 1)));
            result(4, addf(mulf(keep, load(param(f, op.getRunningVar()), {c})),
                           mulf(momentum, unbiased)));
          }
          coefs = {mu, mulf(w, is), shift, f32(0)};
        } else {
          auto gradOp = cast<BatchNormGradOp>(anchor);
          Value mu = load(param(f, mean), {c});
          Value is = load(param(f, invstd), {c});
          if (!gradOp.isTraining())
            is = math::RsqrtOp::create(
                b, addf(is, f32(gradOp.getEpsilon()->convertToDouble())));
          Value dscale = mulf(q1, is);
          result(1, dscale);
          result(2, q0);
          Value a = mulf(w, is);
          if (gradOp.isTraining()) {
            // dx = a * (dy - sum(dy) / M - (x - mean) * invstd * dscale / M).
            Value k1 =
                mulf(mulf(a, is), mulf(dscale, f32(-1.0 / double(count))));
            Value k0 = mulf(a, mulf(q0, f32(-1.0 / double(count))));
            coefs = {mu, a, k1, k0};
          } else {
            coefs = {mu, a, f32(0), f32(0)};
          }
        }
        for (auto [k, value] : llvm::enumerate(coefs))
          memref::StoreOp::create(b, value, coef, ValueRange{idx(k), c});
      });
  gpu::ReturnOp::create(b);
  setBlockSize(f, {kFinalizeThreads, 1, 1});
  ExtraLaunch pre;
  pre.func = f.getName().str();
  pre.grid = {ceilDiv(channels, 32), 1, 1};
  pre.block = {kFinalizeThreads, 1, 1};
  pre.sharedBytes = needSums ? 2 * kFinalizeThreads * 4 : 0;
  return pre;
}

SmallVector<Value> BatchNormTrainingKernel::loadCoefficients(Value c) {
  Value coef = func.getArgument(coefArg);
  SmallVector<Value> values;
  for (int64_t k = 0; k < 4; ++k)
    values.push_back(memref::LoadOp::create(b, coef, ValueRange{idx(k), c}));
  return values;
}

Value BatchNormTrainingKernel::elementValue(Value xv, Value dyv,
                                            ArrayRef<Value> coef) {
  if (forward())
    return fma(subf(xv, coef[0]), coef[1], coef[2]);
  if (!cast<BatchNormGradOp>(anchor).isTraining())
    return mulf(coef[1], dyv);
  return addf(fma(coef[1], dyv, mulf(coef[2], subf(xv, coef[0]))), coef[3]);
}

LaunchConfig BatchNormTrainingKernel::emitElements() {
  b.setInsertionPointToEnd(&func.getBody().front());
  current = func;
  // 16 bytes of the widest full-size tensor per vector.
  int64_t widest = 0;
  for (Value out : perChannel.outputs)
    widest = std::max<int64_t>(
        widest, cast<MemRefType>(out.getType()).getElementTypeBitWidth());
  SmallVector<BlockArgument> full = perChannel.evaluator->fullInputs();
  for (BlockArgument arg : full)
    widest = std::max<int64_t>(
        widest, cast<RankedTensorType>(arg.getType()).getElementTypeBitWidth());
  int64_t width = widest ? 128 / widest : 0;
  if (width && shape.back() % width)
    width = 0;
  Value xm = argOf.lookup(x), dym = dy ? argOf.lookup(dy) : Value();
  int64_t total = product(shape);

  // The anchor's inputs at `coords`, lane by lane, from the full inputs
  // loaded there.
  auto lanesOf = [&](Value memref, const EpilogueEvaluator::FullInputs &loaded,
                     ArrayRef<Value> coords, int64_t l) -> Value {
    for (auto [arg, vec] : loaded)
      if (perChannel.args.lookup(arg) == memref)
        return toF32(vector::ExtractOp::create(b, vec, l));
    SmallVector<Value> at(coords);
    at.back() = addi(at.back(), idx(l));
    return load(memref, at);
  };
  auto storeVectors = [&](ArrayRef<Value> coords,
                          ArrayRef<SmallVector<Value>> laneCoefs) {
    EpilogueEvaluator::FullInputs loaded =
        perChannel.evaluator->loadFullInputs(coords, width);
    SmallVector<Value> values;
    for (int64_t l = 0; l < width; ++l) {
      Value xv = lanesOf(xm, loaded, coords, l);
      Value dyv = dym ? lanesOf(dym, loaded, coords, l) : Value();
      values.push_back(elementValue(xv, dyv, laneCoefs[l]));
    }
    perChannel.evaluator->storeVectorResults(coords, width, values, &loaded);
  };

  if (!width)
    return perElement(total, [&](Value linear) {
      SmallVector<Value> coords = delinearize(linear, shape);
      SmallVector<Value> coef = loadCoefficients(coords[axis]);
      Value xv = load(xm, coords);
      Value dyv = dym ? load(dym, coords) : Value();
      perChannel.evaluator->storeResults(coords, elementValue(xv, dyv, coef));
    });
  if (axis + 1 == int64_t(shape.size())) {
    // Channels innermost: a thread keeps one vector of channels (their
    // coefficients loaded once) and walks kRows rows.
    int64_t runs = channels / width, rows = outer;
    return perElement(runs * ceilDiv(rows, kRows), [&](Value t) {
      Value c0 = muli(remi(t, runs), idx(width));
      Value row0 = muli(divi(t, runs), idx(kRows));
      SmallVector<SmallVector<Value>> coefs;
      for (int64_t l = 0; l < width; ++l)
        coefs.push_back(loadCoefficients(addi(c0, idx(l))));
      for (int64_t r = 0; r < kRows; ++r) {
        Value row = addi(row0, idx(r));
        auto store = [&] { storeVectors(coordsOf(row, c0, idx(0)), coefs); };
        if (rows % kRows == 0)
          store();
        else
          ifThen(ltc(row, rows), store);
      }
    });
  }
  // Planes: a vector along the innermost axis lies in one channel.
  return perElement(total / width, [&](Value g) {
    SmallVector<Value> coords = delinearize(muli(g, idx(width)), shape);
    SmallVector<Value> coef = loadCoefficients(coords[axis]);
    SmallVector<SmallVector<Value>> coefs(width, coef);
    storeVectors(coords, coefs);
  });
}

FailureOr<LaunchConfig> BatchNormTrainingKernel::emitBody() {
  if (auto op = dyn_cast<BatchNormTrainOp>(anchor)) {
    x = op.getInput();
    scale = op.getScale();
    axis = op.getChannelAxis();
  } else {
    auto grad = cast<BatchNormGradOp>(anchor);
    x = grad.getInput();
    dy = grad.getOutputGrad();
    mean = grad.getMean();
    invstd = grad.getInvstd();
    scale = grad.getScale();
    axis = grad.getChannelAxis();
  }
  // The family reads the anchor's operands from memory.
  for (Value operand : anchor->getOperands())
    if (!isa<BlockArgument>(operand))
      return kernel.emitOpError("reads ")
             << anchor->getName()
             << "'s operands from memory, but one is computed in the kernel";
  llvm::append_range(shape, shapeOf(x));
  channels = shape[axis];
  outer = product(ArrayRef<int64_t>(shape).take_front(axis));
  inner = product(ArrayRef<int64_t>(shape).drop_front(axis + 1));
  count = outer * inner;
  if (count < 2 && forward())
    return kernel.emitOpError("needs more than one value per channel");

  if (failed(splitResults(shape, "channel", perChannel)))
    return failure();

  auto grad = dyn_cast<BatchNormGradOp>(anchor);
  needSums = !grad || grad.isTraining() || perChannel.resultAt[1] >= 0 ||
             perChannel.resultAt[2] >= 0;

  // Workspaces first (the siblings take the kernel function's parameters).
  bool rowsOfChannels = inner == 1;
  if (needSums) {
    planSplit();
    partialsArg = func.getNumArguments();
    addWorkspace(MemRefType::get({2, split.groups, channels}, b.getF32Type()));
  }
  coefArg = func.getNumArguments();
  addWorkspace(MemRefType::get({4, channels}, b.getF32Type()));

  std::vector<ExtraLaunch> pre;
  if (needSums)
    pre.push_back(rowsOfChannels ? emitRowStatistics() : emitPlaneStatistics());
  pre.push_back(emitFinalize());
  recordExtraLaunches(func, workspaces, pre);
  if (perChannel.outputs.empty()) {
    // Nothing is read per element: the element pass has nothing to do.
    b.setInsertionPointToEnd(&func.getBody().front());
    return LaunchConfig{};
  }
  return emitElements();
}

namespace fusec::tiling {
std::unique_ptr<KernelBuilder>
makeBatchNormTrainingKernel(KernelOp kernel, gpu::GPUModuleOp module,
                            const TargetDescription &target) {
  return std::make_unique<BatchNormTrainingKernel>(kernel, module, target);
}
} // namespace fusec::tiling
