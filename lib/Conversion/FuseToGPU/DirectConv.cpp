//===- DirectConv.cpp - Convolutions with narrow groups ---------------------===//
//
// Depthwise and other grouped convolutions whose groups are too narrow for
// a GEMM tile: one thread per output element, the window unrolled when
// small; NHWC depthwise with channels in 16-byte vectors moves inputs and
// outputs as vectors, a thread computing 4 neighbouring pixels of one vector
// of channels (filter taps and input columns loaded once).
//
//===----------------------------------------------------------------------===//

#include "Families.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {
class DirectConvKernel : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

private:
  FailureOr<LaunchConfig> emitBody() override {
    if (auto transpose = dyn_cast<ConvTranspose2dOp>(anchor))
      return emitDirectConv(transpose);
    auto op = cast<Conv2dOp>(anchor);
    int64_t width = vectorWidth(shapeOf(op.getResult()));
    // An input read through a concat goes element by element.
    if (isVectorDepthwise(op, width) && argOf.contains(op.getInput()))
      return emitDepthwiseVector(op, width);
    return emitDirectConv(op);
  }
  LaunchConfig emitDepthwiseVector(Conv2dOp op, int64_t width);
  /// Output pixels along W per thread in emitDepthwiseVector. A 2 x 4 patch
  /// (fewer L2 reads per output, 140 registers) measured 0.082 ms against
  /// 0.074 ms for 1 x 4 (80 registers) on MobileNetV2's 112x112x96 layer
  /// (H100): occupancy fell from 3 blocks per SM to 1.
  static constexpr int64_t kPixelsPerThread = 4;
  /// Output rows whose threads are adjacent in the grid.
  static constexpr int64_t kRowsTogether = 4;
  /// A conv2d, or a conv_transpose2d: its output gathers the input pixels
  /// whose strided windows cover it, the filter's channel axes exchanged.
  template <typename ConvLikeOp> LaunchConfig emitDirectConv(ConvLikeOp op);

  /// An NHWC depthwise convolution whose channels split into 16-byte
  /// vectors (8 16-bit values or 4 f32). With one pixel per thread, f32
  /// vectors measured slower than scalars (bench/results/2026-11-21-h200-
  /// 0b8b9b3); with 4 pixels per thread they take MobileNetV2's 112x112x96
  /// f32 layer from 0.223 to 0.122 ms (H100, fusec-runner).
  static bool isVectorDepthwise(Conv2dOp op, int64_t width) {
    auto filter = cast<RankedTensorType>(op.getFilter().getType());
    int64_t channels = filter.getDimSize(0);
    return width >= 4 && op.getLayout() == Layout::NHWC &&
           op.getGroups() == channels && filter.getDimSize(3) == 1 &&
           channels % width == 0;
  }
};
} // namespace

std::unique_ptr<KernelBuilder>
fusec::tiling::makeDirectConvKernel(KernelOp kernel, gpu::GPUModuleOp module,
                                    const TargetDescription &target) {
  return std::make_unique<DirectConvKernel>(kernel, module, target);
}

