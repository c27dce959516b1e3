//===- FuseOps.h - Operators of the fuse dialect ----------------*- C++ -*-===//

#ifndef FUSE_FUSEOPS_H
#define FUSE_FUSEOPS_H

#include "Fuse/FuseDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <array>

#include "Fuse/FuseEnums.h.inc"

#include "Fuse/FuseGradient.h"
#include "Fuse/FuseInterfaces.h.inc"

namespace mlir::fuse {
namespace OpTrait {
// Op roles (FuseOps.td), read by fusion and tiling alike.
template <typename ConcreteType>
class Anchor : public ::mlir::OpTrait::TraitBase<ConcreteType, Anchor> {};
template <typename ConcreteType>
class RowReduction
    : public ::mlir::OpTrait::TraitBase<ConcreteType, RowReduction> {};
template <typename ConcreteType>
class Elementwise
    : public ::mlir::OpTrait::TraitBase<ConcreteType, Elementwise> {};
template <typename ConcreteType>
class View : public ::mlir::OpTrait::TraitBase<ConcreteType, View> {};
} // namespace OpTrait

/// Starts a kernel of its own (convolution, matrix product, normalisation,
/// pooling, ...).
inline bool isAnchor(Operation *op) {
  return op->hasTrait<OpTrait::Anchor>();
}
/// An anchor reducing along rows, which takes an elementwise prologue.
inline bool isRowReduction(Operation *op) {
  return op->hasTrait<OpTrait::RowReduction>();
}
/// Computed element by element, operands broadcast to the result.
inline bool isElementwise(Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>();
}
/// Each result element is one operand element at other coordinates (slice,
/// concat): kernels read through it.
inline bool isView(Operation *op) { return op->hasTrait<OpTrait::View>(); }
} // namespace mlir::fuse

#define GET_ATTRDEF_CLASSES
#include "Fuse/FuseAttrs.h.inc"

namespace mlir::fuse {

/// Padding written as [ph, pw] or [top, bottom, left, right], as the four
/// sides. Verified ops only have these two forms.
std::array<int64_t, 4> expandPadding(llvm::ArrayRef<int64_t> padding);

/// The channel axis of an activation of `rank` in `layout`: 1 for NCHW, the
/// last axis for NHWC.
int64_t channelAxis(Layout layout, int64_t rank);

/// The most dimensions a fusec tensor has: NumPy's limit (NPY_MAXDIMS), and
/// the buffer protocol's and DLPack producers' in practice. Compile time
/// grows with the square of the rank (MLIR's memref-to-LLVM lowering builds
/// a strided-layout expression of `rank` terms per access), so a rank of
/// 23000 took 30 s where 64 takes milliseconds.
constexpr int64_t kMaxRank = 64;

/// What makes a static tensor one fusec cannot compute on: "has rank N;
/// ..." (more than kMaxRank dimensions), "has a zero-size dimension", or
/// "has 2^63 bytes or more" (its size overflows int64); "" when there is
/// nothing wrong.
std::string shapeProblem(RankedTensorType type);

} // namespace mlir::fuse

#define GET_OP_CLASSES
#include "Fuse/FuseOps.h.inc"

namespace mlir::fuse {
/// Whether `op` only changes how an attention anchor loads or stores:
/// a transpose keeping the last axis, a slice, or a rope, whose result
/// feeds only attention operands (through other such ops), or a transpose
/// keeping the last axis of an attention's result. The attention applies it
/// on the way (strided copies, a rotation in shared memory, permuted
/// stores), so it joins that kernel without being its anchor.
/// `canLoadThrough` says which slices the kernels can load through (the
/// fusion policy's rule, fusec/Transforms/FusionPolicy.h); without it, any:
/// the structural rule by which a kernel holds one anchor.
bool isAnchorView(Operation *op,
                  function_ref<bool(SliceOp)> canLoadThrough = nullptr);
/// A transpose that keeps the last axis in place (rows stay contiguous).
bool keepsLastAxis(TransposeOp op);
} // namespace mlir::fuse

#endif // FUSE_FUSEOPS_H
