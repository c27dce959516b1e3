# REQUIRES: numpy
# RUN: %python %s --fusec %fusec --workdir %t
#
# The reference interpreter's training ops against NumPy, on random odd
# shapes, through `fusec run --device=cpu`:
#
# - batch norm in training (all five results: y, saved mean and inverse std,
#   running mean and variance, with a momentum and as a cumulative average)
#   and its backward in both forms, against an independent float64 NumPy
#   implementation written from FuseTrainingOps.td and PyTorch's documented
#   rules; that implementation's backward is itself checked against central
#   differences of its forward before anything runs;
# - adjointness of the linear ops with their gradients, which catches any
#   index bug: <conv2d(x, w), dy> = <x, conv_transpose2d(dy, w)> =
#   <w, conv2d_filter_grad(x, dy)>, and likewise avg pooling, upsampling and
#   slicing against their forward ops (the forward evaluated by the same
#   graph); max pooling routes to NumPy's first argmax of each window;
# - activation_grad against central differences of NumPy's activations, and
#   reduce_sum against np.sum.
#
# Usage: training-numpy.py --fusec PATH --workdir DIR [--seed N] [-k SUBSTR]

import argparse
import importlib.util
import math
import os
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "Inputs"))
from refrun import run_graph, tensor_type as T  # noqa: E402

# The forward references and rounding of numpy-compare.py (independent of
# lib/Reference), loaded as a module.
_spec = importlib.util.spec_from_file_location("numpy_compare",
                                               os.path.join(HERE, "numpy-compare.py"))
nc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nc)


def arr_i(v):
    return "array<i64: " + ", ".join(str(int(a)) for a in v) + ">"


def arr_f(v):
    return "array<f64: " + ", ".join(nc.fmt_f(a) for a in v) + ">"


def layout_attr(layout):
    return "#fuse.layout<%s>" % layout


def func(args, results, ops):
    """args: [(name, shape, dt)]; results: [(value, shape, dt)]."""
    sig = ", ".join("%%%s: %s" % (n, T(s, d)) for n, s, d in args)
    rtys = ", ".join(T(s, d) for _, s, d in results)
    return "func.func @main(%s) -> (%s) {\n%s\n  return %s : %s\n}\n" % (
        sig, rtys, "\n".join("  " + o for o in ops),
        ", ".join(v for v, _, _ in results), rtys)


def stored(rng, shape, dt="f32", lo=None, hi=None):
    """Random values as the graph reads them (rounded to dt), and the array
    to save (float32, or float16 for f16)."""
    v = (rng.standard_normal(shape) if lo is None else rng.uniform(lo, hi, shape))
    v32 = np.asarray(v, dtype=np.float32)
    if dt == "f16":
        save = v32.astype(np.float16)
    elif dt == "bf16":
        save = nc.f32_to_bf16_bits(v32)
    else:
        save = v32
    return save.astype(np.float64), save


CASES = []


def case(name):
    def register(fn):
        CASES.append((name, fn))
        return fn
    return register


class Failure(Exception):
    pass


def run(ctx, mlir, inputs):
    got, err = run_graph(ctx.fusec, ctx.workdir, ctx.name, mlir, inputs)
    if got is None:
        raise Failure(err)
    return got


def check_close(what, got, ref, dt):
    ok, msg, rel = nc.compare(got, nc.round_to(ref, dt))
    if not ok:
        raise Failure("%s: %s" % (what, msg))
    if not rel <= nc.TOL[dt]:
        raise Failure("%s (%s): relerr %.3e > %.0e" % (what, dt, rel, nc.TOL[dt]))
    return rel


def check_adjoint(what, a, b, c, d, tol=2e-6):
    """<a, b> = <c, d>, to float32 accuracy relative to the sums of |terms|."""
    lhs, rhs = float(np.sum(a * b)), float(np.sum(c * d))
    scale = float(np.sum(np.abs(a * b)) + np.sum(np.abs(c * d)))
    err = abs(lhs - rhs) / scale if scale > 0 else abs(lhs - rhs)
    if not err <= tol:
        raise Failure("%s: <.,.> %.9g vs %.9g (relative %.2e)" % (what, lhs, rhs, err))
    return err