LaunchConfig DirectConvKernel::emitDepthwiseVector(Conv2dOp op, int64_t width) {
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  ArrayRef<int64_t> xs = shapeOf(op.getInput()), fs = shapeOf(op.getFilter());
  int64_t h = xs[1], w = xs[2], kh = fs[1], kw = fs[2];
  auto pads = op.getPads();
  ArrayRef<int64_t> s = op.getStrides(), d = op.getDilation();
  Value x = argOf.lookup(op.getInput()), filter = argOf.lookup(op.getFilter());
  // A thread computes `tw` neighbouring output pixels of one run of `width`
  // channels: the filter taps, the per-channel epilogue values and the
  // input columns the pixels share are loaded once.
  int64_t ho = outShape[1], wo = outShape[2];
  int64_t tw = std::min(kPixelsPerThread, wo);
  int64_t wBlocks = ceilDiv(wo, tw), runs = outShape[3] / width;
  int64_t span = (tw - 1) * s[1] + (kw - 1) * d[1] + 1;
  // Threads of neighbouring output rows run side by side, so that the input
  // rows they share are read from L1 rather than once per row from L2.
  int64_t rt = std::min(kRowsTogether, ho), rowTiles = ceilDiv(ho, rt);
  int64_t total = outShape[0] * rowTiles * rt * wBlocks * runs;
  return perElement(total, [&](Value t) {
    // Channel runs vary fastest, so a warp's loads and stores are contiguous.
    Value c0 = muli(remi(t, runs), idx(width));
    Value rest = divi(t, runs);
    Value rowInTile = remi(rest, rt);
    rest = divi(rest, rt);
    Value wo0 = muli(remi(rest, wBlocks), idx(tw));
    rest = divi(rest, wBlocks);
    Value row = addi(muli(remi(rest, rowTiles), idx(rt)), rowInTile);
    Value n = divi(rest, rowTiles);
    // Rows past the last compute the last again and store nothing.
    Value oh = ho % rt ? mini(row, idx(ho - 1)) : row;
    SmallVector<SmallVector<Value>> taps;
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        SmallVector<Value> lanes;
        for (int64_t l = 0; l < width; ++l)
          lanes.push_back(load(filter, {addi(c0, idx(l)), idx(i), idx(j),
                                        idx(0)}));
        taps.push_back(lanes);
      }
    SmallVector<llvm::DenseMap<Value, Value>> values;
    for (int64_t l = 0; l < width; ++l)
      values.push_back(epilogue.evalChannel(3, addi(c0, idx(l))));
    Value ih0 = subi(muli(oh, idx(s[0])), idx(pads[0]));
    Value iw0 = subi(muli(wo0, idx(s[1])), idx(pads[2]));
    SmallVector<SmallVector<Value>> acc(tw, SmallVector<Value>(width, f32(0)));
    for (int64_t i = 0; i < kh; ++i) {
      Value ih = addi(ih0, idx(i * d[0]));
      Value rowOk = inRange(ih, h);
      for (int64_t col = 0; col < span; ++col) {
        Value iw = addi(iw0, idx(col));
        SmallVector<Value> xv = loadVectorOrZero(
            andi(rowOk, inRange(iw, w)), x,
            [&] { return SmallVector<Value>{n, ih, iw, c0}; }, width);
        for (int64_t p = 0; p < tw; ++p)
          for (int64_t j = 0; j < kw; ++j)
            if (p * s[1] + j * d[1] == col)
              for (int64_t l = 0; l < width; ++l)
                acc[p][l] = fma(xv[l], taps[i * kw + j][l], acc[p][l]);
      }
    }
    if (Value bias = op.getBias())
      for (int64_t l = 0; l < width; ++l) {
        Value bv = load(argOf.lookup(bias), {addi(c0, idx(l))});
        for (int64_t p = 0; p < tw; ++p)
          acc[p][l] = addf(acc[p][l], bv);
      }
    EpilogueEvaluator::ChannelScope channels(epilogue, 3, values);
    for (int64_t p = 0; p < tw; ++p) {
      Value ow = addi(wo0, idx(p));
      auto store = [&] {
        epilogue.storeVectorResults({n, oh, ow, c0}, width, acc[p]);
      };
      Value ok = wo % tw == 0 ? Value() : ltc(ow, wo);
      if (ho % rt)
        ok = ok ? andi(ok, ltc(row, ho)) : ltc(row, ho);
      if (ok)
        ifThen(ok, store);
      else
        store();
    }
  });
}

