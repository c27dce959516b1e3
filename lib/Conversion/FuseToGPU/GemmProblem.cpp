//===- GemmProblem.cpp - Convolution, linear and matmul as GEMMs ----------===//
//
// The address-level description of each GEMM anchor (Gemm.h). Convolution
// is an implicit GEMM per group: m runs over output pixels (n, ho, wo), n
// over the group's output channels, k over the filter's contiguous
// dimensions ((kh, kw, ci) for OHWI, (ci, kh, kw) for OIHW).
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec::tiling;

/// A grouped convolution whose groups are too narrow to fill a GEMM tile
/// (depthwise above all) runs as a direct convolution instead.
static bool hasWideGroups(Conv2dOp op) {
  int64_t co = cast<RankedTensorType>(op.getFilter().getType()).getDimSize(0);
  return co / op.getGroups() >= 16;
}

bool fusec::tiling::isGemmAnchor(Operation *anchor) {
  if (auto conv = dyn_cast<Conv2dOp>(anchor))
    return hasWideGroups(conv);
  // A transpose's filter is [Ci, kh, kw, Co/groups] or [Ci, Co/groups, kh,
  // kw]: the same rule on its output channels per group.
  if (auto conv = dyn_cast<ConvTranspose2dOp>(anchor)) {
    ArrayRef<int64_t> fs = shapeOf(conv.getFilter());
    return (conv.getLayout() == Layout::NHWC ? fs[3] : fs[1]) >= 16;
  }
  // A filter gradient reduces over every pixel of the batch, a GEMM even
  // for depthwise filters (m = 1 output channel per group).
  return isa<Conv2dFilterGradOp, LinearOp, MatmulOp>(anchor);
}

/// The widest aligned run of output columns: a power of two up to `width`
/// that divides every extent of `extents`.
static int64_t widestRun(ArrayRef<int64_t> extents, int64_t width) {
  for (int64_t v = width; v > 1; v /= 2)
    if (llvm::all_of(extents, [&](int64_t e) { return e % v == 0; }))
      return v;
  return 1;
}

bool fusec::tiling::matmulFoldsBatch(MatmulOp op) {
  return shapeOf(op.getRhs()).size() == 2 && shapeOf(op.getLhs()).size() > 2 &&
         !op.getTransposeLhs();
}

GemmShape fusec::tiling::getGemmShape(Operation *anchor) {
  GemmShape shape;
  shape.elementType =
      cast<ShapedType>(anchor->getOperand(0).getType()).getElementType();
  int64_t width = vectorElements(anchor->getOperand(0));
  if (auto conv = dyn_cast<Conv2dOp>(anchor)) {
    Layout layout = conv.getLayout();
    auto out = dimsNCHW(shapeOf(conv.getResult()), layout);
    int64_t groups = conv.getGroups();
    shape.batch = groups;
    shape.m = out[0] * out[2] * out[3];
    shape.n = out[1] / groups;
    shape.k = product(shapeOf(conv.getFilter()).drop_front());
    // Output channels are the innermost NHWC axis.
    if (layout == Layout::NHWC)
      shape.outVector = widestRun({shape.n, out[1]}, width);
  } else if (isa<ConvTranspose2dOp, Conv2dFilterGradOp>(anchor)) {
    GemmConvGeometry g = *getGemmOperandLayouts(anchor).a.conv;
    shape.batch = g.groups;
    if (isa<ConvTranspose2dOp>(anchor)) {
      // m over output pixels, n over the group's output channels, k over
      // its input channels times the taps.
      shape.m = g.n * g.ho * g.wo;
      shape.n = g.cog();
      shape.k = g.cig() * g.kh * g.kw;
      if (g.nhwc())
        shape.outVector = widestRun({shape.n, g.co}, width);
    } else {
      // m over the group's output channels, n over the filter's taps times
      // input channels (its rows), k over the batch's output pixels.
      shape.m = g.cog();
      shape.n = g.cig() * g.kh * g.kw;
      shape.k = g.n * g.ho * g.wo;
      // Runs along the result's innermost axis: input channels (NHWC) or
      // the filter's columns (NCHW).
      shape.outVector = widestRun({g.nhwc() ? g.cig() : g.kw}, width);
      shape.splitK = true;
    }
    return shape;
  } else if (auto linear = dyn_cast<LinearOp>(anchor)) {
    ArrayRef<int64_t> inShape = shapeOf(linear.getInput());
    shape.k = inShape.back();
    shape.m = product(inShape) / shape.k;
    shape.n = shapeOf(linear.getResult()).back();
  } else {
    auto matmul = cast<MatmulOp>(anchor);
    ArrayRef<int64_t> ls = shapeOf(matmul.getLhs());
    ArrayRef<int64_t> os = shapeOf(matmul.getResult());
    shape.m = os.end()[-2];
    shape.n = os.back();
    shape.k = matmul.getTransposeLhs() ? ls.end()[-2] : ls.back();
    shape.batch = product(os.drop_back(2));
    if (matmulFoldsBatch(matmul)) {
      shape.m *= shape.batch;
      shape.batch = 1;
    }
  }
  if (!isa<Conv2dOp>(anchor))
    shape.outVector = widestRun({shape.n}, width);
  return shape;
}

