//===- Families.h - The kernel families and their configurations -*- C++
//-*-===//
//
// One home per kernel family, each in its own file; FamilyTable.cpp lists
// them, with their selectors and tiles, and builds them through these
// factories.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_FAMILIES_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_FAMILIES_H

#include "Gemm.h"

#include <memory>

namespace fusec::tiling {

/// Elementwise chains: one thread per 16 bytes of output (Elementwise.cpp).
std::unique_ptr<KernelBuilder>
makeElementwiseKernel(mlir::fuse::KernelOp kernel,
                      mlir::gpu::GPUModuleOp module,
                      const TargetDescription &target);

/// Convolutions with narrow groups, depthwise above all: one thread per
/// output, or per 16 bytes of NHWC channels (DirectConv.cpp).
std::unique_ptr<KernelBuilder>
makeDirectConvKernel(mlir::fuse::KernelOp kernel, mlir::gpu::GPUModuleOp module,
                     const TargetDescription &target);

/// layer_norm, rms_norm, softmax: one block per row (RowReduction.cpp).
std::unique_ptr<KernelBuilder>
makeRowReductionKernel(mlir::fuse::KernelOp kernel,
                       mlir::gpu::GPUModuleOp module,
                       const TargetDescription &target);

/// Pooling, global average pooling and upsampling (PoolResample.cpp).
std::unique_ptr<KernelBuilder>
makePoolResampleKernel(mlir::fuse::KernelOp kernel,
                       mlir::gpu::GPUModuleOp module,
                       const TargetDescription &target);

/// Transposes and rotary embeddings, which gather each output from
/// elsewhere in their input (Gather.cpp).
std::unique_ptr<KernelBuilder>
makeGatherKernel(mlir::fuse::KernelOp kernel, mlir::gpu::GPUModuleOp module,
                 const TargetDescription &target);

/// Attention, one thread per output element (AttentionDirect.cpp).
std::unique_ptr<KernelBuilder>
makeAttentionDirectKernel(mlir::fuse::KernelOp kernel,
                          mlir::gpu::GPUModuleOp module,
                          const TargetDescription &target);

/// Attention's backward, a warp per query row then per key row
/// (AttentionGradDirect.cpp).
std::unique_ptr<KernelBuilder>
makeAttentionGradDirectKernel(mlir::fuse::KernelOp kernel,
                              mlir::gpu::GPUModuleOp module,
                              const TargetDescription &target);

/// Attention's backward on tensor cores, FlashAttention-2-style
/// (AttentionGradMmaSync.cpp): f16 and bf16, head dims multiples of 8 up to
/// 128.
bool isMmaSyncAttentionGrad(mlir::fuse::AttentionGradOp op);
std::unique_ptr<KernelBuilder>
makeAttentionGradMmaSyncKernel(mlir::fuse::KernelOp kernel,
                               mlir::gpu::GPUModuleOp module,
                               const TargetDescription &target);

/// The same on sm_90a's wgmma and TMA, FlashAttention-3-style
/// (AttentionGradWgmma.cpp).
bool isWgmmaAttentionGrad(mlir::fuse::AttentionGradOp op,
                          const TargetDescription &target);
std::unique_ptr<KernelBuilder>
makeAttentionGradWgmmaKernel(mlir::fuse::KernelOp kernel,
                             mlir::gpu::GPUModuleOp module,
                             const TargetDescription &target);

/// Attention on tensor cores, FlashAttention-style (AttentionMmaSync.cpp):
/// f16 and bf16 with head dims that are multiples of 8, up to 256.
struct AttentionTile {
  /// Warps per block, 16 query rows each; keys per K/V tile.
  int64_t warps = 4, bc = 64;
  /// attention_wgmma: its two consumer warpgroups take turns at the tensor
  /// cores (ping-pong), so that one's softmax runs under the other's GEMMs.
  bool pingPong = false;

