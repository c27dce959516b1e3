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
  NVVM::MMATypes ptx;
  /// Bytes per element.
  int64_t bytes;
  /// The k of one mma.sync: 32 bytes of k either way.
  int64_t instK() const { return 32 / bytes; }
  /// Elements in a 16-byte chunk (one cp.async, one ldmatrix row).
  int64_t chunk() const { return 16 / bytes; }
};

/// f16 and bf16, and f32 as TF32 when `fp32Math` says so.
std::optional<MmaType> mmaTypeOf(Type elementType, Fp32Math fp32Math);

/// Where element `col` of row `row` of a shared-memory tile `cols` wide
/// lives: chunk c of row r moves to c ^ f(r), f cycling through every chunk
/// of a 128-byte line over the rows that share it, so that the 8 rows one
/// ldmatrix matrix (or 8 lanes of cp.async) reads cover all 32 banks. `cols`
/// must be a power of two of chunks or a multiple of 8 of them.
Value swizzleColumn(ImplicitLocOpBuilder &b, const MmaType &type,
                    int64_t cols, Value row, Value col);

/// ldmatrix of `tiles` 8x8 matrices, each lane addressing one row at
/// `indices` of `buffer`, as the 32-bit registers mma.sync takes
/// (vector<2xf16> for f16, i32 otherwise).
SmallVector<Value> emitLdmatrix(ImplicitLocOpBuilder &b, const MmaType &type,
                                Value buffer, ValueRange indices,
                                int64_t tiles, bool transpose);

/// acc += a x b on one m16n8 fragment (4 f32 accumulators).
SmallVector<Value> emitMma(ImplicitLocOpBuilder &b, const MmaType &type,
                           ArrayRef<Value> a, ArrayRef<Value> bRegs,
                           ArrayRef<Value> acc);

/// Two f32 values as one 32-bit A register of `type` (16-bit types only):
/// how an accumulator fragment becomes the A operand of the next mma.sync.
Value packPair(ImplicitLocOpBuilder &b, const MmaType &type, Type elementType,
               Value lo, Value hi);

/// cp.async of one 16-byte chunk from `src[srcIndices]` to
/// `dst[dstIndices]`, zero-filled (and reading nothing) where `inBounds` is
/// false; the source indices are clamped to 0 there.
void emitCopyChunk(ImplicitLocOpBuilder &b, const MmaType &type, Value dst,
                   ValueRange dstIndices, Value src,
                   SmallVector<Value> srcIndices, Value inBounds);

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_MMASYNC_H
