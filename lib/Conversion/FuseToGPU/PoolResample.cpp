//===- PoolResample.cpp - Pooling and resampling ----------------------------===//
//
// Max and average pooling, global average pooling and upsampling (nearest,
// bilinear): one thread per output element. Their gradients gather: a thread
// per input element sums the output gradients of the windows (or resampled
// pixels) that read it, recomputing the forward's choice (the window's
// maximum, the divisor, the nearest source, the bilinear weights) with the
// forward's own arithmetic. No atomics: the sums are deterministic.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {
class PoolResampleKernel : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

private:
  FailureOr<LaunchConfig> emitBody() override {
    LaunchConfig config =
        llvm::TypeSwitch<Operation *, LaunchConfig>(anchor)
            .Case<MaxPool2dOp, AvgPool2dOp>(
                [&](Operation *op) { return emitPool(op); })
            .Case([&](GlobalAvgPoolOp op) { return emitGlobalAvgPool(op); })
            .Case([&](UpsampleOp op) { return emitUpsample(op); })
            .Case([&](MaxPool2dGradOp op) { return emitMaxPoolGrad(op); })
            .Case([&](AvgPool2dGradOp op) { return emitAvgPoolGrad(op); })
            .Case([&](UpsampleGradOp op) { return emitUpsampleGrad(op); });
    return config;
  }
  LaunchConfig emitMaxPoolGrad(MaxPool2dGradOp op);
  LaunchConfig emitAvgPoolGrad(AvgPool2dGradOp op);
  LaunchConfig emitUpsampleGrad(UpsampleGradOp op);
  /// Calls `body(oh, ow, i, j, valid)` for every pooling window (output
  /// pixel) of extent `kernelSize` that may hold input pixel (`ih`, `iw`),
  /// with the pixel's tap (i, j) in it; `valid` says whether the window
  /// exists and holds it. Loops carry the per-lane sums `acc`.
  SmallVector<Value> forEachWindow(
      Value ih, Value iw, ArrayRef<int64_t> kernelSize,
      ArrayRef<int64_t> strides, std::array<int64_t, 4> pads,
      std::array<int64_t, 2> outHW, ArrayRef<Value> acc,
      function_ref<SmallVector<Value>(Value, Value, Value, Value, Value,
                                      ArrayRef<Value>)>
          body);
  /// The average pool's divisor of the window from (h0, w0): clipped to the
  /// padded input, then (without `includePad`) to the input itself.
  Value windowCount(Value h0, Value w0, ArrayRef<int64_t> kernelSize,
                    int64_t h, int64_t w, std::array<int64_t, 4> pads,
                    bool includePad);
  /// The upsample's source along one axis of `in` -> `out` pixels (`step`
  /// input pixels per output pixel) of output index `dst`: nearest, or the
  /// bilinear pair {lo, hi, frac}.
  Value nearestSource(Value dst, int64_t in, int64_t out, double step);
  std::array<Value, 3> bilinearSource(Value dst, int64_t in, int64_t out,
                                      double step, bool alignCorners);
  Value toF(Value i) {
    return arith::UIToFPOp::create(
        b, b.getF32Type(), arith::IndexCastOp::create(b, indexInt(), i));
  }
  Value toIdx(Value f) {
    return arith::IndexCastOp::create(
        b, b.getIndexType(), arith::FPToSIOp::create(b, indexInt(), f));
  }
  LaunchConfig emitPool(Operation *op);
  LaunchConfig emitGlobalAvgPool(GlobalAvgPoolOp op);
  LaunchConfig emitUpsample(UpsampleOp op);
  LaunchConfig emitBilinear2x(UpsampleOp op, int64_t width);

  /// NHWC outputs whose channels split into 16-byte vectors move a vector
  /// of channels per thread: the window's index math is done once for
  /// them. The vector width, or 0.
  int64_t channelVector(Layout layout, ArrayRef<int64_t> outShape) {
    return layout == Layout::NHWC ? vectorWidth(outShape) : 0;
  }
  /// The `max(width, 1)` channels from `indices()` on (f32), zero where
  /// `inBounds` (when given) is false.
  SmallVector<Value> readChannels(Value memref, Value inBounds,
                                  std::function<SmallVector<Value>()> indices,
                                  int64_t width) {
    if (!inBounds)
      inBounds = arith::ConstantIntOp::create(b, 1, 1);
    if (!width)
      return {loadOrZero(inBounds, memref, indices)};
    return loadVectorOrZero(inBounds, memref, indices, width);
  }
  void storeChannels(ArrayRef<Value> coords, ArrayRef<Value> values,
                     int64_t width) {
    if (!width)
      epilogue.storeResults(coords, values[0]);
    else
      epilogue.storeVectorResults(coords, width, values);
  }
};
} // namespace

