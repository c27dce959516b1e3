# REQUIRES: numpy
# RUN: %python %s --fusec %fusec --workdir %t
#
# Known values of the reference interpreter's training ops
# (dialect/Fuse/FuseTrainingOps.td): small cases worked out by hand, one
# graph each, run through `fusec run --device=cpu`. The expected arrays are
# written out literally (the arithmetic is in the comments), not computed by
# a second implementation; training-numpy.py does that on random shapes.

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
from refrun import run_graph, tensor_type as T  # noqa: E402

CASES = []


def case(name, args, results, body, inputs, expected, tol=1e-6):
    """args: [(name, shape, dtype)]; results: [(shape, dtype)]; body: the
    ops, their last line the return's operands after `return`."""
    sig = ", ".join("%%%s: %s" % (n, T(s, d)) for n, s, d in args)
    rtys = [T(s, d) for s, d in results]
    ops, ret = body.strip().rsplit("\n", 1) if "\n" in body.strip() else ("", body.strip())
    mlir = "func.func @main(%s) -> (%s) {\n%s\n  return %s : %s\n}\n" % (
        sig, ", ".join(rtys), ops, ret.strip(), ", ".join(rtys))
    CASES.append((name, mlir, [np.asarray(a, dtype=np.float64) for a in inputs],
                  [np.asarray(e, dtype=np.float64) for e in expected], tol))


# -- batch_norm_train ----------------------------------------------------------
# x = [1, 3] for one channel (N = 2): mean 2, biased var 1, unbiased var 2.
# epsilon 0: invstd 1, y = (x - 2) * 1 * scale + shift = [-1, 1] * 3 + 0.5.
# running mean 0 and var 1, momentum 0.1: 0.9 * 0 + 0.1 * 2 = 0.2,
# 0.9 * 1 + 0.1 * 2 = 1.1 (the unbiased variance).
BN_ARGS = [("x", (2, 1, 1, 1), "f32"), ("rm", (1,), "f32"), ("rv", (1,), "f32"),
           ("g", (1,), "f32"), ("b", (1,), "f32")]
BN_RES = [((2, 1, 1, 1), "f32")] + [((1,), "f32")] * 4
case("bn_train_momentum", BN_ARGS, BN_RES, """
  %y, %m, %i, %nrm, %nrv = fuse.batch_norm_train %x, %rm, %rv, %g, %b {epsilon = 0.0 : f64} : tensor<2x1x1x1xf32>, tensor<1xf32>
  %y, %m, %i, %nrm, %nrv""",
     [[[[[1]]], [[[3]]]], [0], [1], [3], [0.5]],
     [[[[[-2.5]]], [[[3.5]]]], [2], [1], [0.2], [1.1]])
# momentum 0.5: 0.5 * 0 + 0.5 * 2 = 1 and 0.5 * 1 + 0.5 * 2 = 1.5.
case("bn_train_momentum_0.5", BN_ARGS, BN_RES, """
  %y, %m, %i, %nrm, %nrv = fuse.batch_norm_train %x, %rm, %rv, %g, %b {epsilon = 0.0 : f64, momentum = 0.5 : f64} : tensor<2x1x1x1xf32>, tensor<1xf32>
  %y, %m, %i, %nrm, %nrv""",
     [[[[[1]]], [[[3]]]], [0], [1], [3], [0.5]],
     [[[[[-2.5]]], [[[3.5]]]], [2], [1], [1], [1.5]])
# Cumulative with 4 batches tracked (this one included): f = 1/4,
# 0.75 * 0 + 0.25 * 2 = 0.5 and 0.75 * 1 + 0.25 * 2 = 1.25.
case("bn_train_cumulative", BN_ARGS + [("t", (1,), "f32")], BN_RES, """
  %y, %m, %i, %nrm, %nrv = fuse.batch_norm_train %x, %rm, %rv, %g, %b tracked %t {epsilon = 0.0 : f64, cumulative} : tensor<2x1x1x1xf32>, tensor<1xf32>, tensor<1xf32>
  %y, %m, %i, %nrm, %nrv""",
     [[[[[1]]], [[[3]]]], [0], [1], [3], [0.5], [4]],
     [[[[[-2.5]]], [[[3.5]]]], [2], [1], [0.5], [1.25]])
