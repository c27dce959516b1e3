//===- FuseOps.td - Operators of the fuse dialect ----------*- tablegen -*-===//

#ifndef FUSE_OPS_TD
#define FUSE_OPS_TD

include "FuseAttrs.td"
include "FuseInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"

/// A tensor fusec computes on: static, f32/f16/bf16, rank 64 at most, no
/// zero-size dimension, a size that fits int64 (fuse::shapeProblem).
def Fuse_Tensor : Type<
    And<[StaticShapeTensorOf<[F32, F16, BF16]>.predicate,
         CPred<"::mlir::fuse::shapeProblem("
               "::llvm::cast<::mlir::RankedTensorType>($_self)).empty()">]>,
    "statically shaped tensor of f32, f16 or bf16 values, of rank 64 at "
    "most, not empty and under 2^63 bytes", "::mlir::RankedTensorType">;

/// Scalars the math takes: a NaN epsilon or slope would make every output
/// NaN without a word.
def Fuse_FiniteF64Attr : ConfinedAttr<F64Attr, [AttrConstraint<
    CPred<"std::isfinite(::llvm::cast<::mlir::FloatAttr>($_self)"
          ".getValueAsDouble())">, "whose value is finite">]>;
/// Clamp bounds: +-inf leaves a side open, NaN is refused.
def Fuse_NotNaNF64Attr : ConfinedAttr<F64Attr, [AttrConstraint<
    CPred<"!std::isnan(::llvm::cast<::mlir::FloatAttr>($_self)"
          ".getValueAsDouble())">, "whose value is not NaN">]>;

//===----------------------------------------------------------------------===//
// Op roles, read by fusion (fusec-form-kernels) and tiling (fusec-tile-kernels)
//===----------------------------------------------------------------------===//

class Fuse_RoleTrait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::mlir::fuse::OpTrait";
}
/// Starts a kernel of its own: reads neighbourhoods, reduces or moves data,
/// so it cannot be computed one element at a time from the same element of
/// its inputs. A fuse.kernel holds at most one.
def Fuse_Anchor : Fuse_RoleTrait<"Anchor">;
/// An anchor that reduces along rows (normalisations, softmax): the
/// elementwise op producing its input may join its kernel as a prologue.
def Fuse_RowReduction : Fuse_RoleTrait<"RowReduction">;
/// Computed element by element, operands broadcast to the result: joins a
/// kernel as its prologue or epilogue.
def Fuse_Elementwise : Fuse_RoleTrait<"Elementwise">;

/// Each result element is one operand element found elsewhere (slice,
/// concat): a kernel reads through it, computing the source coordinates,
/// instead of a copy kernel materialising it.
def Fuse_View : Fuse_RoleTrait<"View">;

/// Ops with a gradient rule (dialect/Fuse/FuseGradients.cpp).
defvar Fuse_Differentiable = DeclareOpInterfaceMethods<Fuse_GradientOpInterface>;

/// Ops whose result type follows from operands and attributes: shapes are
/// checked, with located messages, by the op's inferReturnTypes.
class Fuse_InferredOp<string mnemonic, list<Trait> traits = []>
    : Fuse_Op<mnemonic, !listconcat([Pure, InferTypeOpAdaptor], traits)>;

//===----------------------------------------------------------------------===//
// Convolution and batch norm
//===----------------------------------------------------------------------===//