# ---------------------------------------------------------------------------
# Batch norm: an independent NumPy implementation.
# ---------------------------------------------------------------------------


def np_bn_train(x, rm, rv, g, b, eps, f, axis):
    axes = tuple(i for i in range(x.ndim) if i != axis)
    s = nc.channel_shape(x.ndim, axis)
    mean = x.mean(axis=axes)
    var = x.var(axis=axes)  # biased: normalises
    invstd = 1.0 / np.sqrt(var + eps)
    y = (x - mean.reshape(s)) * invstd.reshape(s) * g.reshape(s) + b.reshape(s)
    unbiased = x.var(axis=axes, ddof=1)  # the running estimate
    return [y, mean, invstd, (1 - f) * rm + f * mean, (1 - f) * rv + f * unbiased]


def np_bn_grad(dy, x, mean, invstd, g, axis, eps=None):
    axes = tuple(i for i in range(x.ndim) if i != axis)
    s = nc.channel_shape(x.ndim, axis)
    m = x.size // x.shape[axis]
    if eps is not None:
        invstd = 1.0 / np.sqrt(invstd + eps)  # the operand is the variance
    xhat = (x - mean.reshape(s)) * invstd.reshape(s)
    db = dy.sum(axis=axes)
    dg = (dy * xhat).sum(axis=axes)
    if eps is not None:
        dx = dy * (g * invstd).reshape(s)
    else:
        dx = (g * invstd).reshape(s) * (dy - db.reshape(s) / m - xhat * dg.reshape(s) / m)
    return [dx, dg, db]


def self_check_bn():
    """np_bn_grad is the gradient of <dy, y> through np_bn_train's y (batch
    statistics) and through eval batch norm (fixed statistics)."""
    rng = np.random.default_rng(5)
    for axis, shape in ((1, (2, 3, 2, 3)), (3, (3, 2, 2, 2))):
        x = rng.standard_normal(shape)
        c = shape[axis]
        g, b, dy = rng.standard_normal(c), rng.standard_normal(c), rng.standard_normal(shape)
        rvar = rng.uniform(0.5, 2.0, c)
        rmean = rng.standard_normal(c)
        eps = 1e-3

        def loss_train(x_, g_, b_):
            return np.sum(dy * np_bn_train(x_, 0 * g, 0 * g, g_, b_, eps, 0.1, axis)[0])

        def loss_eval(x_, g_, b_):
            return np.sum(dy * nc.ref_batch_norm(x_, rmean, rvar, g_, b_, eps,
                                                 "nchw" if axis == 1 else "nhwc"))

        _, mean, invstd, _, _ = np_bn_train(x, 0 * g, 0 * g, g, b, eps, 0.1, axis)
        for loss, grads in ((loss_train, np_bn_grad(dy, x, mean, invstd, g, axis)),
                            (loss_eval, np_bn_grad(dy, x, rmean, rvar, g, axis, eps))):
            for k, (p, grad) in enumerate(zip((x, g, b), grads)):
                fd = np.zeros(p.shape)
                h = 1e-6
                for i in np.ndindex(p.shape):
                    args = [x.copy(), g.copy(), b.copy()]
                    args[k][i] += h
                    up = loss(*args)
                    args[k][i] -= 2 * h
                    fd[i] = (up - loss(*args)) / (2 * h)
                err = np.abs(fd - grad).max() / np.abs(grad).max()
                assert err < 1e-6, ("NumPy batch-norm gradient self-check", axis, k, err)