std::unique_ptr<KernelBuilder>
fusec::tiling::makePoolResampleKernel(KernelOp kernel,
                                      gpu::GPUModuleOp module,
                                      const TargetDescription &target) {
  return std::make_unique<PoolResampleKernel>(kernel, module, target);
}

LaunchConfig PoolResampleKernel::emitPool(Operation *op) {
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
  int64_t width = channelVector(layout, outShape);
  int64_t step = std::max<int64_t>(width, 1);
  return perElement(product(outShape) / step, [&](Value linear) {
    SmallVector<Value> coords = delinearize(muli(linear, idx(step)), outShape);
    NCHW o = splitNCHW(coords, layout);
    Value h0 = subi(muli(o.h, idx(strides[0])), idx(pads[0]));
    Value w0 = subi(muli(o.w, idx(strides[1])), idx(pads[2]));
    SmallVector<Value> acc(step, isMax ? f32(-INFINITY) : f32(0));
    for (int64_t i = 0; i < kernelSize[0]; ++i) {
      for (int64_t j = 0; j < kernelSize[1]; ++j) {
        Value ih = addi(h0, idx(i)), iw = addi(w0, idx(j));
        Value ok = andi(inRange(ih, h), inRange(iw, w));
        SmallVector<Value> v = readChannels(x, ok, [&] {
          return joinNCHW(o.n, o.c, ih, iw, layout);
        }, width);
        for (int64_t l = 0; l < step; ++l)
          acc[l] = isMax ? maxf(acc[l], select(ok, v[l], f32(-INFINITY)))
                         : addf(acc[l], v[l]);
      }
    }
    if (!isMax) {
      Value countF = windowCount(h0, w0, kernelSize, h, w, pads, includePad);
      for (Value &a : acc)
        a = divf(a, countF);
    }
    storeChannels(coords, acc, width);
  });
}

Value PoolResampleKernel::windowCount(Value h0, Value w0,
                                      ArrayRef<int64_t> kernelSize, int64_t h,
                                      int64_t w, std::array<int64_t, 4> pads,
                                      bool includePad) {
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
  return arith::SIToFPOp::create(
      b, b.getF32Type(), arith::IndexCastOp::create(b, indexInt(), count));
}

LaunchConfig PoolResampleKernel::emitGlobalAvgPool(GlobalAvgPoolOp op) {
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
    epilogue.storeResults(coords, mulf(sum, f32(1.0 / (h * w))));
  });
}

LaunchConfig PoolResampleKernel::emitUpsample(UpsampleOp op) {
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
  int64_t width = channelVector(layout, outShape);
  if (bilinear && !alignCorners && width && outDims[2] == 2 * inDims[2] &&
      outDims[3] == 2 * inDims[3])
    return emitBilinear2x(op, width);
  int64_t lanes = std::max<int64_t>(width, 1);
  return perElement(product(outShape) / lanes, [&](Value linear) {
    SmallVector<Value> coords =
        delinearize(muli(linear, idx(lanes)), outShape);
    NCHW o = splitNCHW(coords, layout);
    std::array<Value, 2> dst = {o.h, o.w};
    auto at = [&](Value hh, Value ww) {
      return readChannels(x, Value(), [&] {
        return joinNCHW(o.n, o.c, hh, ww, layout);
      }, width);
    };
    if (!bilinear) {
      // PyTorch's nearest index, in f32.
      std::array<Value, 2> src;
      for (int i = 0; i < 2; ++i)
        src[i] = nearestSource(dst[i], inDims[2 + i], outDims[2 + i], step[i]);
      storeChannels(coords, at(src[0], src[1]), width);
      return;
    }
    std::array<Value, 2> i0, i1, frac;
    for (int i = 0; i < 2; ++i) {
      auto [lo, hi, f] = bilinearSource(dst[i], inDims[2 + i], outDims[2 + i],
                                        step[i], alignCorners);
      i0[i] = lo;
      i1[i] = hi;
      frac[i] = f;
    }
    SmallVector<Value> a = at(i0[0], i0[1]), bb = at(i0[0], i1[1]),
                       c = at(i1[0], i0[1]), d = at(i1[0], i1[1]);
    SmallVector<Value> values;
    for (int64_t l = 0; l < lanes; ++l) {
      Value top = fma(frac[1], subf(bb[l], a[l]), a[l]);
      Value bottom = fma(frac[1], subf(d[l], c[l]), c[l]);
      values.push_back(fma(frac[0], subf(bottom, top), top));
    }
    storeChannels(coords, values, width);
  });
}

