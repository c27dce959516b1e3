//===- PoolResample.cpp - Pooling and resampling ----------------------------===//
//
// Max and average pooling, global average pooling and upsampling (nearest,
// bilinear): one thread per output element.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

#include "llvm/ADT/TypeSwitch.h"

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
    storeResults(coords, mulf(sum, f32(1.0 / (h * w))));
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
