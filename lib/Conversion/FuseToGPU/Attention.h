//===- Attention.h - What the tensor-core attentions share ------*- C++ -*-===//
//
// The collectives of the FlashAttention-style families, in the manner of
// CUTLASS's FMHA split: AttentionKernel holds everything but the mainloops
// (the block schedule, the scale, the masks, the online softmax, P as the A
// operand of O += P V, and the final normalise-and-store), and
// AttentionMmaSync.cpp and AttentionWgmma.cpp keep how S = Q K^T and
// O += P V are fed and computed. Both leave S and O in mma.sync's
// accumulator layout, which wgmma's m64nN accumulators share
// (AttentionFragments), so each piece here is written once.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_ATTENTION_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_ATTENTION_H

#include "MmaSync.h"

namespace fusec::tiling {

/// The sizes of a fuse.attention: Q [batch, hq, nq, d], K [batch, hkv, nk,
/// d], V [batch, hkv, nk, dv].
struct AttentionShape {
  int64_t batch, hq, hkv, nq, nk, d, dv;

  static AttentionShape of(mlir::fuse::AttentionOp op);
};

/// Where a thread's scores S (a tile of keys) and outputs O (the head dims)
/// live: m16n8 fragments of 4 f32, element e of fragment f at row
/// rows[e / 2] and column 8f + 2t + e % 2, the quad of threads sharing t's
/// row holding the rest of it (mma.sync's accumulator layout; a warp of a
/// wgmma warpgroup holds 16 rows the same way).
struct AttentionFragments {
  /// The thread's two query rows: g and g + 8 of its warp's 16.
  std::array<mlir::Value, 2> rows;
  /// The thread's place in its quad (lane % 4).
  mlir::Value t;
};

/// The base of the tensor-core attention families.
class AttentionKernel : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

protected:
  /// Reads the anchor and sets up the scale, then lets the family emit the
  /// kernel.
  mlir::FailureOr<LaunchConfig> emitBody() final;
  virtual mlir::FailureOr<LaunchConfig> emitAttention() = 0;

  //===--------------------------------------------------------------------===//
  // The schedule
  //===--------------------------------------------------------------------===//

  /// A block per `br` query rows of a (batch, head): sets batchIndex, head,
  /// kvHead and q0, the block's first row. Causal blocks start with the
  /// longest rows, so that the short ones fill the tail.
  void scheduleBlock(int64_t br);
  /// The key tiles of `bc` keys the block visits: all of them, or (causal)
  /// up to the one holding its last row.
  mlir::Value keyTiles(int64_t br, int64_t bc);
  /// The grid of scheduleBlock.
  std::array<int64_t, 3> grid(int64_t br) const {
    return {ceilDiv(shape.nq, br), shape.batch * shape.hq, 1};
  }

  //===--------------------------------------------------------------------===//
  // One key tile
  //===--------------------------------------------------------------------===//

  /// Scales the scores `scores` of the tile of `bc` keys from `kv0` and
  /// adds the mask; sets keys past the end and (causal) after the row to
  /// -inf, only on the tiles that reach past the keys or the block's first
  /// row (interior tiles stay unmasked).
  void maskScores(llvm::SmallVectorImpl<mlir::Value> &scores,
                  const AttentionFragments &frags, mlir::Value kv0, int64_t bc);
  /// One step of the online softmax over the scores `scores` of a tile,
  /// which become P = exp2(S - max): per row of the thread's two, the new
  /// running max m (over the quad), the running sum l (the thread's part)
  /// and O `o` rescaled.
  void softmaxStep(llvm::MutableArrayRef<mlir::Value> scores,
                   llvm::MutableArrayRef<mlir::Value> o,
                   llvm::MutableArrayRef<mlir::Value> m,
                   llvm::MutableArrayRef<mlir::Value> l);
  /// P's fragments of keys 16 step.. rounded to the input type: the A
  /// operand (m16n8k16's 4 registers) of k-step `step` of O += P V.
  llvm::SmallVector<mlir::Value> packP(llvm::ArrayRef<mlir::Value> p,
                                       int64_t step);
  /// O / l, where `l` holds the thread's part of each row's sum (0 for a
  /// row that saw no key), stored through the kernel's epilogue two columns
  /// at a time; and, with return_lse, each row's log-sum-exp from its
  /// running max `m` and sum.
  void normaliseAndStore(llvm::ArrayRef<mlir::Value> o,
                         llvm::ArrayRef<mlir::Value> m,
                         llvm::ArrayRef<mlir::Value> l,
                         const AttentionFragments &frags);

  /// The sum (or max) of `x` over the 4 threads of a quad, which hold one
  /// row of a fragment between them.
  mlir::Value quadReduce(mlir::Value x, bool max);
  mlir::Value exp2(mlir::Value x) { return mlir::math::Exp2Op::create(b, x); }

  mlir::fuse::AttentionOp op;
  AttentionShape shape;
  mlir::Type elementType;
  MmaType type;
  bool causal = false;
  /// The additive mask's kernel argument, or null.
  mlir::Value mask;
  /// exp(x * scale) = exp2(x * scale * log2(e)); the mask is scaled alike.
  /// Without a mask (and with a positive scale, which keeps the max) the
  /// scale folds into the exponent's fma, exp2(s * c - max * c): mult is c,
  /// and 1 where the scores are scaled first (prescale).
  double scaleLog2 = 0;
  bool prescale = false;
  mlir::Value mult, negInf, zero;
  /// Where the output goes: the epilogue, or with return_lse the split
  /// results' evaluator; and the log-sum-exp's memref (null without one).
  SplitResults rowResults;
  EpilogueEvaluator *out = nullptr;
  mlir::Value lseOut;
  /// The block's (batch, head), the head's K and V, and its first query
  /// row (scheduleBlock).
  mlir::Value batchIndex, head, kvHead, q0;
};

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_ATTENTION_H
