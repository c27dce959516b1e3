//===- CodegenDirect.cpp - One thread per output element -----------------===//
//
// Elementwise chains (16-byte vectors where the shape allows), depthwise and
// other narrow-group convolutions, pooling, resampling, transposes, rotary
// embeddings and the direct attention.
//
//===----------------------------------------------------------------------===//

#include "CodegenImpl.h"

namespace fusec::detail {

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

/// NHWC depthwise convolution (one input channel per output channel), each
/// thread computing `width` consecutive channels of one output pixel so that
/// inputs and outputs move as 16-byte vectors.
LaunchConfig Codegen::emitDepthwiseVector(Conv2dOp op, int64_t width) {
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  ArrayRef<int64_t> xs = shapeOf(op.getInput()), fs = shapeOf(op.getFilter());
  int64_t h = xs[1], w = xs[2], kh = fs[1], kw = fs[2];
  auto pads = op.getPads();
  ArrayRef<int64_t> s = op.getStrides(), d = op.getDilation();
  Value x = argOf.lookup(op.getInput()), filter = argOf.lookup(op.getFilter());
  return perElement(product(outShape) / width, [&](Value group) {
    SmallVector<Value> coords = delinearize(muli(group, idx(width)), outShape);
    Value ih0 = subi(muli(coords[1], idx(s[0])), idx(pads[0]));
    Value iw0 = subi(muli(coords[2], idx(s[1])), idx(pads[2]));
    SmallVector<Value> acc(width, f32(0));
    for (int64_t i = 0; i < kh; ++i) {
      for (int64_t j = 0; j < kw; ++j) {
        Value ih = addi(ih0, idx(i * d[0])), iw = addi(iw0, idx(j * d[1]));
        SmallVector<Value> xv = loadVectorOrZero(
            andi(inRange(ih, h), inRange(iw, w)), x,
            [&] { return SmallVector<Value>{coords[0], ih, iw, coords[3]}; },
            width);
        for (int64_t l = 0; l < width; ++l) {
          Value wv = load(filter, {addi(coords[3], idx(l)), idx(i), idx(j),
                                   idx(0)});
          acc[l] = fma(xv[l], wv, acc[l]);
        }
      }
    }
    if (Value bias = op.getBias())
      for (int64_t l = 0; l < width; ++l)
        acc[l] = addf(acc[l], load(argOf.lookup(bias),
                                   {addi(coords[3], idx(l))}));
    storeVectorResults(coords, width, acc);
  });
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
    // One tap of the window: (c, khi, kwi) index values.
    auto tap = [&](Value c, Value khi, Value kwi, Value acc) {
      Value ih = addi(ih0, muli(khi, idx(d[0])));
      Value iw = addi(iw0, muli(kwi, idx(d[1])));
      Value ic = addi(muli(g, idx(cig)), c);
      Value xv = loadOrZero(andi(inRange(ih, h), inRange(iw, w)), x, [&] {
        return joinNCHW(o.n, ic, ih, iw, layout);
      });
      SmallVector<Value> fi = nhwc ? SmallVector<Value>{o.c, khi, kwi, c}
                                   : SmallVector<Value>{o.c, c, khi, kwi};
      return fma(xv, load(filter, fi), acc);
    };
    Value acc = f32(0);
    if (cig * kh * kw <= 64) {
      // Small windows (depthwise above all) unroll, so that every offset is
      // a constant.
      for (int64_t c = 0; c < cig; ++c)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j)
            acc = tap(idx(c), idx(i), idx(j), acc);
    } else {
      acc = loop(idx(0), idx(cig * kh * kw), idx(1), {acc},
                 [&](Value r, ValueRange args) -> SmallVector<Value> {
                   return {tap(divi(r, kh * kw), remi(divi(r, kw), kh),
                               remi(r, kw), args[0])};
                 })[0];
    }
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


} // namespace fusec::detail
