//===- Gemm.h - Convolution, linear and matmul as one GEMM ------*- C++ -*-===//
//
// Implicit-GEMM convolution, linear layers and batched matrix products all
// become C[batch][m][n] = sum_k A(batch, m, k) * B(batch, k, n) followed by
// the fused epilogue. GemmProblem describes one at the level of addresses,
// which is all a GEMM family needs: where each operand element lives and
// whether it is inside the operand, which axis is contiguous, how wide an
// aligned vector may be, and what becomes of each result element.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_GEMM_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_GEMM_H

#include "KernelBuilder.h"

namespace fusec::tiling {

/// How f32 convolutions and matrix products compute.
enum class Fp32Math {
  /// f32 FMAs on CUDA cores.
  IEEE,
  /// TF32 tensor-core products (10-bit mantissa inputs), f32 accumulation.
  TF32,
};

struct TilingOptions {
  Fp32Math fp32Math = Fp32Math::IEEE;
  /// Tensor-core GEMM: load the next k-step's fragments before this one's
  /// mma.sync (more registers, less waiting on ldmatrix).
  bool prefetchFragments = true;
};

/// Sizes of the GEMM an anchor computes (no IR needed).
struct GemmShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  /// The operands' element type.
  mlir::Type elementType;
  /// Runs of `outVector` consecutive n, starting at a multiple of it, are
  /// contiguous and aligned in every output (at most 16 bytes of the
  /// operands' type), so the epilogue may store them as one vector.
  int64_t outVector = 1;
  /// Whether blocks may split k and sum their parts in a second launch (a
  /// filter gradient's reduction over every pixel of the batch, deep k
  /// under few output tiles).
  bool splitK = false;
};

/// Elements of the operands' type in 16 bytes.
inline int64_t vectorElements(mlir::Value tensor) {
  return 128 / llvm::cast<mlir::ShapedType>(tensor.getType())
                   .getElementTypeBitWidth();
}

/// Whether `anchor` runs as a GEMM: linear, matmul, and convolutions whose
/// groups are wide enough to fill a tile (the rest run as direct
/// convolutions).
bool isGemmAnchor(mlir::Operation *anchor);
GemmShape getGemmShape(mlir::Operation *anchor);
/// Whether a matmul's batch dims fold into its rows: a 2-D rhs shared by
/// every batch and an lhs [..., M, K], whose rows are then one GEMM's as
/// a linear's are (ViT's 8 x 197 tokens: one M of 1576, not 8 of 197 each
/// padded to a tile).
bool matmulFoldsBatch(mlir::fuse::MatmulOp op);

/// A convolution as an implicit GEMM per group: the geometry both of its
/// operands' layouts carry.
struct GemmConvGeometry {
  /// Which GEMM of the convolution: its forward pass (conv2d), its data
  /// gradient (conv_transpose2d) or its filter gradient
  /// (conv2d_filter_grad).
  enum class Pass { Forward, Transpose, FilterGrad };
  Pass pass = Pass::Forward;
  mlir::fuse::Layout layout = mlir::fuse::Layout::NHWC;
  /// The input's [n, ci, h, w], the output's channels and pixels, the
  /// filter's taps. For a transpose, the input is the transpose's own (ci
  /// its channels, h and w its pixels) and the output its result; for the
  /// filter gradient, the input is the convolution's and the output its
  /// result's gradient.
  int64_t n = 0, ci = 0, h = 0, w = 0, co = 0, ho = 0, wo = 0, kh = 0, kw = 0;
  int64_t groups = 1;
  /// Padding (top, bottom, left, right), strides and dilation (h, w).
  std::array<int64_t, 4> pads = {};
  std::array<int64_t, 2> strides = {}, dilation = {};

  bool nhwc() const { return layout == mlir::fuse::Layout::NHWC; }
  /// Input and output channels per group.
  int64_t cig() const { return ci / groups; }
  int64_t cog() const { return co / groups; }
};

