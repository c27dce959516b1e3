# REQUIRES: numpy
# RUN: %python %s --fusec %fusec --workdir %t
#
# An independent check of the float64 reference interpreter (`fusec run
# --device=cpu`) against NumPy. Every fuse op is re-implemented here in
# float64 NumPy straight from the semantics written in FuseOps.td and
# Kernels.h (and, where those copy PyTorch, from PyTorch's documented
# formulas), without looking at lib/Reference/Kernels.cpp.
#
# For every case the script writes a one-function graph and its inputs (.npy),
# runs fusec, and compares each result with ||out - ref|| / ||ref||. Like the
# interpreter, the references compute in float64 and round only at casts and at
# the graph results. A few bad-input checks follow (malformed .npy, wrong
# shape, ...): fusec must fail, name the file, and leave no result behind.
#
# Usage: numpy-compare.py --fusec PATH --workdir DIR [--seed N] [-k SUBSTRING]

import argparse
import math
import os
import shutil
import subprocess
import sys
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

TOL = {"f32": 1e-6, "f16": 2e-3, "bf16": 1e-2}
NPY_OUT_DTYPE = {"f32": np.float32, "f16": np.float16, "bf16": np.float32}

# ---------------------------------------------------------------------------
# Rounding to the storage dtypes.
# ---------------------------------------------------------------------------


def _round_binary(x, mbits, emin, maxval):
    """Rounds float64 values to a binary format with `mbits` stored mantissa
    bits and minimum normal exponent `emin` (subnormals included), round to
    nearest, ties to even, overflow to +-inf, NaN kept. Done directly from
    float64, so there is no double rounding."""
    x = np.array(x, dtype=np.float64)
    out = x.copy()
    fin = np.isfinite(x) & (x != 0)
    ax = np.abs(x[fin])
    _, e = np.frexp(ax)  # ax = m * 2**e, m in [0.5, 1)
    e = np.maximum(e - 1, emin).astype(np.float64)
    q = np.ldexp(1.0, (e - mbits).astype(np.int64))  # spacing at this exponent
    r = np.round(ax / q) * q  # ax / q is exact; np.round is half-to-even
    r = np.where(r > maxval, np.inf, r)
    out[fin] = np.sign(x[fin]) * r
    return out


def round_to(x, dt):
    x = np.asarray(x, dtype=np.float64)
    if dt == "f32":
        with np.errstate(over="ignore"):
            return x.astype(np.float32).astype(np.float64)
    if dt == "f16":
        return _round_binary(x, 10, -14, 65504.0)
    if dt == "bf16":
        return _round_binary(x, 7, -126, (2.0 - 2.0**-7) * 2.0**127)
    raise ValueError(dt)