def Fuse_Conv2dOp : Fuse_InferredOp<"conv2d", [Fuse_Anchor, Fuse_Differentiable]> {
  let summary = "2-D convolution with optional bias";
  let description = [{
    Cross-correlation of `input` with `filter`, as in every DL framework,
    plus an optional per-output-channel `bias` of shape `[Co]`.

    - `layout`: `nhwc` (default) takes input `[N, H, W, Ci]`, filter OHWI
      `[Co, Kh, Kw, Ci/groups]` and gives `[N, Ho, Wo, Co]`; `nchw` takes
      `[N, Ci, H, W]`, filter OIHW `[Co, Ci/groups, Kh, Kw]` and gives
      `[N, Co, Ho, Wo]`.
    - `strides` `[sh, sw]`, `dilation` `[dh, dw]` (default 1).
    - `padding`: zero padding, `[top, bottom, left, right]`, or `[ph, pw]`
      for symmetric padding (default 0).
    - `groups`: `Ci` and `Co` are both divisible by it; output channel `o`
      reads input channels of group `o / (Co/groups)`. Depthwise convolution
      is `groups = Ci`.

    `Ho = (H + top + bottom - dh * (Kh - 1) - 1) / sh + 1`, likewise `Wo`;
    both must be at least 1.

    ```mlir
    %y = fuse.conv2d %x, %w, %b {strides = array<i64: 2, 2>,
                                  padding = array<i64: 3, 3>}
        : tensor<1x224x224x3xf32>, tensor<64x7x7x3xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$input, Fuse_Tensor:$filter,
                       Optional<Fuse_Tensor>:$bias,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       DefaultValuedAttr<Fuse_LayoutAttr,
                                         "::mlir::fuse::Layout::NHWC">:$layout);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? attr-dict `:` type($input) `,`
    type($filter) (`,` type($bias)^)?
  }];
  let extraClassDeclaration = [{
    /// Padding as [top, bottom, left, right], whichever form was written.
    std::array<int64_t, 4> getPads() { return expandPadding(getPadding()); }
  }];
}

def Fuse_BatchNormOp : Fuse_InferredOp<"batch_norm",
    [AllTypesMatch<["mean", "variance", "scale", "shift"]>, Fuse_Elementwise,
     DeclareOpInterfaceMethods<Fuse_GradientOpInterface,
                               ["isDifferentiableOperand"]>]> {
  let summary = "Batch normalisation, inference form";
  let description = [{
    `(input - mean) / sqrt(variance + epsilon) * scale + shift` per channel,
    with the running statistics given as operands. The four per-channel
    vectors have shape `[C]`. The channel axis follows `layout`: the last axis
    for `nhwc`, axis 1 for `nchw`; `input` has rank 2 (`[N, C]`) or more.

    The training form (batch statistics computed from `input`, updated
    running statistics as extra results) will be a separate mode of this op.

    ```mlir
    %y = fuse.batch_norm %x, %mean, %var, %gamma, %beta {epsilon = 1.0e-05}
        : tensor<8x56x56x64xf16>, tensor<64xf16>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$input, Fuse_Tensor:$mean,
                       Fuse_Tensor:$variance, Fuse_Tensor:$scale,
                       Fuse_Tensor:$shift,
                       DefaultValuedAttr<Fuse_FiniteF64Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<Fuse_LayoutAttr,
                                         "::mlir::fuse::Layout::NHWC">:$layout);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $mean `,` $variance `,` $scale `,` $shift attr-dict `:`
    type($input) `,` type($mean)
  }];
  let extraClassDeclaration = [{
    /// The axis that holds channels.
    int64_t getChannelAxis() {
      return channelAxis(getLayout(), getInput().getType().getRank());
    }
  }];
}

def Fuse_ScaleShiftOp : Fuse_InferredOp<"scale_shift",
    [AllTypesMatch<["scale", "shift"]>, Fuse_Elementwise]> {
  let summary = "Per-channel affine transform: x * scale + shift";
  let description = [{
    `input * scale + shift` with `scale` and `shift` of shape
    `[input.shape[axis]]` broadcast along every other axis (`axis` may be
    negative; default -1). `fusec-simplify` turns inference batch norms into
    this form and merges chains of them with biases.
  }];
  let arguments = (ins Fuse_Tensor:$input, Fuse_Tensor:$scale,
                       Fuse_Tensor:$shift,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $shift attr-dict `:` type($input) `,` type($scale)
  }];
  let extraClassDeclaration = [{
    /// `axis` normalised to [0, rank).
    int64_t getChannelAxis() {
      int64_t rank = getInput().getType().getRank();
      auto axis = static_cast<int64_t>(getAxis());
      return axis < 0 ? axis + rank : axis;
    }
  }];
}