Value PoolResampleKernel::nearestSource(Value dst, int64_t in, int64_t out,
                                        double step) {
  // PyTorch's nearest index, in f32.
  if (out == in)
    return dst;
  if (out == 2 * in)
    return divi(dst, 2);
  return mini(toIdx(math::FloorOp::create(
                  b, mulf(toF(dst), f32(static_cast<float>(step))))),
              idx(in - 1));
}

std::array<Value, 3> PoolResampleKernel::bilinearSource(Value dst, int64_t in,
                                                        int64_t out,
                                                        double step,
                                                        bool alignCorners) {
  Value src;
  if (alignCorners)
    src = out > 1 ? mulf(toF(dst), f32(static_cast<double>(in - 1) / (out - 1)))
                  : f32(0);
  else
    src = maxf(subf(mulf(addf(toF(dst), f32(0.5)), f32(step)), f32(0.5)),
               f32(0));
  Value lo = mini(toIdx(math::FloorOp::create(b, src)), idx(in - 1));
  Value hi = mini(addi(lo, idx(1)), idx(in - 1));
  return {lo, hi, subf(src, toF(lo))};
}

LaunchConfig PoolResampleKernel::emitBilinear2x(UpsampleOp op, int64_t width) {
  // Output pixel (2i + a, 2j + b) blends input rows i - 1 + a and i + a,
  // columns j - 1 + b and j + b (clamped to the image), with weights 1/4
  // and 3/4. A thread computes the 2 x 2 outputs of input pixel (i, j)
  // from the 3 x 3 input vectors around it: 9 loads for 4 outputs instead
  // of 16, and one set of index math.
  ArrayRef<int64_t> inShape = shapeOf(op.getInput());
  int64_t h = inShape[1], w = inShape[2], runs = inShape[3] / width;
  Value x = argOf.lookup(op.getInput());
  return perElement(inShape[0] * h * w * runs, [&](Value t) {
    // Channel runs vary fastest, so a warp's loads and stores are contiguous.
    Value c0 = muli(remi(t, runs), idx(width));
    Value rest = divi(t, runs);
    Value j = remi(rest, w);
    rest = divi(rest, w);
    Value i = remi(rest, h), n = divi(rest, h);
    auto around = [&](Value v, int64_t extent) {
      return std::array<Value, 3>{maxi(subi(v, idx(1)), idx(0)), v,
                                  mini(addi(v, idx(1)), idx(extent - 1))};
    };
    std::array<Value, 3> rows = around(i, h), cols = around(j, w);
    std::array<std::array<SmallVector<Value>, 3>, 3> in;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c)
        in[r][c] = readChannels(x, Value(), [&] {
          return SmallVector<Value>{n, rows[r], cols[c], c0};
        }, width);
    // 1/4 of the outer neighbour and 3/4 of the centre.
    auto blend = [&](Value outer, Value centre) {
      return fma(f32(0.25), outer, mulf(f32(0.75), centre));
    };
    for (int a = 0; a < 2; ++a)
      for (int bo = 0; bo < 2; ++bo) {
        SmallVector<Value> values;
        for (int64_t l = 0; l < width; ++l) {
          auto column = [&](int c) {
            return blend(in[2 * a][c][l], in[1][c][l]);
          };
          values.push_back(blend(column(2 * bo), column(1)));
        }
        storeChannels({n, addi(muli(i, idx(2)), idx(a)),
                       addi(muli(j, idx(2)), idx(bo)), c0},
                      values, width);
      }
  });
}