void GemmKernel::storeGemmResults(ArrayRef<Value> coords, int64_t axis,
                                  const GemmColumns &columns,
                                  ArrayRef<Value> acc,
                                  const EpilogueEvaluator::FullInputs *full) {
  SmallVector<Value> values(acc);
  for (auto [value, bias] : llvm::zip(values, columns.bias))
    value = addf(value, bias);
  EpilogueEvaluator::ChannelScope channels(epilogue, axis,
                                           columns.channelValues);
  if (values.size() == 1)
    epilogue.storeResults(coords, values[0]);
  else
    epilogue.storeVectorResults(coords, values.size(), values, full);
}

void GemmKernel::setRowEpilogue(GemmProblem &problem) {
  problem.epilogue = [rowCoords = problem.rowCoords, axis = problem.channelAxis,
                      this](Value batch, Value m) -> GemmRowStore {
    GemmRowCoords coords = rowCoords(batch, m);
    return [=, this](const GemmColumns &columns, ArrayRef<Value> acc) {
      storeGemmResults(coords(columns), axis, columns, acc);
    };
  };
}

FailureOr<LaunchConfig> GemmKernel::emitBody() {
  GemmProblem problem;
  problem.shape = getGemmShape(anchor);
  GemmOperandLayouts layouts = getGemmOperandLayouts(anchor);
  problem.a = operandOf(layouts.a, problem.shape);
  problem.b = operandOf(layouts.b, problem.shape);
  llvm::TypeSwitch<Operation *>(anchor)
      .Case([&](Conv2dOp op) {
        convEpilogue(op.getBias(), *layouts.a.conv, problem);
      })
      .Case([&](ConvTranspose2dOp op) {
        convEpilogue(op.getBias(), *layouts.a.conv, problem);
      })
      .Case([&](Conv2dFilterGradOp) {
        filterGradEpilogue(*layouts.a.conv, problem);
      })
      .Case([&](LinearOp op) { linearEpilogue(op, problem); })
      .Case([&](MatmulOp op) { matmulEpilogue(op, problem); });
  return emitGemm(problem);
}

//===----------------------------------------------------------------------===//
// Addresses, from the operands' layouts
//===----------------------------------------------------------------------===//

