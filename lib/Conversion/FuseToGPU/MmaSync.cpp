//===- MmaSync.cpp - mma.sync, ldmatrix and swizzled tiles ----------------===//

#include "MmaSync.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec::tiling;

std::optional<MmaType> fusec::tiling::mmaTypeOf(Type elementType,
                                                Fp32Math fp32Math) {
  if (elementType.isF16())
    return MmaType{NVVM::MMATypes::f16, 2};
  if (elementType.isBF16())
    return MmaType{NVVM::MMATypes::bf16, 2};
  if (elementType.isF32() && fp32Math == Fp32Math::TF32)
    return MmaType{NVVM::MMATypes::tf32, 4};
  return std::nullopt;
}

Value fusec::tiling::swizzleColumn(ImplicitLocOpBuilder &b,
                                   const MmaType &type, int64_t cols,
                                   Value row, Value col) {
  int64_t v = type.chunk(), chunks = cols / v;
  int64_t rowsPerLine = std::max<int64_t>(1, 8 / chunks);
  int64_t period = std::min<int64_t>(chunks, 8);
  if (period == 1)
    return col;
  auto idx = [&](int64_t c) { return arith::ConstantIndexOp::create(b, c); };
  Value line = rowsPerLine == 1
                   ? row
                   : arith::DivUIOp::create(b, row, idx(rowsPerLine));
  Value mask = arith::RemUIOp::create(b, line, idx(period));
  Value chunk = arith::XOrIOp::create(
      b, arith::DivUIOp::create(b, col, idx(v)), mask);
  return arith::AddIOp::create(b, arith::MulIOp::create(b, chunk, idx(v)),
                               arith::RemUIOp::create(b, col, idx(v)));
}

SmallVector<Value> fusec::tiling::emitLdmatrix(ImplicitLocOpBuilder &b,
                                               const MmaType &type,
                                               Value buffer, ValueRange indices,
                                               int64_t tiles, bool transpose) {
  // Each lane's 32-bit register of each matrix: two 16-bit elements, or one
  // 32-bit one.
  Type elementType = cast<MemRefType>(buffer.getType()).getElementType();
  auto resultType = VectorType::get({tiles, 4 / type.bytes}, elementType);
  Value v = nvgpu::LdMatrixOp::create(b, resultType, buffer, indices,
                                      b.getBoolAttr(transpose),
                                      b.getI32IntegerAttr(tiles));
  SmallVector<Value> regs;
  for (int64_t i = 0; i < tiles; ++i) {
    Value r = vector::ExtractOp::create(b, v, i);
    // mma.sync takes f16 pairs as vector<2xf16>, bf16 and tf32 as i32.
    if (type.ptx != NVVM::MMATypes::f16) {
      auto i32 = VectorType::get({1}, b.getI32Type());
      r = vector::ExtractOp::create(b, vector::BitCastOp::create(b, i32, r),
                                    0);
    }
    regs.push_back(r);
  }
  return regs;
}

SmallVector<Value> fusec::tiling::emitMma(ImplicitLocOpBuilder &b,
                                          const MmaType &type,
                                          ArrayRef<Value> a,
                                          ArrayRef<Value> bRegs,
                                          ArrayRef<Value> acc) {
  Type f32 = b.getF32Type();
  auto result = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                 {f32, f32, f32, f32});
  Value d = NVVM::MmaOp::create(
      b, result, a, bRegs, acc, {16, 8, type.instK()},
      /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
      std::array<NVVM::MMATypes, 2>{type.ptx, type.ptx},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> out;
  for (int64_t i = 0; i < 4; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, d, i));
  return out;
}

Value fusec::tiling::packPair(ImplicitLocOpBuilder &b, const MmaType &type,
                              Type elementType, Value lo, Value hi) {
  lo = arith::TruncFOp::create(b, elementType, lo);
  hi = arith::TruncFOp::create(b, elementType, hi);
  Value pair = vector::FromElementsOp::create(
      b, VectorType::get({2}, elementType), ValueRange{lo, hi});
  if (type.ptx == NVVM::MMATypes::f16)
    return pair;
  auto i32 = VectorType::get({1}, b.getI32Type());
  return vector::ExtractOp::create(b, vector::BitCastOp::create(b, i32, pair),
                                   0);
}

void fusec::tiling::emitCopyChunk(ImplicitLocOpBuilder &b, const MmaType &type,
                                  Value dst, ValueRange dstIndices, Value src,
                                  SmallVector<Value> srcIndices,
                                  Value inBounds) {
  // Outside the operand nothing is read and the chunk is zero-filled; the
  // source address stays valid anyway.
  Value zero = arith::ConstantIndexOp::create(b, 0);
  for (Value &index : srcIndices)
    index = arith::SelectOp::create(b, inBounds, index, zero);
  Value elements = arith::SelectOp::create(
      b, inBounds, arith::ConstantIndexOp::create(b, type.chunk()), zero);
  nvgpu::DeviceAsyncCopyOp::create(
      b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), dst, dstIndices,
      src, srcIndices, b.getIndexAttr(type.chunk()), elements,
      b.getUnitAttr());
}

int64_t fusec::tiling::paddedTileWidth(int64_t width) {
  int64_t chunks = ceilDiv(width, 16) * 2;
  chunks = chunks <= 8 ? int64_t(llvm::PowerOf2Ceil(chunks))
                       : ceilDiv(chunks, 8) * 8;
  return chunks * 8;
}

SmallVector<Value> fusec::tiling::packAccumulatorsAsA(ImplicitLocOpBuilder &b,
                                                      const MmaType &type,
                                                      Type elementType,
                                                      ArrayRef<Value> acc,
                                                      int64_t step) {
  // a0: row g columns 0-7, a1: row g+8 columns 0-7, a2/a3: columns 8-15.
  SmallVector<Value> a;
  for (int64_t half = 0; half < 2; ++half)
    for (int64_t r = 0; r < 2; ++r) {
      int64_t f = 2 * step + half;
      a.push_back(packPair(b, type, elementType, acc[f * 4 + 2 * r],
                           acc[f * 4 + 2 * r + 1]));
    }
  return a;
}