def f32_to_bf16_bits(x):
    """float32 -> bf16 (as float32) by bit manipulation, round to nearest even."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    rounded = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    rounded = np.where(np.isnan(x), b | 0x00400000, rounded)  # keep NaN quiet
    return rounded.astype(np.uint32).view(np.float32)


# ---------------------------------------------------------------------------
# NumPy references (float64).
# ---------------------------------------------------------------------------


def pads4(p):
    if p is None:
        return (0, 0, 0, 0)
    return tuple(p) if len(p) == 4 else (p[0], p[0], p[1], p[1])


def to_nchw(x, layout):
    return x.transpose(0, 3, 1, 2) if layout == "nhwc" else x


def from_nchw(x, layout):
    return x.transpose(0, 2, 3, 1) if layout == "nhwc" else x


def ref_conv2d(x, w, b, strides, padding, dilation, groups, layout):
    sh, sw = strides
    dh, dw = dilation
    t, bo, l, r = pads4(padding)
    x = to_nchw(x, layout)
    if layout == "nhwc":  # OHWI -> OIHW
        w = w.transpose(0, 3, 1, 2)
    n, ci, h, wd = x.shape
    co, cig, kh, kw = w.shape
    g = groups
    assert ci == cig * g and co % g == 0
    ho = (h + t + bo - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + l + r - dw * (kw - 1) - 1) // sw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (t, bo), (l, r)))
    xg = xp.reshape(n, g, cig, xp.shape[2], xp.shape[3])
    wg = w.reshape(g, co // g, cig, kh, kw)
    out = np.zeros((n, g, co // g, ho, wo))
    for i in range(kh):
        for j in range(kw):
            patch = xg[:, :, :, i * dh: i * dh + sh * (ho - 1) + 1: sh,
                       j * dw: j * dw + sw * (wo - 1) + 1: sw]
            out += np.einsum("ngchw,goc->ngohw", patch, wg[:, :, :, i, j])
    out = out.reshape(n, co, ho, wo)
    if b is not None:
        out = out + b[None, :, None, None]
    return from_nchw(out, layout)


def channel_shape(rank, axis):
    s = [1] * rank
    s[axis] = -1
    return s


def ref_batch_norm(x, mean, var, scale, shift, eps, layout):
    axis = x.ndim - 1 if layout == "nhwc" else 1
    s = channel_shape(x.ndim, axis)
    return ((x - mean.reshape(s)) / np.sqrt(var.reshape(s) + eps)
            * scale.reshape(s) + shift.reshape(s))


def ref_bias_add(x, b, axis):
    axis = axis % x.ndim
    return x + b.reshape(channel_shape(x.ndim, axis))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def ref_unary(kind, x, a=None, b=None):
    with np.errstate(over="ignore"):
        if kind == "relu":
            return np.maximum(x, 0.0)
        if kind == "relu6":
            return np.minimum(np.maximum(x, 0.0), 6.0)
        if kind == "clamp":
            return np.minimum(np.maximum(x, a), b)
        if kind == "leaky_relu":
            return np.where(x >= 0, x, a * x)
        if kind == "gelu":
            return x * 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))
        if kind == "gelu_tanh":
            return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi)
                                            * (x + 0.044715 * x**3)))
        if kind == "silu":
            return x / (1.0 + np.exp(-x))
        if kind == "sigmoid":
            return 1.0 / (1.0 + np.exp(-x))
        if kind == "tanh":
            return np.tanh(x)
        if kind == "hardswish":
            return x * np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0
    raise ValueError(kind)


def ref_matmul(a, b, ta, tb):
    if ta:
        a = np.swapaxes(a, -1, -2)
    if tb:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


def ref_linear(x, w, b):
    y = np.tensordot(x, w, axes=([-1], [1]))
    return y if b is None else y + b


def ref_layer_norm(x, scale, shift, r, eps):
    axes = tuple(range(x.ndim - r, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if scale is not None:
        y = y * scale
    if shift is not None:
        y = y + shift
    return y


def ref_rms_norm(x, scale, r, eps):
    axes = tuple(range(x.ndim - r, x.ndim))
    y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return y if scale is None else y * scale


def ref_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=axis, keepdims=True)


def ref_attention(q, k, v, mask, scale, causal):
    b, hq, nq, d = q.shape
    hkv, nk = k.shape[1], k.shape[2]
    rep = hq // hkv
    k = np.repeat(k, rep, axis=1)  # query head h -> kv head h // rep
    v = np.repeat(v, rep, axis=1)
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    s = scale * np.matmul(q, np.swapaxes(k, -1, -2))
    if mask is not None:
        s = s + mask
    if causal:  # top-left aligned: query i sees keys j <= i
        i = np.arange(nq)[:, None]
        j = np.arange(nk)[None, :]
        s = np.where(j > i, -np.inf, s)
    s = np.broadcast_to(s, (b, hq, nq, nk))
    m = s.max(axis=-1, keepdims=True)
    dead = np.isneginf(m)
    with np.errstate(invalid="ignore"):
        p = np.exp(s - np.where(dead, 0.0, m))
    p = np.where(dead, 0.0, p)
    den = p.sum(axis=-1, keepdims=True)
    p = p / np.where(dead, 1.0, den)
    return np.matmul(p, v)


def ref_rope(x, cos, sin, interleaved):
    y = np.empty_like(x)
    if interleaved:
        x0, x1 = x[..., 0::2], x[..., 1::2]
        y[..., 0::2] = x0 * cos - x1 * sin
        y[..., 1::2] = x1 * cos + x0 * sin
    else:
        hd = x.shape[-1] // 2
        x0, x1 = x[..., :hd], x[..., hd:]
        y[..., :hd] = x0 * cos - x1 * sin
        y[..., hd:] = x1 * cos + x0 * sin
    return y


def ref_pool(x, kind, kernel, strides, padding, layout, count_include_pad=True):
    kh, kw = kernel
    sh, sw = strides if strides is not None else kernel
    t, bo, l, r = pads4(padding)
    x = to_nchw(x, layout)
    n, c, h, w = x.shape
    ho = (h + t + bo - kh) // sh + 1
    wo = (w + l + r - kw) // sw + 1
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (t, bo), (l, r)), constant_values=fill)
    acc = np.full((n, c, ho, wo), fill)
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i: i + sh * (ho - 1) + 1: sh,
                     j: j + sw * (wo - 1) + 1: sw]
            acc = np.maximum(acc, win) if kind == "max" else acc + win
    if kind == "avg":
        # PyTorch's avg_pool2d divisor, per output position.
        def extent(o, s, k, pad_lo, size, pad_hi):
            start = o * s - pad_lo
            end = np.minimum(start + k, size + pad_hi)
            full = end - start
            real = np.minimum(end, size) - np.maximum(start, 0)
            return full, real
        fh, rh = extent(np.arange(ho), sh, kh, t, h, bo)
        fw, rw = extent(np.arange(wo), sw, kw, l, w, r)
        div = np.outer(fh, fw) if count_include_pad else np.outer(rh, rw)
        acc = acc / div
    return from_nchw(acc, layout)


def ref_global_avg_pool(x, layout):
    axes = (1, 2) if layout == "nhwc" else (2, 3)
    return x.mean(axis=axes, keepdims=True)


def nearest_index(n_out, n_in, step):
    # PyTorch: floor(float(dst) * float(scale)) in float32, clamped.
    dst = np.arange(n_out).astype(np.float32)
    src = np.floor(dst * np.float32(step)).astype(np.int64)
    return np.minimum(src, n_in - 1)


def bilinear_weights(n_out, n_in, step, align_corners):
    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        src = np.maximum((dst + 0.5) * step - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    lam = src - i0
    return i0, i1, lam


def ref_upsample(x, mode, size, scale, align_corners, layout):
    x = to_nchw(x, layout)
    h, w = x.shape[2], x.shape[3]
    if size is not None:
        ho, wo = size
        if mode == "nearest":
            # compute_scales_value: static_cast<float>(in) / out
            step = (np.float32(h) / np.float32(ho), np.float32(w) / np.float32(wo))
        else:
            step = (h / ho, w / wo)
    else:
        ho, wo = int(math.floor(h * scale[0])), int(math.floor(w * scale[1]))
        step = (1.0 / scale[0], 1.0 / scale[1])
    if mode == "nearest":
        ih = nearest_index(ho, h, step[0])
        iw = nearest_index(wo, w, step[1])
        y = x[:, :, ih][:, :, :, iw]
    else:
        h0, h1, lh = bilinear_weights(ho, h, step[0], align_corners)
        w0, w1, lw = bilinear_weights(wo, w, step[1], align_corners)
        lh = lh[:, None]
        lw = lw[None, :]
        top = x[:, :, h0][:, :, :, w0] * (1 - lw) + x[:, :, h0][:, :, :, w1] * lw
        bot = x[:, :, h1][:, :, :, w0] * (1 - lw) + x[:, :, h1][:, :, :, w1] * lw
        y = top * (1 - lh) + bot * lh
    return from_nchw(y, layout)


def normal_cdf_ok():
    # Sanity check of the erf-based gelu reference against known values.
    assert abs(ref_unary("gelu", np.array([1.0]))[0] - 0.8413447460685429) < 1e-15


# ---------------------------------------------------------------------------
# Graph builder: emits MLIR text and evaluates the NumPy reference alongside.
# ---------------------------------------------------------------------------


def fmt_f(v):
    s = repr(float(v))
    if "inf" in s or "nan" in s:
        raise ValueError(v)
    if "e" in s and "." not in s.split("e")[0]:
        s = s.replace("e", ".0e")
    elif "." not in s and "e" not in s:
        s += ".0"
    return s


def arr_i(v):
    return "array<i64: " + ", ".join(str(int(a)) for a in v) + ">"


def arr_f(v):
    return "array<f64: " + ", ".join(fmt_f(a) for a in v) + ">"


def tensor_type(shape, dt):
    if len(shape) == 0:
        return "tensor<%s>" % dt
    return "tensor<%sx%s>" % ("x".join(str(s) for s in shape), dt)


class Val:
    def __init__(self, name, value, dt):
        self.name = name
        self.v = np.asarray(value, dtype=np.float64)
        self.dt = dt

    @property
    def ty(self):
        return tensor_type(self.v.shape, self.dt)

    def __str__(self):
        return self.name

    __format__ = lambda self, spec: self.name  # noqa: E731


def attr_dict(items):
    items = [(k, v) for k, v in items if v is not None]
    if not items:
        return ""
    return " {" + ", ".join(k if v is True else "%s = %s" % (k, v)
                            for k, v in items) + "}"


class Graph:
    def __init__(self, rng, tol=None):
        self.rng = rng
        self.args = []  # (Val, array to save)
        self.lines = []
        self.results = []
        self.count = 0
        self.tol = tol  # overrides the per-dtype threshold

    # -- arguments ---------------------------------------------------------
    def arg(self, shape, dt="f32", dist="normal", scale=1.0, offset=0.0,
            lo=0.5, hi=2.0, value=None, save=None):
        """A graph argument. Random values are drawn in float32, rounded to
        `dt` and saved as float32 (f32, bf16) or float16 (f16). `save`
        overrides the saved array (for the input-rounding checks); the
        reference then uses round_to(save, dt)."""
        shape = tuple(shape)
        if value is None:
            rng = self.rng
            if dist == "normal":
                value = rng.standard_normal(shape) * scale + offset
            elif dist == "uniform":
                value = rng.uniform(lo, hi, shape)
            elif dist == "away":  # |v| in [lo, hi], random sign
                value = rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)
            else:
                raise ValueError(dist)
        value = np.asarray(value, dtype=np.float64).reshape(shape)
        if save is None:
            v32 = value.astype(np.float32)
            if dt == "f32":
                save = v32
            elif dt == "f16":
                save = v32.astype(np.float16)
            else:
                save = f32_to_bf16_bits(v32)
            ref = save.astype(np.float64)
        else:
            ref = round_to(save.astype(np.float64), dt)
        val = Val("%%arg%d" % len(self.args), ref, dt)
        self.args.append((val, save))
        return val

    # -- generic op ---------------------------------------------------------
    def op(self, text, value, dt):
        name = "%%v%d" % self.count
        self.count += 1
        self.lines.append("  %s = %s" % (name, text))
        return Val(name, value, dt)

    def ret(self, *vals):
        self.results.extend(vals)

    def mlir(self):
        args = ", ".join("%s: %s" % (v.name, v.ty) for v, _ in self.args)
        rtys = ", ".join(v.ty for v in self.results)
        if len(self.results) != 1:
            rtys_sig = "(" + rtys + ")"
        else:
            rtys_sig = rtys
        body = "\n".join(self.lines)
        return ("func.func @main(%s) -> %s {\n%s\n  return %s : %s\n}\n"
                % (args, rtys_sig, body,
                   ", ".join(v.name for v in self.results), rtys))

    # -- fuse ops -----------------------------------------------------------
    def conv2d(self, x, w, b=None, strides=None, padding=None, dilation=None,
               groups=None, layout=None):
        val = ref_conv2d(x.v, w.v, None if b is None else b.v,
                         strides or (1, 1), padding, dilation or (1, 1),
                         groups or 1, layout or "nhwc")
        attrs = attr_dict([
            ("strides", strides and arr_i(strides)),
            ("padding", padding and arr_i(padding)),
            ("dilation", dilation and arr_i(dilation)),
            ("groups", groups and str(groups)),
            ("layout", layout and "#fuse.layout<%s>" % layout)])
        ops = "%s, %s" % (x, w) + ("" if b is None else ", %s" % b)
        tys = "%s, %s" % (x.ty, w.ty) + ("" if b is None else ", %s" % b.ty)
        return self.op("fuse.conv2d %s%s : %s" % (ops, attrs, tys), val, x.dt)

    def batch_norm(self, x, m, var, g, b, epsilon=None, layout=None):
        val = ref_batch_norm(x.v, m.v, var.v, g.v, b.v,
                             1e-5 if epsilon is None else epsilon,
                             layout or "nhwc")
        attrs = attr_dict([("epsilon", epsilon is not None and fmt_f(epsilon) or None),
                           ("layout", layout and "#fuse.layout<%s>" % layout)])
        return self.op("fuse.batch_norm %s, %s, %s, %s, %s%s : %s, %s"
                       % (x, m, var, g, b, attrs, x.ty, m.ty), val, x.dt)

    def binary(self, kind, a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            val = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                   "div": np.divide}[kind](a.v, b.v)
        return self.op("fuse.%s %s, %s : %s, %s" % (kind, a, b, a.ty, b.ty),
                       val, a.dt)

    def bias_add(self, x, b, axis=None):
        val = ref_bias_add(x.v, b.v, -1 if axis is None else axis)
        attrs = attr_dict([("axis", None if axis is None else str(axis))])
        return self.op("fuse.bias_add %s, %s%s : %s, %s"
                       % (x, b, attrs, x.ty, b.ty), val, x.dt)

    def unary(self, kind, x, **kw):
        if kind == "clamp":
            val = ref_unary(kind, x.v, kw["min"], kw["max"])
            attrs = attr_dict([("min", fmt_f(kw["min"])),
                               ("max", fmt_f(kw["max"]))])
        elif kind == "leaky_relu":
            alpha = kw.get("alpha")
            val = ref_unary(kind, x.v, 0.01 if alpha is None else alpha)
            attrs = attr_dict([("alpha", None if alpha is None else fmt_f(alpha))])
        elif kind == "gelu":
            approx = kw.get("approximate")
            val = ref_unary("gelu_tanh" if approx == "tanh" else "gelu", x.v)
            attrs = attr_dict([("approximate", approx and
                                "#fuse.gelu_approx<%s>" % approx)])
        else:
            val = ref_unary(kind, x.v)
            attrs = ""
        return self.op("fuse.%s %s%s : %s" % (kind, x, attrs, x.ty), val, x.dt)

    def matmul(self, a, b, ta=False, tb=False):
        val = ref_matmul(a.v, b.v, ta, tb)
        attrs = attr_dict([("transpose_lhs", ta or None),
                           ("transpose_rhs", tb or None)])
        return self.op("fuse.matmul %s, %s%s : %s, %s"
                       % (a, b, attrs, a.ty, b.ty), val, a.dt)

    def linear(self, x, w, b=None):
        val = ref_linear(x.v, w.v, None if b is None else b.v)
        ops = "%s, %s" % (x, w) + ("" if b is None else ", %s" % b)
        tys = "%s, %s" % (x.ty, w.ty) + ("" if b is None else ", %s" % b.ty)
        return self.op("fuse.linear %s : %s" % (ops, tys), val, x.dt)

    def layer_norm(self, x, scale=None, shift=None, normalized_rank=None,
                   epsilon=None):
        val = ref_layer_norm(x.v, None if scale is None else scale.v,
                             None if shift is None else shift.v,
                             normalized_rank or 1,
                             1e-5 if epsilon is None else epsilon)
        text = "fuse.layer_norm %s" % x
        if scale is not None:
            text += " scale(%s : %s)" % (scale, scale.ty)
        if shift is not None:
            text += " shift(%s : %s)" % (shift, shift.ty)
        text += attr_dict([
            ("normalized_rank", normalized_rank and str(normalized_rank)),
            ("epsilon", None if epsilon is None else fmt_f(epsilon))])
        return self.op(text + " : %s" % x.ty, val, x.dt)

    def rms_norm(self, x, scale=None, normalized_rank=None, epsilon=None):
        val = ref_rms_norm(x.v, None if scale is None else scale.v,
                           normalized_rank or 1,
                           1e-6 if epsilon is None else epsilon)
        text = "fuse.rms_norm %s" % x
        if scale is not None:
            text += " scale(%s : %s)" % (scale, scale.ty)
        text += attr_dict([
            ("normalized_rank", normalized_rank and str(normalized_rank)),
            ("epsilon", None if epsilon is None else fmt_f(epsilon))])
        return self.op(text + " : %s" % x.ty, val, x.dt)

    def softmax(self, x, axis=None):
        val = ref_softmax(x.v, -1 if axis is None else axis)
        attrs = attr_dict([("axis", None if axis is None else str(axis))])
        return self.op("fuse.softmax %s%s : %s" % (x, attrs, x.ty), val, x.dt)

    def attention(self, q, k, v, mask=None, scale=None, causal=False):
        val = ref_attention(q.v, k.v, v.v, None if mask is None else mask.v,
                            scale, causal)
        attrs = attr_dict([("scale", None if scale is None else fmt_f(scale)),
                           ("causal", causal or None)])
        ops = "%s, %s, %s" % (q, k, v) + ("" if mask is None else ", %s" % mask)
        tys = "%s, %s, %s" % (q.ty, k.ty, v.ty) + (
            "" if mask is None else ", %s" % mask.ty)
        return self.op("fuse.attention %s%s : %s" % (ops, attrs, tys), val, q.dt)

    def rope(self, x, cos, sin, interleaved=False):
        val = ref_rope(x.v, cos.v, sin.v, interleaved)
        attrs = attr_dict([("interleaved", interleaved or None)])
        return self.op("fuse.rope %s, %s, %s%s : %s, %s"
                       % (x, cos, sin, attrs, x.ty, cos.ty), val, x.dt)

    def pool(self, kind, x, kernel, strides=None, padding=None, layout=None,
             count_include_pad=None):
        val = ref_pool(x.v, kind, kernel, strides, padding, layout or "nhwc",
                       True if count_include_pad is None else count_include_pad)
        attrs = attr_dict([
            ("kernel", arr_i(kernel)),
            ("strides", strides and arr_i(strides)),
            ("padding", padding and arr_i(padding)),
            ("layout", layout and "#fuse.layout<%s>" % layout),
            ("count_include_pad", None if count_include_pad is None
             else str(count_include_pad).lower())])
        return self.op("fuse.%s_pool2d %s%s : %s" % (kind, x, attrs, x.ty),
                       val, x.dt)

    def global_avg_pool(self, x, layout=None):
        val = ref_global_avg_pool(x.v, layout or "nhwc")
        attrs = attr_dict([("layout", layout and "#fuse.layout<%s>" % layout)])
        return self.op("fuse.global_avg_pool %s%s : %s" % (x, attrs, x.ty),
                       val, x.dt)

    def upsample(self, x, mode=None, size=None, scale=None, align_corners=False,
                 layout=None):
        val = ref_upsample(x.v, mode or "nearest", size, scale, align_corners,
                           layout or "nhwc")
        attrs = attr_dict([
            ("mode", mode and "#fuse.upsample_mode<%s>" % mode),
            ("size", size and arr_i(size)),
            ("scale", scale and arr_f(scale)),
            ("align_corners", align_corners or None),
            ("layout", layout and "#fuse.layout<%s>" % layout)])
        return self.op("fuse.upsample %s%s : %s" % (x, attrs, x.ty), val, x.dt)

    def cast(self, x, dt):
        val = round_to(x.v, dt)
        return self.op("fuse.cast %s : %s to %s"
                       % (x, x.ty, tensor_type(x.v.shape, dt)), val, dt)

    def reshape(self, x, shape):
        val = x.v.reshape(shape)
        return self.op("fuse.reshape %s : %s to %s"
                       % (x, x.ty, tensor_type(shape, x.dt)), val, x.dt)

    def transpose(self, x, perm):
        val = x.v.transpose(perm)
        return self.op("fuse.transpose %s {permutation = %s} : %s"
                       % (x, arr_i(perm), x.ty), val, x.dt)

    def slice(self, x, offsets, sizes):
        val = x.v[tuple(slice(o, o + n) for o, n in zip(offsets, sizes))]
        return self.op("fuse.slice %s {offsets = %s, sizes = %s} : %s"
                       % (x, arr_i(offsets), arr_i(sizes), x.ty), val, x.dt)

    def concat(self, xs, axis):
        val = np.concatenate([x.v for x in xs], axis=axis)
        return self.op("fuse.concat %s {axis = %d} : %s"
                       % (", ".join(map(str, xs)), axis,
                          ", ".join(x.ty for x in xs)), val, xs[0].dt)

    def split(self, x, axis, sizes):
        name = "%%v%d" % self.count
        self.count += 1
        self.lines.append("  %s:%d = fuse.split %s {axis = %d, sizes = %s} : %s"
                          % (name, len(sizes), x, axis, arr_i(sizes), x.ty))
        cuts = np.cumsum(sizes)[:-1]
        return [Val("%s#%d" % (name, i), v, x.dt)
                for i, v in enumerate(np.split(x.v, cuts, axis=axis))]

# ---------------------------------------------------------------------------
# Cases. Each is a function (Graph) -> None that adds args, ops and results.
# ---------------------------------------------------------------------------

CASES = []


def case(name):
    def register(fn):
        CASES.append((name, fn))
        return fn
    return register


# -- conv2d ------------------------------------------------------------------

def conv_case(name, dt, layout, n, ci, h, w, co, kh, kw, groups=None, bias=True,
              explicit_layout=False, **kw_):
    def build(g):
        cig = ci // (groups or 1)
        xs = (n, ci, h, w) if layout == "nchw" else (n, h, w, ci)
        ws = (co, cig, kh, kw) if layout == "nchw" else (co, kh, kw, cig)
        x = g.arg(xs, dt)
        wt = g.arg(ws, dt, scale=0.5)
        b = g.arg((co,), dt) if bias else None
        g.ret(g.conv2d(x, wt, b, groups=groups,
                       layout=layout if layout == "nchw" or explicit_layout
                       else None, **kw_))
    CASES.append((name, build))


conv_case("conv2d_nchw_basic_bias", "f32", "nchw", 1, 3, 17, 23, 5, 3, 3)
conv_case("conv2d_nhwc_default_layout_nobias", "f32", "nhwc", 3, 5, 13, 11, 7, 3, 3,
          bias=False)
conv_case("conv2d_nhwc_explicit_layout", "f32", "nhwc", 1, 3, 9, 10, 5, 3, 3,
          explicit_layout=True, padding=(1, 1))
conv_case("conv2d_nhwc_stride2_pad4", "f32", "nhwc", 3, 5, 13, 11, 7, 3, 3,
          strides=(2, 2), padding=(1, 2, 0, 1))
conv_case("conv2d_nchw_stride_asym_pad4", "f32", "nchw", 3, 5, 17, 23, 7, 3, 3,
          strides=(2, 3), padding=(0, 2, 1, 0))
conv_case("conv2d_nchw_pad2_dilation", "f32", "nchw", 1, 5, 17, 23, 7, 3, 3,
          bias=False, padding=(2, 1), dilation=(2, 3))
conv_case("conv2d_nhwc_dilation_stride", "f32", "nhwc", 1, 3, 19, 17, 5, 3, 2,
          strides=(2, 1), padding=(2, 0, 1, 1), dilation=(3, 2))
conv_case("conv2d_nhwc_groups3", "f32", "nhwc", 3, 6, 9, 10, 9, 3, 3, groups=3,
          strides=(1, 2), padding=(1, 1))
conv_case("conv2d_nchw_groups2_nobias", "f32", "nchw", 1, 10, 8, 11, 4, 3, 1,
          groups=2, bias=False, padding=(1, 0))
conv_case("conv2d_nchw_depthwise", "f32", "nchw", 1, 7, 12, 13, 7, 3, 3, groups=7,
          padding=(1, 1))
conv_case("conv2d_nhwc_depthwise_mult2", "f32", "nhwc", 1, 5, 11, 9, 10, 5, 5,
          groups=5, strides=(2, 1), padding=(2, 2, 1, 3), dilation=(1, 2))
conv_case("conv2d_nhwc_depthwise_stride2", "f32", "nhwc", 3, 7, 10, 9, 7, 3, 3,
          groups=7, strides=(2, 2), padding=(1, 1), bias=False)
conv_case("conv2d_nchw_1x1_stride", "f32", "nchw", 3, 5, 17, 23, 7, 1, 1,
          strides=(3, 2))
conv_case("conv2d_nhwc_rect_kernel", "f32", "nhwc", 1, 3, 9, 13, 4, 2, 5,
          strides=(3, 1), padding=(0, 1, 2, 0))
conv_case("conv2d_nchw_kernel_eq_input", "f32", "nchw", 3, 3, 5, 7, 5, 5, 7)
conv_case("conv2d_nhwc_stride_gt_kernel", "f32", "nhwc", 1, 5, 17, 23, 3, 2, 2,
          strides=(3, 4), padding=(1, 1))
conv_case("conv2d_f16_nhwc", "f16", "nhwc", 1, 5, 9, 9, 7, 3, 3, padding=(1, 1))
conv_case("conv2d_f16_nchw_depthwise", "f16", "nchw", 3, 5, 8, 7, 5, 3, 3, groups=5,
          strides=(2, 2), padding=(1, 0, 1, 0))
conv_case("conv2d_bf16_nchw_groups", "bf16", "nchw", 1, 6, 9, 7, 4, 3, 3, groups=2,
          padding=(1, 1))
conv_case("conv2d_bf16_nhwc_dilation", "bf16", "nhwc", 3, 3, 11, 12, 5, 3, 3,
          dilation=(2, 2), padding=(2, 2))


# -- batch_norm ----------------------------------------------------------------

def bn_case(name, dt, shape, layout, epsilon=None):
    def build(g):
        c = shape[-1] if layout in (None, "nhwc") else shape[1]
        x = g.arg(shape, dt, scale=2.0, offset=0.5)
        m = g.arg((c,), dt)
        v = g.arg((c,), dt, dist="uniform", lo=0.25, hi=2.0)
        ga = g.arg((c,), dt)
        be = g.arg((c,), dt)
        g.ret(g.batch_norm(x, m, v, ga, be, epsilon=epsilon, layout=layout))
    CASES.append((name, build))


bn_case("batch_norm_nhwc_default", "f32", (3, 7, 5, 5), None)
bn_case("batch_norm_nhwc_explicit_eps", "f32", (1, 9, 11, 7), "nhwc", epsilon=1e-3)
bn_case("batch_norm_nchw", "f32", (1, 7, 9, 11), "nchw")
bn_case("batch_norm_nchw_eps", "f32", (3, 5, 4, 6), "nchw", epsilon=0.1)
bn_case("batch_norm_rank2", "f32", (5, 7), None)
bn_case("batch_norm_rank3_nchw", "f32", (3, 7, 10), "nchw")
bn_case("batch_norm_rank3_nhwc", "f32", (3, 10, 7), "nhwc")
bn_case("batch_norm_f16_nhwc", "f16", (1, 9, 7, 5), None)
bn_case("batch_norm_bf16_nchw", "bf16", (3, 5, 7, 6), "nchw")


# -- binary ----------------------------------------------------------------------

BROADCASTS = [
    ("same", (3, 5, 7), (3, 5, 7)),
    ("perchannel_nhwc", (1, 9, 10, 7), (7,)),
    ("perchannel_nchw", (3, 7, 5, 6), (7, 1, 1)),
    ("scalar_rhs", (3, 5, 7), ()),
    ("scalar_lhs", (), (5, 7)),
    ("rank_expand", (3, 1, 5), (4, 1)),
    ("lhs_lower_rank", (5,), (2, 3, 5)),
    ("both_broadcast", (1, 4, 1, 6), (3, 1, 5, 1)),
]

for _kind in ("add", "sub", "mul", "div"):
    for _bname, _ls, _rs in BROADCASTS:
        def _build(g, kind=_kind, ls=_ls, rs=_rs):
            a = g.arg(ls)
            b = g.arg(rs, dist="away") if kind == "div" else g.arg(rs)
            g.ret(g.binary(kind, a, b))
        CASES.append(("%s_%s" % (_kind, _bname), _build))

for _kind, _dt, _ls, _rs in [("add", "f16", (3, 5, 7), (7,)),
                             ("sub", "bf16", (2, 3, 5), (3, 1)),
                             ("mul", "bf16", (1, 9, 10, 7), (7,)),
                             ("div", "f16", (3, 7, 5, 6), (7, 1, 1)),
                             ("mul", "f16", (4, 5), ())]:
    def _build(g, kind=_kind, dt=_dt, ls=_ls, rs=_rs):
        a = g.arg(ls, dt)
        b = g.arg(rs, dt, dist="away") if kind == "div" else g.arg(rs, dt)
        g.ret(g.binary(kind, a, b))
    CASES.append(("%s_%s_broadcast" % (_kind, _dt), _build))


# -- bias_add ----------------------------------------------------------------------

for _name, _dt, _shape, _axis in [
        ("bias_add_axis1_nchw", "f32", (3, 7, 5, 6), 1),
        ("bias_add_axis_neg1", "f32", (3, 5, 7), -1),
        ("bias_add_default_axis", "f32", (1, 9, 10, 7), None),
        ("bias_add_axis0", "f32", (5, 3, 4), 0),
        ("bias_add_axis_neg3", "f32", (3, 7, 5, 6), -3),
        ("bias_add_rank2_axis1", "f32", (9, 5), 1),
        ("bias_add_f16_axis1", "f16", (1, 5, 9, 7), 1),
        ("bias_add_bf16_default", "bf16", (3, 11, 7), None)]:
    def _build(g, dt=_dt, shape=_shape, axis=_axis):
        x = g.arg(shape, dt)
        c = shape[-1 if axis is None else axis]
        b = g.arg((c,), dt)
        g.ret(g.bias_add(x, b, axis))
    CASES.append((_name, _build))


# -- activations ------------------------------------------------------------------

ACTS = [
    ("relu", {}), ("relu6", {}), ("clamp", {"min": -1.5, "max": 2.25}),
    ("leaky_relu", {}), ("leaky_relu", {"alpha": 0.2}),
    ("gelu", {}), ("gelu", {"approximate": "none"}),
    ("gelu", {"approximate": "tanh"}),
    ("silu", {}), ("sigmoid", {}), ("tanh", {}), ("hardswish", {}),
]
for _dt, _shape in [("f32", (3, 5, 17)), ("f16", (1, 7, 9)), ("bf16", (5, 13))]:
    for _kind, _kw in ACTS:
        _suffix = "".join("_%s%s" % (k, v) for k, v in sorted(_kw.items()))

        def _build(g, kind=_kind, kw=_kw, dt=_dt, shape=_shape):
            x = g.arg(shape, dt, scale=4.0)
            g.ret(g.unary(kind, x, **kw))
        CASES.append(("%s%s_%s" % (_kind, _suffix, _dt), _build))


@case("clamp_negative_range")
def _(g):
    x = g.arg((4, 9), scale=3.0)
    g.ret(g.unary("clamp", x, min=-2.5, max=-0.5))


@case("sigmoid_silu_tanh_large_inputs")
def _(g):
    x = g.arg((3, 11), value=np.linspace(-60, 60, 33))
    g.ret(g.unary("sigmoid", x), g.unary("silu", x), g.unary("tanh", x))


# -- matmul / linear --------------------------------------------------------------

for _name, _dt, _ls, _rs, _ta, _tb in [
        ("matmul_2d", "f32", (5, 7), (7, 3), False, False),
        ("matmul_transpose_lhs", "f32", (7, 5), (7, 3), True, False),
        ("matmul_transpose_rhs", "f32", (5, 7), (3, 7), False, True),
        ("matmul_transpose_both", "f32", (7, 5), (3, 7), True, True),
        ("matmul_batch", "f32", (3, 5, 7), (3, 7, 4), False, False),
        ("matmul_batch_broadcast", "f32", (2, 1, 5, 7), (3, 7, 4), False, False),
        ("matmul_rank2_lhs_rank3_rhs", "f32", (5, 7), (3, 7, 4), False, False),
        ("matmul_batch_broadcast_transposed", "f32", (1, 3, 7, 5), (2, 1, 4, 7),
         True, True),
        ("matmul_f16_batch", "f16", (3, 5, 17), (3, 17, 6), False, False),
        ("matmul_bf16_transpose_rhs", "bf16", (2, 9, 13), (2, 5, 13), False, True)]:
    def _build(g, dt=_dt, ls=_ls, rs=_rs, ta=_ta, tb=_tb):
        a = g.arg(ls, dt)
        b = g.arg(rs, dt)
        g.ret(g.matmul(a, b, ta, tb))
    CASES.append((_name, _build))

for _name, _dt, _xs, _n, _bias in [
        ("linear_rank2_nobias", "f32", (5, 7), 3, False),
        ("linear_rank2_bias", "f32", (5, 7), 9, True),
        ("linear_rank3_bias", "f32", (3, 5, 7), 4, True),
        ("linear_rank4_nobias", "f32", (2, 3, 5, 7), 6, False),
        ("linear_rank1", "f32", (7,), 5, True),
        ("linear_f16_rank3", "f16", (1, 9, 16), 11, True),
        ("linear_bf16_rank3", "bf16", (3, 5, 24), 7, True)]:
    def _build(g, dt=_dt, xs=_xs, n=_n, bias=_bias):
        x = g.arg(xs, dt)
        w = g.arg((n, xs[-1]), dt, scale=0.3)
        b = g.arg((n,), dt) if bias else None
        g.ret(g.linear(x, w, b))
    CASES.append((_name, _build))


# -- normalisation and softmax ----------------------------------------------------

for _name, _dt, _shape, _r, _sc, _sh, _eps in [
        ("layer_norm_rank1_scale_shift", "f32", (3, 5, 17), None, True, True, None),
        ("layer_norm_rank1_plain", "f32", (3, 5, 17), None, False, False, None),
        ("layer_norm_rank1_scale_only", "f32", (7, 9), 1, True, False, None),
        ("layer_norm_rank1_shift_only", "f32", (7, 9), None, False, True, None),
        ("layer_norm_rank2_scale_shift", "f32", (3, 5, 7), 2, True, True, None),
        ("layer_norm_rank2_plain_eps", "f32", (2, 3, 5, 7), 2, False, False, 0.5),
        ("layer_norm_rank3", "f32", (2, 3, 5, 7), 3, True, True, 1e-3),
        ("layer_norm_f16", "f16", (1, 9, 24), None, True, True, None),
        ("layer_norm_bf16_rank2", "bf16", (3, 5, 12), 2, True, True, None)]:
    def _build(g, dt=_dt, shape=_shape, r=_r, sc=_sc, sh=_sh, eps=_eps):
        x = g.arg(shape, dt, scale=3.0, offset=2.0)
        ns = shape[len(shape) - (r or 1):]
        s = g.arg(ns, dt) if sc else None
        b = g.arg(ns, dt) if sh else None
        g.ret(g.layer_norm(x, s, b, r, eps))
    CASES.append((_name, _build))

for _name, _dt, _shape, _r, _sc, _eps in [
        ("rms_norm_rank1_scale", "f32", (3, 5, 17), None, True, None),
        ("rms_norm_rank1_plain", "f32", (5, 13), 1, False, None),
        ("rms_norm_rank2_scale", "f32", (3, 5, 7), 2, True, None),
        ("rms_norm_rank2_plain_eps", "f32", (2, 3, 5, 7), 2, False, 0.25),
        ("rms_norm_f16", "f16", (1, 9, 24), None, True, None),
        ("rms_norm_bf16", "bf16", (3, 5, 12), None, True, 1e-5)]:
    def _build(g, dt=_dt, shape=_shape, r=_r, sc=_sc, eps=_eps):
        x = g.arg(shape, dt, scale=2.0, offset=0.3)
        ns = shape[len(shape) - (r or 1):]
        s = g.arg(ns, dt) if sc else None
        g.ret(g.rms_norm(x, s, r, eps))
    CASES.append((_name, _build))

for _name, _dt, _shape, _axis, _scale in [
        ("softmax_default_axis", "f32", (3, 5, 17), None, 3.0),
        ("softmax_axis0", "f32", (3, 5, 17), 0, 3.0),
        ("softmax_axis1", "f32", (3, 5, 17), 1, 3.0),
        ("softmax_axis_neg1", "f32", (5, 7), -1, 3.0),
        ("softmax_axis_neg2", "f32", (2, 3, 5, 7), -2, 3.0),
        ("softmax_large_logits", "f32", (3, 9), -1, 300.0),
        ("softmax_f16_axis1", "f16", (1, 7, 9), 1, 2.0),
        ("softmax_bf16", "bf16", (5, 13), None, 2.0)]:
    def _build(g, dt=_dt, shape=_shape, axis=_axis, scale=_scale):
        x = g.arg(shape, dt, scale=scale)
        g.ret(g.softmax(x, axis))
    CASES.append((_name, _build))


# -- attention ----------------------------------------------------------------------

def attn_case(name, b, hq, hkv, nq, nk, d, dv, dt="f32", causal=False,
              mask=None, scale=None, mask_fn=None, mask_dt=None):
    def build(g):
        q = g.arg((b, hq, nq, d), dt)
        k = g.arg((b, hkv, nk, d), dt)
        v = g.arg((b, hkv, nk, dv), dt)
        m = None
        if mask is not None:
            mval = g.rng.standard_normal(mask)
            if mask_fn is not None:
                mval = mask_fn(mval)
            m = g.arg(mask, mask_dt or dt, value=mval)
        g.ret(g.attention(q, k, v, m, scale, causal))
    CASES.append((name, build))


def _some_neg_inf(m):
    m = m.copy()
    m[..., 1::3] = -np.inf
    return m


def _dead_row(m):
    m = _some_neg_inf(m)
    m[..., 2, :] = -np.inf  # query 2 sees no key at all -> zeros
    return m


attn_case("attention_plain", 2, 3, 3, 7, 7, 5, 5)
# The mask in its own dtype: f32 (exact -inf and large values) over f16.
attn_case("attention_f16_mask_f32", 1, 2, 1, 6, 9, 8, 8, dt="f16",
          mask=(1, 1, 6, 9), mask_fn=_some_neg_inf, mask_dt="f32")
attn_case("attention_bf16_mask_f16", 2, 2, 2, 5, 4, 8, 8, dt="bf16",
          mask=(5, 4), mask_dt="f16")
attn_case("attention_dv_ne_d", 1, 3, 3, 5, 9, 6, 4)
attn_case("attention_causal_square", 2, 3, 3, 9, 9, 5, 5, causal=True)
attn_case("attention_causal_nq_lt_nk", 1, 2, 2, 5, 9, 4, 7, causal=True)
attn_case("attention_causal_nq_gt_nk", 1, 2, 2, 9, 5, 4, 3, causal=True)
attn_case("attention_gqa", 2, 6, 2, 7, 5, 4, 6)
attn_case("attention_gqa_mqa_causal", 1, 5, 1, 6, 6, 8, 8, causal=True)
attn_case("attention_mask_rank2", 2, 3, 3, 7, 9, 5, 5, mask=(7, 9))
attn_case("attention_mask_rank3", 1, 3, 3, 7, 9, 5, 5, mask=(1, 7, 9))
attn_case("attention_mask_rank4_full", 2, 3, 3, 7, 9, 5, 5, mask=(2, 3, 7, 9))
attn_case("attention_mask_rank4_bcast", 3, 4, 2, 5, 6, 4, 4, mask=(3, 1, 5, 6))
attn_case("attention_mask_rank4_keyonly", 2, 3, 3, 5, 6, 4, 4, mask=(1, 3, 1, 6))
attn_case("attention_mask_neg_inf", 1, 2, 2, 7, 9, 5, 5, mask=(7, 9),
          mask_fn=_some_neg_inf)
attn_case("attention_mask_dead_row_zeros", 1, 2, 2, 5, 6, 4, 4, mask=(1, 2, 5, 6),
          mask_fn=_dead_row)
attn_case("attention_causal_plus_mask", 1, 4, 2, 6, 8, 4, 4, causal=True,
          mask=(6, 8))
attn_case("attention_causal_mask_dead_row", 1, 2, 2, 6, 6, 4, 4, causal=True,
          mask=(6, 6), mask_fn=lambda m: np.where(np.arange(6)[None, :] < 3,
                                                  -np.inf, m))
attn_case("attention_custom_scale", 2, 3, 3, 7, 7, 5, 5, scale=0.37)
attn_case("attention_custom_scale_causal_gqa", 1, 4, 2, 7, 7, 6, 6, scale=1.3,
          causal=True)
attn_case("attention_f16_causal_gqa", 1, 4, 2, 9, 9, 8, 8, dt="f16", causal=True)
attn_case("attention_bf16_mask", 2, 2, 1, 5, 7, 8, 4, dt="bf16", mask=(5, 7))


# -- rope ----------------------------------------------------------------------------

for _name, _dt, _shape, _inter in [
        ("rope_half", "f32", (1, 3, 7, 8), False),
        ("rope_interleaved", "f32", (1, 3, 7, 8), True),
        ("rope_half_rank3", "f32", (5, 7, 6), False),
        ("rope_interleaved_rank2", "f32", (9, 10), True),
        ("rope_half_batch", "f32", (3, 2, 5, 12), False),
        ("rope_f16_half", "f16", (1, 4, 9, 16), False),
        ("rope_bf16_interleaved", "bf16", (2, 2, 5, 8), True)]:
    def _build(g, dt=_dt, shape=_shape, inter=_inter):
        n, d = shape[-2], shape[-1]
        x = g.arg(shape, dt)
        ang = g.rng.uniform(-math.pi, math.pi, (n, d // 2))
        c = g.arg((n, d // 2), dt, value=np.cos(ang))
        s = g.arg((n, d // 2), dt, value=np.sin(ang))
        g.ret(g.rope(x, c, s, inter))
    CASES.append((_name, _build))


@case("rope_non_rotation_tables")
def _(g):
    # The op must use the tables as given, even if cos^2 + sin^2 != 1.
    x = g.arg((2, 5, 6))
    c = g.arg((5, 3))
    s = g.arg((5, 3))
    g.ret(g.rope(x, c, s), g.rope(x, c, s, interleaved=True))


# -- pooling -----------------------------------------------------------------------

for _name, _kind, _dt, _layout, _shape, _k, _s, _p, _cip in [
        ("max_pool_nhwc_default_strides", "max", "f32", None, (1, 17, 23, 5), (3, 3), None, None, None),
        ("max_pool_nchw_explicit_strides_pad4", "max", "f32", "nchw", (3, 5, 17, 23), (3, 2), (2, 1), (1, 1, 0, 1), None),
        ("max_pool_nhwc_pad2_stride2", "max", "f32", "nhwc", (3, 11, 12, 7), (3, 3), (2, 2), (1, 1), None),
        ("max_pool_nchw_rect_default_strides", "max", "f32", "nchw", (1, 7, 13, 11), (2, 3), None, None, None),
        ("max_pool_nhwc_asym_pad_strided", "max", "f32", None, (1, 10, 9, 3), (4, 3), (3, 2), (2, 1, 0, 1), None),
        ("avg_pool_nhwc_default_strides", "avg", "f32", None, (1, 17, 23, 5), (3, 3), None, None, None),
        ("avg_pool_nhwc_pad_include", "avg", "f32", "nhwc", (3, 11, 12, 7), (3, 3), (2, 2), (1, 1), None),
        ("avg_pool_nchw_pad_include_explicit", "avg", "f32", "nchw", (1, 5, 9, 10), (3, 3), (1, 1), (1, 1), True),
        ("avg_pool_nchw_pad4_exclude", "avg", "f32", "nchw", (3, 5, 11, 13), (3, 3), (2, 2), (1, 0, 1, 1), False),
        ("avg_pool_nhwc_pad_exclude", "avg", "f32", "nhwc", (1, 10, 9, 7), (4, 3), (1, 2), (2, 1), False),
        ("avg_pool_nhwc_asym_pad_include", "avg", "f32", None, (1, 10, 9, 3), (4, 3), (3, 2), (2, 1, 0, 1), True),
        ("avg_pool_nchw_rect_default_strides", "avg", "f32", "nchw", (3, 7, 13, 11), (2, 3), None, None, None),
        ("max_pool_f16_pad", "max", "f16", "nchw", (1, 5, 9, 11), (3, 3), (2, 2), (1, 1), None),
        ("avg_pool_bf16_exclude", "avg", "bf16", None, (3, 9, 10, 5), (3, 3), (2, 2), (1, 1), False),
        ("avg_pool_f16_include", "avg", "f16", None, (1, 9, 10, 5), (2, 2), (1, 1), (1, 0, 1, 0), None)]:
    def _build(g, kind=_kind, dt=_dt, layout=_layout, shape=_shape, k=_k, s=_s,
               p=_p, cip=_cip):
        x = g.arg(shape, dt, offset=1.0)
        g.ret(g.pool(kind, x, k, s, p, layout, cip))
    CASES.append((_name, _build))


@case("max_pool_negative_input_padding_never_wins")
def _(g):
    x = g.arg((1, 7, 8, 3), value=-np.abs(g.rng.standard_normal((1, 7, 8, 3))) - 1.0)
    g.ret(g.pool("max", x, (3, 3), (2, 2), (1, 1, 1, 1)))


for _name, _dt, _layout, _shape in [
        ("global_avg_pool_nhwc", "f32", None, (3, 17, 23, 5)),
        ("global_avg_pool_nchw", "f32", "nchw", (1, 7, 9, 11)),
        ("global_avg_pool_f16", "f16", "nhwc", (1, 9, 7, 5)),
        ("global_avg_pool_bf16_nchw", "bf16", "nchw", (3, 5, 6, 7))]:
    def _build(g, dt=_dt, layout=_layout, shape=_shape):
        x = g.arg(shape, dt, offset=0.5)
        g.ret(g.global_avg_pool(x, layout))
    CASES.append((_name, _build))


# -- upsample --------------------------------------------------------------------
# Sizes/scales below are picked so that the float32 nearest-index arithmetic
# differs from exact or from float64 arithmetic (14 -> 46 and 26 -> 22 differ
# from exact rational arithmetic; 10 -> 12 and 14 -> 20 differ from
# float64(float32(in / out)) * dst; scales 2.6 and 3.7 differ from
# float64 dst / scale).

for _name, _dt, _layout, _shape, _mode, _size, _scale, _ac in [
        ("upsample_nearest_size_nhwc", "f32", None, (1, 14, 6, 3), None, (46, 74), None, False),
        ("upsample_nearest_size_down_nchw", "f32", "nchw", (3, 2, 26, 17), "nearest", (22, 5), None, False),
        ("upsample_nearest_size_f32_step_nhwc", "f32", None, (1, 10, 14, 2), None, (12, 20), None, False),
        ("upsample_nearest_size_odd_nhwc", "f32", "nhwc", (3, 5, 7, 2), None, (13, 11), None, False),
        ("upsample_nearest_scale_nchw", "f32", "nchw", (1, 3, 16, 11), None, None, (2.6, 3.7), False),
        ("upsample_nearest_scale2_nhwc", "f32", None, (3, 5, 7, 3), "nearest", None, (2.0, 2.0), False),
        ("upsample_nearest_scale_down_nhwc", "f32", None, (1, 17, 23, 3), None, None, (0.5, 0.7), False),
        ("upsample_nearest_scale_mixed_nchw", "f32", "nchw", (1, 3, 9, 10), None, None, (1.5, 3.0), False),
        ("upsample_bilinear_size_nchw", "f32", "nchw", (1, 3, 7, 5), "bilinear", (13, 11), None, False),
        ("upsample_bilinear_size_down_nhwc", "f32", None, (3, 17, 23, 2), "bilinear", (7, 9), None, False),
        ("upsample_bilinear_scale_nhwc", "f32", "nhwc", (1, 7, 9, 3), "bilinear", None, (1.5, 2.0), False),
        ("upsample_bilinear_scale_odd_nchw", "f32", "nchw", (3, 2, 5, 6), "bilinear", None, (2.6, 1.7), False),
        ("upsample_bilinear_align_size_nhwc", "f32", None, (1, 7, 5, 3), "bilinear", (13, 17), None, True),
        ("upsample_bilinear_align_scale_nchw", "f32", "nchw", (3, 2, 5, 6), "bilinear", None, (2.0, 1.5), True),
        ("upsample_bilinear_align_down_nchw", "f32", "nchw", (1, 3, 17, 13), "bilinear", (6, 5), None, True),
        ("upsample_bilinear_align_out1", "f32", "nchw", (1, 3, 5, 6), "bilinear", (1, 9), None, True),
        ("upsample_bilinear_f16_nchw", "f16", "nchw", (1, 5, 6, 7), "bilinear", (11, 15), None, False),
        ("upsample_nearest_bf16_nhwc", "bf16", None, (3, 5, 7, 5), None, None, (2.6, 3.7), False),
        ("upsample_bilinear_bf16_align", "bf16", None, (1, 6, 5, 4), "bilinear", None, (2.0, 2.5), True)]:
    def _build(g, dt=_dt, layout=_layout, shape=_shape, mode=_mode, size=_size,
               scale=_scale, ac=_ac):
        x = g.arg(shape, dt)
        g.ret(g.upsample(x, mode, size, scale, ac, layout))
    CASES.append((_name, _build))


# -- cast / reshape / transpose -------------------------------------------------------

def _cast_specials_f16():
    t = [1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11,  # ties -> even (down, up)
         -(2.0 + 2.0**-10), 65504.0, 65519.0, 65520.0, 70000.0, -1e6,
         2.0**-24, 2.0**-25, 3 * 2.0**-26, 2.0**-14 - 2.0**-25, 1e-8, 0.0,
         -0.0, 0.1, -3.14159, 1234.5678, 6.1e-5]
    return np.array(t)


def _cast_specials_bf16():
    t = [1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, -(1.0 + 2.0**-8 + 2.0**-20),
         3.0e38, 3.4e38, -3.4e38, 1e-40, 1e-45, 2.0**-126, 0.0, -0.0, 0.1,
         -3.14159, 1234.5678, 65504.0, 1.0 + 2.0**-9]
    return np.array(t)


@case("cast_f32_to_f16_random")
def _(g):
    g.tol = 0.0
    x = g.arg((3, 5, 7), scale=100.0)
    g.ret(g.cast(x, "f16"))


@case("cast_f32_to_f16_specials")
def _(g):
    g.tol = 0.0
    x = g.arg((19,), value=_cast_specials_f16())
    g.ret(g.cast(x, "f16"))


@case("cast_f32_to_bf16_random")
def _(g):
    g.tol = 0.0
    x = g.arg((3, 5, 7), scale=100.0)
    g.ret(g.cast(x, "bf16"))


@case("cast_f32_to_bf16_specials")
def _(g):
    g.tol = 0.0
    x = g.arg((16,), value=_cast_specials_bf16())
    g.ret(g.cast(x, "bf16"))


@case("cast_f16_bf16_f32_roundtrips")
def _(g):
    g.tol = 0.0
    h = g.arg((5, 7), "f16", scale=10.0)
    b = g.arg((5, 7), "bf16", scale=10.0)
    g.ret(g.cast(h, "f32"), g.cast(b, "f32"), g.cast(h, "bf16"), g.cast(b, "f16"))


@case("cast_mid_graph_rounds_intermediate")
def _(g):
    # The cast rounds; the ops around it do not.
    x = g.arg((5, 9))
    w = g.arg((7, 9), scale=0.5)
    y = g.linear(x, w)
    h = g.cast(y, "bf16")
    g.ret(g.softmax(h), g.cast(g.unary("relu", h), "f32"))


for _name, _dt, _shape, _new in [
        ("reshape_rank3_to_2", "f32", (3, 4, 5), (12, 5)),
        ("reshape_rank4_to_2", "f32", (2, 3, 4, 5), (6, 20)),
        ("reshape_split", "f32", (7, 10), (7, 2, 5)),
        ("reshape_to_rank1", "f32", (3, 5, 7), (105,)),
        ("reshape_f16", "f16", (1, 9, 8), (3, 3, 2, 4)),
        ("reshape_bf16", "bf16", (6, 5), (5, 6))]:
    def _build(g, dt=_dt, shape=_shape, new=_new):
        x = g.arg(shape, dt)
        g.ret(g.reshape(x, new))
    CASES.append((_name, _build))

for _name, _dt, _shape, _perm in [
        ("transpose_nchw_to_nhwc", "f32", (3, 5, 7, 2), (0, 2, 3, 1)),
        ("transpose_rank3", "f32", (3, 5, 7), (2, 0, 1)),
        ("transpose_rank2", "f32", (5, 9), (1, 0)),
        ("transpose_identity", "f32", (3, 4, 5), (0, 1, 2)),
        ("transpose_f16_heads", "f16", (1, 9, 4, 6), (0, 2, 1, 3)),
        ("transpose_bf16", "bf16", (2, 3, 5, 7), (3, 1, 0, 2))]:
    def _build(g, dt=_dt, shape=_shape, perm=_perm):
        x = g.arg(shape, dt)
        g.ret(g.transpose(x, perm))
    CASES.append((_name, _build))


# -- slice, concat, split ------------------------------------------------------

@case("slice_rank3_f32")
def _(g):
    x = g.arg((3, 7, 5))
    g.ret(g.slice(x, (1, 2, 0), (2, 4, 5)), g.slice(x, (0, 6, 4), (3, 1, 1)))


@case("slice_of_slice_bf16")
def _(g):
    x = g.arg((9, 11), "bf16")
    g.ret(g.unary("relu", g.slice(g.slice(x, (1, 2), (7, 8)), (2, 3), (3, 5))))


@case("concat_three_axis_last_f16")
def _(g):
    a, b, c = g.arg((2, 3, 1), "f16"), g.arg((2, 3, 5), "f16"), g.arg((2, 3, 2), "f16")
    g.ret(g.concat([a, b, c], 2))


@case("concat_axis0_and_slice_back")
def _(g):
    a, b = g.arg((2, 5)), g.arg((3, 5))
    c = g.concat([a, b], 0)
    g.ret(c, g.slice(c, (1, 1), (3, 3)), g.slice(c, (2, 0), (3, 5)))


@case("concat_negative_axis_rank1")
def _(g):
    g.ret(g.concat([g.arg((4,)), g.arg((1,)), g.arg((6,))], -1))


@case("split_qkv_bf16")
def _(g):
    x = g.arg((1, 6, 24), "bf16")
    q, k, v = g.split(x, -1, (12, 8, 4))
    g.ret(q, g.unary("silu", k), v)


@case("split_middle_axis_then_concat")
def _(g):
    x = g.arg((2, 9, 3))
    a, b = g.split(x, 1, (4, 5))
    g.ret(g.concat([b, g.unary("tanh", a)], 1))


@case("graph_fused_qkv_split_heads_f16")
def _(g):
    dt, n, f, hq, hkv, hd = "f16", 7, 16, 2, 1, 8
    x = g.arg((1, n, f), dt)
    w = g.arg(((hq + 2 * hkv) * hd, f), dt, scale=0.3)
    q, k, v = g.split(g.linear(x, w), 2, (hq * hd, hkv * hd, hkv * hd))
    q = g.transpose(g.reshape(q, (1, n, hq, hd)), (0, 2, 1, 3))
    k = g.transpose(g.reshape(k, (1, n, hkv, hd)), (0, 2, 1, 3))
    v = g.transpose(g.reshape(v, (1, n, hkv, hd)), (0, 2, 1, 3))
    a = g.attention(q, k, v, causal=True)
    g.ret(g.reshape(g.transpose(a, (0, 2, 1, 3)), (1, n, hq * hd)))


@case("graph_unet_skip_concat_nhwc")
def _(g):
    x = g.arg((1, 3, 4, 6), offset=0.5)
    skip = g.arg((1, 6, 8, 5))
    w = g.arg((4, 3, 3, 11), scale=0.3)
    up = g.upsample(x, "nearest", scale=(2.0, 2.0))
    y = g.conv2d(g.concat([up, skip], 3), w, padding=(1, 1))
    g.ret(g.unary("relu", y))


# -- inputs given in another float format than the argument type ---------------------
# fusec rounds inputs to the argument dtype; the reference does the same.

@case("input_float64_for_f32_arg")
def _(g):
    v = g.rng.standard_normal((5, 7))
    x = g.arg((5, 7), "f32", save=v.astype(np.float64))
    g.ret(g.reshape(x, (35,)))


@case("input_float32_for_f16_arg")
def _(g):
    v = g.rng.standard_normal((5, 7)).astype(np.float32)
    x = g.arg((5, 7), "f16", save=v)
    g.ret(g.reshape(x, (35,)))


@case("input_float32_for_bf16_arg")
def _(g):
    v = g.rng.standard_normal((5, 7)).astype(np.float32)
    x = g.arg((5, 7), "bf16", save=v)
    g.ret(g.reshape(x, (35,)))


@case("input_float64_for_bf16_arg")
def _(g):
    v = g.rng.standard_normal((5, 7))
    x = g.arg((5, 7), "bf16", save=v)
    g.ret(g.reshape(x, (35,)))


@case("input_float64_rounded_directly_to_f16_bf16")
def _(g):
    # Rounding float64 -> float32 -> f16/bf16 would give 1.0 (a tie after the
    # first rounding); rounding directly gives the next value up.
    g.tol = 0.0
    t = 2.0**-40
    h = g.arg((4,), "f16", save=np.array([1 + 2.0**-11 + t, -(1 + 2.0**-11 + t),
                                          1 + 3 * 2.0**-11 - t, 2.0**-25 + t]))
    b = g.arg((4,), "bf16", save=np.array([1 + 2.0**-8 + t, -(1 + 2.0**-8 + t),
                                           1 + 3 * 2.0**-8 - t, 3.0 + 2.0**-7 + t]))
    g.ret(g.reshape(h, (2, 2)), g.reshape(b, (2, 2)))


@case("output_rounded_once_from_float64")
def _(g):
    # (a + c) + b is exact in float64. Rounding each op's result, or going
    # through float32, would round 1 + 2^-8 + 2^-30 to 1 (bf16) and
    # 1 + 2^-11 + 2^-24 to 1 (f16); one rounding gives 1 + 2^-7 / 1 + 2^-10.
    g.tol = 0.0
    ab = g.arg((3,), "bf16", value=[1.0, -1.0, 2.0])
    cb = g.arg((3,), "bf16", value=[2.0**-8, -(2.0**-8), 2.0**-7])
    bb = g.arg((3,), "bf16", value=[2.0**-30, -(2.0**-30), 2.0**-29])
    ah = g.arg((3,), "f16", value=[1.0, -1.0, 2.0])
    ch = g.arg((3,), "f16", value=[2.0**-11, -(2.0**-11), 2.0**-10])
    bh = g.arg((3,), "f16", value=[2.0**-24, -(2.0**-24), 2.0**-23])
    g.ret(g.binary("add", g.binary("add", ab, cb), bb),
          g.binary("add", g.binary("add", ah, ch), bh))


# -- degenerate sizes and special values ---------------------------------------------

@case("edge_conv_padding_larger_than_kernel")
def _(g):
    x = g.arg((1, 3, 4, 5))
    w = g.arg((2, 3, 2, 2))
    b = g.arg((2,))
    g.ret(g.conv2d(x, w, b, padding=(3, 1, 2, 4), strides=(2, 3), layout="nchw"))


@case("edge_conv_1x1_spatial_input")
def _(g):
    x = g.arg((3, 1, 1, 5))
    w = g.arg((7, 3, 3, 5))
    g.ret(g.conv2d(x, w, padding=(1, 1)))


@case("edge_pools_kernel2_pad1")
def _(g):
    x = g.arg((1, 5, 6, 3))
    g.ret(g.pool("max", x, (2, 2), (1, 1), (1, 1)),
          g.pool("avg", x, (2, 2), (1, 1), (1, 1)),
          g.pool("avg", x, (2, 2), (1, 1), (1, 1), count_include_pad=False),
          g.pool("avg", x, (2, 2), (2, 2), (1, 0, 0, 1), count_include_pad=False))


@case("edge_pools_window_equals_input")
def _(g):
    x = g.arg((3, 2, 5, 7))
    g.ret(g.pool("max", x, (5, 7), layout="nchw"),
          g.pool("avg", x, (5, 7), layout="nchw"),
          g.global_avg_pool(x, layout="nchw"))


@case("edge_global_avg_pool_1x1")
def _(g):
    x = g.arg((3, 1, 1, 5))
    g.ret(g.global_avg_pool(x))


@case("edge_upsample_from_1x1")
def _(g):
    x = g.arg((1, 1, 1, 3))
    g.ret(g.upsample(x, size=(3, 4)), g.upsample(x, "bilinear", size=(3, 4)),
          g.upsample(x, "bilinear", size=(3, 4), align_corners=True),
          g.upsample(x, "bilinear", scale=(2.0, 3.0)))


@case("edge_upsample_identity")
def _(g):
    x = g.arg((1, 5, 7, 2))
    g.ret(g.upsample(x, size=(5, 7)), g.upsample(x, "bilinear", scale=(1.0, 1.0)),
          g.upsample(x, "bilinear", size=(5, 7), align_corners=True))


@case("edge_upsample_1d_rows")
def _(g):
    x = g.arg((3, 2, 1, 6))
    g.ret(g.upsample(x, "bilinear", size=(4, 9), layout="nchw"),
          g.upsample(x, "bilinear", size=(4, 9), align_corners=True, layout="nchw"),
          g.upsample(x, size=(4, 9), layout="nchw"))


@case("edge_softmax_layer_norm_size1_axis")
def _(g):
    x = g.arg((3, 5, 1))
    s = g.arg((1,))
    b = g.arg((1,))
    g.ret(g.softmax(x), g.softmax(x, 1), g.layer_norm(x, s, b), g.rms_norm(x, s))


@case("edge_matmul_linear_k1_m1")
def _(g):
    a = g.arg((3, 1, 1))
    b = g.arg((3, 1, 6))
    x = g.arg((4, 1))
    w = g.arg((5, 1))
    g.ret(g.matmul(a, b), g.matmul(b, b, ta=True), g.linear(x, w))


@case("edge_scalar_tensors")
def _(g):
    a = g.arg(())
    b = g.arg((), dist="away")
    c = g.arg((1,))
    g.ret(g.binary("div", a, b), g.binary("sub", c, a), g.unary("tanh", a))


@case("edge_binary_size1_both_sides")
def _(g):
    a = g.arg((1,))
    b = g.arg((3, 1))
    c = g.arg((1, 1, 1))
    g.ret(g.binary("mul", a, b), g.binary("add", b, c), g.binary("sub", c, a))


@case("edge_attention_nk1_d1")
def _(g):
    q = g.arg((2, 3, 4, 1))
    k = g.arg((2, 3, 1, 1))
    v = g.arg((2, 3, 1, 2))
    g.ret(g.attention(q, k, v), g.attention(q, k, v, causal=True))


@case("edge_rope_d2_n1")
def _(g):
    x = g.arg((3, 1, 2))
    c = g.arg((1, 1))
    s = g.arg((1, 1))
    g.ret(g.rope(x, c, s), g.rope(x, c, s, interleaved=True))


@case("edge_reshape_to_scalar_and_rank1_transpose")
def _(g):
    x = g.arg((1, 1))
    y = g.arg((7,))
    g.ret(g.reshape(x, ()), g.transpose(y, (0,)))


@case("edge_activation_boundaries")
def _(g):
    x = g.arg((12,), value=[-3.0, 3.0, 0.0, -0.0, 6.0, -6.0, 1e-30, -1e-30,
                            2.25, -1.5, 7.0, -4.0])
    g.ret(g.unary("hardswish", x), g.unary("relu6", x),
          g.unary("clamp", x, min=-1.5, max=2.25), g.unary("clamp", x, min=0.5, max=0.5),
          g.unary("leaky_relu", x, alpha=-0.5), g.unary("leaky_relu", x, alpha=3.0),
          g.unary("gelu", x), g.unary("gelu", x, approximate="tanh"))


@case("edge_inf_nan_propagation")
def _(g):
    inf, nan = np.inf, np.nan
    a = g.arg((6,), value=[inf, -inf, nan, 1.0, inf, 0.0])
    b = g.arg((6,), value=[1.0, 1.0, 1.0, inf, -inf, 0.0])
    with np.errstate(invalid="ignore", divide="ignore"):
        g.ret(g.binary("add", a, b), g.binary("mul", a, b), g.binary("div", a, b),
              g.unary("sigmoid", a), g.unary("tanh", a))


@case("edge_softmax_with_neg_inf")
def _(g):
    x = g.arg((3, 4), value=[[-np.inf, 0.0, 1.0, 2.0], [5.0, -np.inf, -np.inf, 5.0],
                             [-np.inf, -np.inf, -np.inf, 3.0]])
    g.ret(g.softmax(x), g.softmax(x, 0))


@case("edge_batch_norm_rank2_nchw")
def _(g):
    x = g.arg((5, 7))
    m, v, ga, be = g.arg((7,)), g.arg((7,), dist="uniform"), g.arg((7,)), g.arg((7,))
    g.ret(g.batch_norm(x, m, v, ga, be, layout="nchw"))


@case("edge_f16_overflow_to_inf")
def _(g):
    # 300 * 300 = 90000 > 65504: the f16 result is +-inf.
    a = g.arg((4,), "f16", value=[300.0, -300.0, 255.0, 256.0])
    b = g.arg((4,), "f16", value=[300.0, 300.0, 256.0, 256.0])
    g.ret(g.binary("mul", a, b))


# -- multi-op graphs -------------------------------------------------------------------

@case("graph_conv_bn_relu_nchw")
def _(g):
    x = g.arg((3, 5, 11, 9))
    w = g.arg((7, 5, 3, 3), scale=0.4)
    m, v = g.arg((7,)), g.arg((7,), dist="uniform")
    ga, be = g.arg((7,)), g.arg((7,))
    y = g.conv2d(x, w, strides=(2, 2), padding=(1, 1), layout="nchw")
    y = g.batch_norm(y, m, v, ga, be, layout="nchw")
    g.ret(g.unary("relu", y))


@case("graph_resnet_block_nhwc")
def _(g):
    c = 6
    x = g.arg((1, 9, 7, c))
    params = []
    for _i in range(2):
        params.append((g.arg((c, 3, 3, c), scale=0.3), g.arg((c,)),
                       g.arg((c,), dist="uniform"), g.arg((c,)), g.arg((c,))))
    y = x
    for i, (w, m, v, ga, be) in enumerate(params):
        y = g.conv2d(y, w, padding=(1, 1))
        y = g.batch_norm(y, m, v, ga, be)
        if i == 0:
            y = g.unary("relu", y)
    y = g.binary("add", y, x)
    g.ret(g.unary("relu", y))


@case("graph_mobilenet_block_f16")
def _(g):
    c, e = 5, 15
    x = g.arg((1, 9, 8, c), "f16")

    def bn_params(n):
        return (g.arg((n,), "f16"), g.arg((n,), "f16", dist="uniform"),
                g.arg((n,), "f16"), g.arg((n,), "f16"))
    we, bne = g.arg((e, 1, 1, c), "f16", scale=0.4), bn_params(e)
    wd, bnd = g.arg((e, 3, 3, 1), "f16", scale=0.4), bn_params(e)
    wp, bnp = g.arg((c, 1, 1, e), "f16", scale=0.3), bn_params(c)
    y = g.unary("relu6", g.batch_norm(g.conv2d(x, we), *bne))
    y = g.unary("relu6", g.batch_norm(g.conv2d(y, wd, padding=(1, 1), groups=e), *bnd))
    y = g.batch_norm(g.conv2d(y, wp), *bnp)
    g.ret(g.binary("add", y, x))


@case("graph_transformer_block_bf16")
def _(g):
    dt, n, f, hq, hkv, hd, ff = "bf16", 9, 16, 4, 2, 4, 24
    x = g.arg((1, n, f), dt)
    ln1g, ln1b = g.arg((f,), dt), g.arg((f,), dt)
    wq = g.arg((hq * hd, f), dt, scale=0.3)
    wk = g.arg((hkv * hd, f), dt, scale=0.3)
    wv = g.arg((hkv * hd, f), dt, scale=0.3)
    wo = g.arg((f, hq * hd), dt, scale=0.3)
    ang = g.rng.uniform(-3, 3, (n, hd // 2))
    cos = g.arg((n, hd // 2), dt, value=np.cos(ang))
    sin = g.arg((n, hd // 2), dt, value=np.sin(ang))
    ln2g, ln2b = g.arg((f,), dt), g.arg((f,), dt)
    w1, b1 = g.arg((ff, f), dt, scale=0.3), g.arg((ff,), dt)
    w2, b2 = g.arg((f, ff), dt, scale=0.3), g.arg((f,), dt)
    h = g.layer_norm(x, ln1g, ln1b)
    q = g.transpose(g.reshape(g.linear(h, wq), (1, n, hq, hd)), (0, 2, 1, 3))
    k = g.transpose(g.reshape(g.linear(h, wk), (1, n, hkv, hd)), (0, 2, 1, 3))
    v = g.transpose(g.reshape(g.linear(h, wv), (1, n, hkv, hd)), (0, 2, 1, 3))
    q, k = g.rope(q, cos, sin), g.rope(k, cos, sin)
    a = g.attention(q, k, v, causal=True)
    a = g.reshape(g.transpose(a, (0, 2, 1, 3)), (1, n, hq * hd))
    r1 = g.binary("add", x, g.linear(a, wo))
    h2 = g.layer_norm(r1, ln2g, ln2b)
    f3 = g.linear(g.unary("gelu", g.linear(h2, w1, b1), approximate="tanh"), w2, b2)
    g.ret(g.binary("add", r1, f3))


@case("graph_linear_gelu_linear")
def _(g):
    x = g.arg((3, 5, 8))
    w1, b1 = g.arg((13, 8), scale=0.4), g.arg((13,))
    w2, b2 = g.arg((6, 13), scale=0.4), g.arg((6,))
    g.ret(g.linear(g.unary("gelu", g.linear(x, w1, b1)), w2, b2))


@case("graph_multi_result_shared_input")
def _(g):
    x = g.arg((3, 5, 7))
    y = g.arg((7,))
    s = g.binary("mul", x, x)
    t = g.bias_add(s, y)
    g.ret(g.softmax(t, 1), s, g.rms_norm(t))


@case("graph_unet_up_concat_free")
def _(g):
    x = g.arg((1, 4, 5, 6), offset=0.5)
    w = g.arg((3, 4, 3, 3), scale=0.4)
    y = g.upsample(x, "bilinear", scale=(2.0, 2.0), layout="nchw")
    y = g.conv2d(y, w, padding=(1, 1), layout="nchw")
    p = g.pool("max", y, (2, 2), layout="nchw")
    a = g.pool("avg", y, (3, 3), (1, 1), (1, 1), layout="nchw", count_include_pad=False)
    g.ret(p, g.unary("hardswish", a), g.global_avg_pool(a, layout="nchw"))


@case("graph_attention_with_matmuls_f16")
def _(g):
    dt = "f16"
    x = g.arg((2, 7, 12), dt)
    wq, wk, wv = (g.arg((12, 12), dt, scale=0.3) for _ in range(3))
    q = g.reshape(g.matmul(x, wq), (2, 7, 3, 4))
    k = g.reshape(g.matmul(x, wk, tb=True), (2, 7, 3, 4))
    v = g.reshape(g.matmul(x, wv), (2, 7, 3, 4))
    q, k, v = (g.transpose(t, (0, 2, 1, 3)) for t in (q, k, v))
    a = g.attention(q, k, v, scale=0.6)
    g.ret(g.layer_norm(g.reshape(g.transpose(a, (0, 2, 1, 3)), (2, 7, 12))))


# ---------------------------------------------------------------------------
# Running.
# ---------------------------------------------------------------------------


def compare(out, ref):
    """Returns (ok_structurally, message, relerr)."""
    if out.shape != ref.shape:
        return False, "shape %s, expected %s" % (out.shape, ref.shape), None
    nan_o, nan_r = np.isnan(out), np.isnan(ref)
    if (nan_o != nan_r).any():
        i = np.argwhere(nan_o != nan_r)[0]
        return False, "NaN mismatch at %s: got %r expected %r" % (
            tuple(i), out[tuple(i)], ref[tuple(i)]), None
    inf = (np.isinf(out) | np.isinf(ref)) & ~nan_r
    if (out[inf] != ref[inf]).any():
        i = np.argwhere(inf & (out != ref))[0]
        return False, "inf mismatch at %s: got %r expected %r" % (
            tuple(i), out[tuple(i)], ref[tuple(i)]), None
    fin = np.isfinite(ref)
    d = out[fin] - ref[fin]
    nr = np.linalg.norm(ref[fin])
    if d.size == 0:
        return True, "", 0.0
    rel = np.linalg.norm(d) / nr if nr > 0 else np.abs(d).max()
    return True, "", float(rel)


def run_fusec(fusec, graph, inputs, outdir, timeout=120):
    cmd = [fusec, "run", graph, "--device=cpu"]
    cmd += ["--input=%s" % p for p in inputs]
    cmd += ["--output-dir=%s" % outdir]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout)


def run_case(args, name, build):
    seed = (args.seed * 1000003 + zlib.crc32(name.encode())) & 0xFFFFFFFF
    g = Graph(np.random.default_rng(seed))
    build(g)
    d = os.path.join(args.workdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    graph = os.path.join(d, "graph.mlir")
    with open(graph, "w") as f:
        f.write(g.mlir())
    inputs = []
    for i, (_, arr) in enumerate(g.args):
        p = os.path.join(d, "in%d.npy" % i)
        np.save(p, arr)
        inputs.append(p)
    outdir = os.path.join(d, "out")
    try:
        proc = run_fusec(args.fusec, graph, inputs, outdir)
    except subprocess.TimeoutExpired:
        return False, "FAIL %s fusec timed out" % name
    if proc.returncode != 0:
        return False, "FAIL %s fusec exited %d: %s" % (
            name, proc.returncode, proc.stderr.strip().replace("\n", " | "))
    worst = 0.0
    for i, r in enumerate(g.results):
        p = os.path.join(outdir, "result%d.npy" % i)
        if not os.path.exists(p):
            return False, "FAIL %s missing result%d.npy" % (name, i)
        out = np.load(p)
        want = NPY_OUT_DTYPE[r.dt]
        if out.dtype != want:
            return False, "FAIL %s result%d dtype %s, expected %s" % (
                name, i, out.dtype, np.dtype(want))
        ref = round_to(r.v, r.dt)
        ok, msg, rel = compare(out.astype(np.float64), ref)
        if not ok:
            return False, "FAIL %s result%d: %s" % (name, i, msg)
        tol = TOL[r.dt] if g.tol is None else g.tol
        if not rel <= tol:
            absd = np.abs(out.astype(np.float64) - ref)
            absd[~np.isfinite(absd)] = 0
            j = np.unravel_index(np.argmax(absd), absd.shape)
            return False, ("FAIL %s result%d (%s) relerr=%.3e > %.0e; worst at "
                           "%s: got %r expected %r" % (
                               name, i, r.dt, rel, tol, tuple(int(a) for a in j),
                               float(out[j]), float(ref[j])))
        worst = max(worst, rel)
    if os.path.exists(os.path.join(outdir, "result%d.npy" % len(g.results))):
        return False, "FAIL %s unexpected extra result file" % name
    return True, "PASS %s relerr=%.2e" % (name, worst)


# -- bad inputs --------------------------------------------------------------------

BAD_GRAPH = """func.func @main(%a: tensor<3x5xf32>, %b: tensor<5xf32>) -> tensor<3x5xf32> {
  %0 = fuse.add %a, %b : tensor<3x5xf32>, tensor<5xf32>
  return %0 : tensor<3x5xf32>
}
"""


def _npy_header(descr, shape, fortran=False):
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False",
        "(%s)" % "".join("%d," % s for s in shape) if len(shape) != 1
        else "(%d,)" % shape[0])
    total = 10 + len(d) + 1
    pad = (64 - total % 64) % 64
    d = d + " " * pad + "\n"
    return b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d.encode()


BAD_INPUTS = [
    # name, writer of bad b-input, behaviour: "reject" or "reject_or_exact"
    ("bad_npy_garbage", lambda p: open(p, "wb").write(b"this is not a npy file\n"),
     "reject"),
    ("bad_npy_empty", lambda p: open(p, "wb").write(b""), "reject"),
    ("bad_npy_truncated_data",
     lambda p: open(p, "wb").write(_npy_header("<f4", (5,)) + b"\0" * 12), "reject"),
    ("bad_npy_truncated_header",
     lambda p: open(p, "wb").write(_npy_header("<f4", (5,))[:30]), "reject"),
    ("bad_npy_wrong_shape", lambda p: np.save(p, np.ones((5, 1), np.float32)),
     "reject"),
    ("bad_npy_wrong_length", lambda p: np.save(p, np.ones((6,), np.float32)),
     "reject"),
    ("bad_npy_int32", lambda p: np.save(p, np.arange(5, dtype=np.int32)), "reject"),
    ("bad_npy_big_endian",
     lambda p: np.save(p, np.arange(5, dtype=">f4")), "reject_or_exact"),
    ("bad_npy_fortran_order",
     lambda p: open(p, "wb").write(_npy_header("<f4", (5,), fortran=True)
                                   + np.arange(5, dtype="<f4").tobytes()),
     "reject_or_exact"),
]


def run_bad_inputs(args):
    lines, ok_all = [], True
    for name, writer, mode in BAD_INPUTS:
        if args.k and args.k not in name:
            continue
        d = os.path.join(args.workdir, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        graph = os.path.join(d, "graph.mlir")
        with open(graph, "w") as f:
            f.write(BAD_GRAPH)
        a = os.path.join(d, "a.npy")
        np.save(a, np.ones((3, 5), np.float32))
        b = os.path.join(d, "b_%s.npy" % name)
        writer(b)
        outdir = os.path.join(d, "out")
        os.makedirs(outdir)  # an existing, empty output dir
        proc = run_fusec(args.fusec, graph, [a, b], outdir)
        left = sorted(f for f in os.listdir(outdir) if f.startswith("result"))
        err = proc.stderr.strip().replace("\n", " | ")
        if proc.returncode != 0:
            ok = os.path.basename(b) in proc.stderr and not left
            why = ("" if ok else "message lacks file name" if not left
                   else "left %s behind" % left)
            lines.append("%s %s rc=%d%s: %s" % ("PASS" if ok else "FAIL", name,
                                                proc.returncode,
                                                "" if ok else " (" + why + ")", err))
        elif mode == "reject_or_exact":
            try:
                out = np.load(os.path.join(outdir, "result0.npy"))
                ok = np.array_equal(out, 1.0 + np.arange(5)[None, :] + np.zeros((3, 1)))
            except Exception as e:  # noqa: BLE001
                ok, err = False, str(e)
            lines.append("%s %s accepted%s" % ("PASS" if ok else "FAIL", name,
                                               "" if ok else " with wrong values"))
        else:
            ok = False
            lines.append("FAIL %s fusec exited 0 (expected an error)" % name)
        ok_all &= ok
    # Too few inputs: an error, and no result file.
    name = "bad_too_few_inputs"
    if not args.k or args.k in name:
        d = os.path.join(args.workdir, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        graph = os.path.join(d, "graph.mlir")
        with open(graph, "w") as f:
            f.write(BAD_GRAPH)
        a = os.path.join(d, "a.npy")
        np.save(a, np.ones((3, 5), np.float32))
        outdir = os.path.join(d, "out")
        os.makedirs(outdir)
        proc = run_fusec(args.fusec, graph, [a], outdir)
        left = [f for f in os.listdir(outdir) if f.startswith("result")]
        ok = proc.returncode != 0 and not left
        ok_all &= ok
        lines.append("%s %s rc=%d: %s" % ("PASS" if ok else "FAIL", name,
                                          proc.returncode,
                                          proc.stderr.strip().replace("\n", " | ")))
    return ok_all, lines


def self_check():
    normal_cdf_ok()
    # Both bf16 roundings agree on float32 inputs, including ties.
    v = np.array([1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, 3.4e38, 1e-40, -2.5, 0.1],
                 dtype=np.float32)
    assert np.array_equal(f32_to_bf16_bits(v).astype(np.float64),
                          round_to(v.astype(np.float64), "bf16"))
    assert round_to(1.0 + 2.0**-8, "bf16") == 1.0
    assert round_to(1.0 + 3 * 2.0**-8, "bf16") == 1.0 + 2.0**-6
    # f16 rounding agrees with NumPy's float16 conversion.
    r = np.random.default_rng(1).standard_normal(1000) * 10.0 ** \
        np.random.default_rng(2).integers(-9, 6, 1000)
    with np.errstate(over="ignore"):
        assert np.array_equal(round_to(r, "f16"),
                              r.astype(np.float16).astype(np.float64))
    assert round_to(65520.0, "f16") == np.inf and round_to(65519.0, "f16") == 65504.0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--fusec", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-k", default=None, help="only cases whose name contains this")
    ap.add_argument("-j", type=int, default=2, help="parallel fusec runs")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    start = time.time()
    self_check()
    names = [n for n, _ in CASES]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, "duplicate case names: %s" % sorted(dup)
    cases = [(n, b) for n, b in CASES if not args.k or args.k in n]
    passed = failed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
        futures = [pool.submit(run_case, args, n, b) for n, b in cases]
        for (n, _), fut in zip(cases, futures):
            try:
                ok, line = fut.result()
            except Exception as e:  # noqa: BLE001 -- report, keep going
                ok, line = False, "FAIL %s python error: %r" % (n, e)
            print(line)
            sys.stdout.flush()
            passed += ok
            failed += not ok
    ok, lines = run_bad_inputs(args)
    for line in lines:
        print(line)
        if line.startswith("PASS"):
            passed += 1
        else:
            failed += 1
    print("%d passed, %d failed (%.1f s)" % (passed, failed, time.time() - start))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