GemmOperand GemmKernel::operandOf(const GemmOperandLayout &layout,
                                  const GemmShape &shape) {
  GemmOperand operand;
  operand.layout = layout;
  operand.memref = argOf.lookup(layout.tensor);
  for (auto [part, start] : layout.parts)
    operand.parts.emplace_back(argOf.lookup(part), start);
  switch (layout.kind) {
  case GemmOperandLayout::Kind::Matrix:
    operand.address = matrixAddress(layout, shape);
    break;
  case GemmOperandLayout::Kind::ConvInput:
    operand.address = convInputAddress(*layout.conv);
    break;
  case GemmOperandLayout::Kind::ConvFilter:
    operand.address = convFilterAddress(*layout.conv);
    break;
  case GemmOperandLayout::Kind::TransposeInput:
    operand.address = transposeInputAddress(*layout.conv);
    break;
  case GemmOperandLayout::Kind::TransposeFilter:
    operand.address = transposeFilterAddress(*layout.conv);
    break;
  case GemmOperandLayout::Kind::GradOutput:
    operand.address = gradOutputAddress(*layout.conv);
    break;
  case GemmOperandLayout::Kind::GradInput:
    operand.address = gradInputAddress(*layout.conv);
    break;
  }
  return operand;
}

std::function<GemmAddress(Value, Value, Value)>
GemmKernel::matrixAddress(const GemmOperandLayout &layout,
                          const GemmShape &shape) {
  int64_t extent = layout.isA ? shape.m : shape.n, k = shape.k;
  bool isA = layout.isA, kContiguous = layout.kContiguous;
  SmallVector<int64_t> gemmBatch = layout.gemmBatchShape;
  SmallVector<int64_t> batchShape = layout.batchShape;
  SmallVector<int64_t> rowShape = layout.rowShape;
  return [=, this](Value bi, Value i, Value ki) {
    Value inBounds = isA ? andi(ltc(i, extent), ltc(ki, k))
                         : andi(ltc(ki, k), ltc(i, extent));
    return GemmAddress{inBounds, [=, this] {
                         // The batch coordinates (broadcast), the rows',
                         // then the column.
                         SmallVector<Value> c = broadcastCoords(
                             delinearize(bi, gemmBatch), batchShape);
                         Value row = kContiguous ? i : ki;
                         llvm::append_range(c, delinearize(row, rowShape));
                         c.push_back(kContiguous ? ki : i);
                         return c;
                       }};
  };
}

std::tuple<Value, Value, Value>
GemmKernel::splitConvK(const GemmConvGeometry &g, Value k) {
  int64_t cig = g.cig(), kh = g.kh, kw = g.kw;
  if (g.nhwc())
    return std::tuple(remi(k, cig), remi(divi(k, cig * kw), kh),
                      remi(divi(k, cig), kw));
  return std::tuple(divi(k, kh * kw), remi(divi(k, kw), kh), remi(k, kw));
}

std::function<GemmAddress(Value, Value, Value)>
GemmKernel::convInputAddress(const GemmConvGeometry &g) {
  int64_t mTotal = g.n * g.ho * g.wo, kTotal = g.cig() * g.kh * g.kw;
  // A(g, m, k): the input pixel under filter tap k of output pixel m, zero
  // in the padding.
  return [=, this](Value group, Value m, Value k) {
    SmallVector<Value> p = delinearize(m, {g.n, g.ho, g.wo});
    Value c, khi, kwi;
    std::tie(c, khi, kwi) = splitConvK(g, k);
    Value ih = addi(subi(muli(p[1], idx(g.strides[0])), idx(g.pads[0])),
                    muli(khi, idx(g.dilation[0])));
    Value iw = addi(subi(muli(p[2], idx(g.strides[1])), idx(g.pads[2])),
                    muli(kwi, idx(g.dilation[1])));
    Value ok = andi(andi(ltc(m, mTotal), ltc(k, kTotal)),
                    andi(inRange(ih, g.h), inRange(iw, g.w)));
    std::function<SmallVector<Value>()> at = [=, this] {
      return joinNCHW(p[0], addi(muli(group, idx(g.cig())), c), ih, iw,
                      g.layout);
    };
    return GemmAddress{ok, at};
  };
}