//===----------------------------------------------------------------------===//
// Gradients: a thread per input element (or NHWC vector of channels)
//===----------------------------------------------------------------------===//

SmallVector<Value> PoolResampleKernel::forEachWindow(
    Value ih, Value iw, ArrayRef<int64_t> kernelSize, ArrayRef<int64_t> strides,
    std::array<int64_t, 4> pads, std::array<int64_t, 2> outHW,
    ArrayRef<Value> acc,
    function_ref<SmallVector<Value>(Value, Value, Value, Value, Value,
                                    ArrayRef<Value>)>
        body) {
  // Window oh starts at oh * s - pad, so it holds ih for
  // oh in (ih + pad - k, ih + pad] / s: the last is (ih + pad) / s (no
  // negative division), the others at most ceil(k / s) - 1 before it.
  std::array<Value, 2> last = {divi(addi(ih, idx(pads[0])), strides[0]),
                               divi(addi(iw, idx(pads[2])), strides[1])};
  std::array<Value, 2> pos = {ih, iw};
  std::array<int64_t, 2> padBefore = {pads[0], pads[2]};
  auto along = [&](int a, Value back) {
    Value o = subi(last[a], back);
    // The pixel's tap in window o.
    Value tap = subi(addi(pos[a], idx(padBefore[a])), muli(o, idx(strides[a])));
    Value ok = andi(inRange(o, outHW[a]), ltc(tap, kernelSize[a]));
    return std::tuple(o, tap, ok);
  };
  return loop(
      idx(0), idx(ceilDiv(kernelSize[0], strides[0])), idx(1), acc,
      [&](Value a, ValueRange accH) -> SmallVector<Value> {
        auto [oh, i, okH] = along(0, a);
        return loop(idx(0), idx(ceilDiv(kernelSize[1], strides[1])), idx(1),
                    accH,
                    [&](Value c, ValueRange accW) -> SmallVector<Value> {
                      auto [ow, j, okW] = along(1, c);
                      return body(oh, ow, i, j, andi(okH, okW),
                                  SmallVector<Value>(accW));
                    });
      });
}

LaunchConfig PoolResampleKernel::emitMaxPoolGrad(MaxPool2dGradOp op) {
  // The window's winner is recomputed as PyTorch picks it: the first
  // maximum row by row (strictly greater replaces), a NaN always replacing;
  // before any, the window's first pixel inside the input.
  Layout layout = op.getLayout();
  ArrayRef<int64_t> shape = shapeOf(op.getResult());
  auto [n, c, h, w] = dimsNCHW(shape, layout);
  (void)n;
  (void)c;
  auto outDims = dimsNCHW(shapeOf(op.getOutputGrad()), layout);
  ArrayRef<int64_t> kernelSize = op.getKernel(),
                    strides = op.getEffectiveStrides();
  auto pads = op.getPads();
  Value x = argOf.lookup(op.getInput()), dy = argOf.lookup(op.getOutputGrad());
  int64_t width = channelVector(layout, shape);
  int64_t lanes = std::max<int64_t>(width, 1);
  return perElement(product(shape) / lanes, [&](Value linear) {
    SmallVector<Value> coords = delinearize(muli(linear, idx(lanes)), shape);
    NCHW p = splitNCHW(coords, layout);
    auto eq = [&](Value a, Value bb) {
      return cmpi(arith::CmpIPredicate::eq, a, bb);
    };
    SmallVector<Value> sums = forEachWindow(
        p.h, p.w, kernelSize, strides, pads, {outDims[2], outDims[3]},
        SmallVector<Value>(lanes, f32(0)),
        [&](Value oh, Value ow, Value i, Value j, Value valid,
            ArrayRef<Value> acc) -> SmallVector<Value> {
          Value h0 = subi(muli(oh, idx(strides[0])), idx(pads[0]));
          Value w0 = subi(muli(ow, idx(strides[1])), idx(pads[2]));
          // Before any maximum: the window's first pixel inside the input.
          Value first = andi(eq(p.h, maxi(h0, idx(0))), eq(p.w, maxi(w0, idx(0))));
          SmallVector<Value> best(lanes, f32(-INFINITY)), mine(lanes, first);
          for (int64_t ti = 0; ti < kernelSize[0]; ++ti) {
            for (int64_t tj = 0; tj < kernelSize[1]; ++tj) {
              Value ih = addi(h0, idx(ti)), iw = addi(w0, idx(tj));
              Value ok = andi(valid, andi(inRange(ih, h), inRange(iw, w)));
              SmallVector<Value> v = readChannels(x, ok, [&] {
                return joinNCHW(p.n, p.c, ih, iw, layout);
              }, width);
              Value here = andi(eq(i, idx(ti)), eq(j, idx(tj)));
              for (int64_t l = 0; l < lanes; ++l) {
                Value take = arith::OrIOp::create(
                    b,
                    arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, v[l],
                                          best[l]),
                    arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, v[l],
                                          v[l]));
                take = andi(ok, take);
                best[l] = select(take, v[l], best[l]);
                mine[l] = select(take, here, mine[l]);
              }
            }
          }
          SmallVector<Value> g = readChannels(dy, valid, [&] {
            return joinNCHW(p.n, p.c, oh, ow, layout);
          }, width);
          SmallVector<Value> next;
          for (int64_t l = 0; l < lanes; ++l)
            next.push_back(
                addf(acc[l], select(andi(valid, mine[l]), g[l], f32(0))));
          return next;
        });
    storeChannels(coords, sums, width);
  });
}