def bn_train_case(name, layout, shape, dt, pdt="f32", momentum=None, tracked=None,
                  eps=None):
    @case(name)
    def _(ctx):
        rng = ctx.rng
        axis = 1 if layout == "nchw" else len(shape) - 1
        c = shape[axis]
        x, xs = stored(rng, shape, dt)
        rm, rms = stored(rng, (c,), pdt)
        rv, rvs = stored(rng, (c,), pdt, 0.5, 2.0)
        g, gs = stored(rng, (c,), pdt)
        b, bs = stored(rng, (c,), pdt)
        args = [("x", shape, dt), ("rm", (c,), pdt), ("rv", (c,), pdt), ("g", (c,), pdt),
                ("b", (c,), pdt)]
        inputs = [xs, rms, rvs, gs, bs]
        attrs = ["layout = %s" % layout_attr(layout)]
        if eps is not None:
            attrs.append("epsilon = %s : f64" % nc.fmt_f(eps))
        if momentum is not None:
            attrs.append("momentum = %s : f64" % nc.fmt_f(momentum))
        tracked_text, tracked_type = "", ""
        if tracked is not None:
            attrs.append("cumulative")
            args.append(("t", (1,), pdt))
            inputs.append(np.array([tracked], dtype=np.float32))
            tracked_text, tracked_type = " tracked %t", ", " + T((1,), pdt)
        f = 1.0 / tracked if tracked is not None else (0.1 if momentum is None else momentum)
        ref = np_bn_train(x, rm, rv, g, b, 1e-5 if eps is None else eps, f, axis)
        ops = ["%%y:5 = fuse.batch_norm_train %%x, %%rm, %%rv, %%g, %%b%s {%s} : %s, %s%s" % (
            tracked_text, ", ".join(attrs), T(shape, dt), T((c,), pdt), tracked_type)]
        res = [("%%y#%d" % i, shape if i == 0 else (c,), dt if i == 0 else pdt)
               for i in range(5)]
        got = run(ctx, func(args, res, ops), inputs)
        names = ["result", "saved_mean", "saved_invstd", "new_running_mean", "new_running_var"]
        return max(check_close(n, o, r, d) for n, o, r, (_, _, d) in zip(names, got, ref, res))


def bn_grad_case(name, layout, shape, dt, pdt="f32", eps=None):
    @case(name)
    def _(ctx):
        rng = ctx.rng
        axis = 1 if layout == "nchw" else len(shape) - 1
        c = shape[axis]
        x, xs = stored(rng, shape, dt)
        dy, dys = stored(rng, shape, dt)
        g, gs = stored(rng, (c,), pdt)
        if eps is None:
            # The saved statistics of this batch, rounded as stored.
            _, mean, invstd, _, _ = np_bn_train(x, g, g, g, g, 1e-5, 0.1, axis)
            ms, iss = mean.astype(np.float32), invstd.astype(np.float32)
            m, i = ms.astype(np.float64), iss.astype(np.float64)
        else:
            m, ms = stored(rng, (c,), pdt)
            i, iss = stored(rng, (c,), pdt, 0.5, 2.0)  # the running variance
        args = [("dy", shape, dt), ("x", shape, dt), ("m", (c,), pdt), ("i", (c,), pdt),
                ("g", (c,), pdt)]
        attrs = ["layout = %s" % layout_attr(layout)]
        if eps is not None:
            attrs.append("epsilon = %s : f64" % nc.fmt_f(eps))
        ops = ["%%d:3 = fuse.batch_norm_grad %%dy, %%x, %%m, %%i, %%g {%s} : %s, %s" % (
            ", ".join(attrs), T(shape, dt), T((c,), pdt))]
        res = [("%d#0", shape, dt), ("%d#1", (c,), pdt), ("%d#2", (c,), pdt)]
        got = run(ctx, func(args, res, ops), [dys, xs, ms, iss, gs])
        ref = np_bn_grad(dy, x, m, i, g, axis, eps)
        names = ["input_grad", "scale_grad", "shift_grad"]
        return max(check_close(n, o, r, d) for n, o, r, (_, _, d) in zip(names, got, ref, res))


