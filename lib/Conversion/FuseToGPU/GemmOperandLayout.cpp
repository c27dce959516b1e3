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

/// The geometry of a convolution from its input's and output's shapes (in
/// `layout`), its filter taps and attributes.
template <typename ConvLikeOp>
static GemmConvGeometry convGeometry(ConvLikeOp op, GemmConvGeometry::Pass pass,
                                     ArrayRef<int64_t> inShape,
                                     ArrayRef<int64_t> outShape, int64_t kh,
                                     int64_t kw) {
  GemmConvGeometry g;
  g.pass = pass;
  g.layout = op.getLayout();
  auto in = dimsNCHW(inShape, g.layout);
  g.n = in[0];
  g.ci = in[1];
  g.h = in[2];
  g.w = in[3];
  auto out = dimsNCHW(outShape, g.layout);
  g.co = out[1];
  g.ho = out[2];
  g.wo = out[3];
  g.kh = kh;
  g.kw = kw;
  g.groups = op.getGroups();
  g.pads = op.getPads();
  g.strides = {op.getStrides()[0], op.getStrides()[1]};
  g.dilation = {op.getDilation()[0], op.getDilation()[1]};
  return g;
}

/// The filter taps of a conv2d's or conv_transpose2d's filter (both keep
/// them at the same axes).
static std::pair<int64_t, int64_t> filterTaps(Value filter, Layout layout) {
  ArrayRef<int64_t> fs = shapeOf(filter);
  bool nhwc = layout == Layout::NHWC;
  return {nhwc ? fs[1] : fs[2], nhwc ? fs[2] : fs[3]};
}

/// Whether the input channels of an NHWC convolution-like operand split
/// into aligned runs of `width`, in every part it is read through.
static bool channelRunsAligned(const GemmOperandLayout &a,
                               const GemmConvGeometry &g, int64_t width) {
  if (!g.nhwc() || g.cig() % width || g.ci % width)
    return false;
  return llvm::all_of(a.parts, [&](auto part) {
    return shapeOf(part.first)[a.partsAxis] % width == 0;
  });
}

static GemmOperandLayouts convLayouts(Conv2dOp op) {
  auto [kh, kw] = filterTaps(op.getFilter(), op.getLayout());
  GemmConvGeometry g =
      convGeometry(op, GemmConvGeometry::Pass::Forward,
                   shapeOf(op.getInput()), shapeOf(op.getResult()), kh, kw);

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

static GemmOperandLayouts convTransposeLayouts(ConvTranspose2dOp op) {
  auto [kh, kw] = filterTaps(op.getFilter(), op.getLayout());
  GemmConvGeometry g =
      convGeometry(op, GemmConvGeometry::Pass::Transpose,
                   shapeOf(op.getInput()), shapeOf(op.getResult()), kh, kw);
  GemmOperandLayouts layouts{layoutOf(op.getInput(), true),
                             layoutOf(op.getFilter(), false)};
  GemmOperandLayout &a = layouts.a, &b = layouts.b;
  a.kind = GemmOperandLayout::Kind::TransposeInput;
  b.kind = GemmOperandLayout::Kind::TransposeFilter;
  a.conv = b.conv = g;
  // A(g, m, k) as for the forward convolution: NHWC input channels are
  // contiguous along k within a tap (the stride test is the tap's), and
  // joined inputs are read in place.
  addParts(a, g.nhwc() ? 3 : 1);
  a.kContiguous = g.nhwc();
  int64_t width = vectorElements(op.getInput());
  if (channelRunsAligned(a, g, width))
    a.vector = width;
  // B(g, n, k): the filter's output channels are its innermost NHWC axis,
  // so B is n-contiguous there; NCHW's taps are contiguous along k.
  b.kContiguous = !g.nhwc();
  if (g.nhwc() && g.cog() % width == 0)
    b.vector = width;
  return layouts;
}

static GemmOperandLayouts filterGradLayouts(Conv2dFilterGradOp op) {
  GemmConvGeometry g = convGeometry(
      op, GemmConvGeometry::Pass::FilterGrad, shapeOf(op.getInput()),
      shapeOf(op.getOutputGrad()), op.getKernel()[0], op.getKernel()[1]);
  GemmOperandLayouts layouts{layoutOf(op.getOutputGrad(), true),
                             layoutOf(op.getInput(), false)};
  GemmOperandLayout &a = layouts.a, &b = layouts.b;
  a.kind = GemmOperandLayout::Kind::GradOutput;
  b.kind = GemmOperandLayout::Kind::GradInput;
  a.conv = b.conv = g;
  // k runs over the batch's output pixels: NCHW pixels are contiguous along
  // k (w innermost); NHWC channels along m (A) and n (B, whose taps x input
  // channels end with the channels).
  a.kContiguous = b.kContiguous = !g.nhwc();
  int64_t width = vectorElements(op.getInput());
  if (g.nhwc() && g.cog() % width == 0 && g.co % width == 0)
    a.vector = width;
  if (channelRunsAligned(b, g, width))
    b.vector = width;
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
  if (matmulFoldsBatch(op)) {
    GemmOperandLayout &a = layouts.a;
    a.rowShape = llvm::to_vector(ArrayRef<int64_t>(a.shape).drop_back());
    a.batchShape.clear();
    a.gemmBatchShape.clear();
    layouts.b.gemmBatchShape.clear();
  }
  return layouts;
}

GemmOperandLayouts fusec::tiling::getGemmOperandLayouts(Operation *anchor) {
  if (auto conv = dyn_cast<Conv2dOp>(anchor))
    return convLayouts(conv);
  if (auto conv = dyn_cast<ConvTranspose2dOp>(anchor))
    return convTransposeLayouts(conv);
  if (auto grad = dyn_cast<Conv2dFilterGradOp>(anchor))
    return filterGradLayouts(grad);
  if (auto linear = dyn_cast<LinearOp>(anchor))
    return linearLayouts(linear);
  return matmulLayouts(cast<MatmulOp>(anchor));
}