  /// As #fuse.kernel_config holds it: on mma.sync the warps (16 query rows
  /// each), on wgmma (128 rows) the schedule.
  mlir::fuse::AttentionTileAttr toAttr(mlir::MLIRContext *context,
                                       bool wgmma) const {
    return wgmma ? mlir::fuse::AttentionTileAttr::get(context, 128, bc, 0,
                                                      pingPong)
                 : mlir::fuse::AttentionTileAttr::get(context, 16 * warps, bc,
                                                      warps, false);
  }
  static AttentionTile fromAttr(mlir::fuse::AttentionTileAttr attr) {
    return {attr.getWarps() ? attr.getWarps() : 4, attr.getKeys(),
            attr.getPingPong()};
  }
};
bool isMmaSyncAttention(mlir::fuse::AttentionOp op);
AttentionTile chooseAttentionTile(mlir::fuse::AttentionOp op,
                                  const TargetDescription &target);
/// The tile a #fuse.tile asks for (bm query rows, bn keys, bk = 16), or an
/// error at the kernel if it does not suit.
mlir::FailureOr<AttentionTile>
attentionTileFromAttr(mlir::fuse::KernelOp kernel, mlir::fuse::AttentionOp op,
                      mlir::fuse::TileAttr attr,
                      const TargetDescription &target);
std::unique_ptr<KernelBuilder> makeAttentionMmaSyncKernel(
    mlir::fuse::KernelOp kernel, mlir::gpu::GPUModuleOp module,
    const TargetDescription &target, const AttentionTile &tile);

/// Attention on Hopper's warpgroup MMA (AttentionWgmma.cpp), FlashAttention-3
/// style: what the mma.sync kernel takes on sm_90a, but ropes, with Q, K and V
/// read by TMA through their transposes and slices.
bool isWgmmaAttention(mlir::fuse::AttentionOp op,
                      const TargetDescription &target);
/// Keys per K/V tile.
int64_t chooseWgmmaAttentionKeys(mlir::fuse::AttentionOp op);
/// Whether a #fuse.tile suits it: bm = 128 query rows, bn = 64 or 128 keys,
/// bk = 16, no warps_m (mma.sync's tiles name their warps), warps_n 0 (the
/// heuristic's schedule), 1 (consumers free-running) or 2 (ping-pong).
bool suitsWgmmaAttention(mlir::fuse::AttentionOp op, mlir::fuse::TileAttr attr,
                         const TargetDescription &target);
std::unique_ptr<KernelBuilder> makeAttentionWgmmaKernel(
    mlir::fuse::KernelOp kernel, mlir::gpu::GPUModuleOp module,
    const TargetDescription &target, const AttentionTile &tile);

/// The GEMM on CUDA cores (GemmSimt.cpp).
std::unique_ptr<KernelBuilder>
makeGemmSimtKernel(mlir::fuse::KernelOp kernel, mlir::gpu::GPUModuleOp module,
                   const TargetDescription &target, const GemmTile &tile);
/// Its tile heuristic (docs/Tiling.md), and whether a given tile suits it
/// (an error at the kernel if not).
GemmTile chooseSimtTile(const GemmShape &shape,
                        const TargetDescription &target);
mlir::LogicalResult verifySimtTile(mlir::fuse::KernelOp kernel,
                                   const GemmTile &tile,
                                   const TargetDescription &target);

/// The GEMM on tensor cores, mma.sync (GemmMmaSync.cpp): f16, bf16, and f32
/// as TF32.
bool isMmaSyncGemm(const GemmShape &shape, const TilingOptions &options);
std::unique_ptr<KernelBuilder>
makeGemmMmaSyncKernel(mlir::fuse::KernelOp kernel,
                      mlir::gpu::GPUModuleOp module,
                      const TargetDescription &target, const GemmTile &tile,
                      const GemmShape &shape, const TilingOptions &options);
GemmTile chooseMmaSyncTile(const GemmShape &shape,
                           const TargetDescription &target,
                           const TilingOptions &options);
mlir::LogicalResult verifyMmaSyncTile(mlir::fuse::KernelOp kernel,
                                      const GemmShape &shape,
                                      const GemmTile &tile,
                                      const TargetDescription &target,
                                      const TilingOptions &options);
/// The tiles the autotuner tries (the heuristic's candidates).
std::vector<GemmTile> mmaSyncTuningTiles(const GemmShape &shape,
                                         const TargetDescription &target,
                                         const TilingOptions &options);

/// The GEMM on Hopper's warpgroup MMA (GemmWgmma.cpp): f16 and bf16 on
/// sm_90a, operands read by TMA (1x1 convolutions, linear layers, matrix
/// products whose operands are kernel inputs with 16-byte rows).
bool isWgmmaGemm(mlir::Operation *anchor, const GemmShape &shape,
                 const TargetDescription &target);
std::unique_ptr<KernelBuilder>
makeGemmWgmmaKernel(mlir::fuse::KernelOp kernel, mlir::gpu::GPUModuleOp module,
                    const TargetDescription &target, const GemmTile &tile);
GemmTile chooseWgmmaTile(mlir::Operation *anchor, const GemmShape &shape,
                         const TargetDescription &target);
/// With `quiet`, fails without an error (to try another family).
mlir::LogicalResult
verifyWgmmaTile(mlir::fuse::KernelOp kernel, mlir::Operation *anchor,
                const GemmShape &shape, const GemmTile &tile,
                const TargetDescription &target, bool quiet = false);
/// The tiles the autotuner tries: bm 64 or 128, bn 64 to 256, the deepest
/// pipeline that fits and 3 stages.
std::vector<GemmTile> wgmmaTuningTiles(mlir::Operation *anchor,
                                       const GemmShape &shape,
                                       const TargetDescription &target);

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_FAMILIES_H