for layout, shape in (("nhwc", (3, 5, 7, 6)), ("nchw", (2, 5, 3, 7)), ("nhwc", (7, 3)),
                      ("nchw", (3, 4, 9))):
    tag = "%s_%s" % (layout, "x".join(map(str, shape)))
    bn_train_case("bn_train_momentum_default_" + tag, layout, shape, "f32")
    bn_train_case("bn_train_momentum_0.3_" + tag, layout, shape, "f32", momentum=0.3, eps=1e-3)
    bn_train_case("bn_train_cumulative_" + tag, layout, shape, "f32", tracked=3)
    bn_grad_case("bn_grad_train_" + tag, layout, shape, "f32")
    bn_grad_case("bn_grad_eval_" + tag, layout, shape, "f32", eps=1e-3)
for layout, shape in (("nhwc", (2, 5, 3, 6)), ("nchw", (3, 5, 4, 5))):
    tag = "%s_%s" % (layout, "x".join(map(str, shape)))
    # Mixed precision: f16/bf16 activations, f32 statistics (AMP).
    bn_train_case("bn_train_bf16_" + tag, layout, shape, "bf16")
    bn_train_case("bn_train_f16_cumulative_" + tag, layout, shape, "f16", tracked=1)
    bn_train_case("bn_train_f16_params_f16_" + tag, layout, shape, "f16", pdt="f16",
                  momentum=1.0)
    bn_grad_case("bn_grad_train_bf16_" + tag, layout, shape, "bf16")
    bn_grad_case("bn_grad_eval_f16_" + tag, layout, shape, "f16", eps=1e-5)


# ---------------------------------------------------------------------------
# Adjointness of the linear ops.
# ---------------------------------------------------------------------------


def conv_out(h, k, s, lo, hi, d):
    return (h + lo + hi - d * (k - 1) - 1) // s + 1


