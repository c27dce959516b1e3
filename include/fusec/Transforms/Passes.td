//===- Passes.td - fusec graph passes ----------------------*- tablegen -*-===//

#ifndef FUSEC_TRANSFORMS_PASSES_TD
#define FUSEC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseSimplify : Pass<"fusec-simplify", "mlir::func::FuncOp"> {
  let summary = "Folds a graph into fewer, simpler ops";
  let description = [{
    Inference batch norms become a per-channel `fuse.scale_shift` whose
    coefficients come from `fuse.batch_norm_coefficients`; a bias right after
    a convolution or linear layer moves into it; chains of biases and
    scale/shifts on the same axis merge into one; no-op casts, reshapes and
    transposes vanish and chains of them collapse. A split becomes one
    slice per piece, a slice moves below a reshape that splits its sliced
    axis (so splitting heads out of a fused QKV result stays a view), and
    slices of slices or of one concat operand collapse. Linear layers of
    one input (Q, K and V) merge into one linear layer over their
    concatenated weights and biases, each result becoming a slice of it
    (remark: "merged N fuse.linear ops ..."), when the weights are graph
    parameters, all or none have a bias, and every result is read in place
    (by elementwise ops, reshapes splitting the last axis, transposes, ropes
    and attention). Layers whose results meet in an elementwise op (gate
    and up of a SiLU-gated FFN) stay apart: the later one's epilogue then
    computes that op.
  }];
  let dependentDialects = ["mlir::fuse::FuseDialect"];
}

def FormKernels : Pass<"fusec-form-kernels", "mlir::func::FuncOp"> {
  let summary = "Partitions a graph into fuse.kernel regions, one per GPU kernel";
  let description = [{
    Each anchor (convolution, matrix product, pooling, normalisation,
    softmax, attention, resampling, transpose, rope) starts a kernel; the
    chain of elementwise ops that consumes its result joins it as an epilogue
    while each link has a single user and keeps the shape. Elementwise ops
    that only combine graph parameters (batch-norm coefficients, merged
    biases) join the kernel that alone uses them, and are recomputed there.
    Elementwise ops left over form kernels of their own. An attention takes
    in the single-user slices and transposes (keeping rows contiguous) and
    ropes that produce its operands, and a transpose of its result: it
    loads, rotates and stores through them. Slices and concats (views) join
    whichever kernel reads them, which reads through them; a linear layer
    takes in a concat of its weights or biases along the output features,
    and a convolution a concat of inputs along channels, reading the parts
    in place. A view nothing reads through gets a kernel of its own. Otherwise a value with several users, a
    reshape or transpose, or an edge between two anchors ends a kernel;
    reshapes between kernels are free views. Every decision is reported as a remark (`fused ...` or
    `not fused ...`), which `fusec --remarks` prints.
  }];
  let dependentDialects = ["mlir::fuse::FuseDialect"];
}

def VerifyStage : Pass<"fusec-verify-stage", "mlir::ModuleOp"> {
  let summary = "Checks that a module holds only what a pipeline stage allows";
  let description = [{
    Run between stages so that a broken stage fails at its boundary, with an
    error at the first op that does not belong:

    - `kernels`: graph functions whose bodies hold only `fuse.kernel`,
      `fuse.reshape` and `func.return`.
    - `tiled`: launch plans (functions of memrefs holding `memref.alloc`,
      `memref.reinterpret_cast`, `memref.copy`, `fuse.tensor_map`,
      `gpu.launch_func`, `arith.constant` and `func.return`) and
      `gpu.module`s of kernels, with no other fuse op left anywhere.
  }];
  let options = [
    Option<"stage", "stage", "std::string", /*default=*/"\"kernels\"",
           "The stage whose contract to check: kernels or tiled">
  ];
}

def TileKernels : Pass<"fusec-tile-kernels", "mlir::ModuleOp"> {
  let summary = "Turns each fuse.kernel into a gpu.func of explicit tiled loops";
  let description = [{
    Every `fuse.kernel` of a graph function becomes a `gpu.func` in a
    `gpu.module` named after the function: convolutions with wide groups,
    linear layers and matrix products as a shared-memory tiled GEMM (two
    buffers, register tiles, tile sizes from the kernel's `tile` attribute
    or the heuristic of docs/Tiling.md); normalisations and softmax as one
    block per row with shared-memory reductions; depthwise convolutions,
    pooling, resampling, transposes, rotary embeddings and elementwise
    chains as one thread per output element. The kernel's elementwise ops
    are applied to each result in registers before it is stored.

    The graph function becomes the launch plan: a function of memrefs (the
    inputs, then one per result) holding `memref.alloc`s for intermediates,
    `memref.reinterpret_cast`s for reshapes, `gpu.launch_func`s in order and
    `memref.copy`s where a result is an input or another result. Each launch
    carries `fusec.config`: the kernel's family, tile and where the tile came
    from (its `tile` attribute, the tuning database, or the heuristic).

    With `tuning-db`, a kernel without a `tile` takes the database's entry
    for its signature on this chip (and `tuning-gpu`, when given); an entry
    that does not suit the kernel is ignored with a warning.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90\"",
           "GPU architecture the kernels are tiled for (sm_80 or newer)">,
    Option<"smCount", "sm-count", "int64_t", /*default=*/"0",
           "SMs of the GPU (0: the architecture's flagship part)">,
    Option<"fp32Math", "fp32-math", "std::string", /*default=*/"\"ieee\"",
           "f32 convolutions and matrix products: ieee (f32 FMAs on CUDA "
           "cores) or tf32 (TF32 tensor cores, f32 accumulation)">,
    Option<"mmaPrefetch", "mma-prefetch", "bool", /*default=*/"true",
           "Tensor-core GEMM: load the next k-step's fragments before this "
           "one's mma.sync (a tuning knob; on where both tiles use cp.async)">,
    Option<"tuningDb", "tuning-db", "std::string", /*default=*/"\"\"",
           "The autotuner's database (fusec tune): kernels without a tile "
           "take the configuration measured fastest for them on this chip "
           "(empty or none: the heuristic alone)">,
    Option<"tuningGpu", "tuning-gpu", "std::string", /*default=*/"\"\"",
           "The GPU the database entries must have been measured on (empty: "
           "any GPU of the chip)">,
  ];
  let dependentDialects = [
    "mlir::DLTIDialect",
    "mlir::LLVM::LLVMDialect",
    "mlir::NVVM::NVVMDialect",
    "mlir::arith::ArithDialect",
    "mlir::gpu::GPUDialect",
    "mlir::math::MathDialect",
    "mlir::memref::MemRefDialect",
    "mlir::nvgpu::NVGPUDialect",
    "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect",
  ];
}

#endif // FUSEC_TRANSFORMS_PASSES_TD