# NCHW, two channels of 2 x 2 each, N = 1, epsilon 0; %p = [0, 7] is the
# running mean and the shift, %s = [1, 1] the running var and the scale.
# Channel 0 = [0, 0, 4, 4]: mean 2, var 4, invstd 1/2, y = [-1, -1, 1, 1],
# unbiased var 16/3. Channel 1 = [1, 1, 3, 3]: mean 2, var 1, invstd 1,
# y = [-1, -1, 1, 1] + 7, unbiased var 4/3.
case("bn_train_nchw", [("x", (1, 2, 2, 2), "f32"), ("p", (2,), "f32"), ("s", (2,), "f32")],
     [((1, 2, 2, 2), "f32")] + [((2,), "f32")] * 4, """
  %y:5 = fuse.batch_norm_train %x, %p, %s, %s, %p {epsilon = 0.0 : f64, layout = #fuse.layout<nchw>} : tensor<1x2x2x2xf32>, tensor<2xf32>
  %y#0, %y#1, %y#2, %y#3, %y#4""",
     [[[[[0, 0], [4, 4]], [[1, 1], [3, 3]]]], [0, 7], [1, 1]],
     [[[[[-1, -1], [1, 1]], [[6, 6], [8, 8]]]], [2, 2], [0.5, 1],
      [0.2, 0.9 * 7 + 0.1 * 2], [0.9 + 0.1 * 16 / 3, 0.9 + 0.1 * 4 / 3]])
# bf16 activations, f32 statistics: y is rounded to bf16 at the result,
# the statistics stay f32. x = [1, 2, 4] (exact in bf16): mean 7/3, var
# ((4/3)^2 + (1/3)^2 + (5/3)^2) / 3 = 14/9, y = (x - 7/3) / sqrt(14/9).
_inv = 1 / math.sqrt(14 / 9)
case("bn_train_bf16", [("x", (3, 1), "bf16"), ("p", (1,), "f32"), ("s", (1,), "f32")],
     [((3, 1), "bf16"), ((1,), "f32"), ((1,), "f32"), ((1,), "f32"), ((1,), "f32")], """
  %y:5 = fuse.batch_norm_train %x, %p, %s, %s, %p {epsilon = 0.0 : f64} : tensor<3x1xbf16>, tensor<1xf32>
  %y#0, %y#1, %y#2, %y#3, %y#4""",
     [[[1], [2], [4]], [0], [1]],
     [[[(1 - 7 / 3) * _inv], [(2 - 7 / 3) * _inv], [(4 - 7 / 3) * _inv]], [7 / 3], [_inv],
      [0.1 * 7 / 3], [0.9 + 0.1 * 7 / 3]], tol=4e-3)

# -- batch_norm_grad -------------------------------------------------------------
# x = [0, 1, 2], mean 1, invstd 1 (given), scale 2: x^ = [-1, 0, 1];
# dy = [1, 0, 2]: shift_grad 3, scale_grad -1 + 2 = 1,
# dx = 2 * (dy - 3/3 - x^ * 1/3) = 2 * [1/3, -1, 2/3].
BNG_ARGS = [("dy", (1, 3, 1, 1), "f32"), ("x", (1, 3, 1, 1), "f32"), ("m", (1,), "f32"),
            ("i", (1,), "f32"), ("g", (1,), "f32")]
BNG_RES = [((1, 3, 1, 1), "f32"), ((1,), "f32"), ((1,), "f32")]
case("bn_grad_train", BNG_ARGS, BNG_RES, """
  %dx, %dg, %db = fuse.batch_norm_grad %dy, %x, %m, %i, %g : tensor<1x3x1x1xf32>, tensor<1xf32>
  %dx, %dg, %db""",
     [np.reshape([1, 0, 2], (1, 3, 1, 1)), np.reshape([0, 1, 2], (1, 3, 1, 1)), [1], [1], [2]],
     [np.reshape([2 / 3, -2, 4 / 3], (1, 3, 1, 1)), [1], [3]])
