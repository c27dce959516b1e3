//===- GemmEpilogue.cpp - The epilogue of the tensor-core GEMMs -----------===//
//
// mma.sync and wgmma leave their f32 accumulators in the same fragment
// layout (AccumulatorLayout), so both families end the same way: the fused
// epilogue applied in the fragments, or after a trip through shared memory
// that lets each thread store 16-byte vectors along rows.
//
//===----------------------------------------------------------------------===//

#include "ExtraLaunches.h"
#include "Gemm.h"

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec::tiling;

bool fusec::tiling::canStageEpilogue(const GemmShape &shape, int64_t bn,
                                     int64_t threads) {
  int64_t perRow = bn / std::max<int64_t>(shape.outVector, 1);
  return shape.outVector >= 4 && perRow >= 1 && perRow <= threads;
}

int64_t fusec::tiling::stagingPasses(int64_t bm, int64_t bn, int64_t warpsM,
                                     int64_t kGroups, int64_t bytes) {
  int64_t passes = 1;
  while (passes < warpsM &&
         stagingBytesPerPass(bm, bn, kGroups, passes) > bytes)
    passes *= 2;
  return passes;
}

void GemmKernel::emitFragmentEpilogue(const GemmProblem &problem,
                                      const AccumulatorLayout &layout,
                                      ArrayRef<Value> acc, Value tileM,
                                      Value tileN, Value batch) {
  // Accumulator r of fragment (fm, fn) is C[m][n] with m = 16 fm + g +
  // 8 (r / 2) and n = 8 fn + 2 t + r % 2 within the warp's tile. A thread's
  // columns are fixed: their per-channel values are computed once.
  const GemmShape &shape = problem.shape;
  int64_t fragsM = layout.fragsM(), fragsN = layout.fragsN();
  Value g = divi(layout.lane, 4), tq = remi(layout.lane, 4);
  Value mWarp =
      addi(tileM, muli(layout.warpM, idx(layout.bm / layout.warpsM)));
  Value nWarp =
      addi(tileN, muli(layout.warpN, idx(layout.bn / layout.warpsN)));
  // Pairs of columns are stored as one vector where N is even (n is).
  bool pairs = shape.outVector >= 2;
  SmallVector<Value> ns;
  SmallVector<GemmColumns> columns;
  for (int64_t fn = 0; fn < fragsN; ++fn) {
    Value n = addi(nWarp, addi(muli(tq, idx(2)), idx(fn * 8)));
    ns.push_back(n);
    if (pairs) {
      columns.push_back(problem.columns(batch, n, 2));
      continue;
    }
    Value n1 = addi(n, idx(1));
    ns.push_back(n1);
    columns.push_back(problem.columns(batch, n, 1));
    columns.push_back(problem.columns(batch, n1, 1));
  }
  for (int64_t fm = 0; fm < fragsM; ++fm) {
    for (int64_t half = 0; half < 2; ++half) {
      Value m = addi(mWarp, addi(g, idx(fm * 16 + half * 8)));
      ifThen(ltc(m, shape.m), [&] {
        GemmRowStore store = problem.epilogue(batch, m);
        for (int64_t fn = 0; fn < fragsN; ++fn) {
          Value c0 = acc[(fm * fragsN + fn) * 4 + half * 2];
          Value c1 = acc[(fm * fragsN + fn) * 4 + half * 2 + 1];
          if (pairs) {
            ifThen(ltc(ns[fn], shape.n), [&] { store(columns[fn], {c0, c1}); });
            continue;
          }
          for (int64_t j = 0; j < 2; ++j)
            ifThen(ltc(ns[2 * fn + j], shape.n), [&] {
              store(columns[2 * fn + j], {j ? c1 : c0});
            });
        }
      });
    }
  }
}

