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
  return isa<LinearOp, MatmulOp>(anchor);
}

/// Elements of the operands' type in 16 bytes.
static int64_t vectorElements(Value tensor) {
  return 128 / cast<ShapedType>(tensor.getType()).getElementTypeBitWidth();
}

/// The widest aligned run of output columns: a power of two up to `width`
/// that divides every extent of `extents`.
static int64_t widestRun(ArrayRef<int64_t> extents, int64_t width) {
  for (int64_t v = width; v > 1; v /= 2)
    if (llvm::all_of(extents, [&](int64_t e) { return e % v == 0; }))
      return v;
  return 1;
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
  }
  if (!isa<Conv2dOp>(anchor))
    shape.outVector = widestRun({shape.n}, width);
  return shape;
}

void GemmKernel::storeGemmResults(ArrayRef<Value> coords, int64_t axis,
                                  const GemmColumns &columns,
                                  ArrayRef<Value> acc) {
  SmallVector<Value> values(acc);
  for (auto [value, bias] : llvm::zip(values, columns.bias))
    value = addf(value, bias);
  EpilogueEvaluator::ChannelScope channels(epilogue, axis,
                                           columns.channelValues);
  if (values.size() == 1)
    epilogue.storeResults(coords, values[0]);
  else
    epilogue.storeVectorResults(coords, values.size(), values);
}

FailureOr<LaunchConfig> GemmKernel::emitBody() {
  GemmProblem problem =
      llvm::TypeSwitch<Operation *, GemmProblem>(anchor)
          .Case([&](Conv2dOp op) { return convProblem(op); })
          .Case([&](LinearOp op) { return linearProblem(op); })
          .Case([&](MatmulOp op) { return matmulProblem(op); });
  problem.shape = getGemmShape(anchor);
  return emitGemm(problem);
}


GemmProblem GemmKernel::convProblem(Conv2dOp op) {
  Layout layout = op.getLayout();
  bool nhwc = layout == Layout::NHWC;
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  auto [n, ci, h, w] = dimsNCHW(shapeOf(op.getInput()), layout);
  auto outDims = dimsNCHW(outShape, layout);
  int64_t co = outDims[1], ho = outDims[2], wo = outDims[3];
  ArrayRef<int64_t> fs = shapeOf(op.getFilter());
  int64_t kh = nhwc ? fs[1] : fs[2], kw = nhwc ? fs[2] : fs[3];
  int64_t groups = op.getGroups(), cig = ci / groups, cog = co / groups;
  std::array<int64_t, 4> pads = op.getPads();
  ArrayRef<int64_t> s = op.getStrides(), d = op.getDilation();
  Value x = argOf.lookup(op.getInput()), filter = argOf.lookup(op.getFilter());
  Value bias = op.getBias() ? argOf.lookup(op.getBias()) : Value();
  int64_t kTotal = cig * kh * kw, mTotal = n * ho * wo;

  // (c, kh, kw) of reduction index k.
  auto splitK = [=, this](Value k) {
    if (nhwc)
      return std::tuple(remi(k, cig), remi(divi(k, cig * kw), kh),
                        remi(divi(k, cig), kw));
    return std::tuple(divi(k, kh * kw), remi(divi(k, kw), kh), remi(k, kw));
  };
  GemmProblem problem;
  // A(g, m, k): the input pixel under filter tap k of output pixel m, zero
  // in the padding.
  problem.a.memref = x;
  // Inputs joined along channels are read in place (a U-Net skip).
  bool partsAligned = true;
  if (auto concat = op.getInput().getDefiningOp<ConcatOp>()) {
    problem.a.partsAxis = nhwc ? 3 : 1;
    int64_t start = 0;
    for (Value part : concat.getInputs()) {
      problem.a.parts.emplace_back(argOf.lookup(part), start);
      int64_t channels = shapeOf(part)[problem.a.partsAxis];
      partsAligned &= channels % vectorElements(op.getInput()) == 0;
      start += channels;
    }
  }
  problem.a.kContiguous = nhwc;
  problem.a.address = [=, this](Value g, Value m, Value k) {
    SmallVector<Value> p = delinearize(m, {n, ho, wo});
    Value c, khi, kwi;
    std::tie(c, khi, kwi) = splitK(k);
    Value ih = addi(subi(muli(p[1], idx(s[0])), idx(pads[0])),
                    muli(khi, idx(d[0])));
    Value iw = addi(subi(muli(p[2], idx(s[1])), idx(pads[2])),
                    muli(kwi, idx(d[1])));
    Value ok = andi(andi(ltc(m, mTotal), ltc(k, kTotal)),
                    andi(inRange(ih, h), inRange(iw, w)));
    std::function<SmallVector<Value>()> at = [=, this] {
      return joinNCHW(p[0], addi(muli(g, idx(cig)), c), ih, iw, layout);
    };
    return GemmAddress{ok, at};
  };
  // B(g, n, k): the filter.
  problem.b.memref = filter;
  problem.b.kContiguous = true;
  problem.b.address = [=, this](Value g, Value nn, Value k) {
    Value c, khi, kwi;
    std::tie(c, khi, kwi) = splitK(k);
    Value ok = andi(ltc(k, kTotal), ltc(nn, cog));
    std::function<SmallVector<Value>()> at = [=, this]() -> SmallVector<Value> {
      Value o = addi(muli(g, idx(cog)), nn);
      if (nhwc)
        return {o, khi, kwi, c};
      return {o, c, khi, kwi};
    };
    return GemmAddress{ok, at};
  };
  // NHWC runs of input channels (and the filter's matching runs) are
  // contiguous; they are aligned when the channel counts are multiples of
  // the vector width.
  int64_t width = vectorElements(op.getInput());
  if (nhwc && cig % width == 0 && ci % width == 0)
    problem.a.vector = problem.b.vector = width;
  // A vector never straddles two parts.
  if (!partsAligned)
    problem.a.vector = 1;
  int64_t channelAxis = nhwc ? 3 : 1;
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
  problem.epilogue = [=, this](Value, Value m) -> GemmRowStore {
    SmallVector<Value> p = delinearize(m, {n, ho, wo});
    return [=, this](const GemmColumns &columns, ArrayRef<Value> acc) {
      storeGemmResults(joinNCHW(p[0], columns.channel, p[1], p[2], layout),
                       channelAxis, columns, acc);
    };
  };
  return problem;
}

