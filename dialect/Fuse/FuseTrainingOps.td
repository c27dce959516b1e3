//===- FuseTrainingOps.td - Ops of training graphs ---------*- tablegen -*-===//
//
// Batch norm with batch statistics, and the ops backward graphs are made of:
// the data and filter gradients of a convolution, the derivative of an
// activation, the adjoints of pooling, resampling and slicing, and the sum
// that undoes a broadcast. fusec-autodiff emits them; a user may write them
// too. Included by FuseOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef FUSE_TRAINING_OPS_TD
#define FUSE_TRAINING_OPS_TD

//===----------------------------------------------------------------------===//
// Batch norm in training
//===----------------------------------------------------------------------===//

def Fuse_BatchNormTrainOp : Fuse_InferredOp<"batch_norm_train",
    [AllTypesMatch<["running_mean", "running_var", "scale", "shift"]>,
     Fuse_Anchor,
     DeclareOpInterfaceMethods<Fuse_GradientOpInterface,
         ["isDifferentiableResult", "isDifferentiableOperand"]>]> {
  let summary = "Batch normalisation with batch statistics (training form)";
  let description = [{
    Normalises `input` with the mean and variance of the batch, per channel,
    over every axis but the channel axis (N, H and W of an activation; the
    channel axis follows `layout` as for `fuse.batch_norm`):

    - `mean = sum(x) / M` and `var = sum((x - mean)^2) / M` over the
      `M = numel / C` values of each channel (the biased variance);
    - `result = (x - mean) * invstd * scale + shift`, with
      `invstd = 1 / sqrt(var + epsilon)`;
    - `saved_mean = mean` and `saved_invstd = invstd`, what the backward
      (`fuse.batch_norm_grad`) needs;
    - the running statistics, as PyTorch updates them:
      `new_running_mean = (1 - f) * running_mean + f * mean` and
      `new_running_var = (1 - f) * running_var + f * var * M / (M - 1)` (the
      unbiased variance), with `f = momentum` (default 0.1), or, with
      `cumulative` (PyTorch's `momentum=None`), `f = 1 / batches_tracked`
      where the operand `batches_tracked` (shape `[1]`) holds
      `num_batches_tracked` after counting this batch.

    The per-channel operands and results share one element type, f32 or the
    input's: under automatic mixed precision the activations are f16 or
    bf16 and the parameters and statistics f32. `M` is at least 2, as in
    PyTorch ("expected more than 1 value per channel when training").

    Evaluation mode is `fuse.batch_norm` with the running statistics.

    ```mlir
    %y, %mean, %invstd, %rm, %rv = fuse.batch_norm_train %x, %running_mean,
        %running_var, %gamma, %beta {momentum = 0.1 : f64}
        : tensor<32x56x56x64xbf16>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$input, Fuse_Tensor:$running_mean,
                       Fuse_Tensor:$running_var, Fuse_Tensor:$scale,
                       Fuse_Tensor:$shift,
                       Optional<Fuse_Tensor>:$batches_tracked,
                       DefaultValuedAttr<Fuse_FiniteF64Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<Fuse_FiniteF64Attr, "0.1">:$momentum,
                       UnitAttr:$cumulative,
                       DefaultValuedAttr<Fuse_LayoutAttr,
                                         "::mlir::fuse::Layout::NHWC">:$layout);
  let results = (outs Fuse_Tensor:$result, Fuse_Tensor:$saved_mean,
                      Fuse_Tensor:$saved_invstd, Fuse_Tensor:$new_running_mean,
                      Fuse_Tensor:$new_running_var);
  let assemblyFormat = [{
    $input `,` $running_mean `,` $running_var `,` $scale `,` $shift
    (`tracked` $batches_tracked^)? attr-dict `:` type($input) `,`
    type($scale) (`,` type($batches_tracked)^)?
  }];
  let extraClassDeclaration = [{
    /// The channel axis of `input`.
    int64_t getChannelAxis() {
      return channelAxis(getLayout(), getInput().getType().getRank());
    }
  }];
}

def Fuse_BatchNormGradOp : Fuse_InferredOp<"batch_norm_grad",
    [AllTypesMatch<["output_grad", "input"]>,
     AllTypesMatch<["mean", "invstd", "scale"]>, Fuse_Anchor]> {
  let summary = "Gradients of a batch norm";
  let description = [{
    The backward of a batch norm over the same channel axis as
    `fuse.batch_norm_train`, with `x^ = (input - mean) * invstd` and
    `dy = output_grad`, summed per channel over the `M` values of each:

    - `shift_grad = sum(dy)` and `scale_grad = sum(dy * x^)`;
    - training form (default): `mean` and `invstd` are the batch statistics
      the forward saved, which depend on the input, so
      `input_grad = scale * invstd * (dy - shift_grad / M - x^ * scale_grad / M)`;
    - with `epsilon` (the evaluation form): `mean` is the running mean and
      the operand `invstd` holds the running *variance*; the statistics are
      constants, `invstd = 1 / sqrt(variance + epsilon)` and
      `input_grad = dy * scale * invstd`.

    ```mlir
    %dx, %dgamma, %dbeta = fuse.batch_norm_grad %dy, %x, %mean, %invstd,
        %gamma : tensor<32x56x56x64xbf16>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$output_grad, Fuse_Tensor:$input,
                       Fuse_Tensor:$mean, Fuse_Tensor:$invstd,
                       Fuse_Tensor:$scale,
                       OptionalAttr<Fuse_FiniteF64Attr>:$epsilon,
                       DefaultValuedAttr<Fuse_LayoutAttr,
                                         "::mlir::fuse::Layout::NHWC">:$layout);
  let results = (outs Fuse_Tensor:$input_grad, Fuse_Tensor:$scale_grad,
                      Fuse_Tensor:$shift_grad);
  let assemblyFormat = [{
    $output_grad `,` $input `,` $mean `,` $invstd `,` $scale attr-dict `:`
    type($input) `,` type($scale)
  }];
  let extraClassDeclaration = [{
    /// The channel axis of `input`.
    int64_t getChannelAxis() {
      return channelAxis(getLayout(), getInput().getType().getRank());
    }
    /// Whether this is the backward of the training form.
    bool isTraining() { return !getEpsilon(); }
  }];
}

def Fuse_NormGradOp : Fuse_InferredOp<"norm_grad",
    [AllTypesMatch<["output_grad", "input"]>, Fuse_Anchor]> {
  let summary = "Gradients of a layer norm or an RMS norm";
  let description = [{
    The backward of `fuse.layer_norm` (or, with `rms`, `fuse.rms_norm`)
    over the trailing `normalized_rank` axes (D elements a row), with the
    same `epsilon`. The row statistics are recomputed from `input`, which
    the backward reads anyway: nothing is saved but the input. With
    `x^` the normalised input, `dy = output_grad` and `g = dy * scale`
    (`scale` is 1 when absent):

    - layer norm: `input_grad = rstd * (g - mean(g) - x^ * mean(g * x^))`;
    - RMS norm: `input_grad = rstd * (g - x^ * mean(g * x^))`;
    - `scale_grad = sum(dy * x^)` and `shift_grad = sum(dy)` over the rows
      (the leading axes), shaped as the normalised axes.

    ```mlir
    %dx, %dg, %db = fuse.norm_grad %dy, %x scale(%g : tensor<768xbf16>)
        : tensor<8x128x768xbf16>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$output_grad, Fuse_Tensor:$input,
                       Optional<Fuse_Tensor>:$scale,
                       DefaultValuedAttr<I64Attr, "1">:$normalized_rank,
                       DefaultValuedAttr<Fuse_FiniteF64Attr, "1.0e-5">:$epsilon,
                       UnitAttr:$rms);
  let results = (outs Fuse_Tensor:$input_grad, Fuse_Tensor:$scale_grad,
                      Fuse_Tensor:$shift_grad);
  let assemblyFormat = [{
    $output_grad `,` $input (`scale` `(` $scale^ `:` type($scale) `)`)?
    attr-dict `:` type($input)
  }];
  let extraClassDeclaration = [{
    /// Elements of a row (the product of the normalised axes).
    int64_t getRowLength();
  }];
}

def Fuse_AttentionGradOp : Fuse_InferredOp<"attention_grad",
    [AllTypesMatch<["output", "output_grad"]>, Fuse_Anchor]> {
  let summary = "Gradients of scaled dot-product attention";
  let description = [{
    The backward of `fuse.attention` with the same `scale` and `causal`,
    from its operands, its result `output`, that result's gradient
    `output_grad` and the row log-sum-exp `lse` the forward returned
    (`return_lse`). With `P = exp(scale * Q K^T + mask - lse)` (0 for a row
    whose `lse` is `-inf`), `dP = dO V^T` and
    `dS = P * (dP - rowsum(dO * O))`:

    - `query_grad = scale * dS K`;
    - `key_grad = scale * dS^T Q` and `value_grad = P^T dO`, summed over the
      query heads that share the key/value head (grouped-query attention).

    `return_score_grad`: a fourth result, `dS` itself (`[B, Hq, Nq, Nk]`,
    the mask's element type, or the query's without a mask; 0 where `P` is
    0): the gradient of the scores, and so of the additive mask before it
    is summed over the axes it was broadcast along. `fusec-autodiff` asks
    for it when the mask needs a gradient.

    `deterministic`: `query_grad` is the same, bit for bit, run to run. The
    tensor-core backward otherwise adds the key blocks' shares of a query
    tile in the order they finish; with it, in the order of the key blocks,
    each waiting for the one before (FlashAttention-3's deterministic mode).
    The other gradients are deterministic either way.

    ```mlir
    %dq, %dk, %dv = fuse.attention_grad %q, %k, %v, %o, %do, %lse {causal}
        : tensor<2x8x128x64xbf16>, tensor<2x2x128x64xbf16>,
          tensor<2x2x128x64xbf16>, tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$query, Fuse_Tensor:$key,
                       Fuse_Tensor:$value, Fuse_Tensor:$output,
                       Fuse_Tensor:$output_grad, Fuse_Tensor:$lse,
                       Optional<Fuse_Tensor>:$mask,
                       OptionalAttr<Fuse_FiniteF64Attr>:$scale,
                       UnitAttr:$causal, UnitAttr:$deterministic,
                       UnitAttr:$return_score_grad);
  let results = (outs Fuse_Tensor:$query_grad, Fuse_Tensor:$key_grad,
                      Fuse_Tensor:$value_grad,
                      Optional<Fuse_Tensor>:$score_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $output `,` $output_grad `,` $lse
    (`,` $mask^)? attr-dict `:` type($query) `,` type($key) `,`
    type($value) `,` type($output) `,` type($lse) (`,` type($mask)^)?
  }];
  let extraClassDeclaration = [{
    /// `scale`, or 1 / sqrt(D) when absent.
    double getEffectiveScale();
  }];
}

//===----------------------------------------------------------------------===//
// Convolution gradients
//===----------------------------------------------------------------------===//

def Fuse_ConvTranspose2dOp : Fuse_InferredOp<"conv_transpose2d",
    [Fuse_Anchor, Fuse_Differentiable]> {
  let summary = "2-D transposed convolution with optional bias";
  let description = [{
    The adjoint of `fuse.conv2d` with the same `strides`, `padding`,
    `dilation` and `groups`: the data gradient of a convolution, and the
    learned upsampling of decoders (PyTorch's `conv_transpose2d`). Each
    input pixel scatters `filter` times its value into the output:
    `result[n, ho, wo, co] += input[n, h, w, ci] * filter[ci, kh, kw, co']`
    where `ho = h * sh - top + kh * dh` and `wo = w * sw - left + kw * dw`.

    - `layout`: `nhwc` (default) takes input `[N, H, W, Ci]` and filter
      `[Ci, Kh, Kw, Co/groups]`; `nchw` takes `[N, Ci, H, W]` and filter
      `[Ci, Co/groups, Kh, Kw]` (PyTorch's layout). Input channel `ci`
      writes the output channels of group `ci / (Ci/groups)`. These are the
      filters of `fuse.conv2d` read with their two channel axes exchanged,
      so a convolution's filter serves its transpose as is.
    - `Ho = (H - 1) * sh - top - bottom + dh * (Kh - 1) + output_padding[0] + 1`,
      likewise `Wo`; `output_padding` (default 0) is below the stride or
      the dilation, and picks among the output sizes a strided convolution
      maps onto the same input size.
    - `bias`: optional, `[Co]`.

    ```mlir
    %up = fuse.conv_transpose2d %x, %w {strides = array<i64: 2, 2>,
        padding = array<i64: 1, 1>, output_padding = array<i64: 1, 1>}
        : tensor<1x28x28x128xf16>, tensor<128x3x3x64xf16>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$input, Fuse_Tensor:$filter,
                       Optional<Fuse_Tensor>:$bias,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$output_padding,
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

def Fuse_Conv2dFilterGradOp : Fuse_InferredOp<"conv2d_filter_grad",
    [Fuse_Anchor]> {
  let summary = "The filter gradient of a 2-D convolution";
  let description = [{
    The gradient of `fuse.conv2d`'s filter from its `input` and the
    gradient of its result, `output_grad`, with the convolution's
    `strides`, `padding`, `dilation`, `groups` and `layout`, and its filter
    extent `kernel [Kh, Kw]`:
    `result[co, kh, kw, ci] = sum over n, ho, wo of
    output_grad[n, ho, wo, co] * input[n, ho * sh - top + kh * dh,
    wo * sw - left + kw * dw, ci]` (zero outside the input), a reduction
    over `N * Ho * Wo`. The result has the filter's shape: `[Co, Kh, Kw,
    Ci/groups]` for `nhwc`, `[Co, Ci/groups, Kh, Kw]` for `nchw`. The
    convolution of `input` with a filter of that shape gives `output_grad`'s
    shape; the verifier checks it.

    ```mlir
    %dw = fuse.conv2d_filter_grad %x, %dy {kernel = array<i64: 3, 3>,
        padding = array<i64: 1, 1>}
        : tensor<32x56x56x64xbf16>, tensor<32x56x56x64xbf16>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$input, Fuse_Tensor:$output_grad,
                       DenseI64ArrayAttr:$kernel,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       DefaultValuedAttr<Fuse_LayoutAttr,
                                         "::mlir::fuse::Layout::NHWC">:$layout);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $output_grad attr-dict `:` type($input) `,` type($output_grad)
  }];
  let extraClassDeclaration = [{
    /// Padding as [top, bottom, left, right], whichever form was written.
    std::array<int64_t, 4> getPads() { return expandPadding(getPadding()); }
  }];
}

//===----------------------------------------------------------------------===//
// Reductions and elementwise derivatives
//===----------------------------------------------------------------------===//

def Fuse_ReduceSumOp : Fuse_InferredOp<"reduce_sum", [Fuse_Anchor]> {
  let summary = "Sum over some axes";
  let description = [{
    Sums `input` over `axes` (distinct, each in `[-rank, rank)`; negative
    ones count from the end). Without `keep_dims` the reduced axes are
    dropped (all of them gives a rank-0 tensor); with it they stay as size-1
    axes. It undoes broadcasting in backward graphs (the gradient of a bias,
    of a per-channel scale, of a broadcast operand). Sums are exact in the
    reference; kernels accumulate in f32.

    ```mlir
    %db = fuse.reduce_sum %dy {axes = array<i64: 0, 1, 2>}
        : tensor<32x56x56x64xf16>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keep_dims);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let extraClassDeclaration = [{
    /// Whether axis `axis` of the input is summed.
    bool isReduced(int64_t axis);
  }];
}

def Fuse_ActivationGradOp : Fuse_InferredOp<"activation_grad",
    [AllTypesMatch<["output_grad", "value"]>, Fuse_Elementwise]> {
  let summary = "The gradient through an activation";
  let description = [{
    `output_grad * f'(x)` elementwise for the activation `f` named by
    `activation`. `value` is what the derivative is computed from:

    | activation | `value` | `f'` |
    |---|---|---|
    | `relu` | the result y | `y > 0` |
    | `relu6` | the result y | `0 < y < 6` |
    | `clamp` | the result y | `min < y < max` |
    | `sigmoid` | the result y | `y (1 - y)` |
    | `tanh` | the result y | `1 - y^2` |
    | `leaky_relu` | the input x | `x > 0 ? 1 : alpha` |
    | `gelu` | the input x | `Phi(x) + x phi(x)` |
    | `gelu_tanh` | the input x | derivative of the tanh form |
    | `silu` | the input x | `s (1 + x (1 - s))`, `s = sigmoid(x)` |
    | `hardswish` | the input x | `x < -3: 0; x > 3: 1; else (2x + 3) / 6` |

    Activations whose result determines the derivative take the result, so
    the backward needs no other saved tensor (as PyTorch does); the rest
    take the input. `min`/`max` are required for `clamp` only; `alpha`
    (default 0.01) is read by `leaky_relu` only.

    ```mlir
    %dx = fuse.activation_grad %dy, %y {activation = #fuse.activation<relu>}
        : tensor<32x56x56x64xbf16>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$output_grad, Fuse_Tensor:$value,
                       Fuse_ActivationAttr:$activation,
                       OptionalAttr<Fuse_NotNaNF64Attr>:$min,
                       OptionalAttr<Fuse_NotNaNF64Attr>:$max,
                       DefaultValuedAttr<Fuse_FiniteF64Attr, "0.01">:$alpha);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $output_grad `,` $value attr-dict `:` type($output_grad)
  }];
}

def Fuse_NegOp : Fuse_UnaryOp<"neg", "-x">;

//===----------------------------------------------------------------------===//
// Adjoints of pooling, resampling and slicing
//===----------------------------------------------------------------------===//

def Fuse_MaxPool2dGradOp : Fuse_InferredOp<"max_pool2d_grad",
    [Fuse_Anchor]> {
  let summary = "The gradient of a 2-D max pooling";
  let description = [{
    Routes each element of `output_grad` to the input position that won its
    window's maximum in `fuse.max_pool2d` of `input` with the same
    `kernel`, `strides`, `padding` and `layout`; a position that wins
    several windows gets their sum. Ties go to the first maximum in the
    window, row by row (PyTorch's rule); NaN wins as in the forward. The
    result has `input`'s shape.
  }];
  let arguments = (ins Fuse_Tensor:$input, Fuse_Tensor:$output_grad,
                       DenseI64ArrayAttr:$kernel,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<Fuse_LayoutAttr,
                                         "::mlir::fuse::Layout::NHWC">:$layout);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $output_grad attr-dict `:` type($input) `,` type($output_grad)
  }];
  let extraClassDeclaration = [{
    std::array<int64_t, 4> getPads() { return expandPadding(getPadding()); }
    llvm::ArrayRef<int64_t> getEffectiveStrides() {
      return getStrides() ? *getStrides() : getKernel();
    }
  }];
}

def Fuse_AvgPool2dGradOp : Fuse_Op<"avg_pool2d_grad",
    [Pure, Fuse_Anchor]> {
  let summary = "The gradient of a 2-D average pooling";
  let description = [{
    Spreads each element of `output_grad` evenly, by the divisor
    `fuse.avg_pool2d` used, over its window of the input, with the same
    `kernel`, `strides`, `padding`, `count_include_pad` and `layout`. The
    result type is the pooled input's, written out: `fuse.avg_pool2d` of a
    tensor of that shape has `output_grad`'s shape (the verifier checks it).
    The gradient of `fuse.global_avg_pool` is this op with the whole image
    as the kernel.

    ```mlir
    %dx = fuse.avg_pool2d_grad %dy {kernel = array<i64: 7, 7>}
        : tensor<32x1x1x2048xf16> -> tensor<32x7x7x2048xf16>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$output_grad, DenseI64ArrayAttr:$kernel,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
                       DefaultValuedAttr<BoolAttr, "true">:$count_include_pad,
                       DefaultValuedAttr<Fuse_LayoutAttr,
                                         "::mlir::fuse::Layout::NHWC">:$layout);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $output_grad attr-dict `:` type($output_grad) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    std::array<int64_t, 4> getPads() { return expandPadding(getPadding()); }
    llvm::ArrayRef<int64_t> getEffectiveStrides() {
      return getStrides() ? *getStrides() : getKernel();
    }
  }];
}

def Fuse_UpsampleGradOp : Fuse_Op<"upsample_grad", [Pure, Fuse_Anchor]> {
  let summary = "The gradient of a spatial resampling";
  let description = [{
    The adjoint of `fuse.upsample` with the same `mode`, `size` or `scale`,
    `align_corners` and `layout`: each input pixel receives the sum of
    `output_grad` over the output pixels that read it, weighted as the
    forward weighted it (1 for nearest; the bilinear weights otherwise).
    The result type is the upsampled input's, written out: `fuse.upsample`
    of a tensor of that shape has `output_grad`'s shape (the verifier
    checks it).
  }];
  let arguments = (ins Fuse_Tensor:$output_grad,
                       DefaultValuedAttr<Fuse_UpsampleModeAttr,
                           "::mlir::fuse::UpsampleMode::Nearest">:$mode,
                       OptionalAttr<DenseI64ArrayAttr>:$size,
                       OptionalAttr<DenseF64ArrayAttr>:$scale,
                       UnitAttr:$align_corners,
                       DefaultValuedAttr<Fuse_LayoutAttr,
                                         "::mlir::fuse::Layout::NHWC">:$layout);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $output_grad attr-dict `:` type($output_grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Fuse_SliceGradOp : Fuse_Op<"slice_grad", [Pure, Fuse_Anchor]> {
  let summary = "The gradient of a slice: a block placed into zeros";
  let description = [{
    `result[offsets + i] = output_grad[i]` and zero everywhere else: the
    adjoint of `fuse.slice` of a tensor of the result's shape at `offsets`.
    `output_grad` fits inside the result at `offsets`; both have one
    element type and rank.

    ```mlir
    %dx = fuse.slice_grad %dq {offsets = array<i64: 0, 0, 256>}
        : tensor<1x128x256xbf16> -> tensor<1x128x512xbf16>
    ```
  }];
  let arguments = (ins Fuse_Tensor:$output_grad, DenseI64ArrayAttr:$offsets);
  let results = (outs Fuse_Tensor:$result);
  let assemblyFormat = [{
    $output_grad attr-dict `:` type($output_grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // FUSE_TRAINING_OPS_TD