def Fuse_BatchNormCoefficientsOp : Fuse_Op<"batch_norm_coefficients",
    [Pure, AllTypesMatch<["mean", "variance", "scale", "shift",
                          "result_scale", "result_shift"]>, Fuse_Elementwise]> {
  let summary = "The per-channel scale and shift of an inference batch norm";
  let description = [{
    `result_scale = scale / sqrt(variance + epsilon)` and
    `result_shift = shift - mean * result_scale`, all of shape `[C]`, so that
    `batch_norm(x) == scale_shift(x, result_scale, result_shift)`.
  }];
  let arguments = (ins Fuse_Tensor:$mean, Fuse_Tensor:$variance,
                       Fuse_Tensor:$scale, Fuse_Tensor:$shift,
                       DefaultValuedAttr<Fuse_FiniteF64Attr, "1.0e-5">:$epsilon);
  let results = (outs Fuse_Tensor:$result_scale, Fuse_Tensor:$result_shift);
  let assemblyFormat = [{
    $mean `,` $variance `,` $scale `,` $shift attr-dict `:` type($mean)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops
//===----------------------------------------------------------------------===//

class Fuse_BinaryOp<string mnemonic, string expr>
    : Fuse_InferredOp<mnemonic, [Fuse_Elementwise, Fuse_Differentiable]> {
  let summary = "Elementwise " # expr # " with broadcasting";
  let description = [{
    Computes `}] # expr # [{` elementwise. Operand shapes broadcast as in
    NumPy: aligned on the right, each pair of dimensions equal or one of them
    1. This covers same-shape operands, per-channel operands (`[C]` against
    NHWC, `[C, 1, 1]` against NCHW) and scalars (`tensor<f32>`). Both operands
    have the same element type.
  }];
  let arguments = (ins Fuse_Tensor:$lhs, Fuse_Tensor:$rhs);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)
  }];
}

def Fuse_AddOp : Fuse_BinaryOp<"add", "lhs + rhs">;
def Fuse_SubOp : Fuse_BinaryOp<"sub", "lhs - rhs">;
def Fuse_MulOp : Fuse_BinaryOp<"mul", "lhs * rhs">;
def Fuse_DivOp : Fuse_BinaryOp<"div", "lhs / rhs">;

def Fuse_BiasAddOp : Fuse_InferredOp<"bias_add",
    [Fuse_Elementwise, Fuse_Differentiable]> {
  let summary = "Adds a 1-D bias along one axis";
  let description = [{
    `input + bias` where `bias` has shape `[input.shape[axis]]` and is
    broadcast along every other axis. `axis` may be negative (counted from
    the end; default -1, the channel axis of NHWC or of `[tokens, features]`).
  }];
  let arguments = (ins Fuse_Tensor:$input, Fuse_Tensor:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $bias attr-dict `:` type($input) `,` type($bias)
  }];
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