LaunchConfig PoolResampleKernel::emitAvgPoolGrad(AvgPool2dGradOp op) {
  Layout layout = op.getLayout();
  ArrayRef<int64_t> shape = shapeOf(op.getResult());
  auto [n, c, h, w] = dimsNCHW(shape, layout);
  (void)n;
  (void)c;
  auto outDims = dimsNCHW(shapeOf(op.getOutputGrad()), layout);
  ArrayRef<int64_t> kernelSize = op.getKernel(),
                    strides = op.getEffectiveStrides();
  auto pads = op.getPads();
  bool includePad = op.getCountIncludePad();
  Value dy = argOf.lookup(op.getOutputGrad());
  int64_t width = channelVector(layout, shape);
  int64_t lanes = std::max<int64_t>(width, 1);
  return perElement(product(shape) / lanes, [&](Value linear) {
    SmallVector<Value> coords = delinearize(muli(linear, idx(lanes)), shape);
    NCHW p = splitNCHW(coords, layout);
    SmallVector<Value> sums = forEachWindow(
        p.h, p.w, kernelSize, strides, pads, {outDims[2], outDims[3]},
        SmallVector<Value>(lanes, f32(0)),
        [&](Value oh, Value ow, Value, Value, Value valid,
            ArrayRef<Value> acc) -> SmallVector<Value> {
          Value h0 = subi(muli(oh, idx(strides[0])), idx(pads[0]));
          Value w0 = subi(muli(ow, idx(strides[1])), idx(pads[2]));
          Value count =
              windowCount(h0, w0, kernelSize, h, w, pads, includePad);
          SmallVector<Value> g = readChannels(dy, valid, [&] {
            return joinNCHW(p.n, p.c, oh, ow, layout);
          }, width);
          // Candidates outside the output read no gradient, and their
          // window may hold no input pixel (count 0 without padding): 0/0.
          SmallVector<Value> next;
          for (int64_t l = 0; l < lanes; ++l)
            next.push_back(addf(
                acc[l], select(valid, divf(g[l], count), f32(0))));
          return next;
        });
    storeChannels(coords, sums, width);
  });
}