void GemmKernel::emitStagedEpilogue(const GemmProblem &problem,
                                    const AccumulatorLayout &layout,
                                    ArrayRef<Value> acc, Value tileM,
                                    Value tileN, Value batch) {
  // The accumulators go through shared memory (over the pipeline's
  // buffers, which no copy or warp uses any more) so that each thread then
  // reads `width` neighbouring columns of a row: the epilogue stores (and
  // reads full-size operands) as 16-byte vectors, coalesced along rows. Rows
  // are padded by 8 floats, which keeps the fragment stores free of bank
  // conflicts. Where the tile does not fit in that memory, it goes in passes
  // of whole warp rows.
  const GemmShape &shape = problem.shape;
  const AccumulatorLayout &l = layout;
  int64_t width = shape.outVector;
  int64_t fragsM = l.fragsM(), fragsN = l.fragsN();
  int64_t stride = l.bn + 8;
  int64_t passes =
      stagingPasses(l.bm, l.bn, l.warpsM, l.kGroups, l.stagingBytes);
  int64_t passRows = l.bm / passes, warpRowsPerPass = l.warpsM / passes;
  // One slice per group of warps along k; the readers sum them.
  Value staging =
      aliasShared(l.stagingOffset, {l.kGroups, passRows, stride},
                  b.getF32Type());
  Value g = divi(l.lane, 4), tq = remi(l.lane, 4);
  Value nWarp = muli(l.warpN, idx(l.bn / l.warpsN));
  auto pair = VectorType::get({2}, b.getF32Type());
  auto quad = VectorType::get({4}, b.getF32Type());

  // A row takes perRow threads; where they do not divide the threads (bn
  // 192 in 8-column runs: 24 a row, 10 rows of 256 threads), the rest
  // idle. The fragment epilogue those tiles took instead loaded each
  // full-size input between stores: 42 us against 27 without the inputs
  // (1576 x 3072 x 768 with a GeLU gradient, H200).
  int64_t perRow = l.bn / width, rowsPerRound = l.threads / perRow;
  Value busy = l.threads % perRow ? ltc(l.tid, rowsPerRound * perRow) : Value();
  Value col = muli(remi(l.tid, perRow), idx(width));
  Value n = addi(tileN, col);
  GemmColumns columns = problem.columns(batch, n, width);
  // Loading ahead needs every column inside the result (n a multiple of
  // the tile's), so that a row's loads are in bounds without a guard; a
  // few rounds at once bound the registers it takes (a 16-byte vector per
  // input and round).
  int64_t numFull = epilogue.fullInputs().size();
  bool preload = problem.rowCoords && numFull > 0 && shape.n % l.bn == 0 &&
                 shape.n % width == 0;
  for (int64_t pass = 0; pass < passes; ++pass) {
    // Everyone is done with the pipeline, or with the previous pass.
    l.barrier();
    Value warpRow = subi(l.warpM, idx(pass * warpRowsPerPass));
    ifThen(andi(cmpi(arith::CmpIPredicate::sge, warpRow, idx(0)),
                ltc(warpRow, warpRowsPerPass)),
           [&] {
             Value mWarp = muli(warpRow, idx(l.bm / l.warpsM));
             for (int64_t fm = 0; fm < fragsM; ++fm)
               for (int64_t fn = 0; fn < fragsN; ++fn)
                 for (int64_t half = 0; half < 2; ++half) {
                   int64_t r = (fm * fragsN + fn) * 4 + half * 2;
                   Value row = addi(mWarp, addi(g, idx(fm * 16 + half * 8)));
                   Value c = addi(nWarp, addi(muli(tq, idx(2)), idx(fn * 8)));
                   vector::StoreOp::create(
                       b,
                       vector::FromElementsOp::create(b, pair,
                                                      {acc[r], acc[r + 1]}),
                       staging, ValueRange{l.warpK, row, c},
                       /*nontemporal=*/false, llvm::MaybeAlign(8));
                 }
           });
    l.barrier();
    int64_t rounds = ceilDiv(passRows, rowsPerRound);
    int64_t group = preload ? std::max<int64_t>(1, 8 / numFull) : rounds;
    for (int64_t first = 0; first < rounds; first += group) {
      int64_t last = std::min(rounds, first + group);
      // The full-size inputs of these rounds' rows, loaded before any is
      // stored: the stores may alias them as far as the compiler knows, so
      // loads issued between stores would each wait out the memory latency.
      // Rows past the result load the last row instead (they store nothing).
      SmallVector<GemmRowCoords> coordsOf;
      SmallVector<EpilogueEvaluator::FullInputs> loaded;
      for (int64_t round = first; preload && round < last; ++round) {
        Value row = addi(divi(l.tid, perRow), idx(round * rowsPerRound));
        Value m = mini(addi(tileM, addi(row, idx(pass * passRows))),
                       idx(shape.m - 1));
        coordsOf.push_back(problem.rowCoords(batch, m));
        loaded.push_back(
            epilogue.loadFullInputs(coordsOf.back()(columns), width));
      }
      for (int64_t round = first; round < last; ++round) {
        Value row = addi(divi(l.tid, perRow), idx(round * rowsPerRound));
        Value m = addi(tileM, addi(row, idx(pass * passRows)));
        Value inside = ltc(m, shape.m);
        if ((round + 1) * rowsPerRound > passRows)
          inside = andi(inside, ltc(row, passRows));
        if (busy)
          inside = andi(inside, busy);
        ifThen(inside, [&] {
          SmallVector<Value> values;
          for (int64_t i = 0; i < width; i += 4) {
            Value sum;
            for (int64_t kg = 0; kg < l.kGroups; ++kg) {
              Value v = vector::LoadOp::create(
                  b, quad, staging, ValueRange{idx(kg), row, addi(col, idx(i))},
                  /*nontemporal=*/false, llvm::MaybeAlign(16));
              sum = sum ? arith::AddFOp::create(b, sum, v).getResult() : v;
            }
            for (int64_t lane = 0; lane < 4; ++lane)
              values.push_back(vector::ExtractOp::create(b, sum, lane));
          }
          if (preload) {
            int64_t i = round - first;
            storeGemmResults(coordsOf[i](columns), problem.channelAxis, columns,
                             values, &loaded[i]);
            return;
          }
          GemmRowStore store = problem.epilogue(batch, m);
          ifThen(ltc(n, shape.n), [&] { store(columns, values); });
        });
      }
    }
  }
}