class Fuse_UnaryOp<string mnemonic, string expr, dag attrs = (ins)>
    : Fuse_Op<mnemonic, [Pure, SameOperandsAndResultType, Fuse_Elementwise,
                         Fuse_Differentiable]> {
  let summary = "Elementwise " # mnemonic;
  let description = "Computes `" # expr # "` elementwise.";
  let arguments = !con((ins Fuse_Tensor:$input), attrs);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Fuse_ReluOp : Fuse_UnaryOp<"relu", "max(x, 0)">;
def Fuse_Relu6Op : Fuse_UnaryOp<"relu6", "min(max(x, 0), 6)">;
def Fuse_ClampOp : Fuse_UnaryOp<"clamp", "min(max(x, min), max)",
    (ins Fuse_NotNaNF64Attr:$min, Fuse_NotNaNF64Attr:$max)> {
  let hasVerifier = 1;
}
def Fuse_LeakyReluOp : Fuse_UnaryOp<"leaky_relu",
    "x >= 0 ? x : alpha * x (alpha defaults to 0.01)",
    (ins DefaultValuedAttr<Fuse_FiniteF64Attr, "0.01">:$alpha)>;
def Fuse_GeluOp : Fuse_UnaryOp<"gelu",
    "x * Phi(x) with Phi the standard normal CDF; with approximate = tanh, "
    "0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))",
    (ins DefaultValuedAttr<Fuse_GeluApproximationAttr,
                           "::mlir::fuse::GeluApproximation::None">:$approximate)>;
def Fuse_SiluOp : Fuse_UnaryOp<"silu", "x * sigmoid(x)">;
def Fuse_SigmoidOp : Fuse_UnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
def Fuse_TanhOp : Fuse_UnaryOp<"tanh", "tanh(x)">;
def Fuse_HardSwishOp : Fuse_UnaryOp<"hardswish",
    "x * min(max(x + 3, 0), 6) / 6">;

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

def Fuse_MatmulOp : Fuse_InferredOp<"matmul", [Fuse_Anchor, Fuse_Differentiable]> {
  let summary = "Batched matrix product";
  let description = [{
    `lhs [..., M, K] x rhs [..., K, N] -> [..., M, N]`. With
    `transpose_lhs`, `lhs` is given as `[..., K, M]`; with `transpose_rhs`,
    `rhs` as `[..., N, K]`. Both ranks are at least 2; the leading (batch)
    dimensions broadcast as in NumPy.
  }];
  let arguments = (ins Fuse_Tensor:$lhs, Fuse_Tensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)
  }];
}

def Fuse_LinearOp : Fuse_InferredOp<"linear", [Fuse_Anchor, Fuse_Differentiable]> {
  let summary = "Fully connected layer: x * W^T + b";
  let description = [{
    `input [..., K]`, `weight [N, K]` (PyTorch's `nn.Linear` layout), optional
    `bias [N]`; the result is `[..., N]`.
  }];
  let arguments = (ins Fuse_Tensor:$input, Fuse_Tensor:$weight,
                       Optional<Fuse_Tensor>:$bias);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,`
    type($weight) (`,` type($bias)^)?
  }];
}

//===----------------------------------------------------------------------===//
// Normalisation and softmax
//===----------------------------------------------------------------------===//

def Fuse_LayerNormOp : Fuse_InferredOp<"layer_norm", [AttrSizedOperandSegments, Fuse_Anchor, Fuse_RowReduction, Fuse_Differentiable]> {
  let summary = "Layer normalisation over trailing axes";
  let description = [{
    Normalises over the trailing `normalized_rank` axes (default 1):
    `(x - mean) / sqrt(var + epsilon)` with the biased variance, then
    multiplies by `scale` and adds `shift` when given. `scale` and `shift`
    have the shape of the normalised axes.

    ```mlir
    %y = fuse.layer_norm %x scale(%g : tensor<768xbf16>)
                            shift(%b : tensor<768xbf16>) : tensor<8x128x768xbf16>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$input, Optional<Fuse_Tensor>:$scale,
                       Optional<Fuse_Tensor>:$shift,
                       DefaultValuedAttr<I64Attr, "1">:$normalized_rank,
                       DefaultValuedAttr<Fuse_FiniteF64Attr, "1.0e-5">:$epsilon);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $input (`scale` `(` $scale^ `:` type($scale) `)`)?
    (`shift` `(` $shift^ `:` type($shift) `)`)? attr-dict `:` type($input)
  }];
}

