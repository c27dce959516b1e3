//===- FuseAttrs.td - Attributes of the fuse dialect -------*- tablegen -*-===//

#ifndef FUSE_ATTRS_TD
#define FUSE_ATTRS_TD

include "FuseDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Fuse_Layout : I32EnumAttr<"Layout", "layout of 4-D activations", [
    I32EnumAttrCase<"NCHW", 0, "nchw">,
    I32EnumAttrCase<"NHWC", 1, "nhwc">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fuse";
}
def Fuse_LayoutAttr : EnumAttr<Fuse_Dialect, Fuse_Layout, "layout"> {
  let assemblyFormat = "`<` $value `>`";
}

def Fuse_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how gelu evaluates the normal CDF", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Tanh", 1, "tanh">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fuse";
}
def Fuse_GeluApproximationAttr
    : EnumAttr<Fuse_Dialect, Fuse_GeluApproximation, "gelu_approx"> {
  let assemblyFormat = "`<` $value `>`";
}

def Fuse_UpsampleMode : I32EnumAttr<"UpsampleMode", "interpolation mode", [
    I32EnumAttrCase<"Nearest", 0, "nearest">,
    I32EnumAttrCase<"Bilinear", 1, "bilinear">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fuse";
}
def Fuse_UpsampleModeAttr
    : EnumAttr<Fuse_Dialect, Fuse_UpsampleMode, "upsample_mode"> {
  let assemblyFormat = "`<` $value `>`";
}

def Fuse_TileAttr : AttrDef<Fuse_Dialect, "Tile"> {
  let mnemonic = "tile";
  let summary = "The tile a fuse.kernel's GEMM or attention runs with";
  let description = [{
    Overrides the tile that `fusec-tile-kernels` would choose for a
    convolution, linear layer, matrix product or attention (docs/Tiling.md);
    the tuning database (docs/Tuning.md) supplies one for kernels without.
    Each block computes a `bm x bn` tile of the result, the reduction
    advancing `bk` at a time. The remaining parameters belong to one family
    each; 0 (the default) lets the family choose:

    - CUDA-core GEMM (f32): each thread owns a `tm x tn` register tile.
    - tensor-core GEMM (f16, bf16, and f32 with `fp32-math=tf32`):
      `warps_m x warps_n` warps, each owning a `bm/warps_m x bn/warps_n`
      part of the tile, times `warps_k` groups of them that split each `bk`
      step of the reduction and sum their parts at the end (sliced k, for
      small tiles of long reductions; 0 or 1: one group); `stages`
      shared-memory buffers in the `cp.async` pipeline.
    - warpgroup GEMM (sm_90a): `bm` 64 or 128 (one consumer warpgroup per
      64 rows, `warps_m = bm / 16`, `warps_n = 1`), `bk` 128 bytes, `stages`
      TMA buffers.
    - attention: `bm` query rows, `bn` keys per K/V tile, `bk = 16`; on
      `mma.sync`, `warps_m` warps (16 rows each); on sm_90a's warpgroup MMA
      (`bm = 128`, no `warps_m`), `warps_n = 2` has its two consumer
      warpgroups take turns at the tensor cores (ping-pong), 1 lets them run
      free.

    The attribute checks that every value is in range; whether a tile fits
    the chosen family and the target (divisibility, threads, shared memory)
    is checked when the kernel is tiled, with an error at the kernel.

    ```mlir
    %0 = fuse.kernel "k0_linear"(%x, %w) {tile = #fuse.tile<bm = 128, bn = 64,
        bk = 32, warps_m = 2, warps_n = 2, stages = 4>} ...
    ```
  }];
  let parameters = (ins "int64_t":$bm, "int64_t":$bn, "int64_t":$bk,
                        DefaultValuedParameter<"int64_t", "0">:$tm,
                        DefaultValuedParameter<"int64_t", "0">:$tn,
                        DefaultValuedParameter<"int64_t", "0">:$warps_m,
                        DefaultValuedParameter<"int64_t", "0">:$warps_n,
                        DefaultValuedParameter<"int64_t", "0">:$stages,
                        DefaultValuedParameter<"int64_t", "0">:$warps_k);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // FUSE_ATTRS_TD