# Evaluation form: the operand holds the running variance 4, epsilon 0:
# invstd 1/2, x^ = [-1/2, 0, 1/2], scale_grad -1/2 + 1 = 1/2, dx = dy * 2/2.
case("bn_grad_eval", BNG_ARGS, BNG_RES, """
  %dx, %dg, %db = fuse.batch_norm_grad %dy, %x, %m, %i, %g {epsilon = 0.0 : f64} : tensor<1x3x1x1xf32>, tensor<1xf32>
  %dx, %dg, %db""",
     [np.reshape([1, 0, 2], (1, 3, 1, 1)), np.reshape([0, 1, 2], (1, 3, 1, 1)), [1], [4], [2]],
     [np.reshape([1, 0, 2], (1, 3, 1, 1)), [0.5], [3]])

# -- conv_transpose2d --------------------------------------------------------------
# Stride 1: the full convolution of x = [[1, 2], [3, 4]] with [[1, 0], [0, 1]].
case("conv_transpose_full", [("x", (1, 2, 2, 1), "f32"), ("w", (1, 2, 2, 1), "f32")],
     [((1, 3, 3, 1), "f32")], """
  %y = fuse.conv_transpose2d %x, %w : tensor<1x2x2x1xf32>, tensor<1x2x2x1xf32>
  %y""",
     [np.reshape([1, 2, 3, 4], (1, 2, 2, 1)), np.reshape([1, 0, 0, 1], (1, 2, 2, 1))],
     [np.reshape([1, 2, 0, 3, 5, 2, 0, 3, 4], (1, 3, 3, 1))])
# Stride 2 with a 2 x 2 filter of ones: each pixel becomes a 2 x 2 block.
case("conv_transpose_stride2_nchw", [("x", (1, 1, 2, 2), "f32"), ("w", (1, 1, 2, 2), "f32")],
     [((1, 1, 4, 4), "f32")], """
  %y = fuse.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, layout = #fuse.layout<nchw>} : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
  %y""",
     [np.reshape([1, 2, 3, 4], (1, 1, 2, 2)), np.ones((1, 1, 2, 2))],
     [np.kron(np.reshape([1, 2, 3, 4], (2, 2)), np.ones((2, 2))).reshape(1, 1, 4, 4)])
# Stride 2, padding 1, output_padding 1, 3 x 3 ones on 2 x 2 ones: rows
# h * 2 - 1 + kh; h = 0 writes rows 0, 1 and h = 1 rows 1, 2, 3, so each
# axis counts [1, 2, 1, 1] and Ho = 1 * 2 - 2 + 2 + 1 + 1 = 4.
case("conv_transpose_pad_outpad", [("x", (1, 2, 2, 1), "f32"), ("w", (1, 3, 3, 1), "f32")],
     [((1, 4, 4, 1), "f32")], """
  %y = fuse.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, output_padding = array<i64: 1, 1>} : tensor<1x2x2x1xf32>, tensor<1x3x3x1xf32>
  %y""",
     [np.ones((1, 2, 2, 1)), np.ones((1, 3, 3, 1))],
     [np.outer([1, 2, 1, 1], [1, 2, 1, 1]).reshape(1, 4, 4, 1)])
# Two groups, 1 x 1 filters [2] and [3], bias [10, 20]: channel c of the
# output is filter[c] * x[c] + bias[c].
case("conv_transpose_groups_bias",
     [("x", (1, 1, 2, 2), "f32"), ("w", (2, 1, 1, 1), "f32"), ("b", (2,), "f32")],
     [((1, 1, 2, 2), "f32")], """
  %y = fuse.conv_transpose2d %x, %w, %b {groups = 2} : tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>
  %y""",
     [np.reshape([1, 2, 3, 4], (1, 1, 2, 2)), np.reshape([2, 3], (2, 1, 1, 1)), [10, 20]],
     [np.reshape([12, 26, 16, 32], (1, 1, 2, 2))])