/// One GEMM operand as it is stored, A (m x k) or B (n x k), worked out once
/// from the anchor without building IR. Both ways of reading it derive from
/// it: GemmOperand's address function (cp.async, element loads) and the TMA
/// tensor maps of the warpgroup family.
struct GemmOperandLayout {
  enum class Kind {
    /// [batch..., rows..., cols]: the rows index i and the cols k where k
    /// is contiguous, the other way round otherwise.
    Matrix,
    /// A convolution's input, read through the filter window.
    ConvInput,
    /// A convolution's filter, [Co, kh, kw, Ci] (NHWC) or [Co, Ci, kh, kw].
    ConvFilter,
    /// A transposed convolution's input, A (m output pixels, k taps x
    /// input channels): each output pixel gathers the input pixels whose
    /// strided window covers it.
    TransposeInput,
    /// Its filter, B (n output channels, k), [Ci, kh, kw, Co] (NHWC) or
    /// [Ci, Co, kh, kw].
    TransposeFilter,
    /// The filter gradient's output gradient, A (m output channels, k
    /// output pixels of the batch).
    GradOutput,
    /// Its input, B (n filter taps x input channels, k output pixels): the
    /// input pixel under each tap of each output pixel (im2col, transposed).
    GradInput,
  };
  Kind kind = Kind::Matrix;
  bool isA = true;
  /// The operand in the kernel's body and, when it is a concatenation read
  /// in place, its parts along `partsAxis`, each with the index there at
  /// which it starts.
  mlir::Value tensor;
  llvm::SmallVector<std::pair<mlir::Value, int64_t>> parts;
  int64_t partsAxis = 0;
  llvm::SmallVector<int64_t> shape;
  int64_t elementBytes = 0;
  /// Whether consecutive k are adjacent in memory (otherwise consecutive m
  /// for A, n for B are).
  bool kContiguous = true;
  /// Runs of `vector` elements along the contiguous axis, starting at a
  /// multiple of `vector`, are contiguous, 16-byte aligned and entirely
  /// inside or outside the operand, so a tile load may move each as one
  /// 16-byte vector (or cp.async). 1: element by element.
  int64_t vector = 1;
  /// A matrix's own batch dimensions, which broadcast to the GEMM's
  /// (matmul's result batch), and the dimensions its row index runs over.
  llvm::SmallVector<int64_t> batchShape, gemmBatchShape, rowShape;
  std::optional<GemmConvGeometry> conv;

  int64_t rows() const { return product(rowShape); }
  int64_t cols() const { return shape.back(); }
};

struct GemmOperandLayouts {
  GemmOperandLayout a, b;
};
/// The layouts of the operands of a GEMM anchor (isGemmAnchor).
GemmOperandLayouts getGemmOperandLayouts(mlir::Operation *anchor);

/// One tile configuration; the fields a family does not use are 0. See
/// #fuse.tile (FuseAttrs.td).
struct GemmTile {
  int64_t bm = 0, bn = 0, bk = 0;
  /// CUDA-core family: each thread's register tile.
  int64_t tm = 0, tn = 0;
  /// Tensor-core family: the warp grid, the pipeline depth, and the groups
  /// of warps splitting each k-tile (0 or 1: one).
  int64_t warpsM = 0, warpsN = 0, stages = 0, warpsK = 0;

  mlir::fuse::TileAttr toAttr(mlir::MLIRContext *context) const {
    return mlir::fuse::TileAttr::get(context, bm, bn, bk, tm, tn, warpsM,
                                     warpsN, stages, warpsK);
  }
  static GemmTile fromAttr(mlir::fuse::TileAttr attr) {
    return {attr.getBm(),     attr.getBn(),     attr.getBk(),
            attr.getTm(),     attr.getTn(),     attr.getWarpsM(),
            attr.getWarpsN(), attr.getStages(), attr.getWarpsK()};
  }
  /// Warp groups along k (at least 1).
  int64_t kGroups() const { return std::max<int64_t>(warpsK, 1); }
};

/// Where one operand element lives: memref indices, built on demand (where
/// the guarded access is), and whether it is inside the operand (false for
/// convolution padding and past every edge).
struct GemmAddress {
  mlir::Value inBounds;
  std::function<llvm::SmallVector<mlir::Value>()> indices;
};

/// A (m x k) or B (n x k) as the GEMM families read it: its layout, and
/// what derives from it in the kernel.
struct GemmOperand {
  GemmOperandLayout layout;
  /// The kernel argument holding the operand.
  mlir::Value memref;
  /// The element at (batch, i, k), i being m for A and n for B.
  std::function<GemmAddress(mlir::Value batch, mlir::Value i, mlir::Value k)>
      address;
  /// When not empty, `memref` is unused and the operand is these kernel
  /// arguments (layout.parts) concatenated along layout.partsAxis, each with
  /// the index there at which it starts: the weights of linear layers
  /// merged into one, or a convolution's input joined along channels
  /// (fuse.concat, read in place). `address` indexes the concatenation;
  /// GemmKernel::accessOperand finds the part.
  llvm::SmallVector<std::pair<mlir::Value, int64_t>> parts;
};