std::function<GemmAddress(Value, Value, Value)>
GemmKernel::convFilterAddress(const GemmConvGeometry &g) {
  int64_t kTotal = g.cig() * g.kh * g.kw, cog = g.cog();
  // B(g, n, k): the filter.
  return [=, this](Value group, Value nn, Value k) {
    Value c, khi, kwi;
    std::tie(c, khi, kwi) = splitConvK(g, k);
    Value ok = andi(ltc(k, kTotal), ltc(nn, cog));
    std::function<SmallVector<Value>()> at = [=, this]() -> SmallVector<Value> {
      Value o = addi(muli(group, idx(cog)), nn);
      if (g.nhwc())
        return {o, khi, kwi, c};
      return {o, c, khi, kwi};
    };
    return GemmAddress{ok, at};
  };
}

std::function<GemmAddress(Value, Value, Value)>
GemmKernel::transposeInputAddress(const GemmConvGeometry &g) {
  int64_t mTotal = g.n * g.ho * g.wo, kTotal = g.cig() * g.kh * g.kw;
  // The input coordinate t / stride that output coordinate t + pad - tap
  // comes from, and whether there is one: t divisible by the stride (the
  // check folds away for stride 1) and inside the input.
  auto source = [this](Value t, int64_t stride,
                       int64_t extent) -> std::pair<Value, Value> {
    if (stride == 1)
      return {t, inRange(t, extent)};
    Value nonNegative = cmpi(arith::CmpIPredicate::sge, t, idx(0));
    Value divisible = cmpi(arith::CmpIPredicate::eq, remi(t, stride), idx(0));
    Value i = divi(t, stride);
    return {i, andi(andi(nonNegative, divisible), ltc(i, extent))};
  };
  // A(g, m, k): the input pixel whose window puts tap k on output pixel m,
  // zero where none does.
  return [=, this](Value group, Value m, Value k) {
    SmallVector<Value> p = delinearize(m, {g.n, g.ho, g.wo});
    Value c, khi, kwi;
    std::tie(c, khi, kwi) = splitConvK(g, k);
    auto [ih, hOk] =
        source(subi(addi(p[1], idx(g.pads[0])), muli(khi, idx(g.dilation[0]))),
               g.strides[0], g.h);
    auto [iw, wOk] =
        source(subi(addi(p[2], idx(g.pads[2])), muli(kwi, idx(g.dilation[1]))),
               g.strides[1], g.w);
    Value ok = andi(andi(ltc(m, mTotal), ltc(k, kTotal)), andi(hOk, wOk));
    std::function<SmallVector<Value>()> at = [=, this] {
      return joinNCHW(p[0], addi(muli(group, idx(g.cig())), c), ih, iw,
                      g.layout);
    };
    return GemmAddress{ok, at};
  };
}

std::function<GemmAddress(Value, Value, Value)>
GemmKernel::transposeFilterAddress(const GemmConvGeometry &g) {
  int64_t kTotal = g.cig() * g.kh * g.kw, cog = g.cog();
  // B(g, n, k): the filter, input channels first.
  return [=, this](Value group, Value nn, Value k) {
    Value c, khi, kwi;
    std::tie(c, khi, kwi) = splitConvK(g, k);
    Value ok = andi(ltc(k, kTotal), ltc(nn, cog));
    std::function<SmallVector<Value>()> at = [=, this]() -> SmallVector<Value> {
      Value i = addi(muli(group, idx(g.cig())), c);
      if (g.nhwc())
        return {i, khi, kwi, nn};
      return {i, nn, khi, kwi};
    };
    return GemmAddress{ok, at};
  };
}

std::function<GemmAddress(Value, Value, Value)>
GemmKernel::gradOutputAddress(const GemmConvGeometry &g) {
  int64_t kTotal = g.n * g.ho * g.wo, cog = g.cog();
  // A(g, m, k): the output gradient at channel m of the group, pixel k.
  return [=, this](Value group, Value m, Value k) {
    Value ok = andi(ltc(m, cog), ltc(k, kTotal));
    std::function<SmallVector<Value>()> at = [=, this] {
      SmallVector<Value> p = delinearize(k, {g.n, g.ho, g.wo});
      return joinNCHW(p[0], addi(muli(group, idx(cog)), m), p[1], p[2],
                      g.layout);
    };
    return GemmAddress{ok, at};
  };
}