LaunchConfig GemmKernel::finishSplitK(const GemmProblem &problem,
                                      const AccumulatorLayout &layout,
                                      ArrayRef<Value> acc, Value tileM,
                                      Value tileN, Value batch, Value split,
                                      int64_t splits,
                                      const LaunchConfig &mainloop) {
  const GemmShape &shape = problem.shape;
  auto type = MemRefType::get({splits, shape.batch, shape.m, shape.n},
                              b.getF32Type());
  Value parts = addWorkspaceArgument(type);

  // The block's sums, straight from the fragments (n is even, so a pair of
  // columns is inside where its first one is and n is).
  GemmProblem partial;
  partial.shape = shape;
  partial.shape.outVector = shape.n % 2 == 0 ? 2 : 1;
  partial.columns = [](Value, Value n, int64_t width) {
    return GemmColumns{n, width};
  };
  partial.epilogue = [&, this](Value group, Value m) -> GemmRowStore {
    return [&, this, group, m](const GemmColumns &columns,
                               ArrayRef<Value> values) {
      for (auto [i, value] : llvm::enumerate(values))
        memref::StoreOp::create(
            b, value, parts,
            ValueRange{split, group, m,
                       i ? addi(columns.n, idx(i)) : columns.n});
    };
  };
  emitFragmentEpilogue(partial, layout, acc, tileM, tileN, batch);
  ExtraLaunch first = splitOffFirstLaunch("_splitk", mainloop);
  recordExtraLaunches(func, {type}, {first});

  // The reduction: `ways` threads per `width` neighbouring columns of a row
  // (a 16-byte vector at most, inside the run the epilogue may store as
  // one), each adding a contiguous share of the splits with its loads in
  // flight at once; the shares meet in shared memory in a fixed order. One
  // thread per run over 79 splits was bound by the loads' round trips (1.1
  // TB/s from L2, 10.6 of 53 us: ncu on an H200).
  constexpr int64_t kBatch = 16, kThreads = 256;
  int64_t width = std::min<int64_t>(std::max<int64_t>(shape.outVector, 1), 4);
  int64_t chunks = ceilDiv(shape.n, width);
  int64_t total = shape.batch * shape.m * chunks;
  int64_t ways = llvm::PowerOf2Ceil(
      std::min<int64_t>(ceilDiv(splits, kBatch), 8));
  int64_t share = ceilDiv(splits, ways), perBlock = kThreads / ways;
  auto vector = VectorType::get({width}, b.getF32Type());
  Value tid = threadId();
  Value way = divi(tid, perBlock);
  Value local = remi(tid, perBlock);
  Value block = blockId(gpu::Dimension::x);
  Value linear = addi(muli(block, idx(perBlock)), local);
  Value inside = ltc(linear, total);
  // Threads past the end add the last run again (every thread meets the
  // barrier) and store nothing.
  Value at = mini(linear, idx(total - 1));
  Value n = muli(remi(at, chunks), idx(width));
  Value row = divi(at, chunks);
  Value m = remi(row, shape.m);
  Value group = divi(row, shape.m);
  Value firstSplit = muli(way, idx(share));
  Value sum;
  for (int64_t j0 = 0; j0 < share; j0 += kBatch) {
    SmallVector<Value> loaded;
    for (int64_t j = j0; j < std::min(j0 + kBatch, share); ++j) {
      Value s = addi(firstSplit, idx(j));
      Value part = vector::LoadOp::create(
          b, vector, parts,
          ValueRange{mini(s, idx(splits - 1)), group, m, n},
          /*nontemporal=*/false, llvm::MaybeAlign(4 * width));
      // The last way's share may end before `share` splits.
      if (share * ways > splits)
        part = select(ltc(s, splits), part,
                      arith::ConstantOp::create(
                          b, vector, DenseElementsAttr::get(vector, 0.0f)));
      loaded.push_back(part);
    }
    for (Value part : loaded)
      sum = sum ? arith::AddFOp::create(b, sum, part).getResult() : part;
  }
  Value staging;
  if (ways > 1) {
    staging =
        allocShared({ways, perBlock, width}, b.getF32Type(), /*align=*/16);
    vector::StoreOp::create(b, sum, staging, ValueRange{way, local, idx(0)});
    gpu::BarrierOp::create(b);
  }
  ifThen(andi(inside, ltc(way, 1)), [&] {
    Value totalSum = sum;
    if (ways > 1) {
      totalSum = Value();
      for (int64_t w = 0; w < ways; ++w) {
        Value part = vector::LoadOp::create(b, vector, staging,
                                            ValueRange{idx(w), local, idx(0)});
        totalSum = totalSum ? arith::AddFOp::create(b, totalSum, part).getResult()
                            : part;
      }
    }
    SmallVector<Value> sums;
    for (int64_t i = 0; i < width; ++i)
      sums.push_back(vector::ExtractOp::create(b, totalSum, i));
    GemmColumns columns = problem.columns(group, n, width);
    problem.epilogue(group, m)(columns, sums);
  });
  return LaunchConfig{{ceilDiv(total, perBlock), 1, 1}, {kThreads, 1, 1}};
}