# Dilation 2 with [1, 1] along W: pixel w writes w and w + 2.
case("conv_transpose_dilation", [("x", (1, 1, 2, 1), "f32"), ("w", (1, 1, 2, 1), "f32")],
     [((1, 1, 4, 1), "f32")], """
  %y = fuse.conv_transpose2d %x, %w {dilation = array<i64: 1, 2>} : tensor<1x1x2x1xf32>, tensor<1x1x2x1xf32>
  %y""",
     [np.reshape([1, 2], (1, 1, 2, 1)), np.ones((1, 1, 2, 1))],
     [np.reshape([1, 2, 1, 2], (1, 1, 4, 1))])

# -- conv2d_filter_grad ------------------------------------------------------------
# x = 1..9 in 3 x 3, dy = ones 2 x 2, kernel 2 x 2: dw[kh, kw] is the sum of
# the 2 x 2 block of x at (kh, kw): 1+2+4+5, 2+3+5+6, 4+5+7+8, 5+6+8+9.
case("conv_filter_grad", [("x", (1, 3, 3, 1), "f32"), ("dy", (1, 2, 2, 1), "f32")],
     [((1, 2, 2, 1), "f32")], """
  %dw = fuse.conv2d_filter_grad %x, %dy {kernel = array<i64: 2, 2>} : tensor<1x3x3x1xf32>, tensor<1x2x2x1xf32>
  %dw""",
     [np.arange(1, 10).reshape(1, 3, 3, 1), np.ones((1, 2, 2, 1))],
     [np.reshape([12, 16, 24, 28], (1, 2, 2, 1))])
# Stride 2, padding 1, NCHW, x = dy = [[1, 2], [3, 4]], 2 x 2 kernel:
# dw[kh, kw] = sum over oy, ox of dy[oy, ox] x[2 oy - 1 + kh, 2 ox - 1 + kw],
# one term each as the other rows and columns fall in the padding:
# dw = [[dy11 x11, dy10 x10], [dy01 x01, dy00 x00]] = [[16, 9], [4, 1]].
case("conv_filter_grad_stride_pad_nchw", [("x", (1, 1, 2, 2), "f32"), ("dy", (1, 1, 2, 2), "f32")],
     [((1, 1, 2, 2), "f32")], """
  %dw = fuse.conv2d_filter_grad %x, %dy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, layout = #fuse.layout<nchw>} : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
  %dw""",
     [np.arange(1, 5).reshape(1, 1, 2, 2), np.arange(1, 5).reshape(1, 1, 2, 2)],
     [np.reshape([16, 9, 4, 1], (1, 1, 2, 2))])
# Two groups, 1 x 1 kernel: dw[co] = sum over pixels of dy[co] * x[co].
case("conv_filter_grad_groups", [("x", (1, 1, 2, 2), "f32"), ("dy", (1, 1, 2, 2), "f32")],
     [((2, 1, 1, 1), "f32")], """
  %dw = fuse.conv2d_filter_grad %x, %dy {kernel = array<i64: 1, 1>, groups = 2} : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
  %dw""",
     [np.reshape([1, 2, 3, 4], (1, 1, 2, 2)), np.reshape([1, 1, 10, 100], (1, 1, 2, 2))],
     [np.reshape([1 + 10 * 3, 2 + 100 * 4], (2, 1, 1, 1))])

# -- reduce_sum --------------------------------------------------------------------
X23 = np.arange(1, 7).reshape(2, 3)
case("reduce_sum", [("x", (2, 3), "f32")],
     [((3,), "f32"), ((2, 1), "f32"), ((), "f32"), ((1, 1), "f32")], """
  %a = fuse.reduce_sum %x {axes = array<i64: 0>} : tensor<2x3xf32>
  %b = fuse.reduce_sum %x {axes = array<i64: -1>, keep_dims} : tensor<2x3xf32>
  %c = fuse.reduce_sum %x {axes = array<i64: 1, 0>} : tensor<2x3xf32>
  %d = fuse.reduce_sum %x {axes = array<i64: 0, 1>, keep_dims} : tensor<2x3xf32>
  %a, %b, %c, %d""",
     [X23], [[5, 7, 9], [[6], [15]], 21, [[21]]])