LaunchConfig PoolResampleKernel::emitUpsampleGrad(UpsampleGradOp op) {
  // Along each axis, the output pixels that read input pixel i lie in a
  // window around i * out / in; each candidate's weight is recomputed as the
  // forward computes it (1 or 0 for nearest; 1 - frac on its low source,
  // frac on its high one, for bilinear) and zero-weight ones are not read.
  // The weights are separable: a candidate pixel's is the product.
  Layout layout = op.getLayout();
  ArrayRef<int64_t> shape = shapeOf(op.getResult());
  auto inDims = dimsNCHW(shape, layout);
  auto outDims = dimsNCHW(shapeOf(op.getOutputGrad()), layout);
  bool bilinear = op.getMode() == UpsampleMode::Bilinear;
  bool alignCorners = op.getAlignCorners();
  std::array<double, 2> step, ratio;
  for (int i = 0; i < 2; ++i) {
    step[i] = op.getScale() ? 1.0 / (*op.getScale())[i]
                            : static_cast<double>(inDims[2 + i]) /
                                  static_cast<double>(outDims[2 + i]);
    // Output pixels per input pixel, as the source index moves.
    ratio[i] = bilinear && alignCorners
                   ? (inDims[2 + i] > 1
                          ? static_cast<double>(outDims[2 + i] - 1) /
                                static_cast<double>(inDims[2 + i] - 1)
                          : static_cast<double>(outDims[2 + i]))
                   : 1.0 / step[i];
  }
  Value dy = argOf.lookup(op.getOutputGrad());
  int64_t width = channelVector(layout, shape);
  int64_t lanes = std::max<int64_t>(width, 1);
  // The first candidate and how many, along axis `a` for input index `i`.
  auto candidates = [&](int a, Value i) -> std::pair<Value, int64_t> {
    int64_t in = inDims[2 + a], out = outDims[2 + a];
    double r = ratio[a];
    if (!bilinear && out == in)
      return {i, 1};
    if (!bilinear && out == 2 * in)
      return {muli(i, idx(2)), 2};
    if (bilinear && alignCorners && in == 1)
      return {idx(0), out};
    // Nearest: dst * step in [i, i + 1); bilinear: the low source in
    // [i - 1, i], dst in [(i - 1) r, (i + 1) r) (shifted by half a pixel
    // without align_corners). Two pixels of margin for rounding.
    double shift = bilinear ? (alignCorners ? -r : -0.5 * r - 0.5) : 0.0;
    double span = bilinear ? 2 * r : r;
    Value lo = toIdx(math::FloorOp::create(b, fma(toF(i), f32(r), f32(shift))));
    return {subi(lo, idx(2)), static_cast<int64_t>(std::ceil(span)) + 5};
  };
  // The weight of input index `i` in output index `dst` along axis `a`.
  auto weight = [&](int a, Value i, Value dst) -> Value {
    int64_t in = inDims[2 + a], out = outDims[2 + a];
    Value ok = inRange(dst, out);
    // Candidates outside the image are read at 0 (and weigh nothing).
    Value at = select(ok, dst, idx(0));
    auto eq = [&](Value x, Value y) {
      return cmpi(arith::CmpIPredicate::eq, x, y);
    };
    Value wt;
    if (!bilinear) {
      wt = select(eq(nearestSource(at, in, out, step[a]), i), f32(1), f32(0));
    } else {
      auto [lo, hi, frac] =
          bilinearSource(at, in, out, step[a], alignCorners);
      wt = addf(select(eq(lo, i), subf(f32(1), frac), f32(0)),
                select(eq(hi, i), frac, f32(0)));
    }
    return select(ok, wt, f32(0));
  };
  return perElement(product(shape) / lanes, [&](Value linear) {
    SmallVector<Value> coords = delinearize(muli(linear, idx(lanes)), shape);
    NCHW p = splitNCHW(coords, layout);
    auto [loH, countH] = candidates(0, p.h);
    auto [loW, countW] = candidates(1, p.w);
    SmallVector<Value> sums = loop(
        idx(0), idx(countH), idx(1), SmallVector<Value>(lanes, f32(0)),
        [&](Value a, ValueRange accH) -> SmallVector<Value> {
          Value oh = addi(loH, a);
          Value wH = weight(0, p.h, oh);
          return loop(
              idx(0), idx(countW), idx(1), accH,
              [&](Value c, ValueRange accW) -> SmallVector<Value> {
                Value ow = addi(loW, c);
                Value wt = mulf(wH, weight(1, p.w, ow));
                Value used = arith::CmpFOp::create(
                    b, arith::CmpFPredicate::ONE, wt, f32(0));
                SmallVector<Value> g = readChannels(dy, used, [&] {
                  return joinNCHW(p.n, p.c, oh, ow, layout);
                }, width);
                SmallVector<Value> next;
                for (int64_t l = 0; l < lanes; ++l)
                  next.push_back(fma(wt, g[l], accW[l]));
                return next;
              });
        });
    storeChannels(coords, sums, width);
  });
}
