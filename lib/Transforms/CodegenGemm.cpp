//===- CodegenGemm.cpp - The shared-memory tiled GEMM --------------------===//
//
// Convolution (implicit GEMM), linear and matmul on one tiled kernel: two
// shared-memory buffers, register tiles read as 16-byte vectors.
//
//===----------------------------------------------------------------------===//

#include "CodegenImpl.h"

namespace fusec::detail {

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

  // Each thread loads items of its operand tiles: runs of `width`
  // consecutive k (one vector), or single elements. Consecutive threads take
  // consecutive k where k is contiguous in memory.
  struct Operand {
    Value tile;
    int64_t extent, width, items, perThread;
    bool kContiguous;
  };
  auto operand = [&](Value tile, int64_t extent, bool kContiguous,
                     int64_t width) {
    if (!kContiguous || t.bk % width != 0)
      width = 1;
    int64_t items = (t.bk / width) * extent;
    return Operand{tile, extent, width, items, ceilDiv(items, threads),
                   kContiguous};
  };
  Operand opA = operand(aTile, t.bm, spec.aKContiguous, spec.aVector);
  Operand opB = operand(bTile, t.bn, spec.bKContiguous, spec.bVector);
  // The (k, m) or (k, n) tile position of the r-th item a thread loads.
  auto itemPos = [&](const Operand &op, int64_t r) {
    Value e = addi(tid, idx(r * threads));
    int64_t runs = t.bk / op.width;
    if (op.kContiguous)
      return std::pair(muli(remi(e, runs), idx(op.width)), divi(e, runs));
    return std::pair(divi(e, op.extent), remi(e, op.extent));
  };
  auto loadTiles = [&](Value k0) {
    SmallVector<Value> regs;
    for (int64_t r = 0; r < opA.perThread; ++r) {
      auto [k, m] = itemPos(opA, r);
      if (opA.width > 1)
        llvm::append_range(regs,
                           spec.loadAVec(batch, addi(tileM, m), addi(k0, k)));
      else
        regs.push_back(spec.loadA(batch, addi(tileM, m), addi(k0, k)));
    }
    for (int64_t r = 0; r < opB.perThread; ++r) {
      auto [k, n] = itemPos(opB, r);
      if (opB.width > 1)
        llvm::append_range(regs,
                           spec.loadBVec(batch, addi(k0, k), addi(tileN, n)));
      else
        regs.push_back(spec.loadB(batch, addi(k0, k), addi(tileN, n)));
    }
    return regs;
  };
  auto storeTiles = [&](ArrayRef<Value> regs, Value buf) {
    size_t next = 0;
    for (const Operand &op : {opA, opB}) {
      for (int64_t r = 0; r < op.perThread; ++r) {
        auto [k, o] = itemPos(op, r);
        ArrayRef<Value> values = regs.slice(next, op.width);
        next += op.width;
        ifThen(ltc(addi(tid, idx(r * threads)), op.items), [&] {
          for (int64_t i = 0; i < op.width; ++i)
            memref::StoreOp::create(b, values[i], op.tile,
                                    ValueRange{buf, addi(k, idx(i)), o});
        });
      }
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
  // Where A(g, m, k) lives in the input, and whether it is inside it (not
  // padding, not past the tile's edge); likewise B(g, k, n) in the filter.
  auto inputAt = [&](Value g, Value m, Value k) {
    SmallVector<Value> p = delinearize(m, {n, ho, wo});
    Value c, khi, kwi;
    std::tie(c, khi, kwi) = splitK(k);
    Value ih = addi(subi(muli(p[1], idx(s[0])), idx(pads[0])),
                    muli(khi, idx(d[0])));
    Value iw = addi(subi(muli(p[2], idx(s[1])), idx(pads[2])),
                    muli(kwi, idx(d[1])));
    Value ok = andi(andi(ltc(m, spec.m), ltc(k, kTotal)),
                    andi(inRange(ih, h), inRange(iw, w)));
    // The indices are built where the guarded load is.
    std::function<SmallVector<Value>()> at = [=] {
      return joinNCHW(p[0], addi(muli(g, idx(cig)), c), ih, iw, layout);
    };
    return std::pair(ok, at);
  };
  auto filterAt = [&](Value g, Value k, Value nn) {
    Value c, khi, kwi;
    std::tie(c, khi, kwi) = splitK(k);
    Value ok = andi(ltc(k, kTotal), ltc(nn, cog));
    std::function<SmallVector<Value>()> at = [=]() -> SmallVector<Value> {
      Value o = addi(muli(g, idx(cog)), nn);
      if (nhwc)
        return {o, khi, kwi, c};
      return {o, c, khi, kwi};
    };
    return std::pair(ok, at);
  };
  spec.loadA = [&](Value g, Value m, Value k) {
    auto [ok, at] = inputAt(g, m, k);
    return loadOrZero(ok, x, at);
  };
  spec.loadB = [&](Value g, Value k, Value nn) {
    auto [ok, at] = filterAt(g, k, nn);
    return loadOrZero(ok, filter, at);
  };
  // NHWC runs of input channels (and the filter's matching runs) are
  // contiguous; they are aligned when the channel counts are multiples of
  // the vector width.
  int64_t width = 128 / cast<RankedTensorType>(op.getInput().getType())
                            .getElementTypeBitWidth();
  if (nhwc && cig % width == 0 && ci % width == 0) {
    spec.aVector = spec.bVector = width;
    spec.loadAVec = [&, width](Value g, Value m, Value k0) {
      auto [ok, at] = inputAt(g, m, k0);
      return loadVectorOrZero(ok, x, at, width);
    };
    spec.loadBVec = [&, width](Value g, Value k0, Value nn) {
      auto [ok, at] = filterAt(g, k0, nn);
      return loadVectorOrZero(ok, filter, at, width);
    };
  }
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
  int64_t width = 128 / cast<RankedTensorType>(op.getInput().getType())
                            .getElementTypeBitWidth();
  if (k % width == 0) {
    spec.aVector = spec.bVector = width;
    spec.loadAVec = [&, width](Value, Value mi, Value k0) {
      return loadVectorOrZero(
          andi(ltc(mi, m), ltc(k0, k)), x,
          [&] {
            SmallVector<Value> c = delinearize(mi, lead);
            c.push_back(k0);
            return c;
          },
          width);
    };
    spec.loadBVec = [&, width](Value, Value k0, Value ni) {
      return loadVectorOrZero(
          andi(ltc(k0, k), ltc(ni, n)), weight,
          [&] { return SmallVector<Value>{ni, k0}; }, width);
    };
  }
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
  int64_t width = 128 / cast<RankedTensorType>(op.getLhs().getType())
                            .getElementTypeBitWidth();
  if (k % width == 0) {
    spec.aVector = spec.bVector = width;
    spec.loadAVec = [&, width](Value bi, Value mi, Value k0) {
      return loadVectorOrZero(andi(ltc(mi, m), ltc(k0, k)), lhs,
                              [&] { return operandIndex(bi, ls, mi, k0); },
                              width);
    };
    spec.loadBVec = [&, width](Value bi, Value k0, Value ni) {
      return loadVectorOrZero(andi(ltc(k0, k), ltc(ni, n)), rhs,
                              [&] { return operandIndex(bi, rs, ni, k0); },
                              width);
    };
  }
  spec.epilogue = [&](Value bi, Value mi, Value ni, Value acc) {
    SmallVector<Value> c = delinearize(bi, batchShape);
    c.push_back(mi);
    c.push_back(ni);
    storeResults(c, acc);
  };
  return emitGemm(spec);
}


} // namespace fusec::detail