# -- activation_grad and neg ---------------------------------------------------------
# dy = 2 everywhere. From the result y: relu y > 0, relu6 0 < y < 6, clamp
# min < y < max, sigmoid y (1 - y), tanh 1 - y^2.
_phi1 = 0.5 * (1 + math.erf(1 / math.sqrt(2))) + math.exp(-0.5) / math.sqrt(2 * math.pi)


def act(name, kind, values, expected, attrs=""):
    n = len(values)
    body = ("  %r = fuse.activation_grad %dy, %v {activation = #fuse.activation<" + kind
            + ">" + attrs + "} : tensor<" + str(n) + "xf32>\n  %r")
    case("activation_grad_" + name, [("dy", (n,), "f32"), ("v", (n,), "f32")],
         [((n,), "f32")], body, [[2.0] * n, values], [expected])


act("relu", "relu", [-1, 0, 0.5], [0, 0, 2])
act("relu6", "relu6", [0, 3, 6], [0, 2, 0])
act("clamp", "clamp", [-1, 0, 1], [0, 2, 0], ", min = -1.0 : f64, max = 1.0 : f64")
act("sigmoid", "sigmoid", [0.5, 0.25], [0.5, 2 * 0.25 * 0.75])
act("tanh", "tanh", [0.5, -1], [1.5, 0])
# From the input x: leaky_relu x > 0 ? 1 : alpha; gelu Phi(x) + x phi(x)
# (at 0: 1/2; at 1: 0.8413447 + 0.2419707); gelu_tanh and silu 1/2 at 0;
# hardswish 0 below -3, (2x + 3)/6 on [-3, 3], 1 above.
act("leaky_relu", "leaky_relu", [-1, 2], [0.2, 2], ", alpha = 0.1 : f64")
act("leaky_relu_default", "leaky_relu", [-1, 0], [0.02, 0.02])
act("gelu", "gelu", [0, 1], [1, 2 * _phi1])
act("gelu_tanh", "gelu_tanh", [0], [1])
act("silu", "silu", [0], [1])
act("hardswish", "hardswish", [-4, -3, 0, 3, 4], [0, -1, 1, 3, 2])
case("neg", [("x", (3,), "f16")], [((3,), "f16")], """
  %y = fuse.neg %x : tensor<3xf16>
  %y""", [np.array([1, -2, 0.1], dtype=np.float16)], [np.array([-1, 2, -0.1], dtype=np.float16)],
     tol=0)

# -- max_pool2d_grad -----------------------------------------------------------------
# Ties go to the first maximum in row-major window order: in [[1, 3], [3, 2]]
# position (0, 1).
case("max_pool_grad_tie", [("x", (1, 2, 2, 1), "f32"), ("dy", (1, 1, 1, 1), "f32")],
     [((1, 2, 2, 1), "f32")], """
  %dx = fuse.max_pool2d_grad %x, %dy {kernel = array<i64: 2, 2>} : tensor<1x2x2x1xf32>, tensor<1x1x1x1xf32>
  %dx""",
     [np.reshape([1, 3, 3, 2], (1, 2, 2, 1)), [[[[5]]]]],
     [np.reshape([0, 5, 0, 0], (1, 2, 2, 1))])
