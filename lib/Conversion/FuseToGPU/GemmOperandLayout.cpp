//===- GemmOperandLayout.cpp - How a GEMM's operands are stored -----------===//
//
// The layout of each operand of a GEMM anchor (Gemm.h), worked out once from
// the IR without building any: shapes, which axis is contiguous, the parts
// of a concatenation read in place, the batch dimensions and a
// convolution's geometry. GemmProblem.cpp derives the address functions
// from it, GemmWgmma.cpp the TMA tensor maps.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec::tiling;

/// The layout of `tensor`, read as it is.
static GemmOperandLayout layoutOf(Value tensor, bool isA) {
  GemmOperandLayout layout;
  layout.isA = isA;
  layout.tensor = tensor;
  layout.shape = llvm::to_vector(shapeOf(tensor));
  layout.elementBytes =
      cast<ShapedType>(tensor.getType()).getElementTypeBitWidth() / 8;
  return layout;
}

/// The parts of `tensor` when a concatenation joins them (along `axis`).
static void addParts(GemmOperandLayout &layout, int64_t axis) {
  auto concat = layout.tensor.getDefiningOp<ConcatOp>();
  if (!concat)
    return;
  layout.partsAxis = axis;
  int64_t start = 0;
  for (Value part : concat.getInputs()) {
    layout.parts.emplace_back(part, start);
    start += shapeOf(part)[axis];
  }
}

static GemmOperandLayouts convLayouts(Conv2dOp op) {
  GemmConvGeometry g;
  g.layout = op.getLayout();
  auto in = dimsNCHW(shapeOf(op.getInput()), g.layout);
  g.n = in[0];
  g.ci = in[1];
  g.h = in[2];
  g.w = in[3];
  auto out = dimsNCHW(shapeOf(op.getResult()), g.layout);
  g.co = out[1];
  g.ho = out[2];
  g.wo = out[3];
  ArrayRef<int64_t> fs = shapeOf(op.getFilter());
  g.kh = g.nhwc() ? fs[1] : fs[2];
  g.kw = g.nhwc() ? fs[2] : fs[3];
  g.groups = op.getGroups();
  g.pads = op.getPads();
  g.strides = {op.getStrides()[0], op.getStrides()[1]};
  g.dilation = {op.getDilation()[0], op.getDilation()[1]};

  GemmOperandLayouts layouts{layoutOf(op.getInput(), true),
                             layoutOf(op.getFilter(), false)};
  GemmOperandLayout &a = layouts.a, &b = layouts.b;
  a.kind = GemmOperandLayout::Kind::ConvInput;
  b.kind = GemmOperandLayout::Kind::ConvFilter;
  a.conv = b.conv = g;
  // A(g, m, k): the input pixel under filter tap k of output pixel m; inputs
  // joined along channels are read in place (a U-Net skip).
  addParts(a, g.nhwc() ? 3 : 1);
  a.kContiguous = g.nhwc();
  // B(g, n, k): the filter.
  b.kContiguous = true;
  // NHWC runs of input channels (and the filter's matching runs) are
  // contiguous; they are aligned when the channel counts are multiples of
  // the vector width. A vector never straddles two parts.
  int64_t width = vectorElements(op.getInput());
  if (g.nhwc() && g.cig() % width == 0 && g.ci % width == 0)
    a.vector = b.vector = width;
  bool partsAligned = llvm::all_of(a.parts, [&](auto part) {
    return shapeOf(part.first)[a.partsAxis] % width == 0;
  });
  if (!partsAligned)
    a.vector = 1;
  return layouts;
}

static GemmOperandLayouts linearLayouts(LinearOp op) {
  GemmOperandLayouts layouts{layoutOf(op.getInput(), true),
                             layoutOf(op.getWeight(), false)};
  GemmOperandLayout &a = layouts.a, &b = layouts.b;
  // The input [..., K]: rows over its leading dims, k contiguous.
  a.rowShape = llvm::to_vector(ArrayRef<int64_t>(a.shape).drop_back());
  // The weight [N, K]: B transposed, k contiguous; merged linear layers read
  // their weights in place (fusec-simplify).
  b.rowShape = {b.shape.front()};
  addParts(b, 0);
  int64_t width = vectorElements(op.getInput());
  if (a.cols() % width == 0)
    a.vector = b.vector = width;
  return layouts;
}

static GemmOperandLayouts matmulLayouts(MatmulOp op) {
  GemmOperandLayouts layouts{layoutOf(op.getLhs(), true),
                             layoutOf(op.getRhs(), false)};
  SmallVector<int64_t> batchShape(shapeOf(op.getResult()).drop_back(2));
  int64_t width = vectorElements(op.getLhs());
  // lhs [.., M, K] is k-contiguous, transposed [.., K, M] m-contiguous; rhs
  // transposed [.., N, K] is k-contiguous, [.., K, N] n-contiguous.
  for (auto [layout, kContiguous] :
       {std::pair{&layouts.a, !op.getTransposeLhs()},
        std::pair{&layouts.b, op.getTransposeRhs()}}) {
    ArrayRef<int64_t> shape = layout->shape;
    layout->kContiguous = kContiguous;
    layout->gemmBatchShape = batchShape;
    layout->batchShape = llvm::to_vector(shape.drop_back(2));
    layout->rowShape = {shape.end()[-2]};
    // Runs along the contiguous axis are aligned when its extent is a
    // multiple of the vector width.
    if (layout->cols() % width == 0)
      layout->vector = width;
  }
  return layouts;
}

GemmOperandLayouts fusec::tiling::getGemmOperandLayouts(Operation *anchor) {
  if (auto conv = dyn_cast<Conv2dOp>(anchor))
    return convLayouts(conv);
  if (auto linear = dyn_cast<LinearOp>(anchor))
    return linearLayouts(linear);
  return matmulLayouts(cast<MatmulOp>(anchor));
}
