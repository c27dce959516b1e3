//===- AttentionGrad.cpp - What the attention backward's families share --===//
//
// See AttentionGrad.h.
//
//===----------------------------------------------------------------------===//

#include "AttentionGrad.h"
#include "Families.h"

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec::tiling;

LogicalResult AttentionGradKernel::readAnchor() {
  op = cast<AttentionGradOp>(anchor);
  for (Value operand : anchor->getOperands())
    if (!isa<BlockArgument>(operand))
      return kernel.emitOpError("reads ")
             << anchor->getName()
             << "'s operands from memory, but one is computed in the kernel";
  resultAt.assign(3, -1);
  for (auto [index, value] : llvm::enumerate(yield().getValues())) {
    auto result = dyn_cast<OpResult>(value);
    if (!result || result.getOwner() != anchor)
      return kernel.emitOpError("result #")
             << index << " is not a gradient " << anchor->getName()
             << " computes, which its family stores as they are";
    resultAt[result.getResultNumber()] = index;
  }
  ArrayRef<int64_t> qs = shapeOf(op.getQuery()), vs = shapeOf(op.getValue());
  batch = qs[0];
  hq = qs[1];
  nq = qs[2];
  d = qs[3];
  hkv = vs[1];
  nk = vs[2];
  dv = vs[3];
  group = hq / hkv;
  scale = op.getEffectiveScale();
  causal = op.getCausal();
  q = argOf.lookup(op.getQuery());
  k = argOf.lookup(op.getKey());
  v = argOf.lookup(op.getValue());
  o = argOf.lookup(op.getOutput());
  dO = argOf.lookup(op.getOutputGrad());
  lse = argOf.lookup(op.getLse());
  mask = op.getMask() ? argOf.lookup(op.getMask()) : Value();
  return success();
}