def Fuse_RmsNormOp : Fuse_InferredOp<"rms_norm", [Fuse_Anchor, Fuse_RowReduction, Fuse_Differentiable]> {
  let summary = "RMS normalisation over trailing axes";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon)` over the trailing `normalized_rank` axes
    (default 1), multiplied by `scale` (the shape of the normalised axes)
    when given.
  }];
  let arguments = (ins Fuse_Tensor:$input, Optional<Fuse_Tensor>:$scale,
                       DefaultValuedAttr<I64Attr, "1">:$normalized_rank,
                       DefaultValuedAttr<Fuse_FiniteF64Attr, "1.0e-6">:$epsilon);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $input (`scale` `(` $scale^ `:` type($scale) `)`)? attr-dict `:`
    type($input)
  }];
}

def Fuse_SoftmaxOp : Fuse_InferredOp<"softmax", [Fuse_Anchor, Fuse_RowReduction,
                                                 Fuse_Differentiable]> {
  let summary = "Softmax along one axis";
  let description = [{
    `exp(x - max) / sum(exp(x - max))` along `axis` (negative counts from the
    end; default -1).
  }];
  let arguments = (ins Fuse_Tensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Fuse_AttentionOp : Fuse_InferredOp<"attention", [Fuse_Anchor,
    DeclareOpInterfaceMethods<Fuse_GradientOpInterface,
        ["isDifferentiableResult", "isDifferentiableOperand",
         "prepareForGradient"]>]> {
  let summary = "Scaled dot-product attention";
  let description = [{
    `softmax(scale * query . key^T + mask) . value` with
    `query [B, Hq, Nq, D]`, `key [B, Hkv, Nk, D]`, `value [B, Hkv, Nk, Dv]`
    and result `[B, Hq, Nq, Dv]`.

    - Grouped-query attention: `Hq` is a multiple of `Hkv`; query head `h`
      reads key/value head `h / (Hq / Hkv)`.
    - `scale` defaults to `1 / sqrt(D)`.
    - `causal`: query `i` sees keys `j <= i` (top-left aligned, as PyTorch's
      `is_causal`).
    - `mask`: optional additive mask, broadcastable (NumPy rules) to
      `[B, Hq, Nq, Nk]`, rank 2 to 4, of any float type (f32 with f16
      queries is common); `-inf` hides a key. A boolean mask `keep` is the
      additive mask `where(keep, 0, -inf)`.
    - A query that sees no key at all produces zeros.
    - `return_lse`: a second result, each query row's log-sum-exp of its
      scaled, masked scores (natural log, f32, `[B, Hq, Nq]`; `-inf` for a
      row that sees no key), which the backward reads instead of the
      scores. `fusec-autodiff` asks for it.

    ```mlir
    %o = fuse.attention %q, %k, %v {causal}
        : tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$query, Fuse_Tensor:$key,
                       Fuse_Tensor:$value, Optional<Fuse_Tensor>:$mask,
                       OptionalAttr<Fuse_FiniteF64Attr>:$scale, UnitAttr:$causal,
                       UnitAttr:$return_lse);
  let results = (outs Fuse_Tensor:$result, Optional<Fuse_Tensor>:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`,` $mask^)? attr-dict `:` type($query) `,`
    type($key) `,` type($value) (`,` type($mask)^)?
  }];
  let extraClassDeclaration = [{
    /// The scale actually applied: the attribute, or 1/sqrt(D).
    double getEffectiveScale();
  }];
}

def Fuse_RopeOp : Fuse_InferredOp<"rope", [AllTypesMatch<["cos", "sin"]>, Fuse_Anchor,
    DeclareOpInterfaceMethods<Fuse_GradientOpInterface,
                              ["isDifferentiableOperand"]>]> {
  let summary = "Rotary position embedding";
  let description = [{
    Rotates pairs of features of `input [..., N, D]` (D even) by the angles
    whose cosines and sines are given as tables `cos, sin [N, D/2]` (row `n`
    is position `n`; slice the tables to apply an offset). By default pairs
    are half-split, element `i` with `i + D/2` (GPT-NeoX, Llama); with
    `interleaved`, element `2i` with `2i + 1` (GPT-J). A pair `(x0, x1)`
    becomes `(x0 cos - x1 sin, x1 cos + x0 sin)`.
  }];
  let arguments = (ins Fuse_Tensor:$input, Fuse_Tensor:$cos, Fuse_Tensor:$sin,
                       UnitAttr:$interleaved);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $cos `,` $sin attr-dict `:` type($input) `,` type($cos)
  }];
}

//===----------------------------------------------------------------------===//
// Pooling and resampling
//===----------------------------------------------------------------------===//

