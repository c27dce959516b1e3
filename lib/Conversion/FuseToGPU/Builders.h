//===- Builders.h - Small builders over one OpBuilder -----------*- C++ -*-===//
//
// The arithmetic, memory, vector and control-flow one-liners that every kernel
// family and the pieces it is built from (KernelBuilder, EpilogueEvaluator,
// ViewReader) write with. A Builders refers to an ImplicitLocOpBuilder it does
// not own, so that those pieces insert at one shared insertion point. Index
// values are `index`; float values are f32 (loads extend, stores truncate).
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_BUILDERS_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_BUILDERS_H

#include "Fuse/FuseOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <functional>

namespace fusec::tiling {

inline int64_t product(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return llvm::cast<mlir::ShapedType>(v.getType()).getShape();
}

class Builders {
public:
  explicit Builders(mlir::ImplicitLocOpBuilder &b) : b(b) {}

  mlir::Value idx(int64_t v) {
    return mlir::arith::ConstantIndexOp::create(b, v);
  }
  mlir::Value f32(double v) {
    return mlir::arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  mlir::Value addi(mlir::Value x, mlir::Value y) {
    return mlir::arith::AddIOp::create(b, x, y);
  }
  mlir::Value subi(mlir::Value x, mlir::Value y) {
    return mlir::arith::SubIOp::create(b, x, y);
  }
  mlir::Value muli(mlir::Value x, mlir::Value y) {
    return mlir::arith::MulIOp::create(b, x, y);
  }
  mlir::Value divi(mlir::Value x, int64_t y) {
    return y == 1 ? x : mlir::arith::DivUIOp::create(b, x, idx(y)).getResult();
  }
  mlir::Value remi(mlir::Value x, int64_t y) {
    return y == 1 ? idx(0)
                  : mlir::arith::RemUIOp::create(b, x, idx(y)).getResult();
  }
  mlir::Value mini(mlir::Value x, mlir::Value y) {
    return mlir::arith::MinSIOp::create(b, x, y);
  }
  mlir::Value maxi(mlir::Value x, mlir::Value y) {
    return mlir::arith::MaxSIOp::create(b, x, y);
  }
  mlir::Value cmpi(mlir::arith::CmpIPredicate p, mlir::Value x, mlir::Value y) {
    return mlir::arith::CmpIOp::create(b, p, x, y);
  }
  mlir::Value lt(mlir::Value x, mlir::Value y) {
    return cmpi(mlir::arith::CmpIPredicate::slt, x, y);
  }
  mlir::Value ltc(mlir::Value x, int64_t y) { return lt(x, idx(y)); }
  mlir::Value andi(mlir::Value x, mlir::Value y) {
    return mlir::arith::AndIOp::create(b, x, y);
  }
  /// 0 <= x < n for a signed index.
  mlir::Value inRange(mlir::Value x, int64_t n) {
    return andi(cmpi(mlir::arith::CmpIPredicate::sge, x, idx(0)), ltc(x, n));
  }
  mlir::Value addf(mlir::Value x, mlir::Value y) {
    return mlir::arith::AddFOp::create(b, x, y);
  }
  mlir::Value subf(mlir::Value x, mlir::Value y) {
    return mlir::arith::SubFOp::create(b, x, y);
  }
  mlir::Value mulf(mlir::Value x, mlir::Value y) {
    return mlir::arith::MulFOp::create(b, x, y);
  }
  mlir::Value divf(mlir::Value x, mlir::Value y) {
    return mlir::arith::DivFOp::create(b, x, y);
  }
  /// x / y within 2 ulp (div.approx.f32, __fdividef): for the logistic
  /// 1 / (1 + e^-x) of an epilogue, where IEEE division's slow path costs
  /// a product more than its tile's loads hide. Past 2^126 the quotient
  /// is 0, which the logistic's true value (below 1e-37) rounds to anyway.
  mlir::Value approxDivf(mlir::Value x, mlir::Value y) {
    return mlir::arith::DivFOp::create(b, x, y,
                                       mlir::arith::FastMathFlags::afn);
  }
  mlir::Value fma(mlir::Value x, mlir::Value y, mlir::Value z) {
    return mlir::math::FmaOp::create(b, x, y, z);
  }
  mlir::Value maxf(mlir::Value x, mlir::Value y) {
    return mlir::arith::MaximumFOp::create(b, x, y);
  }
  mlir::Value minf(mlir::Value x, mlir::Value y) {
    return mlir::arith::MinimumFOp::create(b, x, y);
  }
  mlir::Value exp(mlir::Value x) { return mlir::math::ExpOp::create(b, x); }
  mlir::Value select(mlir::Value c, mlir::Value x, mlir::Value y) {
    return mlir::arith::SelectOp::create(b, c, x, y);
  }
  /// The sum (or max) of `x` over aligned groups of `width` lanes (a power
  /// of two up to 32) by XOR shuffles: every lane of a group gets it.
  mlir::Value shuffleReduce(mlir::Value x, int32_t width, bool max = false) {
    for (int32_t offset = width / 2; offset > 0; offset /= 2) {
      mlir::Value other = mlir::gpu::ShuffleOp::create(
                              b, x, offset, 32, mlir::gpu::ShuffleMode::XOR)
                              .getShuffleResult();
      x = max ? maxf(x, other) : addf(x, other);
    }
    return x;
  }
  mlir::Value threadId() {
    return mlir::gpu::ThreadIdOp::create(b, mlir::gpu::Dimension::x);
  }
  mlir::Value blockId(mlir::gpu::Dimension d) {
    return mlir::gpu::BlockIdOp::create(b, d);
  }

  //===--------------------------------------------------------------------===//
  // Memory
  //===--------------------------------------------------------------------===//

  mlir::Value toF32(mlir::Value v) {
    if (v.getType().isF32())
      return v;
    return mlir::arith::ExtFOp::create(b, b.getF32Type(), v);
  }
  mlir::Value load(mlir::Value memref, mlir::ValueRange indices) {
    return toF32(mlir::memref::LoadOp::create(b, memref, indices));
  }
  void store(mlir::Value value, mlir::Value memref, mlir::ValueRange indices) {
    mlir::Type type =
        llvm::cast<mlir::MemRefType>(memref.getType()).getElementType();
    if (type != value.getType())
      value = mlir::arith::TruncFOp::create(b, type, value);
    mlir::memref::StoreOp::create(b, value, memref, indices);
  }
  /// The `width` elements at memref[indices...] (consecutive in the
  /// innermost dimension) as f32 values where `inBounds`, zeros elsewhere.
  llvm::SmallVector<mlir::Value>
  loadVectorOrZero(mlir::Value inBounds, mlir::Value memref,
                   std::function<llvm::SmallVector<mlir::Value>()> indices,
                   int64_t width);
  /// Loads memref[indices] where `inBounds`, 0 elsewhere.
  mlir::Value
  loadOrZero(mlir::Value inBounds, mlir::Value memref,
             std::function<llvm::SmallVector<mlir::Value>()> indices) {
    return ifElse(
        inBounds, [&] { return load(memref, indices()); },
        [&] { return f32(0.0); });
  }
  /// A vector of `width` elements of `memref`'s element type.
  mlir::VectorType vectorOf(mlir::Value memref, int64_t width);
  /// The alignment of such a vector: its size.
  llvm::MaybeAlign alignOf(mlir::Value memref, int64_t width);
  /// The `width` elements from memref[coords] on, as one aligned vector.
  mlir::Value loadVector(mlir::Value memref, llvm::ArrayRef<mlir::Value> coords,
                         int64_t width);

  //===--------------------------------------------------------------------===//
  // Coordinates
  //===--------------------------------------------------------------------===//

  /// Row-major coordinates of `linear` in `shape`.
  llvm::SmallVector<mlir::Value> delinearize(mlir::Value linear,
                                             llvm::ArrayRef<int64_t> shape);
  /// Coordinates of an operand of shape `shape` broadcast to `coords`.
  llvm::SmallVector<mlir::Value>
  broadcastCoords(llvm::ArrayRef<mlir::Value> coords,
                  llvm::ArrayRef<int64_t> shape);
  /// `coords` of `op`'s result mapped to its input.
  llvm::SmallVector<mlir::Value>
  sliceSourceCoords(mlir::fuse::SliceOp op, llvm::ArrayRef<mlir::Value> coords);
  /// The coordinates in `op`'s input of its result's element at `coords`.
  static llvm::SmallVector<mlir::Value>
  transposeSourceCoords(mlir::fuse::TransposeOp op,
                        llvm::ArrayRef<mlir::Value> coords);

  //===--------------------------------------------------------------------===//
  // Structured control flow
  //===--------------------------------------------------------------------===//

  llvm::SmallVector<mlir::Value>
  loop(mlir::Value lb, mlir::Value ub, mlir::Value step, mlir::ValueRange init,
       llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value,
                                                         mlir::ValueRange)>
           body);
  void loop(int64_t lb, int64_t ub,
            llvm::function_ref<void(mlir::Value)> body) {
    (void)loop(idx(lb), idx(ub), idx(1), {},
               [&](mlir::Value iv, mlir::ValueRange) {
                 body(iv);
                 return llvm::SmallVector<mlir::Value>();
               });
  }
  void ifThen(mlir::Value cond, llvm::function_ref<void()> body);
  mlir::Value ifElse(mlir::Value cond, llvm::function_ref<mlir::Value()> thenFn,
                     llvm::function_ref<mlir::Value()> elseFn,
                     mlir::Type type = mlir::Type());

protected:
  mlir::ImplicitLocOpBuilder &b;
};

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_BUILDERS_H
