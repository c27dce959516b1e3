//===- AttentionGrad.h - Attention backward's shared base ------*- C++ -*-===//
//
// The base of the attention backward's families (AttentionGradDirect.cpp,
// AttentionGradMmaSync.cpp, AttentionGradWgmma.cpp): the anchor's operands
// (kernel arguments: the backward reads them from memory) and sizes, which
// of dQ, dK and dV the kernel stores, and what the tensor-core families
// share: their first and last launches, and P from a score.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_ATTENTIONGRAD_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_ATTENTIONGRAD_H

#include "ExtraLaunches.h"
#include "KernelBuilder.h"

namespace fusec::tiling {

class AttentionGradKernel : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

protected:
  /// Reads the anchor into the members below; fails at the kernel when an
  /// operand is computed in it or a result is not one of the gradients.
  mlir::LogicalResult readAnchor();

  /// The tensor-core families' first launch (head dims multiples of 8), a
  /// group of lanes per row of [batch, hq, rows] (rows >= nq pad the
  /// tiles): delta =
  /// rowsum(dO * O) (0 past nq) into `delta`, the row of the f32 dQ
  /// accumulator `dqAcc` (if any) zeroed (padding rows too), and with
  /// `lse2` the log-sum-exp times log2(e) into it, +inf where a row saw no
  /// key and past nq, so that P = 0 there. `semaphores` (if any), i32
  /// [batch, hq, tiles, n] of whole tiles of rows, zeroed.
  LaunchConfig emitRowsPre(mlir::Value delta, mlir::Value dqAcc,
                           mlir::Value lse2, int64_t rows,
                           mlir::Value semaphores = {});
  /// Their last: dQ = scale * the accumulator, a thread per element.
  LaunchConfig emitScaleDq(mlir::Value dqAcc);
  /// Their launches after the first (`pre`): `main`, split off as `_main`
  /// when dQ is stored, then `scaleDq`'s; records `workspaces` and the
  /// launches before the last, which it returns.
  LaunchConfig finishLaunches(llvm::ArrayRef<mlir::MemRefType> workspaces,
                              ExtraLaunch pre, LaunchConfig main, bool storesDq,
                              llvm::function_ref<LaunchConfig()> scaleDq);
  /// The query tiles of `br` rows a block of keys from `kv0` of key head
  /// `hk` walks, step by step; causal, only the tiles from that of its first
  /// key on (query i sees key j when j <= i). Head by head of the group,
  /// or, `ordered`, tile by tile with the heads of the group inner and
  /// (causal) the tiles from the last down, so that every block of keys
  /// reaches a given (head, tile) at the same step: the deterministic dQ
  /// adds the blocks' shares in their order without one running ahead.
  struct QueryWalk {
    mlir::Value hk, first, span, steps;
    int64_t br;
    bool ordered;
  };
  QueryWalk walkQueries(mlir::Value kv0, mlir::Value hk, int64_t br,
                        bool ordered = false);
  /// The query head and the first query row of step `it`.
  mlir::Value headAt(const QueryWalk &walk, mlir::Value it);
  mlir::Value rowAt(const QueryWalk &walk, mlir::Value it);
  /// P of query `qi` and key `key` of batch `bi`, query head `h`, from the
  /// score S = q . k and the row's `lse2` (log-sum-exp times log2(e)):
  /// exp2(S scale log2(e) + mask log2(e) - lse2), 0 past the keys and
  /// (causal) after the query.
  mlir::Value probability(mlir::Value score, mlir::Value lse2, mlir::Value bi,
                          mlir::Value h, mlir::Value qi, mlir::Value key);

  /// Stores dS of query `qi` and key `key` (dropped past nq or nk) when the
  /// kernel yields the score gradient.
  void storeScoreGrad(mlir::Value ds, mlir::Value bi, mlir::Value h,
                      mlir::Value qi, mlir::Value key);
  /// Causal, with the score gradient: zeroes its keys after query `qi`
  /// (P = 0 there; the main loop skips most of them), `lanes` lanes from
  /// `lane` taking every `lanes`-th key.
  void zeroScoreGradAbove(mlir::Value bi, mlir::Value h, mlir::Value qi,
                          mlir::Value lane, int64_t lanes);

  mlir::fuse::AttentionGradOp op;
  /// Q [batch, hq, nq, d], K [batch, hkv, nk, d], V [batch, hkv, nk, dv];
  /// `group` query heads share a key head.
  int64_t batch, hq, hkv, nq, nk, d, dv, group;
  double scale;
  bool causal;
  /// The operands' memrefs (mask: null without one).
  mlir::Value q, k, v, o, dO, lse, mask;
  /// Per anchor result (dQ, dK, dV, dS), the kernel result it is, or -1.
  llvm::SmallVector<int64_t> resultAt;
};

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_ATTENTIONGRAD_H