class Fuse_Pool2dOp<string mnemonic, string what, dag extra = (ins)>
    : Fuse_InferredOp<mnemonic, [Fuse_Anchor, Fuse_Differentiable]> {
  let summary = "2-D " # what # " pooling";
  let arguments = !con((ins Fuse_Tensor:$input,
                       DenseI64ArrayAttr:$kernel,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<Fuse_LayoutAttr,
                                         "::mlir::fuse::Layout::NHWC">:$layout),
                       extra);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let extraClassDeclaration = [{
    /// Padding as [top, bottom, left, right], whichever form was written.
    std::array<int64_t, 4> getPads() { return expandPadding(getPadding()); }
    /// Strides, defaulting to the kernel size.
    llvm::ArrayRef<int64_t> getEffectiveStrides() {
      return getStrides() ? *getStrides() : getKernel();
    }
  }];
}

def Fuse_MaxPool2dOp : Fuse_Pool2dOp<"max_pool2d", "max"> {
  let description = [{
    Maximum over `kernel [kh, kw]` windows moved by `strides` (default: the
    kernel). `padding` (`[top, bottom, left, right]` or `[ph, pw]`) never wins
    the maximum; each side's padding is at most half the kernel, so every
    window overlaps the input. `Ho = (H + top + bottom - kh) / sh + 1`.
  }];
}

def Fuse_AvgPool2dOp : Fuse_Pool2dOp<"avg_pool2d", "average",
    (ins DefaultValuedAttr<BoolAttr, "true">:$count_include_pad)> {
  let description = [{
    Mean over `kernel [kh, kw]` windows moved by `strides` (default: the
    kernel), zero padding as `padding` (at most half the kernel per side).
    With `count_include_pad` (default) the divisor counts the padded
    positions of the window (PyTorch semantics); otherwise only the input
    positions. `Ho = (H + top + bottom - kh) / sh + 1`.
  }];
}

