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
    biases, autocast's cast of a linear layer's bias) join the kernel that
    alone uses them, and are recomputed there.
    Elementwise ops left over form kernels of their own. An attention takes
    in the single-user slices and transposes (keeping rows contiguous) and
    ropes that produce its operands, and a transpose of its result: it
    loads, rotates and stores through them. Slices and concats (views) join
    whichever kernel reads them, which reads through them (a transpose or a
    rope on its own takes in the single-user slices under it: one head of a
    fused QKV projection is moved in one pass); a linear layer
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

def FusecAutodiff : Pass<"fusec-autodiff", "mlir::ModuleOp"> {
  let summary = "Replaces a graph by its forward and backward functions";
  let description = [{
    Differentiates the graph function `func` (the module's only function
    when not given) with respect to the arguments `wrt` (every argument a
    gradient reaches when not given), replacing `@f` by `@f_forward` and
    `@f_backward` as include/fusec/Transforms/Autodiff.h describes. Each
    op's gradient comes from its rule (GradientOpInterface); an op on a
    gradient's path without one is an error at the op.

    Remarks say which forward values are saved for the backward (with
    their bytes) and which are recomputed in it, and how many bytes the
    forward saves in all. Elementwise ops, views, reshapes and casts are
    recomputed when their operands are at hand in the backward; the rest
    is saved.
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"\"",
           "The function to differentiate">,
    ListOption<"wrt", "wrt", "unsigned",
               "Indices of the arguments to differentiate">,
    Option<"deterministic", "deterministic", "bool", /*default=*/"false",
           "Gradients the same bit for bit run to run (the attention "
           "backward's ordered dQ)">,
  ];
  let dependentDialects = ["mlir::fuse::FuseDialect"];
}

#endif // FUSEC_TRANSFORMS_PASSES_TD