template <typename ConvLikeOp>
LaunchConfig DirectConvKernel::emitDirectConv(ConvLikeOp op) {
  constexpr bool transpose = std::is_same_v<ConvLikeOp, ConvTranspose2dOp>;
  Layout layout = op.getLayout();
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  auto inDims = dimsNCHW(shapeOf(op.getInput()), layout);
  int64_t ci = inDims[1], h = inDims[2], w = inDims[3];
  int64_t co = dimsNCHW(outShape, layout)[1];
  ArrayRef<int64_t> fs = shapeOf(op.getFilter());
  // A transpose's input pixel under a tap is (t + pad - tap) / stride where
  // the stride divides it.
  auto source = [&](Value t, int64_t stride,
                    int64_t extent) -> std::pair<Value, Value> {
    if (stride == 1)
      return {t, inRange(t, extent)};
    Value i = divi(t, stride);
    Value ok = andi(cmpi(arith::CmpIPredicate::sge, t, idx(0)),
                    cmpi(arith::CmpIPredicate::eq, remi(t, stride), idx(0)));
    return {i, andi(ok, ltc(i, extent))};
  };
  bool nhwc = layout == Layout::NHWC;
  int64_t kh = nhwc ? fs[1] : fs[2], kw = nhwc ? fs[2] : fs[3];
  int64_t groups = op.getGroups(), cig = ci / groups, cog = co / groups;
  auto pads = op.getPads();
  ArrayRef<int64_t> s = op.getStrides(), d = op.getDilation();
  // Null when the input is read through a concat (U-Net skip connections).
  Value x = argOf.lookup(op.getInput()), filter = argOf.lookup(op.getFilter());
  return perElement(product(outShape), [&](Value linear) {
    SmallVector<Value> coords = delinearize(linear, outShape);
    NCHW o = splitNCHW(coords, layout);
    Value g = divi(o.c, cog);
    Value ih0 = transpose ? addi(o.h, idx(pads[0]))
                          : subi(muli(o.h, idx(s[0])), idx(pads[0]));
    Value iw0 = transpose ? addi(o.w, idx(pads[2]))
                          : subi(muli(o.w, idx(s[1])), idx(pads[2]));
    // One tap of the window: (c, khi, kwi) index values.
    auto tap = [&](Value c, Value khi, Value kwi, Value acc) {
      Value ih, iw, inside;
      if constexpr (transpose) {
        auto [sh, hOk] = source(subi(ih0, muli(khi, idx(d[0]))), s[0], h);
        auto [sw, wOk] = source(subi(iw0, muli(kwi, idx(d[1]))), s[1], w);
        ih = sh;
        iw = sw;
        inside = andi(hOk, wOk);
      } else {
        ih = addi(ih0, muli(khi, idx(d[0])));
        iw = addi(iw0, muli(kwi, idx(d[1])));
      }
      Value ic = addi(muli(g, idx(cig)), c);
      auto at = [&] { return joinNCHW(o.n, ic, ih, iw, layout); };
      if constexpr (!transpose)
        inside = andi(inRange(ih, h), inRange(iw, w));
      Value xv =
          x ? loadOrZero(inside, x, at)
            : ifElse(
                  inside,
                  [&] { return views.readThroughViews(op.getInput(), at()); },
                  [&] { return f32(0.0); });
      SmallVector<Value> fi = nhwc ? SmallVector<Value>{o.c, khi, kwi, c}
                                   : SmallVector<Value>{o.c, c, khi, kwi};
      if constexpr (transpose) {
        // [Ci, kh, kw, Co/groups] or [Ci, Co/groups, kh, kw].
        Value oc = remi(o.c, cog);
        fi = nhwc ? SmallVector<Value>{ic, khi, kwi, oc}
                  : SmallVector<Value>{ic, oc, khi, kwi};
      }
      return fma(xv, load(filter, fi), acc);
    };
    Value acc = f32(0);
    // A strided transpose's window lands on an input pixel at every
    // stride-th tap only, those from (t + pad) mod stride on: walk them
    // alone, channels innermost. Every tap with its divisions made 34 ms
    // of the ResNet-50 stem's data gradient on an H200 (bench/results).
    bool strideTaps = transpose && d[0] == 1 && d[1] == 1 &&
                      (s[0] > 1 || s[1] > 1) && cig * kh * kw > 64;
    if (strideTaps) {
      auto body = [&](Value khi, Value acc0) {
        return loop(remi(iw0, s[1]), idx(kw), idx(s[1]), {acc0},
                    [&](Value kwi, ValueRange a) -> SmallVector<Value> {
                      return loop(idx(0), idx(cig), idx(1), {a[0]},
                                  [&](Value c, ValueRange b)
                                      -> SmallVector<Value> {
                                    return {tap(c, khi, kwi, b[0])};
                                  });
                    })[0];
      };
      acc = loop(remi(ih0, s[0]), idx(kh), idx(s[0]), {acc},
                 [&](Value khi, ValueRange a) -> SmallVector<Value> {
                   return {body(khi, a[0])};
                 })[0];
    } else if (cig * kh * kw <= 64) {
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
    epilogue.storeResults(coords, acc);
  });
}