std::function<GemmAddress(Value, Value, Value)>
GemmKernel::gradInputAddress(const GemmConvGeometry &g) {
  // B(g, n, k): the input under tap n (its channel, row and column of the
  // filter) of output pixel k, which is the forward's A(g, m = k, k = n).
  auto input = convInputAddress(g);
  return [input](Value group, Value nn, Value k) {
    return input(group, k, nn);
  };
}

//===----------------------------------------------------------------------===//
// Epilogues
//===----------------------------------------------------------------------===//

void GemmKernel::convEpilogue(Value biasTensor,
                              const GemmConvGeometry &geometry,
                              GemmProblem &problem) {
  Layout layout = geometry.layout;
  int64_t n = geometry.n, ho = geometry.ho, wo = geometry.wo;
  int64_t cog = geometry.cog();
  Value bias = biasTensor ? argOf.lookup(biasTensor) : Value();
  int64_t channelAxis = geometry.nhwc() ? 3 : 1;
  problem.columns = [=, this](Value g, Value nn, int64_t width) {
    GemmColumns columns{nn, width};
    for (int64_t i = 0; i < width; ++i) {
      Value lane = mini(i ? addi(nn, idx(i)) : nn, idx(cog - 1));
      Value o = addi(muli(g, idx(cog)), lane);
      if (i == 0)
        columns.channel = o;
      if (bias)
        columns.bias.push_back(load(bias, {o}));
      columns.channelValues.push_back(epilogue.evalChannel(channelAxis, o));
    }
    return columns;
  };
  problem.rowCoords = [=, this](Value, Value m) -> GemmRowCoords {
    SmallVector<Value> p = delinearize(m, {n, ho, wo});
    return [=](const GemmColumns &columns) {
      return joinNCHW(p[0], columns.channel, p[1], p[2], layout);
    };
  };
  problem.channelAxis = channelAxis;
  setRowEpilogue(problem);
}

void GemmKernel::filterGradEpilogue(const GemmConvGeometry &g,
                                    GemmProblem &problem) {
  // The result has the filter's shape, [Co, kh, kw, Ci/groups] (NHWC) or
  // [Co, Ci/groups, kh, kw]: row m is an output channel, and the columns
  // walk its other axes, which splitConvK splits.
  int64_t cog = g.cog(), nTotal = g.cig() * g.kh * g.kw;
  problem.columns = [=, this](Value, Value nn, int64_t width) {
    GemmColumns columns{nn, width};
    for (int64_t i = 0; i < width; ++i) {
      Value lane = mini(i ? addi(nn, idx(i)) : nn, idx(nTotal - 1));
      Value c, khi, kwi;
      std::tie(c, khi, kwi) = splitConvK(g, lane);
      SmallVector<Value> coords =
          g.nhwc() ? SmallVector<Value>{khi, kwi, c}
                   : SmallVector<Value>{c, khi, kwi};
      if (i == 0) {
        columns.coords = coords;
        columns.channel = coords.back();
      }
      columns.channelValues.push_back(
          epilogue.evalChannel(3, coords.back()));
    }
    return columns;
  };
  problem.rowCoords = [=, this](Value group, Value m) -> GemmRowCoords {
    Value co = addi(muli(group, idx(cog)), m);
    return [=](const GemmColumns &columns) {
      SmallVector<Value> coords{co};
      llvm::append_range(coords, columns.coords);
      return coords;
    };
  };
  problem.channelAxis = 3;
  setRowEpilogue(problem);
}

