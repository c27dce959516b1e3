//===- Wgmma.h - Hopper's warpgroup MMA, TMA and mbarriers ------*- C++ -*-===//
//
// The instruction-level pieces the sm_90a families share (GEMM and
// attention), as MmaSync.h is for mma.sync: shared-memory addresses, wgmma
// descriptors of 128-byte-swizzled tiles, wgmma with A from shared memory or
// from registers, mbarriers, named barriers and TMA copies
// (TENSOR-CORES.md sections 3 to 6).
//
// Tiles in shared memory are 128-byte swizzled, 1024-byte aligned:
//  - K-major (k contiguous): rows of 128 bytes of k, in panels of 64 16-bit
//    k-values when k is wider (a panel after another, `rows` x 128 bytes
//    each), 8-row atoms 1024 bytes apart;
//  - MN-major (m or n contiguous): panels of 64 m (or n) x `rows` of k, each
//    k row 128 bytes, panels `panelBytes` apart.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_WGMMA_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_WGMMA_H

#include "KernelBuilder.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace fusec::tiling::wgmma {

/// Whether TMA can address a tensor of these extents: a box's coordinates
/// are signed 32-bit.
inline bool tmaAddressable(llvm::ArrayRef<int64_t> dims) {
  return llvm::all_of(dims, [](int64_t d) { return d < (int64_t(1) << 31); });
}

/// The 32-bit shared-memory address of `view`'s first byte, as i64.
mlir::Value sharedAddress(mlir::ImplicitLocOpBuilder &b, mlir::Value view);
/// A pointer in address space `space` (3: shared::cta, 7: shared::cluster)
/// to the shared address `address` (i64).
mlir::Value sharedPointer(mlir::ImplicitLocOpBuilder &b, mlir::Value address,
                          unsigned space);
/// `address` + `bytes` (i64).
mlir::Value offset(mlir::ImplicitLocOpBuilder &b, mlir::Value address,
                   int64_t bytes);
mlir::Value offset(mlir::ImplicitLocOpBuilder &b, mlir::Value address,
                   mlir::Value index, int64_t bytesPerIndex);

/// The shared-memory descriptor of the tile at `address`: K-major, or
/// MN-major with panels `panelBytes` apart (see above).
mlir::Value descriptor(mlir::ImplicitLocOpBuilder &b, mlir::Value address,
                       bool kMajor, int64_t panelBytes);

/// acc (an !llvm.struct of n/2 f32) += A (m64 x k16, shared memory) x B
/// (k16 x n, shared memory), 16-bit `type` (f16 or bf16).
mlir::Value mmaSS(mlir::ImplicitLocOpBuilder &b, mlir::Value acc,
                  mlir::Value descA, mlir::Value descB, int64_t n,
                  mlir::Type type, bool aKMajor, bool bKMajor);
/// The same with A from registers: 4 32-bit registers per thread, each two
/// 16-bit values, in mma.sync's m16n8k16 A layout for the warp's 16 rows
/// (packPair of two accumulators). MLIR's nvvm.wgmma.mma_async takes A as
/// a descriptor only, so this is inline PTX.
mlir::Value mmaRS(mlir::ImplicitLocOpBuilder &b, mlir::Value acc,
                  llvm::ArrayRef<mlir::Value> a, mlir::Value descB, int64_t n,
                  mlir::Type type, bool bKMajor);

/// An !llvm.struct of n/2 zero f32: wgmma's m64nN accumulators.
mlir::Value zeroAccumulators(mlir::ImplicitLocOpBuilder &b, int64_t n);
/// Field i of accumulators `acc`: thread (warp w, lane 4g + t) holds
/// C[16w + g + 8 (i % 4 / 2)][8 (i / 4) + 2t + i % 2] of the warp's m64.
llvm::SmallVector<mlir::Value> accumulatorValues(mlir::ImplicitLocOpBuilder &b,
                                                 mlir::Value acc);
/// The accumulators rebuilt from `values` (after scaling them, say).
mlir::Value accumulatorStruct(mlir::ImplicitLocOpBuilder &b,
                              llvm::ArrayRef<mlir::Value> values);

/// bar.sync `id`, `threads` (a multiple of 32): synchronises part of the
/// block, so that warps that left are not waited for.
void namedBarrier(mlir::ImplicitLocOpBuilder &b, int64_t id, int64_t threads);

/// Waits until the mbarrier at `bar` (!llvm.ptr<3>) completes the phase of
/// parity `parity` (i32); a fresh barrier's phase of parity 1 counts as
/// complete.
void waitBarrier(mlir::ImplicitLocOpBuilder &b, mlir::Value bar,
                 mlir::Value parity);

/// TMA copy of one box of tensor map `map` at `coords` (innermost first,
/// i32) into shared address `dst`, completing on the mbarrier `bar`; an
/// im2col map takes the pixel offsets `im2colOffsets` (i16) too.
void copyBox(mlir::ImplicitLocOpBuilder &b, mlir::Value dst, mlir::Value map,
             mlir::ValueRange coords, mlir::Value bar,
             mlir::ValueRange im2colOffsets = {});

} // namespace fusec::tiling::wgmma

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_WGMMA_H