/// What the epilogue reads of columns n...n+width-1 alone, computed once
/// where a thread's columns stay fixed: per lane, the output channel and the
/// per-channel values (bias, batch-norm coefficients, ...).
struct GemmColumns {
  mlir::Value n;
  int64_t width = 1;
  /// Output coordinate of lane 0 along the channel axis.
  mlir::Value channel;
  /// Where the columns are more than one axis (a filter gradient's taps and
  /// input channels): lane 0's coordinates along them, the channel axis
  /// last.
  llvm::SmallVector<mlir::Value> coords;
  llvm::SmallVector<mlir::Value> bias;
  llvm::SmallVector<llvm::DenseMap<mlir::Value, mlir::Value>> channelValues;
};

/// Stores the kernel's results at row m of `columns` from the accumulators
/// there (`columns.width` of them, all inside the result when more than
/// one: a width of GemmShape::outVector).
using GemmRowStore = std::function<void(const GemmColumns &columns,
                                        llvm::ArrayRef<mlir::Value> acc)>;
using GemmRowCoords =
    std::function<llvm::SmallVector<mlir::Value>(const GemmColumns &columns)>;

struct GemmProblem {
  GemmShape shape;
  GemmOperand a, b;
  /// The epilogue in three parts, each built where it is called: columns
  /// n...n+width-1 of `batch` (once per column group; channels past the
  /// result are clamped, so the group may start outside it), row m of
  /// `batch` (once per row), and the store the latter returns (once per
  /// element or vector).
  std::function<GemmColumns(mlir::Value batch, mlir::Value n, int64_t width)>
      columns;
  std::function<GemmRowStore(mlir::Value batch, mlir::Value m)> epilogue;
  /// Where the epilogue stores to the kernel's results (every problem but a
  /// split's partial sums): the coordinates of row m (built once per row)
  /// at `columns`' lane 0, and the channel axis among them. The staged
  /// epilogue uses them to load the full-size inputs of several rows before
  /// it stores any.
  std::function<GemmRowCoords(mlir::Value batch, mlir::Value m)> rowCoords;
  int64_t channelAxis = -1;
};

/// Where the f32 accumulators of a tensor-core tile live: m16n8 fragments
/// of mma.sync's layout (lane 4g + t holds rows g and g + 8, columns 2t and
/// 2t + 1 of each), which wgmma's m64nN accumulators share, a warp of the
/// warpgroup holding 16 rows. The warps form a warpsM x warpsN grid over the
/// bm x bn tile, kGroups times over when groups of warps split k.
struct AccumulatorLayout {
  int64_t bm = 0, bn = 0, warpsM = 1, warpsN = 1, kGroups = 1;
  /// The threads holding accumulators, who run the epilogue.
  int64_t threads = 0;
  /// This thread among them, its lane, and its warp's place in the grid.
  mlir::Value tid, lane, warpM, warpN, warpK;
  /// Bytes of shared memory, from `stagingOffset`, the staged epilogue may
  /// use (by default the pipeline's, idle by then).
  int64_t stagingBytes = 0, stagingOffset = 0;
  /// Synchronises the threads holding accumulators.
  std::function<void()> barrier;

  int64_t fragsM() const { return bm / warpsM / 16; }
  int64_t fragsN() const { return bn / warpsN / 8; }
};

/// Whether the epilogue of a tile bn wide, run by `threads` threads, may go
/// through shared memory: rows of 16-byte vectors (4 f32 at least), at
/// least one row per pass of the threads.
bool canStageEpilogue(const GemmShape &shape, int64_t bn, int64_t threads);
/// Passes of whole warp rows in which the staged epilogue moves the
/// accumulators (kGroups slices of bm x bn, rows padded by 8 floats)
/// through `bytes` of shared memory; bytesPerPass says what one needs.
int64_t stagingPasses(int64_t bm, int64_t bn, int64_t warpsM, int64_t kGroups,
                      int64_t bytes);
inline int64_t stagingBytesPerPass(int64_t bm, int64_t bn, int64_t kGroups,
                                   int64_t passes) {
  return kGroups * bm / passes * (bn + 8) * 4;
}

/// The base of the GEMM families: describes the anchor as a GemmProblem and
/// lets the family compute it.
class GemmKernel : public KernelBuilder {
public:
  GemmKernel(mlir::fuse::KernelOp kernel, mlir::gpu::GPUModuleOp module,
             const TargetDescription &target, GemmTile tile)
      : KernelBuilder(kernel, module, target), tile(tile) {}

protected:
  mlir::FailureOr<LaunchConfig> emitBody() final;
  virtual mlir::FailureOr<LaunchConfig>
  emitGemm(const GemmProblem &problem) = 0;

  GemmTile tile;

  /// The m and n of output tile `pid` of one batch (by default the
  /// block's x) in GemmSchedule's grouped raster.
  std::pair<mlir::Value, mlir::Value>
  emitTileOrigin(const GemmShape &shape, const GemmTile &tile,
                 mlir::Value pid = mlir::Value());

