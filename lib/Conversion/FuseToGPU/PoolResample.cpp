//===- PoolResample.cpp - Pooling and resampling ----------------------------===//
//
// Max and average pooling, global average pooling and upsampling (nearest,
// bilinear): one thread per output element.
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
            .Case([&](UpsampleOp op) { return emitUpsample(op); });
    return config;
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
          b, b.getF32Type(), arith::IndexCastOp::create(b, indexInt(), count));
      for (Value &a : acc)
        a = divf(a, countF);
    }
    storeChannels(coords, acc, width);
  });
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
  auto toF = [&](Value i) {
    return arith::UIToFPOp::create(
        b, b.getF32Type(), arith::IndexCastOp::create(b, indexInt(), i));
  };
  auto toIdx = [&](Value f) {
    return arith::IndexCastOp::create(
        b, b.getIndexType(), arith::FPToSIOp::create(b, indexInt(), f));
  };
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
      storeChannels(coords, at(src[0], src[1]), width);
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