# Overlapping windows (1 x 2, stride 1) over [1, 5, 2, 2]: the windows
# [1, 5] and [5, 2] both pick 5; [2, 2] picks the first 2.
case("max_pool_grad_overlap", [("x", (1, 1, 1, 4), "f32"), ("dy", (1, 1, 1, 3), "f32")],
     [((1, 1, 1, 4), "f32")], """
  %dx = fuse.max_pool2d_grad %x, %dy {kernel = array<i64: 1, 2>, strides = array<i64: 1, 1>, layout = #fuse.layout<nchw>} : tensor<1x1x1x4xf32>, tensor<1x1x1x3xf32>
  %dx""",
     [np.reshape([1, 5, 2, 2], (1, 1, 1, 4)), np.reshape([1, 10, 100], (1, 1, 1, 3))],
     [np.reshape([0, 11, 100, 0], (1, 1, 1, 4))])
# Padding never wins, even over negative values: 1 x 2 windows, stride 2,
# one padded column each side of [-3, -4], are [pad, -3] and [-4, pad].
case("max_pool_grad_padding", [("x", (1, 1, 2, 1), "f32"), ("dy", (1, 1, 2, 1), "f32")],
     [((1, 1, 2, 1), "f32")], """
  %dx = fuse.max_pool2d_grad %x, %dy {kernel = array<i64: 1, 2>, strides = array<i64: 1, 2>, padding = array<i64: 0, 0, 1, 1>} : tensor<1x1x2x1xf32>, tensor<1x1x2x1xf32>
  %dx""",
     [np.reshape([-3, -4], (1, 1, 2, 1)), np.reshape([1, 2], (1, 1, 2, 1))],
     [np.reshape([1, 2], (1, 1, 2, 1))])
# NaN wins, the last NaN of the window (PyTorch's CPU rule).
case("max_pool_grad_nan", [("x", (1, 1, 4, 1), "f32"), ("dy", (1, 1, 1, 1), "f32")],
     [((1, 1, 4, 1), "f32")], """
  %dx = fuse.max_pool2d_grad %x, %dy {kernel = array<i64: 1, 4>} : tensor<1x1x4x1xf32>, tensor<1x1x1x1xf32>
  %dx""",
     [np.reshape([math.nan, 9, math.nan, 1], (1, 1, 4, 1)), [[[[7]]]]],
     [np.reshape([0, 0, 7, 0], (1, 1, 4, 1))])

# -- avg_pool2d_grad -----------------------------------------------------------------
# 2 x 2 windows, stride 2, padding 1 on 2 x 2: each window holds one real
# element and 3 padded ones; the divisor is 4 with count_include_pad, 1
# without.
for cip, div in (("true", 4), ("false", 1)):
    case("avg_pool_grad_pad_" + cip, [("dy", (1, 2, 2, 1), "f32")], [((1, 2, 2, 1), "f32")], """
  %%dx = fuse.avg_pool2d_grad %%dy {kernel = array<i64: 2, 2>, padding = array<i64: 1, 1>, count_include_pad = %s} : tensor<1x2x2x1xf32> -> tensor<1x2x2x1xf32>
  %%dx""" % cip, [np.reshape([4, 8, 12, 16], (1, 2, 2, 1))],
         [np.reshape([4, 8, 12, 16], (1, 2, 2, 1)) / div])
# Overlapping 1 x 2 windows, stride 1, over 3 elements: [a/2, (a+b)/2, b/2].
case("avg_pool_grad_overlap", [("dy", (1, 1, 1, 2), "f32")], [((1, 1, 1, 3), "f32")], """
  %dx = fuse.avg_pool2d_grad %dy {kernel = array<i64: 1, 2>, strides = array<i64: 1, 1>, layout = #fuse.layout<nchw>} : tensor<1x1x1x2xf32> -> tensor<1x1x1x3xf32>
  %dx""", [np.reshape([2, 6], (1, 1, 1, 2))], [np.reshape([1, 4, 3], (1, 1, 1, 3))])

# -- upsample_grad -------------------------------------------------------------------
# Nearest, scale 2: each input pixel gathers its 2 x 2 block.
case("upsample_grad_nearest", [("dy", (1, 4, 4, 1), "f32")], [((1, 2, 2, 1), "f32")], """
  %dx = fuse.upsample_grad %dy {scale = array<f64: 2.0, 2.0>} : tensor<1x4x4x1xf32> -> tensor<1x2x2x1xf32>
  %dx""", [np.arange(16).reshape(1, 4, 4, 1)],
     [np.reshape([0 + 1 + 4 + 5, 2 + 3 + 6 + 7, 8 + 9 + 12 + 13, 10 + 11 + 14 + 15], (1, 2, 2, 1))])