  /// Stores the results at `coords` (channel coordinate of lane 0 along
  /// `axis`) from accumulators `acc` of `columns`.
  /// `full` holds the full-size inputs already loaded at `coords`.
  void storeGemmResults(llvm::ArrayRef<mlir::Value> coords, int64_t axis,
                        const GemmColumns &columns,
                        llvm::ArrayRef<mlir::Value> acc,
                        const EpilogueEvaluator::FullInputs *full = nullptr);
  /// Sets `problem.epilogue` to store at problem.rowCoords.
  void setRowEpilogue(GemmProblem &problem);

  /// Applies the epilogue to accumulators `acc` (layout's fragments, 4 per
  /// m16n8 fragment, fragment (fm, fn) at 4 (fm fragsN + fn)) of the tile
  /// at (tileM, tileN) of `batch`, in their fragments, pairs of columns at
  /// a time...
  void emitFragmentEpilogue(const GemmProblem &problem,
                            const AccumulatorLayout &layout,
                            llvm::ArrayRef<mlir::Value> acc, mlir::Value tileM,
                            mlir::Value tileN, mlir::Value batch);
  /// ... or after staging them through shared memory, GemmShape::outVector
  /// columns at a time (canStageEpilogue), summing the k groups' slices.
  void emitStagedEpilogue(const GemmProblem &problem,
                          const AccumulatorLayout &layout,
                          llvm::ArrayRef<mlir::Value> acc, mlir::Value tileM,
                          mlir::Value tileN, mlir::Value batch);
  /// Split-K: stores the block's f32 sums for k-split `split` of `splits`
  /// into a workspace [splits, batch, m, n], moves the kernel emitted so
  /// far (launched as `mainloop`) into a sibling launched first, and emits
  /// this function as the reduction: per output element, the splits' sums
  /// in a fixed order (deterministic), then the fused epilogue.
  LaunchConfig finishSplitK(const GemmProblem &problem,
                            const AccumulatorLayout &layout,
                            llvm::ArrayRef<mlir::Value> acc, mlir::Value tileM,
                            mlir::Value tileN, mlir::Value batch,
                            mlir::Value split, int64_t splits,
                            const LaunchConfig &mainloop);

  /// Emits `access(memref, indices)` on the memref holding `operand`'s
  /// element at `indices`: its memref, or the part of a concatenation, in a
  /// branch per part (indices past the end go to the last part). Returns
  /// what `access` returns, of type `type` (none when null).
  mlir::Value
  accessOperand(const GemmOperand &operand,
                llvm::SmallVector<mlir::Value> indices, mlir::Type type,
                llvm::function_ref<mlir::Value(mlir::Value,
                                               llvm::SmallVector<mlir::Value>)>
                    access);

private:
  /// The operand `layout` describes, its address function derived from it.
  GemmOperand operandOf(const GemmOperandLayout &layout,
                        const GemmShape &shape);
  std::function<GemmAddress(mlir::Value, mlir::Value, mlir::Value)>
  matrixAddress(const GemmOperandLayout &layout, const GemmShape &shape);
  std::function<GemmAddress(mlir::Value, mlir::Value, mlir::Value)>
  convInputAddress(const GemmConvGeometry &g);
  std::function<GemmAddress(mlir::Value, mlir::Value, mlir::Value)>
  convFilterAddress(const GemmConvGeometry &g);
  std::function<GemmAddress(mlir::Value, mlir::Value, mlir::Value)>
  transposeInputAddress(const GemmConvGeometry &g);
  std::function<GemmAddress(mlir::Value, mlir::Value, mlir::Value)>
  transposeFilterAddress(const GemmConvGeometry &g);
  std::function<GemmAddress(mlir::Value, mlir::Value, mlir::Value)>
  gradOutputAddress(const GemmConvGeometry &g);
  std::function<GemmAddress(mlir::Value, mlir::Value, mlir::Value)>
  gradInputAddress(const GemmConvGeometry &g);
  /// (c, kh, kw) of a convolution's reduction index k.
  std::tuple<mlir::Value, mlir::Value, mlir::Value>
  splitConvK(const GemmConvGeometry &g, mlir::Value k);
  /// The epilogue of each anchor.
  /// A convolution's or a transposed convolution's (`bias` may be null).
  void convEpilogue(mlir::Value bias, const GemmConvGeometry &geometry,
                    GemmProblem &problem);
  void filterGradEpilogue(const GemmConvGeometry &geometry,
                          GemmProblem &problem);
  void linearEpilogue(mlir::fuse::LinearOp op, GemmProblem &problem);
  void matmulEpilogue(mlir::fuse::MatmulOp op, GemmProblem &problem);
};

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_GEMM_H