void GemmKernel::linearEpilogue(LinearOp op, GemmProblem &problem) {
  ArrayRef<int64_t> inShape = shapeOf(op.getInput());
  int64_t n = shapeOf(op.getResult()).back();
  ArrayRef<int64_t> lead = inShape.drop_back();
  Value bias = op.getBias();
  int64_t channelAxis = inShape.size() - 1;
  problem.columns = [=, this](Value, Value ni, int64_t width) {
    GemmColumns columns{ni, width};
    for (int64_t i = 0; i < width; ++i) {
      Value lane = mini(i ? addi(ni, idx(i)) : ni, idx(n - 1));
      if (i == 0)
        columns.channel = lane;
      // A kernel argument, or the concatenated biases of merged layers.
      if (bias)
        columns.bias.push_back(views.readThroughViews(bias, {lane}));
      columns.channelValues.push_back(epilogue.evalChannel(channelAxis, lane));
    }
    return columns;
  };
  problem.rowCoords = [=, this](Value, Value mi) -> GemmRowCoords {
    SmallVector<Value> row = delinearize(mi, lead);
    return [=](const GemmColumns &columns) {
      SmallVector<Value> c(row);
      c.push_back(columns.channel);
      return c;
    };
  };
  problem.channelAxis = channelAxis;
  setRowEpilogue(problem);
}

void GemmKernel::matmulEpilogue(MatmulOp op, GemmProblem &problem) {
  ArrayRef<int64_t> os = shapeOf(op.getResult());
  int64_t n = os.back();
  bool folded = matmulFoldsBatch(op);
  ArrayRef<int64_t> batchShape = os.drop_back(2);
  int64_t channelAxis = os.size() - 1;
  problem.columns = [=, this](Value, Value ni, int64_t width) {
    GemmColumns columns{ni, width};
    for (int64_t i = 0; i < width; ++i) {
      Value lane = mini(i ? addi(ni, idx(i)) : ni, idx(n - 1));
      if (i == 0)
        columns.channel = lane;
      columns.channelValues.push_back(epilogue.evalChannel(channelAxis, lane));
    }
    return columns;
  };
  problem.rowCoords = [=, this](Value bi, Value mi) -> GemmRowCoords {
    SmallVector<Value> row;
    if (folded) {
      row = delinearize(mi, os.drop_back());
    } else {
      row = delinearize(bi, batchShape);
      row.push_back(mi);
    }
    return [=](const GemmColumns &columns) {
      SmallVector<Value> c(row);
      c.push_back(columns.channel);
      return c;
    };
  };
  problem.channelAxis = channelAxis;
  setRowEpilogue(problem);
}

Value GemmKernel::accessOperand(
    const GemmOperand &operand, SmallVector<Value> indices, Type type,
    function_ref<Value(Value, SmallVector<Value>)> access) {
  if (operand.parts.empty())
    return access(operand.memref, indices);
  std::function<Value(size_t)> from = [&](size_t i) -> Value {
    auto [memref, start] = operand.parts[i];
    auto here = [&, memref = memref, start = start]() -> Value {
      SmallVector<Value> at(indices);
      int64_t axis = operand.layout.partsAxis;
      if (start)
        at[axis] = subi(at[axis], idx(start));
      return access(memref, at);
    };
    if (i + 1 == operand.parts.size())
      return here();
    Value inPart =
        ltc(indices[operand.layout.partsAxis], operand.parts[i + 1].second);
    auto ifOp = scf::IfOp::create(b, type ? TypeRange(type) : TypeRange(),
                                  inPart, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    for (auto [block, fn] :
         {std::pair<Block *, std::function<Value()>>{ifOp.thenBlock(), here},
          {ifOp.elseBlock(), [&] { return from(i + 1); }}}) {
      if (!block->empty())
        block->back().erase();
      b.setInsertionPointToEnd(block);
      Value value = fn();
      scf::YieldOp::create(b, type ? ValueRange(value) : ValueRange());
    }
    return type ? ifOp.getResult(0) : Value();
  };
  return from(0);
}
