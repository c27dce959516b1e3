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

def Fuse_Activation : I32EnumAttr<"Activation",
    "an activation whose derivative fuse.activation_grad applies", [
    I32EnumAttrCase<"Relu", 0, "relu">,
    I32EnumAttrCase<"Relu6", 1, "relu6">,
    I32EnumAttrCase<"Clamp", 2, "clamp">,
    I32EnumAttrCase<"LeakyRelu", 3, "leaky_relu">,
    I32EnumAttrCase<"Gelu", 4, "gelu">,
    I32EnumAttrCase<"GeluTanh", 5, "gelu_tanh">,
    I32EnumAttrCase<"Silu", 6, "silu">,
    I32EnumAttrCase<"Sigmoid", 7, "sigmoid">,
    I32EnumAttrCase<"Tanh", 8, "tanh">,
    I32EnumAttrCase<"HardSwish", 9, "hardswish">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fuse";
}
def Fuse_ActivationAttr
    : EnumAttr<Fuse_Dialect, Fuse_Activation, "activation"> {
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

def Fuse_KernelFamily : I32EnumAttr<"KernelFamily",
    "the kernel family that generates a fuse.kernel", [
    I32EnumAttrCase<"Elementwise", 0, "elementwise">,
    I32EnumAttrCase<"DirectConv", 1, "direct_conv">,
    I32EnumAttrCase<"RowReduction", 2, "row_reduction">,
    I32EnumAttrCase<"PoolResample", 3, "pool_resample">,
    I32EnumAttrCase<"Gather", 4, "gather">,
    I32EnumAttrCase<"AttentionDirect", 5, "attention_direct">,
    I32EnumAttrCase<"AttentionMmaSync", 6, "attention_mma_sync">,
    I32EnumAttrCase<"AttentionWgmma", 7, "attention_wgmma">,
    I32EnumAttrCase<"GemmSimt", 8, "gemm_simt">,
    I32EnumAttrCase<"GemmMmaSync", 9, "gemm_mma_sync">,
    I32EnumAttrCase<"GemmWgmma", 10, "gemm_wgmma">,
    I32EnumAttrCase<"AttentionGradMmaSync", 11, "attention_grad_mma_sync">,
    I32EnumAttrCase<"AttentionGradWgmma", 12, "attention_grad_wgmma">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fuse";
}
def Fuse_KernelFamilyAttr
    : EnumAttr<Fuse_Dialect, Fuse_KernelFamily, "kernel_family"> {
  let summary = "A kernel family (docs/Tiling.md), as recorded in artifacts";
  let assemblyFormat = "`<` $value `>`";
}

def Fuse_AttentionTileAttr : AttrDef<Fuse_Dialect, "AttentionTile"> {
  let mnemonic = "attention_tile";
  let summary = "The tile a tensor-core attention kernel runs with";
  let description = [{
    The configuration `fusec-select-kernel-config` chooses for the
    `attention_mma_sync` and `attention_wgmma` families (users write a
    `#fuse.tile` on the kernel; this is what it selects): `rows` query rows
    and `keys` keys per K/V tile per block. On `mma.sync`, `warps` warps of
    16 query rows each; on sm_90a's warpgroup MMA (128 rows, `warps` 0),
    `ping_pong` has the two consumer warpgroups take turns at the tensor
    cores, so that one's softmax runs under the other's GEMMs.

    ```mlir
    #fuse.attention_tile<rows = 128, keys = 128, warps = 8>
    #fuse.attention_tile<rows = 128, keys = 64, ping_pong = true>
    ```
  }];
  let parameters = (ins "int64_t":$rows, "int64_t":$keys,
                        DefaultValuedParameter<"int64_t", "0">:$warps,
                        DefaultValuedParameter<"bool", "false">:$ping_pong);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The same tile in #fuse.tile's terms (bm query rows, bn keys, bk 16;
    /// warps_m the warps on mma.sync, warps_n the wgmma schedule: 1 free
    /// consumers, 2 ping-pong), as users write it and artifacts record it.
    TileAttr asTile() const;
  }];
}

def Fuse_KernelConfigAttr : AttrDef<Fuse_Dialect, "KernelConfig"> {
  let mnemonic = "kernel_config";
  let summary = "The kernel family and tile a fuse.kernel is generated with";
  let description = [{
    Written on every `fuse.kernel` (as `fusec.kernel_config`) by
    `fusec-select-kernel-config`, read by `fusec-tile-kernels`: the `family`
    that generates the kernel, its `tile` (a `#fuse.tile` for the GEMM
    families, a `#fuse.attention_tile` for the tensor-core attention ones,
    none for the others) and its `source`, where the choice came from: the
    kernel's own `tile` attribute, the tuning database, or the heuristic.

    ```mlir
    #fuse.kernel_config<family = gemm_wgmma,
        tile = #fuse.tile<bm = 128, bn = 128, bk = 64, warps_m = 8,
                          warps_n = 1, stages = 4>,
        source = "heuristic">
    ```
  }];
  let parameters = (ins EnumParameter<Fuse_KernelFamily>:$family,
                        OptionalParameter<"::mlir::Attribute">:$tile,
                        StringRefParameter<"where the choice came from">:$source);
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = [{
    /// The tile in #fuse.tile's terms (null without one), as artifacts
    /// record it.
    TileAttr getTileAsTileAttr() const;
  }];
}

#endif // FUSE_ATTRS_TD