def conv_adjoint_case(name, layout, n, ci, h, w, co, kh, kw, strides=(1, 1),
                      pads=(0, 0, 0, 0), dil=(1, 1), groups=1):
    @case(name)
    def _(ctx):
        rng = ctx.rng
        ho = conv_out(h, kh, strides[0], pads[0], pads[1], dil[0])
        wo = conv_out(w, kw, strides[1], pads[2], pads[3], dil[1])
        # The output padding that maps dy back onto x's extent.
        oph = h - ((ho - 1) * strides[0] - pads[0] - pads[1] + dil[0] * (kh - 1) + 1)
        opw = w - ((wo - 1) * strides[1] - pads[2] - pads[3] + dil[1] * (kw - 1) + 1)
        nhwc = layout == "nhwc"
        xs_ = (n, h, w, ci) if nhwc else (n, ci, h, w)
        ws_ = (co, kh, kw, ci // groups) if nhwc else (co, ci // groups, kh, kw)
        ys_ = (n, ho, wo, co) if nhwc else (n, co, ho, wo)
        x, xs = stored(rng, xs_)
        wt, wts = stored(rng, ws_)
        dy, dys = stored(rng, ys_)
        common = "strides = %s, padding = %s, dilation = %s, groups = %d, layout = %s" % (
            arr_i(strides), arr_i(pads), arr_i(dil), groups, layout_attr(layout))
        ops = ["%%y = fuse.conv2d %%x, %%w {%s} : %s, %s" % (common, T(xs_), T(ws_)),
               "%%dx = fuse.conv_transpose2d %%dy, %%w {%s, output_padding = %s} : %s, %s" % (
                   common, arr_i((oph, opw)), T(ys_), T(ws_)),
               "%%dw = fuse.conv2d_filter_grad %%x, %%dy {%s, kernel = %s} : %s, %s" % (
                   common, arr_i((kh, kw)), T(xs_), T(ys_))]
        got = run(ctx, func([("x", xs_, "f32"), ("w", ws_, "f32"), ("dy", ys_, "f32")],
                            [("%y", ys_, "f32"), ("%dx", xs_, "f32"), ("%dw", ws_, "f32")],
                            ops), [xs, wts, dys])
        y, dx, dw = got
        # The forward is checked too, so the identities are about the real
        # convolution.
        check_close("conv2d", y, nc.ref_conv2d(x, wt, None, strides, pads, dil, groups,
                                               layout), "f32")
        return max(check_adjoint("conv_transpose2d", y, dy, x, dx),
                   check_adjoint("conv2d_filter_grad", y, dy, wt, dw))


conv_adjoint_case("adj_conv_nhwc_basic", "nhwc", 2, 3, 7, 9, 5, 3, 3, pads=(1, 1, 1, 1))
conv_adjoint_case("adj_conv_nchw_stride2_asym", "nchw", 2, 4, 9, 10, 3, 3, 2, strides=(2, 3),
                  pads=(0, 2, 1, 0))
conv_adjoint_case("adj_conv_nhwc_dilated_stride", "nhwc", 1, 3, 13, 11, 4, 3, 3, strides=(2, 1),
                  pads=(2, 0, 1, 1), dil=(2, 3))
conv_adjoint_case("adj_conv_nchw_groups3", "nchw", 3, 6, 8, 7, 9, 3, 3, strides=(1, 2),
                  pads=(1, 1, 1, 1), groups=3)
conv_adjoint_case("adj_conv_nhwc_depthwise_mult2", "nhwc", 2, 5, 9, 8, 10, 5, 3, strides=(2, 2),
                  pads=(2, 1, 1, 1), dil=(1, 2), groups=5)
conv_adjoint_case("adj_conv_nchw_1x1_stride3", "nchw", 2, 7, 11, 10, 5, 1, 1, strides=(3, 3))
conv_adjoint_case("adj_conv_nhwc_stride_gt_kernel", "nhwc", 1, 3, 11, 12, 2, 2, 2,
                  strides=(3, 4), pads=(1, 0, 0, 1))


def pool_adjoint_case(name, kind, layout, shape, kernel, strides=None, pads=(0, 0, 0, 0),
                      count_include_pad=True):
    @case(name)
    def _(ctx):
        rng = ctx.rng
        x, xs = stored(rng, shape)
        y_ref = nc.ref_pool(x, kind, kernel, strides, pads, layout, count_include_pad)
        dy, dys = stored(rng, y_ref.shape)
        attrs = "kernel = %s, padding = %s, layout = %s" % (arr_i(kernel), arr_i(pads),
                                                            layout_attr(layout))
        if strides is not None:
            attrs += ", strides = %s" % arr_i(strides)
        ys_ = y_ref.shape
        if kind == "avg":
            attrs += ", count_include_pad = %s" % str(count_include_pad).lower()
            grad = "%%dx = fuse.avg_pool2d_grad %%dy {%s} : %s -> %s" % (attrs, T(ys_), T(shape))
        else:
            grad = "%%dx = fuse.max_pool2d_grad %%x, %%dy {%s} : %s, %s" % (attrs, T(shape),
                                                                          T(ys_))
        ops = ["%%y = fuse.%s_pool2d %%x {%s} : %s" % (kind, attrs, T(shape)), grad]
        y, dx = run(ctx, func([("x", shape, "f32"), ("dy", ys_, "f32")],
                              [("%y", ys_, "f32"), ("%dx", shape, "f32")], ops), [xs, dys])
        check_close("%s_pool2d" % kind, y, y_ref, "f32")
        if kind == "avg":
            return check_adjoint("avg_pool2d_grad", y, dy, x, dx)
        # Max pooling is linear in x once the winners are fixed: dy goes to
        # the first argmax of each window (random data: no ties).
        want = np_max_pool_grad(x, dy, kernel, strides or kernel, pads, layout)
        err = check_close("max_pool2d_grad", dx, want, "f32")
        # And it is homogeneous: <dx, x> = <dy, max_pool(x)>.
        return max(err, check_adjoint("max_pool2d_grad", y, dy, x, dx))


def np_max_pool_grad(x, dy, kernel, strides, pads, layout):
    x, dy = nc.to_nchw(x, layout), nc.to_nchw(dy, layout)
    t, _, l, _ = pads
    dx = np.zeros(x.shape)
    h, w = x.shape[2], x.shape[3]
    for oy in range(dy.shape[2]):
        for ox in range(dy.shape[3]):
            y0, x0 = oy * strides[0] - t, ox * strides[1] - l
            ys = slice(max(y0, 0), min(y0 + kernel[0], h))
            xs = slice(max(x0, 0), min(x0 + kernel[1], w))
            win = x[:, :, ys, xs].reshape(x.shape[0], x.shape[1], -1)
            arg = win.argmax(axis=2)  # the first maximum in row-major order
            wy, wx = np.unravel_index(arg, (ys.stop - ys.start, xs.stop - xs.start))
            for n in range(x.shape[0]):
                for c in range(x.shape[1]):
                    dx[n, c, ys.start + wy[n, c], xs.start + wx[n, c]] += dy[n, c, oy, ox]
    return nc.from_nchw(dx, layout)


pool_adjoint_case("adj_max_pool_nhwc_3x3_s2_p1", "max", "nhwc", (2, 9, 11, 3), (3, 3), (2, 2),
                  (1, 1, 1, 1))
pool_adjoint_case("adj_max_pool_nchw_overlap_asym", "max", "nchw", (2, 3, 10, 9), (3, 2), (1, 2),
                  (1, 0, 0, 1))
pool_adjoint_case("adj_max_pool_nhwc_default_strides", "max", "nhwc", (1, 8, 9, 5), (2, 3))
pool_adjoint_case("adj_avg_pool_nhwc_pad_include", "avg", "nhwc", (2, 9, 11, 3), (3, 3), (2, 2),
                  (1, 1, 1, 1))
pool_adjoint_case("adj_avg_pool_nchw_pad_exclude", "avg", "nchw", (2, 3, 10, 9), (3, 2), (1, 2),
                  (1, 0, 0, 1), count_include_pad=False)
pool_adjoint_case("adj_avg_pool_nhwc_asym_exclude", "avg", "nhwc", (1, 7, 8, 4), (2, 3), (2, 1),
                  (1, 0, 1, 1), count_include_pad=False)
pool_adjoint_case("adj_avg_pool_nchw_global", "avg", "nchw", (2, 5, 7, 6), (7, 6))


def upsample_adjoint_case(name, layout, shape, mode, size=None, scale=None,
                          align_corners=False):
    @case(name)
    def _(ctx):
        rng = ctx.rng
        x, xs = stored(rng, shape)
        y_ref = nc.ref_upsample(x, mode, size, scale, align_corners, layout)
        dy, dys = stored(rng, y_ref.shape)
        attrs = ["mode = #fuse.upsample_mode<%s>" % mode, "layout = %s" % layout_attr(layout)]
        if size is not None:
            attrs.append("size = %s" % arr_i(size))
        if scale is not None:
            attrs.append("scale = %s" % arr_f(scale))
        if align_corners:
            attrs.append("align_corners")
        ys_ = y_ref.shape
        ops = ["%%y = fuse.upsample %%x {%s} : %s" % (", ".join(attrs), T(shape)),
               "%%dx = fuse.upsample_grad %%dy {%s} : %s -> %s" % (", ".join(attrs), T(ys_),
                                                                   T(shape))]
        y, dx = run(ctx, func([("x", shape, "f32"), ("dy", ys_, "f32")],
                              [("%y", ys_, "f32"), ("%dx", shape, "f32")], ops), [xs, dys])
        check_close("upsample", y, y_ref, "f32")
        return check_adjoint("upsample_grad", y, dy, x, dx)


upsample_adjoint_case("adj_upsample_nearest_scale2_nhwc", "nhwc", (2, 5, 7, 3), "nearest",
                      scale=(2.0, 2.0))
upsample_adjoint_case("adj_upsample_nearest_size_nchw", "nchw", (2, 3, 5, 7), "nearest",
                      size=(11, 9))
upsample_adjoint_case("adj_upsample_nearest_down_nhwc", "nhwc", (1, 9, 10, 2), "nearest",
                      size=(4, 7))
upsample_adjoint_case("adj_upsample_nearest_scale_frac_nchw", "nchw", (1, 2, 6, 7), "nearest",
                      scale=(1.5, 2.5))
upsample_adjoint_case("adj_upsample_bilinear_scale2_nhwc", "nhwc", (2, 5, 7, 3), "bilinear",
                      scale=(2.0, 2.0))
upsample_adjoint_case("adj_upsample_bilinear_size_nchw", "nchw", (2, 3, 5, 7), "bilinear",
                      size=(11, 9))
upsample_adjoint_case("adj_upsample_bilinear_align_nhwc", "nhwc", (1, 5, 6, 2), "bilinear",
                      size=(13, 8), align_corners=True)
upsample_adjoint_case("adj_upsample_bilinear_align_scale_nchw", "nchw", (1, 2, 4, 5),
                      "bilinear", scale=(3.0, 1.5), align_corners=True)
upsample_adjoint_case("adj_upsample_bilinear_down_nhwc", "nhwc", (1, 11, 9, 2), "bilinear",
                      size=(5, 4))


def slice_adjoint_case(name, shape, offsets, sizes):
    @case(name)
    def _(ctx):
        rng = ctx.rng
        x, xs = stored(rng, shape)
        dy, dys = stored(rng, sizes)
        ops = ["%%y = fuse.slice %%x {offsets = %s, sizes = %s} : %s" % (
                   arr_i(offsets), arr_i(sizes), T(shape)),
               "%%dx = fuse.slice_grad %%dy {offsets = %s} : %s -> %s" % (
                   arr_i(offsets), T(sizes), T(shape))]
        y, dx = run(ctx, func([("x", shape, "f32"), ("dy", sizes, "f32")],
                              [("%y", sizes, "f32"), ("%dx", shape, "f32")], ops), [xs, dys])
        want = np.zeros(shape)
        want[tuple(slice(o, o + s) for o, s in zip(offsets, sizes))] = dy
        err = check_close("slice_grad", dx, want, "f32")
        return max(err, check_adjoint("slice_grad", y, dy, x, dx))


slice_adjoint_case("adj_slice_4d", (2, 7, 5, 9), (1, 2, 0, 3), (1, 4, 5, 5))
slice_adjoint_case("adj_slice_3d_tail", (3, 5, 11), (0, 0, 6), (3, 5, 5))


# ---------------------------------------------------------------------------
# activation_grad against central differences; reduce_sum against np.sum.
# ---------------------------------------------------------------------------

ACTIVATIONS = [
    # kind, reads the result, attrs, forward op text, kinks to stay away from
    ("relu", True, "", "fuse.relu", [0.0]),
    ("relu6", True, "", "fuse.relu6", [0.0, 6.0]),
    ("clamp", True, ", min = -0.5 : f64, max = 0.7 : f64",
     "fuse.clamp {min = -0.5 : f64, max = 0.7 : f64}", [-0.5, 0.7]),
    ("sigmoid", True, "", "fuse.sigmoid", []),
    ("tanh", True, "", "fuse.tanh", []),
    ("leaky_relu", False, ", alpha = 0.2 : f64", "fuse.leaky_relu {alpha = 0.2 : f64}", [0.0]),
    ("gelu", False, "", "fuse.gelu", []),
    ("gelu_tanh", False, "", "fuse.gelu {approximate = #fuse.gelu_approx<tanh>}", []),
    ("silu", False, "", "fuse.silu", []),
    ("hardswish", False, "", "fuse.hardswish", [-3.0, 3.0]),
]


def activation_case(kind, reads_result, attrs, forward, kinks):
    @case("activation_grad_" + kind)
    def _(ctx):
        rng = ctx.rng
        shape = (3, 7, 5)
        v = rng.uniform(-7.0, 7.0, shape)
        for k in kinks:  # finite differences need smooth points
            v = np.where(np.abs(v - k) < 0.05, v + 0.1, v)
        xs = v.astype(np.float32)
        x = xs.astype(np.float64)
        dy, dys = stored(rng, shape)
        fwd_text = forward.split(" ", 1)
        op = fwd_text[0]
        fattrs = (" " + fwd_text[1]) if len(fwd_text) > 1 else ""
        ops = ["%%y = %s %%x%s : %s" % (op, fattrs, T(shape)),
               "%%dx = fuse.activation_grad %%dy, %s {activation = #fuse.activation<%s>%s} : %s"
               % ("%y" if reads_result else "%x", kind, attrs, T(shape))]
        (dx,) = run(ctx, func([("x", shape, "f32"), ("dy", shape, "f32")],
                              [("%dx", shape, "f32")], ops), [xs, dys])
        a, b = {"clamp": (-0.5, 0.7), "leaky_relu": (0.2, None)}.get(kind, (None, None))
        h = 1e-5
        fd = (nc.ref_unary(kind, x + h, a, b) - nc.ref_unary(kind, x - h, a, b)) / (2 * h)
        return check_close("activation_grad", dx, dy * fd, "f32")


for spec in ACTIVATIONS:
    activation_case(*spec)


@case("neg_and_reduce_sum")
def _(ctx):
    rng = ctx.rng
    shape = (3, 4, 5, 6)
    x, xs = stored(rng, shape)
    ops = ["%n = fuse.neg %x : " + T(shape),
           "%a = fuse.reduce_sum %n {axes = array<i64: 0, 2>} : " + T(shape),
           "%b = fuse.reduce_sum %x {axes = array<i64: -1, 1>, keep_dims} : " + T(shape),
           "%c = fuse.reduce_sum %x {axes = array<i64: 3, 2, 1, 0>} : " + T(shape)]
    res = [("%n", shape, "f32"), ("%a", (4, 6), "f32"), ("%b", (3, 1, 5, 1), "f32"),
           ("%c", (), "f32")]
    got = run(ctx, func([("x", shape, "f32")], res, ops), [xs])
    refs = [-x, -x.sum(axis=(0, 2)), x.sum(axis=(3, 1), keepdims=True), x.sum()]
    return max(check_close(n, o, r, "f32") for n, o, r in
               zip(("neg", "reduce_sum", "reduce_sum keep_dims", "reduce_sum all"), got, refs))


# ---------------------------------------------------------------------------
# Running.
# ---------------------------------------------------------------------------


class Ctx:
    pass


def run_case(args, name, fn):
    ctx = Ctx()
    ctx.fusec, ctx.workdir, ctx.name = args.fusec, args.workdir, name
    ctx.rng = np.random.default_rng((args.seed * 1000003 + zlib.crc32(name.encode())) & 0xFFFFFFFF)
    try:
        err = fn(ctx)
        return True, "PASS %s err=%.2e" % (name, err)
    except Failure as e:
        return False, "FAIL %s: %s" % (name, e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fusec", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-k", default=None)
    ap.add_argument("-j", type=int, default=2)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    self_check_bn()
    names = [n for n, _ in CASES]
    assert len(set(names)) == len(names), "duplicate case names"
    cases = [(n, f) for n, f in CASES if not args.k or args.k in n]
    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
        for ok, line in pool.map(lambda c: run_case(args, *c), cases):
            print(line)
            failed += not ok
    print("%d cases, %d failed" % (len(cases), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
