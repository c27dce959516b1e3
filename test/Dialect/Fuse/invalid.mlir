// Every distinct verifier error of the fuse dialect, each at its op.
// RUN: fusec-opt %s -split-input-file -verify-diagnostics

func.func @dynamic_shape(%x: tensor<?x4xf32>) {
  // expected-error @below {{'fuse.softmax' op operand 'input' must be a statically shaped tensor of f32, f16 or bf16, found 'tensor<?x4xf32>'}}
  %0 = fuse.softmax %x : tensor<?x4xf32>
  return
}

// -----

func.func @unsupported_dtype(%x: tensor<2x4xf64>, %y: tensor<2x4xf64>) {
  // expected-error @below {{'fuse.add' op operand 'lhs' must be a statically shaped tensor of f32, f16 or bf16, found 'tensor<2x4xf64>'}}
  %0 = fuse.add %x, %y : tensor<2x4xf64>, tensor<2x4xf64>
  return
}

// -----

func.func @unsupported_dtype_unary(%x: tensor<2x4xi32>) {
  // expected-error @below {{'fuse.relu' op operand #0 must be statically shaped tensor of f32, f16 or bf16 values, of rank 64 at most, not empty and under 2^63 bytes, but got 'tensor<2x4xi32>'}}
  %0 = fuse.relu %x : tensor<2x4xi32>
  return
}

// -----

func.func @conv_rank(%x: tensor<1x8x8xf32>, %w: tensor<4x3x3x8xf32>) {
  // expected-error @below {{'fuse.conv2d' op operand 'input' must have rank 4 [N, H, W, C] for layout nhwc, found rank 3 ([1, 8, 8])}}
  %0 = fuse.conv2d %x, %w : tensor<1x8x8xf32>, tensor<4x3x3x8xf32>
  return
}

// -----

func.func @conv_dtype(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf16>) {
  // expected-error @below {{'fuse.conv2d' op operand 'filter' has element type 'f16' but 'input' has 'f32'; both must match}}
  %0 = fuse.conv2d %x, %w : tensor<1x8x8x3xf32>, tensor<4x3x3x3xf16>
  return
}

// -----

func.func @conv_filter_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @below {{'fuse.conv2d' op operand 'filter' [4, 2, 3, 3] has 2 input channels per group (dimension 1) but the input has 3 channels and groups = 1: expected 3}}
  %0 = fuse.conv2d %x, %w {layout = #fuse.layout<nchw>} : tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>
  return
}

// -----

func.func @conv_groups_input(%x: tensor<1x8x8x6xf32>, %w: tensor<4x3x3x1xf32>) {
  // expected-error @below {{'fuse.conv2d' op input channels (6) are not divisible by groups (4)}}
  %0 = fuse.conv2d %x, %w {groups = 4} : tensor<1x8x8x6xf32>, tensor<4x3x3x1xf32>
  return
}

// -----

func.func @conv_groups_output(%x: tensor<1x8x8x6xf32>, %w: tensor<5x3x3x2xf32>) {
  // expected-error @below {{'fuse.conv2d' op output channels (filter dimension 0 = 5) are not divisible by groups (3)}}
  %0 = fuse.conv2d %x, %w {groups = 3} : tensor<1x8x8x6xf32>, tensor<5x3x3x2xf32>
  return
}

// -----

