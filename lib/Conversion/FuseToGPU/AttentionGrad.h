//===- AttentionGrad.h - Attention backward's shared base ------*- C++ -*-===//
//
// The base of AttentionGradDirect.cpp and AttentionGradMmaSync.cpp: the
// anchor's operands (kernel arguments: the backward reads them from memory)
// and sizes, and which of dQ, dK and dV the kernel stores.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_ATTENTIONGRAD_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_ATTENTIONGRAD_H

#include "KernelBuilder.h"

namespace fusec::tiling {

class AttentionGradKernel : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

protected:
  /// Reads the anchor into the members below; fails at the kernel when an
  /// operand is computed in it or a result is not one of the gradients.
  mlir::LogicalResult readAnchor();

  mlir::fuse::AttentionGradOp op;
  /// Q [batch, hq, nq, d], K [batch, hkv, nk, d], V [batch, hkv, nk, dv];
  /// `group` query heads share a key head.
  int64_t batch, hq, hkv, nq, nk, d, dv, group;
  double scale;
  bool causal;
  /// The operands' memrefs (mask: null without one).
  mlir::Value q, k, v, o, dO, lse, mask;
  /// Per anchor result (dQ, dK, dV), the kernel result it is, or -1.
  llvm::SmallVector<int64_t> resultAt;
};

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_ATTENTIONGRAD_H
