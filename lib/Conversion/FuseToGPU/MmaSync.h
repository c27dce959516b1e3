//===- MmaSync.h - mma.sync, ldmatrix and swizzled tiles --------*- C++ -*-===//
//
// The instruction-level pieces the tensor-core families share (GEMM and
// attention): which mma.sync an element type asks for, the XOR swizzle of
// shared-memory tiles, ldmatrix, mma.sync and zero-filling cp.async.
// Fragment layouts are those of TENSOR-CORES.md section 3 (lane = 4g + t).
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_MMASYNC_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_MMASYNC_H

#include "Gemm.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace fusec::tiling {

/// What the element type asks of the instructions.
struct MmaType {
  mlir::NVVM::MMATypes ptx;
  /// Bytes per element.
  int64_t bytes;
  /// The k of one mma.sync: 32 bytes of k either way.
  int64_t instK() const { return 32 / bytes; }
  /// Elements in a 16-byte chunk (one cp.async, one ldmatrix row).
  int64_t chunk() const { return 16 / bytes; }
};

/// f16 and bf16, and f32 as TF32 when `fp32Math` says so.
std::optional<MmaType> mmaTypeOf(mlir::Type elementType, Fp32Math fp32Math);

/// Where element `col` of row `row` of a shared-memory tile `cols` wide
/// lives: chunk c of row r moves to c ^ f(r), f cycling through every chunk
/// of a 128-byte line over the rows that share it, so that the 8 rows one
/// ldmatrix matrix (or 8 lanes of cp.async) reads cover all 32 banks. `cols`
/// must be a power of two of chunks or a multiple of 8 of them.
mlir::Value swizzleColumn(mlir::ImplicitLocOpBuilder &b, const MmaType &type,
                          int64_t cols, mlir::Value row, mlir::Value col);

/// A 16-bit shared-memory tile's width in elements: `width` rounded up to
/// whole k-steps of 16, then to what swizzleColumn covers (a power of two of
/// 16-byte chunks up to 8, a multiple of 8 beyond).
int64_t paddedTileWidth(int64_t width);

/// ldmatrix of `tiles` 8x8 matrices, each lane addressing one row at
/// `indices` of `buffer`, as the 32-bit registers mma.sync takes
/// (vector<2xf16> for f16, i32 otherwise).
llvm::SmallVector<mlir::Value> emitLdmatrix(mlir::ImplicitLocOpBuilder &b,
                                            const MmaType &type,
                                            mlir::Value buffer,
                                            mlir::ValueRange indices,
                                            int64_t tiles, bool transpose);

/// acc += a x b on one m16n8 fragment (4 f32 accumulators).
llvm::SmallVector<mlir::Value> emitMma(mlir::ImplicitLocOpBuilder &b,
                                       const MmaType &type,
                                       llvm::ArrayRef<mlir::Value> a,
                                       llvm::ArrayRef<mlir::Value> bRegs,
                                       llvm::ArrayRef<mlir::Value> acc);

/// Two f32 values as one 32-bit A register of `type` (16-bit types only):
/// how an accumulator fragment becomes the A operand of the next mma.sync.
mlir::Value packPair(mlir::ImplicitLocOpBuilder &b, const MmaType &type,
                     mlir::Type elementType, mlir::Value lo, mlir::Value hi);

/// The A operand (m16n8k16's 4 registers) of k-step `step` from m16n8
/// accumulator fragments `acc` (fragment f holding columns 8f..), rounded to
/// `elementType`: how attention reuses P (and its backward dS) as the A
/// operand of the next product.
llvm::SmallVector<mlir::Value>
packAccumulatorsAsA(mlir::ImplicitLocOpBuilder &b, const MmaType &type,
                    mlir::Type elementType, llvm::ArrayRef<mlir::Value> acc,
                    int64_t step);

/// cp.async of one 16-byte chunk from `src[srcIndices]` to
/// `dst[dstIndices]`, zero-filled (and reading nothing) where `inBounds` is
/// false; the source indices are clamped to 0 there.
void emitCopyChunk(mlir::ImplicitLocOpBuilder &b, const MmaType &type,
                   mlir::Value dst, mlir::ValueRange dstIndices,
                   mlir::Value src, llvm::SmallVector<mlir::Value> srcIndices,
                   mlir::Value inBounds);

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_MMASYNC_H