func.func @conv_groups_positive(%x: tensor<1x8x8x6xf32>, %w: tensor<6x3x3x6xf32>) {
  // expected-error @below {{'fuse.conv2d' op attribute 'groups' must be positive, found 0}}
  %0 = fuse.conv2d %x, %w {groups = 0} : tensor<1x8x8x6xf32>, tensor<6x3x3x6xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @below {{'fuse.conv2d' op operand 'bias' must have shape [4] (one value per output channel), found [3]}}
  %0 = fuse.conv2d %x, %w, %b : tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @conv_strides_count(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @below {{'fuse.conv2d' op attribute 'strides' must have 2 values, found 3}}
  %0 = fuse.conv2d %x, %w {strides = array<i64: 1, 1, 1>} : tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv_dilation_positive(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @below {{'fuse.conv2d' op attribute 'dilation' must be positive, found [0, 1]}}
  %0 = fuse.conv2d %x, %w {dilation = array<i64: 0, 1>} : tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv_padding_count(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @below {{'fuse.conv2d' op attribute 'padding' must have 2 values [ph, pw] or 4 values [top, bottom, left, right], found 3}}
  %0 = fuse.conv2d %x, %w {padding = array<i64: 1, 1, 1>} : tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv_padding_negative(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @below {{'fuse.conv2d' op attribute 'padding' must be non-negative, found [1, -1]}}
  %0 = fuse.conv2d %x, %w {padding = array<i64: 1, -1>} : tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @conv_window(%x: tensor<1x4x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @below {{'fuse.conv2d' op dilated kernel height: window of extent 5 does not fit the padded input extent 4}}
  %0 = fuse.conv2d %x, %w {dilation = array<i64: 2, 1>} : tensor<1x4x8x3xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @batch_norm_rank(%x: tensor<4xf32>, %c: tensor<4xf32>) {
  // expected-error @below {{'fuse.batch_norm' op operand 'input' must have rank 2 or more, found rank 1}}
  %0 = fuse.batch_norm %x, %c, %c, %c, %c : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @batch_norm_channels(%x: tensor<2x3x5x5xf32>, %c: tensor<5xf32>) {
  // expected-error @below {{'fuse.batch_norm' op operand 'mean' must have shape [3] (channels are axis 1 for layout nchw), found [5]}}
  %0 = fuse.batch_norm %x, %c, %c, %c, %c {layout = #fuse.layout<nchw>} : tensor<2x3x5x5xf32>, tensor<5xf32>
  return
}

// -----

func.func @batch_norm_epsilon(%x: tensor<2x3xf32>, %c: tensor<3xf32>) {
  // expected-error @below {{'fuse.batch_norm' op attribute 'epsilon' must be non-negative, found -1.000000e+00}}
  %0 = fuse.batch_norm %x, %c, %c, %c, %c {epsilon = -1.0} : tensor<2x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @batch_norm_same_types(%x: tensor<2x3xf32>, %c: tensor<3xf32>, %d: tensor<4xf32>) {
  // expected-error @below {{'fuse.batch_norm' op failed to verify that all of {mean, variance, scale, shift} have same type}}
  %0 = "fuse.batch_norm"(%x, %c, %d, %c, %c) : (tensor<2x3xf32>, tensor<3xf32>, tensor<4xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @broadcast(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @below {{'fuse.mul' op operands 'lhs' [2, 3] and 'rhs' [4, 3] are not broadcast-compatible: dimension 1 from the right is 2 vs 4}}
  %0 = fuse.mul %a, %b : tensor<2x3xf32>, tensor<4x3xf32>
  return
}

// -----

func.func @binary_dtype(%a: tensor<3xf32>, %b: tensor<3xbf16>) {
  // expected-error @below {{'fuse.sub' op operand 'rhs' has element type 'bf16' but 'lhs' has 'f32'; both must match}}
  %0 = fuse.sub %a, %b : tensor<3xf32>, tensor<3xbf16>
  return
}

// -----

func.func @bias_add_rank(%x: tensor<f32>, %b: tensor<1xf32>) {
  // expected-error @below {{'fuse.bias_add' op operand 'input' must have rank 1 or more, found rank 0}}
  %0 = fuse.bias_add %x, %b : tensor<f32>, tensor<1xf32>
  return
}

// -----

func.func @bias_add_shape(%x: tensor<2x3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @below {{'fuse.bias_add' op operand 'bias' must have shape [3] (the size of input axis 1), found [4]}}
  %0 = fuse.bias_add %x, %b {axis = 1} : tensor<2x3x4xf32>, tensor<4xf32>
  return
}

// -----

func.func @bias_add_axis(%x: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @below {{'fuse.bias_add' op attribute 'axis' = 2 is out of range for rank 2 (expected -2 to 1)}}
  %0 = fuse.bias_add %x, %b {axis = 2} : tensor<2x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @clamp_bounds(%x: tensor<3xf32>) {
  // expected-error @below {{'fuse.clamp' op attribute 'min' (2.000000e+00) must not exceed attribute 'max' (1.000000e+00)}}
  %0 = fuse.clamp %x {min = 2.0, max = 1.0} : tensor<3xf32>
  return
}

// -----

func.func @clamp_missing(%x: tensor<3xf32>) {
  // expected-error @below {{'fuse.clamp' op requires attribute 'max'}}
  %0 = fuse.clamp %x {min = 2.0} : tensor<3xf32>
  return
}

// -----

func.func @gelu_approximation(%x: tensor<3xf32>) {
  // expected-error @below {{expected ::mlir::fuse::GeluApproximation to be one of: none, tanh}}
  // expected-error @below {{failed to parse Fuse_GeluApproximationAttr parameter 'value'}}
  %0 = fuse.gelu %x {approximate = #fuse.gelu_approx<erf>} : tensor<3xf32>
  return
}

// -----

func.func @matmul_rank(%a: tensor<3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @below {{'fuse.matmul' op operands must have rank 2 or more, found ranks 1 and 2}}
  %0 = fuse.matmul %a, %b : tensor<3xf32>, tensor<3x4xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<5x3xf32>, %b: tensor<4x6xf32>) {
  // expected-error @below {{'fuse.matmul' op contraction sizes differ: 'lhs' [5, 3] has K = 5 (dimension 0) but 'rhs' [4, 6] has K = 4 (dimension 0)}}
  %0 = fuse.matmul %a, %b {transpose_lhs} : tensor<5x3xf32>, tensor<4x6xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x5x3xf32>, %b: tensor<4x3x6xf32>) {
  // expected-error @below {{'fuse.matmul' op operands 'lhs batch' [2] and 'rhs batch' [4] are not broadcast-compatible: dimension 0 from the right is 2 vs 4}}
  %0 = fuse.matmul %a, %b : tensor<2x5x3xf32>, tensor<4x3x6xf32>
  return
}

// -----

func.func @linear_input_rank(%x: tensor<f32>, %w: tensor<4x1xf32>) {
  // expected-error @below {{'fuse.linear' op operand 'input' must have rank 1 or more, found rank 0}}
  %0 = fuse.linear %x, %w : tensor<f32>, tensor<4x1xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<2x3xf32>, %w: tensor<3xf32>) {
  // expected-error @below {{'fuse.linear' op operand 'weight' must have rank 2 [N, K], found rank 1 ([3])}}
  %0 = fuse.linear %x, %w : tensor<2x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @linear_k(%x: tensor<2x3xf32>, %w: tensor<4x5xf32>) {
  // expected-error @below {{'fuse.linear' op operand 'weight' [4, 5] has K = 5 (dimension 1) but 'input' [2, 3] has K = 3 (last dimension)}}
  %0 = fuse.linear %x, %w : tensor<2x3xf32>, tensor<4x5xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>) {
  // expected-error @below {{'fuse.linear' op operand 'bias' must have shape [4] (one value per output feature), found [3]}}
  %0 = fuse.linear %x, %w, %b : tensor<2x3xf32>, tensor<4x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @layer_norm_rank(%x: tensor<2x3xf32>) {
  // expected-error @below {{'fuse.layer_norm' op attribute 'normalized_rank' = 3 must be between 1 and the input rank (2)}}
  %0 = fuse.layer_norm %x {normalized_rank = 3} : tensor<2x3xf32>
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<2x3xf32>, %g: tensor<2xf32>) {
  // expected-error @below {{'fuse.layer_norm' op operand 'scale' must have shape [3] (the normalised trailing axes), found [2]}}
  %0 = fuse.layer_norm %x scale(%g : tensor<2xf32>) : tensor<2x3xf32>
  return
}

// -----

func.func @rms_norm_epsilon(%x: tensor<2x3xf32>) {
  // expected-error @below {{'fuse.rms_norm' op attribute 'epsilon' must be non-negative, found -1.000000e-06}}
  %0 = fuse.rms_norm %x {epsilon = -1.0e-6} : tensor<2x3xf32>
  return
}

// -----

func.func @softmax_rank(%x: tensor<f32>) {
  // expected-error @below {{'fuse.softmax' op operand 'input' must have rank 1 or more, found rank 0}}
  %0 = fuse.softmax %x : tensor<f32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @below {{'fuse.softmax' op attribute 'axis' = -3 is out of range for rank 2 (expected -2 to 1)}}
  %0 = fuse.softmax %x {axis = -3} : tensor<2x3xf32>
  return
}

// -----

func.func @attention_key(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @below {{'fuse.attention' op operand 'key' [1, 2, 4, 16] must match 'query' [1, 2, 4, 8] in batch (dimension 0) and head size (dimension 3)}}
  %0 = fuse.attention %q, %k, %v : tensor<1x2x4x8xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x8xf32>
  return
}

// -----

func.func @attention_value(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x5x8xf32>) {
  // expected-error @below {{'fuse.attention' op operand 'value' [1, 2, 5, 8] must match 'key' [1, 2, 4, 8] in dimensions 0 to 2 [B, Hkv, Nk]}}
  %0 = fuse.attention %q, %k, %v : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x5x8xf32>
  return
}

// -----

func.func @attention_gqa(%q: tensor<1x3x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @below {{'fuse.attention' op query heads (3) must be a multiple of key/value heads (2)}}
  %0 = fuse.attention %q, %k, %v : tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return
}

// -----

func.func @attention_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x6x8xf32>, %m: tensor<4x4xf32>) {
  // expected-error @below {{'fuse.attention' op operand 'mask' [4, 4] must have rank 2 to 4 and broadcast to the scores [1, 2, 4, 6] [B, Hq, Nq, Nk]}}
  %0 = fuse.attention %q, %k, %k, %m : tensor<1x2x4x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>, tensor<4x4xf32>
  return
}

// -----

func.func @attention_scale(%q: tensor<1x2x4x8xf32>) {
  // expected-error @below {{'fuse.attention' op attribute 'scale' failed to satisfy constraint: 64-bit float attribute whose value is finite}}
  %0 = fuse.attention %q, %q, %q {scale = 0x7FF0000000000000 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return
}

// -----

func.func @attention_rank(%q: tensor<2x4x8xf32>) {
  // expected-error @below {{'fuse.attention' op operand 'query' must have rank 4 [B, Hq, Nq, D], found rank 3 ([2, 4, 8])}}
  %0 = fuse.attention %q, %q, %q : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @rope_rank(%x: tensor<8xf32>, %c: tensor<1x4xf32>) {
  // expected-error @below {{'fuse.rope' op operand 'input' must have rank 2 or more [..., N, D], found rank 1}}
  %0 = fuse.rope %x, %c, %c : tensor<8xf32>, tensor<1x4xf32>
  return
}

// -----

func.func @rope_odd(%x: tensor<4x7xf32>, %c: tensor<4x3xf32>) {
  // expected-error @below {{'fuse.rope' op the feature size D of operand 'input' (last dimension) must be even, found 7}}
  %0 = fuse.rope %x, %c, %c : tensor<4x7xf32>, tensor<4x3xf32>
  return
}

// -----

func.func @rope_table(%x: tensor<2x4x8xf32>, %c: tensor<4x8xf32>) {
  // expected-error @below {{'fuse.rope' op operand 'cos' must have shape [4, 4] ([N, D/2]: one row of angles per position), found [4, 8]}}
  %0 = fuse.rope %x, %c, %c : tensor<2x4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<1x8x8x3xf32>) {
  // expected-error @below {{'fuse.max_pool2d' op attribute 'kernel' must have 2 values, found 1}}
  %0 = fuse.max_pool2d %x {kernel = array<i64: 2>} : tensor<1x8x8x3xf32>
  return
}

// -----

func.func @pool_kernel_missing(%x: tensor<1x8x8x3xf32>) {
  // expected-error @below {{'fuse.avg_pool2d' op requires attribute 'kernel'}}
  %0 = fuse.avg_pool2d %x : tensor<1x8x8x3xf32>
  return
}

// -----

func.func @pool_strides(%x: tensor<1x8x8x3xf32>) {
  // expected-error @below {{'fuse.avg_pool2d' op attribute 'strides' must be positive, found [0, 2]}}
  %0 = fuse.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 0, 2>} : tensor<1x8x8x3xf32>
  return
}

// -----

func.func @pool_padding(%x: tensor<1x8x8x3xf32>) {
  // expected-error @below {{'fuse.max_pool2d' op padding right = 2 exceeds half the kernel width (3)}}
  %0 = fuse.max_pool2d %x {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 2>} : tensor<1x8x8x3xf32>
  return
}

// -----

func.func @pool_window(%x: tensor<1x2x8x3xf32>) {
  // expected-error @below {{'fuse.max_pool2d' op kernel height: window of extent 3 does not fit the padded input extent 2}}
  %0 = fuse.max_pool2d %x {kernel = array<i64: 3, 3>} : tensor<1x2x8x3xf32>
  return
}

// -----

func.func @global_pool_rank(%x: tensor<8x3xf32>) {
  // expected-error @below {{'fuse.global_avg_pool' op operand 'input' must have rank 4 [N, C, H, W] for layout nchw, found rank 2 ([8, 3])}}
  %0 = fuse.global_avg_pool %x {layout = #fuse.layout<nchw>} : tensor<8x3xf32>
  return
}

// -----

func.func @upsample_both(%x: tensor<1x4x4x3xf32>) {
  // expected-error @below {{'fuse.upsample' op exactly one of the attributes 'size' and 'scale' must be given, found both}}
  %0 = fuse.upsample %x {size = array<i64: 8, 8>, scale = array<f64: 2.0, 2.0>} : tensor<1x4x4x3xf32>
  return
}

// -----

func.func @upsample_neither(%x: tensor<1x4x4x3xf32>) {
  // expected-error @below {{'fuse.upsample' op exactly one of the attributes 'size' and 'scale' must be given, found neither}}
  %0 = fuse.upsample %x : tensor<1x4x4x3xf32>
  return
}

// -----

func.func @upsample_align(%x: tensor<1x4x4x3xf32>) {
  // expected-error @below {{'fuse.upsample' op attribute 'align_corners' is only valid with mode bilinear}}
  %0 = fuse.upsample %x {size = array<i64: 8, 8>, align_corners} : tensor<1x4x4x3xf32>
  return
}

// -----

func.func @upsample_size(%x: tensor<1x4x4x3xf32>) {
  // expected-error @below {{'fuse.upsample' op attribute 'size' must be positive, found [0, 8]}}
  %0 = fuse.upsample %x {size = array<i64: 0, 8>} : tensor<1x4x4x3xf32>
  return
}

// -----

func.func @upsample_scale_count(%x: tensor<1x4x4x3xf32>) {
  // expected-error @below {{'fuse.upsample' op attribute 'scale' must have 2 values, found 1}}
  %0 = fuse.upsample %x {scale = array<f64: 2.0>} : tensor<1x4x4x3xf32>
  return
}

// -----

func.func @upsample_scale_sign(%x: tensor<1x4x4x3xf32>) {
  // expected-error @below {{'fuse.upsample' op attribute 'scale' must be positive and finite, found [-2.000000e+00, 2.000000e+00]}}
  %0 = fuse.upsample %x {scale = array<f64: -2.0, 2.0>} : tensor<1x4x4x3xf32>
  return
}

// -----

func.func @upsample_empty(%x: tensor<1x4x4x3xf32>) {
  // expected-error @below {{'fuse.upsample' op attribute 'scale' gives an empty output (0 x 4) for input 4 x 4}}
  %0 = fuse.upsample %x {scale = array<f64: 0.2, 1.0>} : tensor<1x4x4x3xf32>
  return
}

// -----

// Found by fusec-fuzz-pipeline: the output extent was cast from a double
// past int64 (regress-upsample-huge-scale.mlir).
func.func @upsample_scale_overflow(%x: tensor<1x4x4x3xf32>) {
  // expected-error @below {{'fuse.upsample' op attribute 'scale' gives an output extent (4.000000e+89 x 8.000000e+00) for input 4 x 4 that overflows int64}}
  %0 = fuse.upsample %x {scale = array<f64: 1.0e89, 2.0>} : tensor<1x4x4x3xf32>
  return
}

// -----

func.func @transpose_missing(%x: tensor<2x3x4xf32>) {
  // expected-error @below {{'fuse.transpose' op requires attribute 'permutation'}}
  %0 = fuse.transpose %x : tensor<2x3x4xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<2x3xf32>) {
  // expected-error @below {{'fuse.cast' op requires the same shape for all operands and results}}
  %0 = fuse.cast %x : tensor<2x3xf32> to tensor<3x2xf16>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) {
  // expected-error @below {{'fuse.reshape' op cannot reshape [2, 3] (6 elements) to [4, 2] (8 elements)}}
  %0 = fuse.reshape %x : tensor<2x3xf32> to tensor<4x2xf32>
  return
}

// -----

func.func @reshape_dtype(%x: tensor<2x3xf32>) {
  // expected-error @below {{'fuse.reshape' op result element type 'f16' differs from input element type 'f32'; use fuse.cast to convert}}
  %0 = fuse.reshape %x : tensor<2x3xf32> to tensor<6xf16>
  return
}

// -----

func.func @transpose_perm(%x: tensor<2x3x4xf32>) {
  // expected-error @below {{'fuse.transpose' op attribute 'permutation' [0, 2, 2] is not a permutation of [0, 3)}}
  %0 = fuse.transpose %x {permutation = array<i64: 0, 2, 2>} : tensor<2x3x4xf32>
  return
}

// -----

func.func @inferred_type_mismatch(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @below {{'fuse.conv2d' op inferred type(s) 'tensor<1x6x6x4xf32>' are incompatible with return type(s) of operation 'tensor<1x8x8x4xf32>'}}
  // expected-error @below {{'fuse.conv2d' op failed to infer returned types}}
  %0 = "fuse.conv2d"(%x, %w) : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x8x8x4xf32>
  return
}

// -----

// A fuse.kernel becomes one GPU kernel around at most one anchor.
func.func @kernel_two_anchors(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = fuse.kernel "k0"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    // expected-note @below {{the first anchor is here}}
    %1 = fuse.softmax %a : tensor<4x8xf32>
    // expected-error @below {{'fuse.layer_norm' op is a second anchor in fuse.kernel 'k0'; a kernel has at most one}}
    %2 = fuse.layer_norm %1 : tensor<4x8xf32>
    fuse.yield %2 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @kernel_nested(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fuse.kernel "outer"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @below {{'fuse.kernel' op is nested in fuse.kernel 'outer'; kernels do not nest}}
    %1 = fuse.kernel "inner"(%a) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%b: tensor<4xf32>):
      %2 = fuse.relu %b : tensor<4xf32>
      fuse.yield %2 : tensor<4xf32>
    }
    fuse.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @kernel_reshape(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  %0 = fuse.kernel "k0"(%x) : (tensor<4xf32>) -> tensor<2x2xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @below {{'fuse.reshape' op cannot be part of fuse.kernel 'k0': it is neither an anchor, elementwise nor a view}}
    %1 = fuse.reshape %a : tensor<4xf32> to tensor<2x2xf32>
    fuse.yield %1 : tensor<2x2xf32>
  }
  return %0 : tensor<2x2xf32>
}

// -----

func.func @kernel_name_space(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'fuse.kernel' op name 'my kernel' is not a PTX identifier: use a letter or '_', then letters, digits and '_'}}
  %0 = fuse.kernel "my kernel"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = fuse.relu %a : tensor<4xf32>
    fuse.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @kernel_name_digit(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'fuse.kernel' op name '0k' is not a PTX identifier}}
  %0 = fuse.kernel "0k"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = fuse.relu %a : tensor<4xf32>
    fuse.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @kernel_name_empty(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'fuse.kernel' op name '' is not a PTX identifier}}
  %0 = fuse.kernel ""(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = fuse.relu %a : tensor<4xf32>
    fuse.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @tile_out_of_range(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{tile warps_m = 33 is out of range [0, 32]}}
  %0 = fuse.kernel "k0"(%x, %w) {tile = #fuse.tile<bm = 64, bn = 64, bk = 32, warps_m = 33>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>):
    %1 = fuse.linear %a, %b : tensor<4x8xf32>, tensor<8x8xf32>
    fuse.yield %1 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @slice_rank(%x: tensor<2x3x4xf32>, %x2: tensor<2x5x4xf32>, %h: tensor<2x3x4xf16>) {
  // expected-error @below {{'fuse.slice' op attributes 'offsets' [0, 0] and 'sizes' [1, 1] must have one value per axis of the input [2, 3, 4]}}
  %0 = fuse.slice %x {offsets = array<i64: 0, 0>, sizes = array<i64: 1, 1>} : tensor<2x3x4xf32>
  return
}

// -----

func.func @slice_bounds(%x: tensor<2x3x4xf32>, %x2: tensor<2x5x4xf32>, %h: tensor<2x3x4xf16>) {
  // expected-error @below {{'fuse.slice' op axis 1: offset 2 and size 2 do not fit in extent 3 (need 0 <= offset, 1 <= size, offset + size <= extent)}}
  %0 = fuse.slice %x {offsets = array<i64: 0, 2, 0>, sizes = array<i64: 2, 2, 4>} : tensor<2x3x4xf32>
  return
}

// -----

func.func @slice_overflow(%x: tensor<2x3x4xf32>, %x2: tensor<2x5x4xf32>, %h: tensor<2x3x4xf16>) {
  // expected-error @below {{'fuse.slice' op axis 1: offset 1 and size 9223372036854775807 do not fit in extent 3}}
  %0 = fuse.slice %x {offsets = array<i64: 0, 1, 0>, sizes = array<i64: 2, 9223372036854775807, 4>} : tensor<2x3x4xf32>
  return
}

// -----

func.func @concat_shape(%x: tensor<2x3x4xf32>, %x2: tensor<2x5x4xf32>, %h: tensor<2x3x4xf16>) {
  // expected-error @below {{'fuse.concat' op operand '#1' has shape [2, 5, 4] but '#0' has [2, 3, 4]; they may differ only along axis 2}}
  %0 = fuse.concat %x, %x2 {axis = 2} : tensor<2x3x4xf32>, tensor<2x5x4xf32>
  return
}

// -----

func.func @concat_type(%x: tensor<2x3x4xf32>, %x2: tensor<2x5x4xf32>, %h: tensor<2x3x4xf16>) {
  // expected-error @below {{'fuse.concat' op operand '#1' has element type 'f16' but '#0' has 'f32'; both must match}}
  %0 = fuse.concat %x, %h {axis = 0} : tensor<2x3x4xf32>, tensor<2x3x4xf16>
  return
}

// -----

func.func @concat_axis(%x: tensor<2x3x4xf32>, %x2: tensor<2x5x4xf32>, %h: tensor<2x3x4xf16>) {
  // expected-error @below {{'fuse.concat' op attribute 'axis' = 3 is out of range for rank 3 (expected -3 to 2)}}
  %0 = fuse.concat %x, %x {axis = 3} : tensor<2x3x4xf32>, tensor<2x3x4xf32>
  return
}

// -----

func.func @split_sum(%x: tensor<2x3x4xf32>, %x2: tensor<2x5x4xf32>, %h: tensor<2x3x4xf16>) {
  // expected-error @below {{'fuse.split' op attribute 'sizes' [1, 1] sums to 2, not to extent 3 of axis 1}}
  %0:2 = fuse.split %x {axis = 1, sizes = array<i64: 1, 1>} : tensor<2x3x4xf32>
  return
}

// -----

func.func @split_zero(%x: tensor<2x3x4xf32>, %x2: tensor<2x5x4xf32>, %h: tensor<2x3x4xf16>) {
  // expected-error @below {{'fuse.split' op attribute 'sizes' [4, 0] must be positive and sum to extent 4 of axis 2}}
  %0:2 = fuse.split %x {axis = -1, sizes = array<i64: 4, 0>} : tensor<2x3x4xf32>
  return
}

// -----

func.func @tensor_map_result(%a: memref<64x64xf16>) {
  // expected-error @below {{'fuse.tensor_map' op result must be !llvm.ptr, the kernel parameter that holds the map, not 'i64'}}
  %0 = fuse.tensor_map %a {dims = array<i64: 64, 64>, strides = array<i64: 128>, box = array<i64: 64, 64>} : memref<64x64xf16> -> i64
  return
}

// -----

func.func @tensor_map_rank(%a: memref<2x2x2x2x2x2xf16>) {
  // expected-error @below {{'fuse.tensor_map' op views a tensor of rank 6; a TMA tensor map has rank 1 to 5}}
  %0 = fuse.tensor_map %a {dims = array<i64: 2, 2, 2, 2, 2, 2>, strides = array<i64: 16, 32, 64, 128, 256>, box = array<i64: 2, 2, 2, 2, 2, 2>} : memref<2x2x2x2x2x2xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_boxes(%a: memref<64x64xf16>) {
  // expected-error @below {{'fuse.tensor_map' op has 1 strides and 1 box extents for 2 dims; it needs one stride per dim but the innermost, and one box extent per dim}}
  %0 = fuse.tensor_map %a {dims = array<i64: 64, 64>, strides = array<i64: 128>, box = array<i64: 64>} : memref<64x64xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_one_corner(%x: memref<2x9x9x32xf16>) {
  // expected-error @below {{'fuse.tensor_map' op needs both im2col corners or neither}}
  %0 = fuse.tensor_map %x {dims = array<i64: 32, 9, 9, 2>, strides = array<i64: 64, 576, 5184>, box = array<i64: 32, 64>, im2col_lower = array<i64: -1, -1>} : memref<2x9x9x32xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_corner(%x: memref<2x9x9x32xf16>) {
  // expected-error @below {{'fuse.tensor_map' op im2col corner -200 is outside [-128, 127] for rank 4}}
  %0 = fuse.tensor_map %x {dims = array<i64: 32, 9, 9, 2>, strides = array<i64: 64, 576, 5184>, box = array<i64: 32, 64>, im2col_lower = array<i64: -200, -1>, im2col_upper = array<i64: -1, -1>} : memref<2x9x9x32xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_swizzle(%a: memref<64x64xf16>) {
  // expected-error @below {{'fuse.tensor_map' op swizzle is 16 bytes; expected 0, 32, 64 or 128}}
  %0 = fuse.tensor_map %a {dims = array<i64: 64, 64>, strides = array<i64: 128>, box = array<i64: 64, 64>, swizzle = 16} : memref<64x64xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_offset(%a: memref<64x64xf16>) {
  // expected-error @below {{'fuse.tensor_map' op offset 8 is not a non-negative multiple of 16}}
  %0 = fuse.tensor_map %a {dims = array<i64: 64, 64>, strides = array<i64: 128>, box = array<i64: 64, 64>, offset = 8} : memref<64x64xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_box_extent(%a: memref<64x512xf16>) {
  // expected-error @below {{'fuse.tensor_map' op box[1] = 512 is outside [1, 256]}}
  %0 = fuse.tensor_map %a {dims = array<i64: 64, 512>, strides = array<i64: 128>, box = array<i64: 64, 512>} : memref<64x512xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_stride(%a: memref<64x64xf16>) {
  // expected-error @below {{'fuse.tensor_map' op strides[0] = 120 is not a positive multiple of 16 bytes}}
  %0 = fuse.tensor_map %a {dims = array<i64: 64, 64>, strides = array<i64: 120>, box = array<i64: 64, 64>} : memref<64x64xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_swizzle_span(%a: memref<64x128xf16>) {
  // expected-error @below {{'fuse.tensor_map' op box[0] spans 256 bytes; it must span a multiple of 16 bytes, at most the swizzle's 128}}
  %0 = fuse.tensor_map %a {dims = array<i64: 128, 64>, strides = array<i64: 256>, box = array<i64: 128, 64>} : memref<64x128xf16> -> !llvm.ptr
  return
}

// -----

func.func @tensor_map_outside(%a: memref<64x64xf16>) {
  // expected-error @below {{'fuse.tensor_map' op views bytes up to 8320 of a buffer of 8192 bytes}}
  %0 = fuse.tensor_map %a {dims = array<i64: 64, 64>, strides = array<i64: 128>, box = array<i64: 64, 64>, offset = 128} : memref<64x64xf16> -> !llvm.ptr
  return
}

// -----

// Zero-size dimensions are refused at the first op that takes one, before
// any shape arithmetic (0 key/value heads once divided by zero).
func.func @zero_heads(%q: tensor<1x2x4x8xf32>, %k: tensor<1x0x4x8xf32>, %v: tensor<1x0x4x8xf32>) {
  // expected-error @below {{'fuse.attention' op operand 'key' [1, 0, 4, 8] has a zero-size dimension; fusec tensors are not empty}}
  %0 = fuse.attention %q, %k, %v : tensor<1x2x4x8xf32>, tensor<1x0x4x8xf32>, tensor<1x0x4x8xf32>
  return
}

// -----

func.func @zero_length_rows(%x: tensor<4x0xf32>) {
  // expected-error @below {{'fuse.softmax' op operand 'input' [4, 0] has a zero-size dimension}}
  %0 = fuse.softmax %x : tensor<4x0xf32>
  return
}

// -----

func.func @zero_length_norm(%x: tensor<4x0xf16>) {
  // expected-error @below {{'fuse.layer_norm' op operand 'input' [4, 0] has a zero-size dimension}}
  %0 = fuse.layer_norm %x : tensor<4x0xf16>
  return
}

// -----

func.func @zero_length_rms(%x: tensor<4x0xbf16>) {
  // expected-error @below {{'fuse.rms_norm' op operand 'input' [4, 0] has a zero-size dimension}}
  %0 = fuse.rms_norm %x : tensor<4x0xbf16>
  return
}

// -----

func.func @empty_upsample(%x: tensor<1x0x0x4xf32>) {
  // expected-error @below {{'fuse.upsample' op operand 'input' [1, 0, 0, 4] has a zero-size dimension}}
  %0 = fuse.upsample %x {scale = array<f64: 2.0, 2.0>} : tensor<1x0x0x4xf32>
  return
}

// -----

func.func @empty_pool(%x: tensor<1x0x0x4xf32>) {
  // expected-error @below {{'fuse.max_pool2d' op operand 'input' [1, 0, 0, 4] has a zero-size dimension}}
  %0 = fuse.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1>} : tensor<1x0x0x4xf32>
  return
}

// -----

func.func @empty_kernel_input(%x: tensor<0x8xf32>) {
  // expected-error @below {{'fuse.kernel' op operand #0 must be variadic of statically shaped tensor of f32, f16 or bf16 values, of rank 64 at most, not empty and under 2^63 bytes, but got 'tensor<0x8xf32>'}}
  %y = fuse.kernel "k0" (%x) : (tensor<0x8xf32>) -> tensor<0x8xf32> {
  ^bb0(%a: tensor<0x8xf32>):
    fuse.yield %a : tensor<0x8xf32>
  }
  return
}

// -----

// Sizes past int64 are refused instead of wrapping.
func.func @size_overflow(%x: tensor<4000000000x4000000000x4000000000xf32>) {
  // expected-error @below {{'fuse.relu' op operand #0 must be statically shaped tensor of f32, f16 or bf16 values, of rank 64 at most, not empty and under 2^63 bytes, but got 'tensor<4000000000x4000000000x4000000000xf32>'}}
  %0 = fuse.relu %x : tensor<4000000000x4000000000x4000000000xf32>
  return
}

// -----

// More than 64 dimensions (NumPy's limit) are refused: compile time grows
// with the square of the rank (rank 23000 took 30 s).
func.func @rank_65(%x: tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x3xf32>) {
  // expected-error @below {{'fuse.relu' op operand #0 must be statically shaped tensor of f32, f16 or bf16 values, of rank 64 at most, not empty and under 2^63 bytes, but got 'tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x3xf32>'}}
  %0 = fuse.relu %x : tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x3xf32>
  return
}

// -----

func.func @rank_65_inferred(%x: tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x3xf32>) {
  // expected-error @below {{'fuse.softmax' op operand 'input' [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3] has rank 65; fusec tensors have at most 64 dimensions}}
  %0 = fuse.softmax %x : tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x3xf32>
  return
}

// -----

func.func @padding_overflow(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @below {{'fuse.conv2d' op dilated kernel height: the window or the padded input extent overflows int64 (input 8, padding 9223372036854775800 and 9223372036854775800)}}
  %0 = fuse.conv2d %x, %w {padding = array<i64: 9223372036854775800, 9223372036854775800>} : tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

func.func @dilation_overflow(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @below {{'fuse.conv2d' op dilated kernel height: the window or the padded input extent overflows int64}}
  %0 = fuse.conv2d %x, %w {dilation = array<i64: 9223372036854775807, 1>} : tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>
  return
}

// -----

// NaN scalars are refused: every output would be NaN.
func.func @nan_epsilon(%x: tensor<4x8xf32>) {
  // expected-error @below {{'fuse.layer_norm' op attribute 'epsilon' failed to satisfy constraint: 64-bit float attribute whose value is finite}}
  %0 = "fuse.layer_norm"(%x) {epsilon = 0x7FF8000000000000 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @nan_alpha(%x: tensor<4x8xf32>) {
  // expected-error @below {{'fuse.leaky_relu' op attribute 'alpha' failed to satisfy constraint: 64-bit float attribute whose value is finite}}
  %0 = "fuse.leaky_relu"(%x) {alpha = 0x7FF8000000000000 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @nan_clamp(%x: tensor<4x8xf32>) {
  // expected-error @below {{'fuse.clamp' op attribute 'max' failed to satisfy constraint: 64-bit float attribute whose value is not NaN}}
  %0 = "fuse.clamp"(%x) {min = 0xFFF0000000000000 : f64, max = 0x7FF8000000000000 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Type inference runs while parsing, before the verifier: a required
// attribute that is missing is the verifier's message, not a crash (found by
// fusec-fuzz-pipeline under ASan).
func.func @split_no_axis(%x: tensor<3x7x33xf16>) -> tensor<3x7x5xf16> {
  // expected-error @+1 {{'fuse.split' op requires attribute 'axis'}}
  %0:3 = fuse.split %x {axsizes = array<i64: 5, 20, 8>} : tensor<3x7x33xf16>
  return %0#0 : tensor<3x7x5xf16>
}

// -----

func.func @concat_no_axis(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<2x7xf32> {
  // expected-error @+1 {{'fuse.concat' op requires attribute 'axis'}}
  %0 = fuse.concat %a, %b {axes = 1} : tensor<2x3xf32>, tensor<2x4xf32>
  return %0 : tensor<2x7xf32>
}

// -----

func.func @attention_grad_lse(%q: tensor<1x2x4x8xf32>, %l: tensor<1x2x5xf32>) {
  // expected-error @below {{'fuse.attention_grad' op operand 'lse' must have shape [1, 2, 4] ([B, Hq, Nq]: one value per query row), found [1, 2, 5]}}
  %0:3 = fuse.attention_grad %q, %q, %q, %q, %q, %l : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x5xf32>
  return
}

// -----

func.func @attention_grad_lse_type(%q: tensor<1x2x4x8xf16>, %l: tensor<1x2x4xf16>) {
  // expected-error @below {{'fuse.attention_grad' op operand 'lse' must be f32, found 'f16'}}
  %0:3 = fuse.attention_grad %q, %q, %q, %q, %q, %l : tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4xf16>
  return
}

// -----

func.func @attention_grad_output(%q: tensor<1x2x4x8xf32>, %o: tensor<1x2x4x9xf32>, %l: tensor<1x2x4xf32>) {
  // expected-error @below {{'fuse.attention_grad' op operand 'output' must have shape [1, 2, 4, 8] (the attention's output shape), found [1, 2, 4, 9]}}
  %0:3 = fuse.attention_grad %q, %q, %q, %o, %o, %l : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x9xf32>, tensor<1x2x4xf32>
  return
}

// -----

func.func @attention_grad_gqa(%q: tensor<1x3x4x8xf32>, %k: tensor<1x2x4x8xf32>, %l: tensor<1x3x4xf32>) {
  // expected-error @below {{'fuse.attention_grad' op query heads (3) must be a multiple of key/value heads (2)}}
  %0:3 = fuse.attention_grad %q, %k, %k, %q, %q, %l : tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x3x4xf32>
  return
}