def Fuse_GlobalAvgPoolOp : Fuse_InferredOp<"global_avg_pool",
    [Fuse_Anchor, Fuse_Differentiable]> {
  let summary = "Mean over the spatial axes";
  let description = [{
    Averages over H and W, keeping them as size-1 axes: `[N, C, 1, 1]` for
    `nchw`, `[N, 1, 1, C]` for `nhwc`.
  }];
  let arguments = (ins Fuse_Tensor:$input,
                       DefaultValuedAttr<Fuse_LayoutAttr,
                                         "::mlir::fuse::Layout::NHWC">:$layout);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Fuse_UpsampleOp : Fuse_InferredOp<"upsample", [Fuse_Anchor, Fuse_Differentiable]> {
  let summary = "Spatial resampling, nearest or bilinear";
  let description = [{
    Resizes H and W either to `size [Ho, Wo]` or by `scale [sh, sw]`
    (`Ho = floor(H * sh)`); exactly one of the two is given. Coordinates map
    as in PyTorch's `interpolate`: the source step is `H / Ho` when a size is
    given and `1 / sh` when a scale is given.

    - `nearest` (default): `src = min(floor(dst * step), H - 1)`, computed
      in float32 as PyTorch does, which also maps `dst` to itself when
      `Ho == H` and to `dst / 2` when `Ho == 2 H`.
    - `bilinear`: `src = max((dst + 0.5) * step - 0.5, 0)`; with
      `align_corners`, `src = dst * (H - 1) / (Ho - 1)` so that the corner
      pixels of input and output coincide. `align_corners` is only valid
      with `bilinear`.
  }];
  let arguments = (ins Fuse_Tensor:$input,
                       DefaultValuedAttr<Fuse_UpsampleModeAttr,
                           "::mlir::fuse::UpsampleMode::Nearest">:$mode,
                       OptionalAttr<DenseI64ArrayAttr>:$size,
                       OptionalAttr<DenseF64ArrayAttr>:$scale,
                       UnitAttr:$align_corners,
                       DefaultValuedAttr<Fuse_LayoutAttr,
                                         "::mlir::fuse::Layout::NHWC">:$layout);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Data movement and casts
//===----------------------------------------------------------------------===//

def Fuse_CastOp : Fuse_Op<"cast", [Pure, SameOperandsAndResultShape, Fuse_Elementwise,
                                   Fuse_Differentiable]> {
  let summary = "Element type conversion";
  let description = [{
    Converts each element to the result's element type (round to nearest,
    ties to even). Shapes are equal.

    ```mlir
    %h = fuse.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$input);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

def Fuse_ReshapeOp : Fuse_Op<"reshape", [Pure, Fuse_Differentiable]> {
  let summary = "Reinterprets a tensor with a new shape";
  let description = [{
    Same elements in row-major order, new shape; element counts and element
    types are equal.
  }];
  let arguments = (ins Fuse_Tensor:$input);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Fuse_TransposeOp : Fuse_InferredOp<"transpose", [Fuse_Anchor, Fuse_Differentiable]> {
  let summary = "Permutes axes";
  let description = [{
    `result.shape[i] = input.shape[permutation[i]]`; `permutation` is a
    permutation of `[0, rank)`.
  }];
  let arguments = (ins Fuse_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Fuse_SliceOp : Fuse_InferredOp<"slice", [Fuse_View, Fuse_Differentiable]> {
  let summary = "A contiguous block of a tensor";
  let description = [{
    `result[i] = input[offsets + i]` with result shape `sizes`; per axis,
    `0 <= offsets` and `1 <= sizes` and `offsets + sizes <= input.shape`.
    Fusion reads through it: a slice never costs a copy of its own unless
    nothing else in the graph uses its result.

    ```mlir
    %q = fuse.slice %qkv {offsets = array<i64: 0, 0, 256>,
                          sizes = array<i64: 1, 128, 256>} : tensor<1x128x512xbf16>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$input, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Fuse_ConcatOp : Fuse_InferredOp<"concat", [Fuse_View, Fuse_Differentiable]> {
  let summary = "Joins tensors along one axis";
  let description = [{
    Operands have the same rank, element type and extents except along
    `axis` (negative counts from the end); the result's extent there is the
    sum. Fusion reads through it: the consumer of a concat loads each
    element from the operand that holds it, so joining a U-Net skip
    connection or ASPP branches costs no copy.

    ```mlir
    %y = fuse.concat %up, %skip {axis = 3}
        : tensor<1x64x64x128xf16>, tensor<1x64x64x64xf16>
    ```
  }];
  let arguments = (ins Variadic<Fuse_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasFolder = 1;
}

def Fuse_SplitOp : Fuse_InferredOp<"split", [Fuse_Differentiable]> {
  let summary = "Cuts a tensor into consecutive pieces along one axis";
  let description = [{
    Result `j` is the slice of `input` along `axis` (negative counts from
    the end) starting at `sizes[0] + ... + sizes[j-1]` with extent
    `sizes[j]`; the sizes are positive and sum to the axis' extent. The
    usual way to take apart a fused QKV or gate/up projection.
    `fusec-simplify` rewrites it into `fuse.slice` ops, which fusion reads
    through.

    ```mlir
    %q, %k, %v = fuse.split %qkv {axis = 2, sizes = array<i64: 256, 128, 128>}
        : tensor<1x128x512xbf16>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$input, I64Attr:$axis,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Fuse_Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let extraClassDeclaration = [{
    /// The axis, counted from the front.
    int64_t getNormalizedAxis();
  }];
}

include "FuseTrainingOps.td"

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

def Fuse_KernelOp : Fuse_Op<"kernel", [IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">, Pure]> {
  let summary = "A group of ops that becomes exactly one GPU kernel";
  let description = [{
    Made by `fusec-form-kernels`. The body computes the kernel's results from
    its block arguments, which stand for `inputs`. It holds one anchor (a
    convolution, matrix product, pooling, normalisation, ...) plus the
    elementwise ops fused around it, or a chain of elementwise ops alone:
    every op of the body has the `Anchor` or the `Elementwise` role, at most
    one is an anchor, and kernels do not nest. `name` names the GPU function
    the tiling stage will generate, so it must be a PTX identifier (a letter
    or `_`, then letters, digits and `_`). `tile` overrides the tile a GEMM
    anchor runs with (`#fuse.tile`).

    ```mlir
    %y = fuse.kernel "k0_conv2d" (%x, %w, %s, %t)
        : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>,
           tensor<4xf32>) -> tensor<1x6x6x4xf32> {
    ^bb0(%a: tensor<1x8x8x3xf32>, %b: tensor<4x3x3x3xf32>,
         %c: tensor<4xf32>, %d: tensor<4xf32>):
      %0 = fuse.conv2d %a, %b : tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>
      %1 = fuse.scale_shift %0, %c, %d : tensor<1x6x6x4xf32>, tensor<4xf32>
      %2 = fuse.relu %1 : tensor<1x6x6x4xf32>
      fuse.yield %2 : tensor<1x6x6x4xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$name, Variadic<Fuse_Tensor>:$inputs,
                       OptionalAttr<Fuse_TileAttr>:$tile);
  let results = (outs Variadic<Fuse_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $name `(` $inputs `)` attr-dict `:` functional-type($inputs, $results)
    $body
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "::mlir::TypeRange":$results,
                   "::mlir::ValueRange":$inputs)>
  ];
}

//===----------------------------------------------------------------------===//
// Launch plans
//===----------------------------------------------------------------------===//

def Fuse_TensorMapOp : Fuse_Op<"tensor_map", [Pure]> {
  let summary = "A TMA tensor map over a buffer of a launch plan";
  let description = [{
    Made by `fusec-tile-kernels` in a launch plan, for a kernel whose tensor
    memory accelerator (TMA) copies read `buffer`: the kernel takes the map
    (a `CUtensorMap`, 128 bytes) by value, and the runtime encodes it with
    the buffer's address at each run (`cuTensorMapEncodeTiled`).

    - `dims`: the extents of the tensor the map views, innermost first (1 to
      5 of them);
    - `strides`: the byte stride of each axis but the innermost (multiples
      of 16);
    - `offset`: the byte offset of the tensor's first element in `buffer`
      (a multiple of 16);
    - `box`: the tile one copy moves, innermost first (1 to 256 each; the
      innermost box extent spans a multiple of 16 bytes);
    - `swizzle`: the shared-memory swizzle in bytes: 0, 32, 64 or 128 (the
      innermost box extent spans at most that many bytes).

    The tensor lies within the buffer. Elements of a box outside the tensor
    read as zero.

    With `im2col_lower` and `im2col_upper` the map is an im2col map over an
    NHWC tensor (dims `[C, W, H, N]`, rank 3 to 5): one copy moves
    `box[1]` consecutive pixels of `box[0]` channels each, walking a
    bounding box per image whose corners are `im2col_lower` (from the
    tensor's first pixel) and `im2col_upper` (from its last), spatial axes
    innermost first; the copy's pixel offsets shift it over the filter's
    taps (an implicit-GEMM convolution's input tile). Corners lie in
    [-128, 127] for rank 4.

    ```mlir
    %map = fuse.tensor_map %x {dims = array<i64: 4096, 8192>,
        strides = array<i64: 8192>, box = array<i64: 64, 128>}
        : memref<8192x4096xbf16> -> !llvm.ptr
    ```
  }];
  let arguments = (ins AnyStaticShapeMemRef:$buffer, DenseI64ArrayAttr:$dims,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$box,
                       DefaultValuedAttr<I64Attr, "0">:$offset,
                       DefaultValuedAttr<I64Attr, "128">:$swizzle,
                       OptionalAttr<DenseI64ArrayAttr>:$im2col_lower,
                       OptionalAttr<DenseI64ArrayAttr>:$im2col_upper);
  let results = (outs AnyType:$map);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer) `->` type($map)";
  let hasVerifier = 1;
}

def Fuse_YieldOp : Fuse_Op<"yield", [Pure, Terminator,
    HasParent<"KernelOp">]> {
  let summary = "Returns the results of a fuse.kernel";
  let arguments = (ins Variadic<Fuse_Tensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
}

#endif // FUSE_OPS_TD