GemmProblem GemmKernel::linearProblem(LinearOp op) {
  ArrayRef<int64_t> inShape = shapeOf(op.getInput());
  int64_t k = inShape.back(), n = shapeOf(op.getResult()).back();
  int64_t m = product(inShape) / k;
  ArrayRef<int64_t> lead = inShape.drop_back();
  Value x = argOf.lookup(op.getInput()), weight = argOf.lookup(op.getWeight());
  Value bias = op.getBias();
  GemmProblem problem;
  // Merged linear layers read their weights in place (fusec-simplify).
  if (auto concat = op.getWeight().getDefiningOp<ConcatOp>()) {
    int64_t start = 0;
    for (Value part : concat.getInputs()) {
      problem.b.parts.emplace_back(argOf.lookup(part), start);
      start += shapeOf(part).front();
    }
  }
  problem.a.memref = x;
  problem.a.address = [=, this](Value, Value mi, Value ki) {
    return GemmAddress{andi(ltc(mi, m), ltc(ki, k)), [=, this] {
                         SmallVector<Value> c = delinearize(mi, lead);
                         c.push_back(ki);
                         return c;
                       }};
  };
  // The weight is [N, K]: B transposed, k contiguous.
  problem.b.memref = weight;
  problem.b.address = [=, this](Value, Value ni, Value ki) {
    return GemmAddress{andi(ltc(ki, k), ltc(ni, n)), [=] {
                         return SmallVector<Value>{ni, ki};
                       }};
  };
  int64_t width = vectorElements(op.getInput());
  if (k % width == 0)
    problem.a.vector = problem.b.vector = width;
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
  problem.epilogue = [=, this](Value, Value mi) -> GemmRowStore {
    SmallVector<Value> row = delinearize(mi, lead);
    return [=, this](const GemmColumns &columns, ArrayRef<Value> acc) {
      SmallVector<Value> c(row);
      c.push_back(columns.channel);
      storeGemmResults(c, channelAxis, columns, acc);
    };
  };
  return problem;
}

GemmProblem GemmKernel::matmulProblem(MatmulOp op) {
  ArrayRef<int64_t> ls = shapeOf(op.getLhs()), rs = shapeOf(op.getRhs());
  ArrayRef<int64_t> os = shapeOf(op.getResult());
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  int64_t m = os.end()[-2], n = os.back();
  int64_t k = ta ? ls.end()[-2] : ls.back();
  ArrayRef<int64_t> batchShape = os.drop_back(2);
  Value lhs = argOf.lookup(op.getLhs()), rhs = argOf.lookup(op.getRhs());
  // Indices of (r, c) of batch `batchIdx` in an operand of `shape`, whose
  // batch dimensions broadcast.
  auto operandIndex = [=, this](Value batchIdx, ArrayRef<int64_t> shape,
                                Value r, Value c) {
    SmallVector<Value> bc = broadcastCoords(delinearize(batchIdx, batchShape),
                                            shape.drop_back(2));
    bc.push_back(r);
    bc.push_back(c);
    return bc;
  };
  GemmProblem problem;
  problem.a.memref = lhs;
  problem.a.kContiguous = !ta;
  problem.a.address = [=, this](Value bi, Value mi, Value ki) {
    return GemmAddress{andi(ltc(mi, m), ltc(ki, k)), [=] {
                         return ta ? operandIndex(bi, ls, ki, mi)
                                   : operandIndex(bi, ls, mi, ki);
                       }};
  };
  problem.b.memref = rhs;
  problem.b.kContiguous = tb;
  problem.b.address = [=, this](Value bi, Value ni, Value ki) {
    return GemmAddress{andi(ltc(ki, k), ltc(ni, n)), [=] {
                         return tb ? operandIndex(bi, rs, ni, ki)
                                   : operandIndex(bi, rs, ki, ni);
                       }};
  };
  // Runs along each operand's contiguous axis are aligned when that axis's
  // extent is a multiple of the vector width.
  int64_t width = vectorElements(op.getLhs());
  if ((ta ? m : k) % width == 0)
    problem.a.vector = width;
  if ((tb ? k : n) % width == 0)
    problem.b.vector = width;
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
  problem.epilogue = [=, this](Value bi, Value mi) -> GemmRowStore {
    SmallVector<Value> row = delinearize(bi, batchShape);
    row.push_back(mi);
    return [=, this](const GemmColumns &columns, ArrayRef<Value> acc) {
      SmallVector<Value> c(row);
      c.push_back(columns.channel);
      storeGemmResults(c, channelAxis, columns, acc);
    };
  };
  return problem;
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
      int64_t axis = operand.partsAxis;
      if (start)
        at[axis] = subi(at[axis], idx(start));
      return access(memref, at);
    };
    if (i + 1 == operand.parts.size())
      return here();
    Value inPart =
        ltc(indices[operand.partsAxis], operand.parts[i + 1].second);
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