# Nearest from 2 to 3 by size: src = floor(dst * 2/3) = [0, 0, 1].
case("upsample_grad_nearest_size", [("dy", (1, 1, 1, 3), "f32")], [((1, 1, 1, 2), "f32")], """
  %dx = fuse.upsample_grad %dy {size = array<i64: 1, 3>, layout = #fuse.layout<nchw>} : tensor<1x1x1x3xf32> -> tensor<1x1x1x2xf32>
  %dx""", [np.reshape([1, 2, 4], (1, 1, 1, 3))], [np.reshape([3, 4], (1, 1, 1, 2))])
# Bilinear, align_corners, 2 -> 3: src = [0, 0.5, 1]; dy = [1, 2, 4] gives
# [1 + 2/2, 2/2 + 4].
case("upsample_grad_bilinear_align", [("dy", (1, 1, 3, 1), "f32")], [((1, 1, 2, 1), "f32")], """
  %dx = fuse.upsample_grad %dy {mode = #fuse.upsample_mode<bilinear>, size = array<i64: 1, 3>, align_corners} : tensor<1x1x3x1xf32> -> tensor<1x1x2x1xf32>
  %dx""", [np.reshape([1, 2, 4], (1, 1, 3, 1))], [np.reshape([2, 5], (1, 1, 2, 1))])
# Bilinear, half-pixel, 2 -> 4: src = max((d + 0.5)/2 - 0.5, 0) = [0, 0.25,
# 0.75, 1.25 (clamped to pixel 1)]: weights of x0 [1, 0.75, 0.25, 0], of x1
# [0, 0.25, 0.75, 1]. dy = [1, 2, 4, 8]: [1 + 1.5 + 1, 0.5 + 3 + 8].
case("upsample_grad_bilinear", [("dy", (1, 1, 1, 4), "f32")], [((1, 1, 1, 2), "f32")], """
  %dx = fuse.upsample_grad %dy {mode = #fuse.upsample_mode<bilinear>, scale = array<f64: 1.0, 2.0>, layout = #fuse.layout<nchw>} : tensor<1x1x1x4xf32> -> tensor<1x1x1x2xf32>
  %dx""", [np.reshape([1, 2, 4, 8], (1, 1, 1, 4))], [np.reshape([3.5, 11.5], (1, 1, 1, 2))])

# -- slice_grad ----------------------------------------------------------------------
case("slice_grad", [("dy", (1, 2), "f32")], [((2, 3), "f32")], """
  %dx = fuse.slice_grad %dy {offsets = array<i64: 1, 1>} : tensor<1x2xf32> -> tensor<2x3xf32>
  %dx""", [[[1, 2]]], [[[0, 0, 0], [0, 1, 2]]])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fusec", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("-k", default=None)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    failed = 0
    for name, mlir, inputs, expected, tol in CASES:
        if args.k and args.k not in name:
            continue
        got, err = run_graph(args.fusec, args.workdir, name, mlir, inputs)
        msg = err
        if got is not None and len(got) != len(expected):
            msg = "%d results, expected %d" % (len(got), len(expected))
        elif got is not None:
            for i, (g, e) in enumerate(zip(got, expected)):
                if g.shape != e.shape:
                    msg = "result%d shape %s, expected %s" % (i, g.shape, e.shape)
                    break
                ok = np.allclose(g, e, rtol=tol, atol=tol, equal_nan=True)
                if not ok:
                    msg = "result%d = %s, expected %s" % (i, g.ravel().tolist(), e.ravel().tolist())
                    break
        print("%s %s%s" % ("FAIL" if msg else "PASS", name, ": " + msg if msg else ""))
        failed += bool(msg)
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
