//===- Gather.cpp - Transposes and rotary embeddings ------------------------===//
//
// Ops whose outputs gather their inputs from elsewhere in the tensor: one
// thread per output element.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

using namespace fusec::tiling;

namespace {
class GatherKernel : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

private:
  FailureOr<LaunchConfig> emitBody() override {
    if (auto transpose = dyn_cast<TransposeOp>(anchor))
      return emitTranspose(transpose);
    return emitRope(cast<RopeOp>(anchor));
  }
  LaunchConfig emitTranspose(TransposeOp op);
  LaunchConfig emitRope(RopeOp op);
};
} // namespace

std::unique_ptr<KernelBuilder>
fusec::tiling::makeGatherKernel(KernelOp kernel, gpu::GPUModuleOp module,
                                const TargetDescription &target) {
  return std::make_unique<GatherKernel>(kernel, module, target);
}

LaunchConfig GatherKernel::emitTranspose(TransposeOp op) {
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  ArrayRef<int64_t> perm = op.getPermutation();
  Value x = argOf.lookup(op.getInput());
  return perElement(product(outShape), [&](Value linear) {
    SmallVector<Value> coords = delinearize(linear, outShape);
    SmallVector<Value> in(coords.size());
    for (auto [i, p] : llvm::enumerate(perm))
      in[p] = coords[i];
    storeResults(coords, load(x, in));
  });
}

LaunchConfig GatherKernel::emitRope(RopeOp op) {
  ArrayRef<int64_t> shape = shapeOf(op.getResult());
  int64_t d = shape.back(), half = d / 2;
  bool interleaved = op.getInterleaved();
  Value x = argOf.lookup(op.getInput());
  Value cosT = argOf.lookup(op.getCos()), sinT = argOf.lookup(op.getSin());
  return perElement(product(shape), [&](Value linear) {
    SmallVector<Value> coords = delinearize(linear, shape);
    Value pos = coords[coords.size() - 2], feature = coords.back();
    // This element is the first (x0) or second (x1) of its pair.
    Value pair, first, partner;
    if (interleaved) {
      pair = divi(feature, 2);
      first = cmpi(arith::CmpIPredicate::eq, remi(feature, 2), idx(0));
      partner = select(first, addi(feature, idx(1)), subi(feature, idx(1)));
    } else {
      first = ltc(feature, half);
      pair = select(first, feature, subi(feature, idx(half)));
      partner = select(first, addi(feature, idx(half)),
                       subi(feature, idx(half)));
    }
    SmallVector<Value> partnerCoords(coords);
    partnerCoords.back() = partner;
    Value self = load(x, coords), other = load(x, partnerCoords);
    Value c = load(cosT, {pos, pair}), s = load(sinT, {pos, pair});
    // x0' = x0 c - x1 s; x1' = x1 c + x0 s.
    Value signedOther = select(first, arith::NegFOp::create(b, other), other);
    storeResults(coords, fma(self, c, mulf(signedOther, s)));
  });
}
