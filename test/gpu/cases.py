"""The on-GPU numeric suite: graphs with odd shapes in every dtype and layout.

  cases.py prepare --fusec FUSEC --out DIR [--seed N] [--ptxas PTXAS] [--cuda] [-k SUBSTR[,SUBSTR...]]
      On any machine: writes DIR/<case>/graph.mlir, compiles it to
      DIR/<case>/kernel.ptx for sm_90 (checked with ptxas when given) and,
      where that takes the Hopper path (wgmma, TMA), to
      DIR/<case>/kernel-sm_90a.ptx as well (with --cuda, each also to CUDA C:
      kernel.cu, kernel-sm_90a.cu), evaluates it on the CPU reference
      interpreter with fresh random inputs (DIR/<case>/ref/input*.npy,
      result*.npy), and lists the cases in DIR/manifest.json.
  cases.py nvrtc --fusec FUSEC --nvrtc-check CHECK --out DIR [--ptxas PTXAS] [-j N] [-k SUBSTR[,...]]
      On any machine with NVRTC: writes DIR/<case>/kernel.cu, the CUDA C
      artifact for sm_90 (and kernel-sm_90a.cu where that takes Hopper's
      instructions), and compiles each with NVRTC (fusec-nvrtc-check); with
      --ptxas, ptxas checks the PTX NVRTC generates as well.
  cases.py run --runner FUSEC_RUNNER --cases DIR [--json OUT] [--timeout S] [-k SUBSTR[,...]]
      On a CUDA machine: runs every artifact on the reference inputs (outputs
      poisoned with NaN first), compares with the reference results as
      ||out - ref|| / ||ref||, and prints one line per artifact (the sm_90a
      one named CASE@sm_90a, the CUDA C ones CASE@sm_90:cuda and
      CASE@sm_90a:cuda) and a summary.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import zlib

# Relative-error bounds per output dtype against the float64 reference.
# Intermediates between kernels are stored in the graph dtype, so f16/bf16
# graphs round once per kernel.
# "tf32" marks f32 graphs compiled with --fp32-math=tf32: TF32 products
# (10-bit mantissas), f32 accumulation.
TOLERANCE = {"f32": 1e-4, "f16": 5e-3, "bf16": 3e-2, "tf32": 5e-3}
# Every case compiles for sm_90 (the portable path); for sm_90a too where
# that takes Hopper's own instructions, which the PTX names.
ARCHS = (("sm_90", "kernel.ptx"), ("sm_90a", "kernel-sm_90a.ptx"))
HOPPER_ONLY = ("wgmma.mma_async", "cp.async.bulk.tensor")


def t(shape, dtype):
    return "tensor<" + "x".join(str(d) for d in shape) + ("x" if shape else "") + dtype + ">"


class Graph:
    """Builds one func.func in the fuse dialect."""

    def __init__(self, name):
        self.name = name
        self.args = []
        self.body = []
        self.count = 0

    def arg(self, shape, dtype):
        name = f"%a{len(self.args)}"
        self.args.append(f"{name}: {t(shape, dtype)}")
        return name

    def op(self, text):
        name = f"%v{self.count}"
        self.count += 1
        self.body.append(f"  {name} = {text}")
        return name

    def text(self, results):
        rets = ", ".join(v for v, _ in results)
        types = ", ".join(ty for _, ty in results)
        return (f"func.func @{self.name}({', '.join(self.args)}) -> ({types}) {{\n"
                + "\n".join(self.body) + f"\n  return {rets} : {types}\n}}\n")


def conv_shape(n, c, h, w, co, k, s, p, d, layout):
    ho = (h + 2 * p - d * (k - 1) - 1) // s + 1
    wo = (w + 2 * p - d * (k - 1) - 1) // s + 1
    return [n, ho, wo, co] if layout == "nhwc" else [n, co, ho, wo]


def conv_case(name, dt, layout, n, c, h, w, co, k, s=1, p=0, d=1, g=1,
              bias=False, bn=True, act="relu", residual=False):
    gr = Graph(name)
    xs = [n, h, w, c] if layout == "nhwc" else [n, c, h, w]
    fs = [co, k, k, c // g] if layout == "nhwc" else [co, c // g, k, k]
    x = gr.arg(xs, dt)
    f = gr.arg(fs, dt)
    operands, types = [x, f], [t(xs, dt), t(fs, dt)]
    if bias:
        b = gr.arg([co], dt)
        operands.append(b)
        types.append(t([co], dt))
    attrs = [f"strides = array<i64: {s}, {s}>", f"padding = array<i64: {p}, {p}>",
             f"dilation = array<i64: {d}, {d}>", f"groups = {g}",
             f"layout = #fuse.layout<{layout}>"]
    os_ = conv_shape(n, c, h, w, co, k, s, p, d, layout)
    v = gr.op(f"fuse.conv2d {', '.join(operands)} {{{', '.join(attrs)}}} : {', '.join(types)}")
    if bn:
        ps = [gr.arg([co], dt) for _ in range(4)]
        v = gr.op(f"fuse.batch_norm {v}, {', '.join(ps)} {{layout = #fuse.layout<{layout}>}} : "
                  f"{t(os_, dt)}, {t([co], dt)}")
    if residual:
        r = gr.arg(os_, dt)
        v = gr.op(f"fuse.add {v}, {r} : {t(os_, dt)}, {t(os_, dt)}")
    if act:
        v = gr.op(f"fuse.{act} {v} : {t(os_, dt)}")
    return gr.text([(v, t(os_, dt))])


def unary_chain_case(name, dt, shape, ops, bshape):
    gr = Graph(name)
    x = gr.arg(shape, dt)
    b = gr.arg(bshape, dt)
    v = gr.op(f"fuse.mul {x}, {b} : {t(shape, dt)}, {t(bshape, dt)}")
    for op in ops:
        v = gr.op(f"fuse.{op} {v} : {t(shape, dt)}")
    return gr.text([(v, t(shape, dt))])


def pool_case(name, dt, layout, kind, n, c, h, w, k, s, p, extra=""):
    gr = Graph(name)
    xs = [n, h, w, c] if layout == "nhwc" else [n, c, h, w]
    x = gr.arg(xs, dt)
    ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    os_ = [n, ho, wo, c] if layout == "nhwc" else [n, c, ho, wo]
    v = gr.op(f"fuse.{kind} {x} {{kernel = array<i64: {k}, {k}>, strides = array<i64: {s}, {s}>, "
              f"padding = array<i64: {p}, {p}>, layout = #fuse.layout<{layout}>{extra}}} : {t(xs, dt)}")
    v = gr.op(f"fuse.silu {v} : {t(os_, dt)}")
    return gr.text([(v, t(os_, dt))])


def matmul_case(dt, batch_l, batch_r, m, n, k, ta, tb, act=None):
    g = Graph("g")
    ls = batch_l + ([k, m] if ta else [m, k])
    rs = batch_r + ([n, k] if tb else [k, n])
    a, b = g.arg(ls, dt), g.arg(rs, dt)
    attrs = [x for x, on in (("transpose_lhs", ta), ("transpose_rhs", tb)) if on]
    batch = [max(x, y) for x, y in zip([1] * (len(batch_r) - len(batch_l)) + batch_l,
                                       [1] * (len(batch_l) - len(batch_r)) + batch_r)]
    os_ = batch + [m, n]
    v = g.op(f"fuse.matmul {a}, {b} {{{', '.join(attrs)}}} : {t(ls, dt)}, {t(rs, dt)}")
    if act:
        v = g.op(f"fuse.{act} {v} : {t(os_, dt)}")
    return g.text([(v, t(os_, dt))])


def linear_case(dt, lead, k, n, bias=True, act="gelu", residual=False):
    g = Graph("g")
    x = g.arg(lead + [k], dt)
    w = g.arg([n, k], dt)
    operands, types = [x, w], [t(lead + [k], dt), t([n, k], dt)]
    if bias:
        operands.append(g.arg([n], dt))
        types.append(t([n], dt))
    os_ = lead + [n]
    v = g.op(f"fuse.linear {', '.join(operands)} : {', '.join(types)}")
    if act:
        v = g.op(f"fuse.{act} {v} : {t(os_, dt)}")
    if residual:
        r = g.arg(os_, dt)
        v = g.op(f"fuse.add {v}, {r} : {t(os_, dt)}, {t(os_, dt)}")
    return g.text([(v, t(os_, dt))])


def tiled_linear_case(dt, m, k, n, tile):
    """A linear layer (+ bias, relu) as a hand-written fuse.kernel with its
    own #fuse.tile, to reach tile configurations the heuristic leaves out."""
    xs, ws, os_ = t([m, k], dt), t([n, k], dt), t([m, n], dt)
    return (f"func.func @g(%x: {xs}, %w: {ws}, %b: {t([n], dt)}) -> {os_} {{\n"
            f"  %0 = fuse.kernel \"k0_linear\"(%x, %w, %b) {{tile = #fuse.tile<{tile}>}}\n"
            f"      : ({xs}, {ws}, {t([n], dt)}) -> {os_} {{\n"
            f"  ^bb0(%a: {xs}, %c: {ws}, %d: {t([n], dt)}):\n"
            f"    %1 = fuse.linear %a, %c, %d : {xs}, {ws}, {t([n], dt)}\n"
            f"    %2 = fuse.relu %1 : {os_}\n"
            f"    fuse.yield %2 : {os_}\n  }}\n  return %0 : {os_}\n}}\n")


def tiled_attention_case(dt, b, hq, hkv, nq, nk, d, causal, tile):
    """fuse.attention as a hand-written fuse.kernel with its own #fuse.tile
    (schedules the heuristic leaves to the tuner)."""
    qs, ks = t([b, hq, nq, d], dt), t([b, hkv, nk, d], dt)
    attr = ", causal" if causal else ""
    return (f"func.func @g(%q: {qs}, %k: {ks}, %v: {ks}) -> {qs} {{\n"
            f"  %0 = fuse.kernel \"k0_attention\"(%q, %k, %v) {{tile = #fuse.tile<{tile}>}}\n"
            f"      : ({qs}, {ks}, {ks}) -> {qs} {{\n"
            f"  ^bb0(%a: {qs}, %c: {ks}, %d: {ks}):\n"
            f"    %1 = fuse.attention %a, %c, %d {{scale = 0.125{attr}}} : {qs}, {ks}, {ks}\n"
            f"    fuse.yield %1 : {qs}\n  }}\n  return %0 : {qs}\n}}\n")


def attention_case(dt, b, hq, hkv, nq, nk, d, dv, causal=False, mask=None, scale=None, mask_dt=None):
    """fuse.attention, with an additive mask of shape `mask` (and dtype
    `mask_dt`, else q's) if given."""
    g = Graph("g")
    q, k, v = g.arg([b, hq, nq, d], dt), g.arg([b, hkv, nk, d], dt), g.arg([b, hkv, nk, dv], dt)
    types = [t([b, hq, nq, d], dt), t([b, hkv, nk, d], dt), t([b, hkv, nk, dv], dt)]
    operands = [q, k, v]
    if mask:
        operands.append(g.arg(mask, mask_dt or dt))
        types.append(t(mask, mask_dt or dt))
    attrs = [a for a in ("causal" if causal else "", f"scale = {scale}" if scale else "") if a]
    attr = " {" + ", ".join(attrs) + "}" if attrs else ""
    o = g.op(f"fuse.attention {', '.join(operands)}{attr} : {', '.join(types)}")
    return g.text([(o, t([b, hq, nq, dv], dt))])


def split_heads_case(dt, b, n, hq, hkv, d, causal):
    """Projections split into heads (reshape, transpose), rotated (rope: Q
    half-split, K interleaved), attention, heads merged back and projected:
    the attention kernel reads through the transposes and ropes and stores
    its result transposed."""
    g = Graph("g")
    x = g.arg([b, n, 48], dt)
    wq, wk, wv = g.arg([hq * d, 48], dt), g.arg([hkv * d, 48], dt), g.arg([hkv * d, 48], dt)
    cos, sin = g.arg([n, d // 2], dt), g.arg([n, d // 2], dt)
    wo = g.arg([40, hq * d], dt)

    def heads(w, h, rope=None):
        p = g.op(f"fuse.linear {x}, {w} : {t([b, n, 48], dt)}, {t([h * d, 48], dt)}")
        r = g.op(f"fuse.reshape {p} : {t([b, n, h * d], dt)} to {t([b, n, h, d], dt)}")
        tr = g.op(f"fuse.transpose {r} {{permutation = array<i64: 0, 2, 1, 3>}} : {t([b, n, h, d], dt)}")
        if rope is None:
            return tr
        return g.op(f"fuse.rope {tr}, {cos}, {sin}{rope} : {t([b, h, n, d], dt)}, {t([n, d // 2], dt)}")
    q, k, v = heads(wq, hq, ""), heads(wk, hkv, " {interleaved}"), heads(wv, hkv)
    a = g.op(f"fuse.attention {q}, {k}, {v}{' {causal}' if causal else ''} : {t([b, hq, n, d], dt)}, "
             f"{t([b, hkv, n, d], dt)}, {t([b, hkv, n, d], dt)}")
    m = g.op(f"fuse.transpose {a} {{permutation = array<i64: 0, 2, 1, 3>}} : {t([b, hq, n, d], dt)}")
    r = g.op(f"fuse.reshape {m} : {t([b, n, hq, d], dt)} to {t([b, n, hq * d], dt)}")
    o = g.op(f"fuse.linear {r}, {wo} : {t([b, n, hq * d], dt)}, {t([40, hq * d], dt)}")
    return g.text([(o, t([b, n, 40], dt))])


def fused_qkv_case(dt, b, n, hq, hkv, d):
    """One projection with a bias split into Q, K and V (fuse.split), heads
    split out of each: the attention reads them through slices."""
    g = Graph("g")
    x = g.arg([b, n, 40], dt)
    f = (hq + 2 * hkv) * d
    w, bias = g.arg([f, 40], dt), g.arg([f], dt)
    p = g.op(f"fuse.linear {x}, {w}, {bias} : {t([b, n, 40], dt)}, {t([f, 40], dt)}, {t([f], dt)}")
    name = g.op(f"fuse.split {p} {{axis = 2, sizes = array<i64: {hq * d}, {hkv * d}, {hkv * d}>}} : {t([b, n, f], dt)}")
    g.body[-1] = g.body[-1].replace(f"{name} =", f"{name}:3 =")
    heads = []
    for i, h in enumerate((hq, hkv, hkv)):
        r = g.op(f"fuse.reshape {name}#{i} : {t([b, n, h * d], dt)} to {t([b, n, h, d], dt)}")
        heads.append(g.op(f"fuse.transpose {r} {{permutation = array<i64: 0, 2, 1, 3>}} : {t([b, n, h, d], dt)}"))
    a = g.op(f"fuse.attention {heads[0]}, {heads[1]}, {heads[2]} {{causal}} : {t([b, hq, n, d], dt)}, "
             f"{t([b, hkv, n, d], dt)}, {t([b, hkv, n, d], dt)}")
    return g.text([(a, t([b, hq, n, d], dt))])


def rope_offset_case(dt, b, hq, hkv, nq, nk, d, base, causal, interleaved=False, split_heads=False):
    """Rotary embeddings on Q and K whose cos/sin tables are slices of
    longer ones, as a decoder with a cache has them: K at positions base..,
    Q at the last nq of those (`base` None: tables of their own). The
    attention kernel reads the tables through the slices; with
    `split_heads`, Q comes through a transpose that splits heads."""
    g = Graph("g")
    qs, ks = [b, hq, nq, d], [b, hkv, nk, d]
    q = g.arg([b, nq, hq, d] if split_heads else qs, dt)
    k, v = g.arg(ks, dt), g.arg(ks, dt)
    if split_heads:
        q = g.op(f"fuse.transpose {q} {{permutation = array<i64: 0, 2, 1, 3>}} : {t([b, nq, hq, d], dt)}")
    if base is None:
        ck, sk = g.arg([nk, d // 2], dt), g.arg([nk, d // 2], dt)
        cq, sq = (ck, sk) if nq == nk else (g.arg([nq, d // 2], dt), g.arg([nq, d // 2], dt))
    else:
        rows = base + nk + 3
        cos, sin = g.arg([rows, d // 2], dt), g.arg([rows, d // 2], dt)

        def tables(offset, n):
            return tuple(g.op(f"fuse.slice {x} {{offsets = array<i64: {offset}, 0>, sizes = array<i64: {n}, "
                              f"{d // 2}>}} : {t([rows, d // 2], dt)}") for x in (cos, sin))
        cq, sq = tables(base + nk - nq, nq)
        ck, sk = tables(base, nk)
    attr = " {interleaved}" if interleaved else ""
    qr = g.op(f"fuse.rope {q}, {cq}, {sq}{attr} : {t(qs, dt)}, {t([nq, d // 2], dt)}")
    kr = g.op(f"fuse.rope {k}, {ck}, {sk}{attr} : {t(ks, dt)}, {t([nk, d // 2], dt)}")
    o = g.op(f"fuse.attention {qr}, {kr}, {v}{' {causal}' if causal else ''} : {t(qs, dt)}, {t(ks, dt)}, {t(ks, dt)}")
    return g.text([(o, t([b, hq, nq, d], dt))])


def operand_copies_case(dt):
    """What an attention or a GEMM reads by address but cannot read in
    place, materialised first: Q as an add under a rope, K as a slice off a
    16-byte boundary under a rope, a slice among a linear layer's
    concatenated weights."""
    g = Graph("g")
    s = [1, 3, 45, 64]
    x, y, z = g.arg(s, dt), g.arg(s, dt), g.arg([1, 3, 45, 67], dt)
    cos, sin = g.arg([45, 32], dt), g.arg([45, 32], dt)
    q = g.op(f"fuse.add {x}, {y} : {t(s, dt)}, {t(s, dt)}")
    qr = g.op(f"fuse.rope {q}, {cos}, {sin} : {t(s, dt)}, {t([45, 32], dt)}")
    k = g.op(f"fuse.slice {z} {{offsets = array<i64: 0, 0, 0, 3>, sizes = array<i64: 1, 3, 45, 64>}} : "
             f"{t([1, 3, 45, 67], dt)}")
    kr = g.op(f"fuse.rope {k}, {cos}, {sin} : {t(s, dt)}, {t([45, 32], dt)}")
    o = g.op(f"fuse.attention {qr}, {kr}, {x} {{causal}} : {t(s, dt)}, {t(s, dt)}, {t(s, dt)}")
    a, w, w2 = g.arg([9, 40], dt), g.arg([48, 40], dt), g.arg([16, 40], dt)
    wa = g.op(f"fuse.slice {w} {{offsets = array<i64: 8, 0>, sizes = array<i64: 24, 40>}} : {t([48, 40], dt)}")
    wc = g.op(f"fuse.concat {wa}, {w2} {{axis = 0}} : {t([24, 40], dt)}, {t([16, 40], dt)}")
    lin = g.op(f"fuse.linear {a}, {wc} : {t([9, 40], dt)}, {t([40, 40], dt)}")
    return g.text([(o, t(s, dt)), (lin, t([9, 40], dt))])


def channel_elementwise_case(dt):
    """Elementwise kernels with per-channel operands on the innermost axis:
    batch norm + ReLU in NHWC (70 rows, not a multiple of the 4 rows a thread
    walks), bias + GeLU on [rows, features] (24 rows), and channels that no
    vector divides (33)."""
    g = Graph("g")
    x, y, z = g.arg([2, 5, 7, 24], dt), g.arg([24, 40], dt), g.arg([3, 11, 33], dt)
    ps = [g.arg([24], dt) for _ in range(4)]
    b, c = g.arg([40], dt), g.arg([33], dt)
    v = g.op(f"fuse.batch_norm {x}, {', '.join(ps)} : {t([2, 5, 7, 24], dt)}, {t([24], dt)}")
    v = g.op(f"fuse.relu {v} : {t([2, 5, 7, 24], dt)}")
    w = g.op(f"fuse.bias_add {y}, {b} : {t([24, 40], dt)}, {t([40], dt)}")
    w = g.op(f"fuse.gelu {w} : {t([24, 40], dt)}")
    u = g.op(f"fuse.bias_add {z}, {c} : {t([3, 11, 33], dt)}, {t([33], dt)}")
    u = g.op(f"fuse.silu {u} : {t([3, 11, 33], dt)}")
    return g.text([(v, t([2, 5, 7, 24], dt)), (w, t([24, 40], dt)), (u, t([3, 11, 33], dt))])


def resident_rows_case(dt):
    """Row reductions whose rows fit a thread's registers (256 threads x up
    to 8 vectors): residual add + layer norm (both results written), RMS
    norm, softmax."""
    n = 4096 if dt != "f32" else 2048
    g = Graph("g")
    x, r = g.arg([5, n], dt), g.arg([5, n], dt)
    w, b = g.arg([n], dt), g.arg([n], dt)
    y = g.arg([3, 2, n // 2], dt)
    h = g.op(f"fuse.add {x}, {r} : {t([5, n], dt)}, {t([5, n], dt)}")
    ln = g.op(f"fuse.layer_norm {h} scale({w} : {t([n], dt)}) shift({b} : {t([n], dt)}) : {t([5, n], dt)}")
    rms = g.op(f"fuse.rms_norm {x} scale({w} : {t([n], dt)}) : {t([5, n], dt)}")
    sm = g.op(f"fuse.softmax {y} : {t([3, 2, n // 2], dt)}")
    return g.text([(ln, t([5, n], dt)), (h, t([5, n], dt)), (rms, t([5, n], dt)), (sm, t([3, 2, n // 2], dt))])


def cast_epilogue_cases():
    """A cast after each kind of kernel joins its epilogue: the kernel
    computes in f32 and stores in the cast's type. Row reductions of one
    warp a row (768 f32), of a block (4096) and streamed (1000), a chain of
    elementwise ops, linear layers and batched matrix products (both
    tensor-core paths), a convolution, attention."""
    out = []
    g = Graph("g")
    x, w, b = g.arg([37, 768], "f32"), g.arg([768], "f32"), g.arg([768], "f32")
    ln = g.op(f"fuse.layer_norm {x} scale({w} : {t([768], 'f32')}) shift({b} : {t([768], 'f32')}) : "
              f"{t([37, 768], 'f32')}")
    lnc = g.op(f"fuse.cast {ln} : {t([37, 768], 'f32')} to {t([37, 768], 'bf16')}")
    y = g.arg([5, 4096], "f32")
    rms = g.op(f"fuse.rms_norm {y} : {t([5, 4096], 'f32')}")
    rmsc = g.op(f"fuse.cast {rms} : {t([5, 4096], 'f32')} to {t([5, 4096], 'f16')}")
    z = g.arg([7, 1000], "f32")
    sm = g.op(f"fuse.softmax {z} : {t([7, 1000], 'f32')}")
    smc = g.op(f"fuse.cast {sm} : {t([7, 1000], 'f32')} to {t([7, 1000], 'bf16')}")
    u, v = g.arg([100, 37], "f32"), g.arg([100, 37], "f32")
    s_ = g.op(f"fuse.add {u}, {v} : {t([100, 37], 'f32')}, {t([100, 37], 'f32')}")
    sc = g.op(f"fuse.cast {s_} : {t([100, 37], 'f32')} to {t([100, 37], 'bf16')}")
    sr = g.op(f"fuse.relu {sc} : {t([100, 37], 'bf16')}")
    out.append(("cast_epilogue_rows_f32", g.text([(lnc, t([37, 768], "bf16")), (rmsc, t([5, 4096], "f16")),
                                                  (smc, t([7, 1000], "bf16")), (sr, t([100, 37], "bf16"))]),
                "f32", []))
    for dt in ("f16", "bf16"):
        g = Graph("g")
        x, w, bias = g.arg([3, 100, 200], dt), g.arg([300, 200], dt), g.arg([300], dt)
        h = g.op(f"fuse.linear {x}, {w}, {bias} : {t([3, 100, 200], dt)}, {t([300, 200], dt)}, {t([300], dt)}")
        h = g.op(f"fuse.gelu {h} : {t([3, 100, 300], dt)}")
        hc = g.op(f"fuse.cast {h} : {t([3, 100, 300], dt)} to {t([3, 100, 300], 'f32')}")
        a, c = g.arg([4, 70, 96], dt), g.arg([4, 96, 130], dt)
        m = g.op(f"fuse.matmul {a}, {c} : {t([4, 70, 96], dt)}, {t([4, 96, 130], dt)}")
        mc = g.op(f"fuse.cast {m} : {t([4, 70, 130], dt)} to {t([4, 70, 130], 'f32')}")
        q = g.arg([2, 4, 77, 64], dt)
        k = g.arg([2, 4, 90, 64], dt)
        vv = g.arg([2, 4, 90, 64], dt)
        o = g.op(f"fuse.attention {q}, {k}, {vv} : {t([2, 4, 77, 64], dt)}, {t([2, 4, 90, 64], dt)}, "
                 f"{t([2, 4, 90, 64], dt)}")
        oc = g.op(f"fuse.cast {o} : {t([2, 4, 77, 64], dt)} to {t([2, 4, 77, 64], 'f32')}")
        xi, wf = g.arg([2, 10, 12, 24], dt), g.arg([40, 3, 3, 24], dt)
        cv = g.op(f"fuse.conv2d {xi}, {wf} {{padding = array<i64: 1, 1>}} : {t([2, 10, 12, 24], dt)}, "
                  f"{t([40, 3, 3, 24], dt)}")
        cr = g.op(f"fuse.relu {cv} : {t([2, 10, 12, 40], dt)}")
        cc = g.op(f"fuse.cast {cr} : {t([2, 10, 12, 40], dt)} to {t([2, 10, 12, 40], 'f32')}")
        out.append((f"cast_epilogue_tensor_cores_{dt}",
                    g.text([(hc, t([3, 100, 300], "f32")), (mc, t([4, 70, 130], "f32")),
                            (oc, t([2, 4, 77, 64], "f32")), (cc, t([2, 10, 12, 40], "f32"))]), dt, []))
        out.append((f"linear_cast_bias_{dt}", linear_cast_bias_case(dt, "f32"), dt, []))
    out.append(("linear_cast_bias_f32", linear_cast_bias_case("f32", "bf16"), "f32", []))
    return out


def linear_cast_bias_case(dt, param_dt):
    """Autocast's linear layer: weights and bias kept in `param_dt`, cast to
    `dt` for the product. The linear kernel recomputes the bias's cast in
    its epilogue; a cast bias that another op reads too is written first."""
    g = Graph("g")
    x, w, b = g.arg([3, 50, 72], dt), g.arg([90, 72], param_dt), g.arg([90], param_dt)
    wc = g.op(f"fuse.cast {w} : {t([90, 72], param_dt)} to {t([90, 72], dt)}")
    bc = g.op(f"fuse.cast {b} : {t([90], param_dt)} to {t([90], dt)}")
    h = g.op(f"fuse.linear {x}, {wc}, {bc} : {t([3, 50, 72], dt)}, {t([90, 72], dt)}, {t([90], dt)}")
    h = g.op(f"fuse.gelu {h} : {t([3, 50, 90], dt)}")
    y, b2 = g.arg([7, 90], dt), g.arg([33], param_dt)
    b2c = g.op(f"fuse.cast {b2} : {t([33], param_dt)} to {t([33], dt)}")
    w2 = g.arg([33, 90], dt)
    h2 = g.op(f"fuse.linear {y}, {w2}, {b2c} : {t([7, 90], dt)}, {t([33, 90], dt)}, {t([33], dt)}")
    h3 = g.op(f"fuse.add {h2}, {b2c} : {t([7, 33], dt)}, {t([33], dt)}")
    # One tile over a long k.
    z, w3, b3 = g.arg([2, 8, 3000], dt), g.arg([40, 3000], dt), g.arg([40], param_dt)
    b3c = g.op(f"fuse.cast {b3} : {t([40], param_dt)} to {t([40], dt)}")
    h4 = g.op(f"fuse.linear {z}, {w3}, {b3c} : {t([2, 8, 3000], dt)}, {t([40, 3000], dt)}, {t([40], dt)}")
    return g.text([(h, t([3, 50, 90], dt)), (h3, t([7, 33], dt)), (h4, t([2, 8, 40], dt))])


def streamed_rows_case(dt):
    """Row reductions streamed in 16-byte vectors from each row's first
    aligned element: rows no vector divides (65537, 33333, 12345, 5003, 17,
    15), rows of several chunks kept in shared memory (16-bit types) or read
    twice (f32), a residual add whose sum is written too."""
    g = Graph("g")
    outs = []
    n = 65537
    x, w, b = g.arg([2, n], dt), g.arg([n], dt), g.arg([n], dt)
    outs.append((g.op(f"fuse.layer_norm {x} scale({w} : {t([n], dt)}) shift({b} : {t([n], dt)}) : {t([2, n], dt)}"),
                 t([2, n], dt)))
    x, r = g.arg([3, 33333], dt), g.arg([3, 33333], dt)
    h = g.op(f"fuse.add {x}, {r} : {t([3, 33333], dt)}, {t([3, 33333], dt)}")
    outs += [(g.op(f"fuse.layer_norm {h} : {t([3, 33333], dt)}"), t([3, 33333], dt)), (h, t([3, 33333], dt))]
    x, w = g.arg([4, 12345], dt), g.arg([12345], dt)
    outs.append((g.op(f"fuse.rms_norm {x} scale({w} : {t([12345], dt)}) : {t([4, 12345], dt)}"),
                 t([4, 12345], dt)))
    for shape in ([3, 5003], [2, 40000], [5, 17]):
        x = g.arg(shape, dt)
        outs.append((g.op(f"fuse.softmax {x} : {t(shape, dt)}"), t(shape, dt)))
    x = g.arg([4, 15], dt)
    outs.append((g.op(f"fuse.layer_norm {x} : {t([4, 15], dt)}"), t([4, 15], dt)))
    return g.text(outs)


def merged_linears_case(dt):
    """Three biased projections of one input merge into one GEMM reading the
    weights in place; each result goes on through an elementwise op."""
    g = Graph("g")
    x = g.arg([2, 9, 40], dt)
    outs = []
    for n, act in ((24, "relu"), (16, "silu"), (72, "tanh")):
        w, bias = g.arg([n, 40], dt), g.arg([n], dt)
        p = g.op(f"fuse.linear {x}, {w}, {bias} : {t([2, 9, 40], dt)}, {t([n, 40], dt)}, {t([n], dt)}")
        outs.append((g.op(f"fuse.{act} {p} : {t([2, 9, n], dt)}"), t([2, 9, n], dt)))
    return g.text(outs)


def views_case(dt):
    """Slices, concats and a split read through by elementwise kernels, and
    a concat (a U-Net skip connection) materialised for a convolution."""
    g = Graph("g")
    x, skip = g.arg([1, 5, 6, 16], dt), g.arg([1, 10, 12, 8], dt)
    w = g.arg([24, 3, 3, 24], dt)
    y = g.arg([3, 7, 33], dt)
    up = g.op(f"fuse.upsample {x} {{scale = array<f64: 2.0, 2.0>}} : {t([1, 5, 6, 16], dt)}")
    c = g.op(f"fuse.concat {up}, {skip} {{axis = 3}} : {t([1, 10, 12, 16], dt)}, {t([1, 10, 12, 8], dt)}")
    o = g.op(f"fuse.conv2d {c}, {w} {{padding = array<i64: 1, 1>}} : {t([1, 10, 12, 24], dt)}, {t([24, 3, 3, 24], dt)}")
    o = g.op(f"fuse.relu {o} : {t([1, 10, 12, 24], dt)}")
    sp = g.op(f"fuse.split {y} {{axis = -1, sizes = array<i64: 5, 20, 8>}} : {t([3, 7, 33], dt)}")
    g.body[-1] = g.body[-1].replace(f"{sp} =", f"{sp}:3 =")
    e = g.op(f"fuse.silu {sp}#1 : {t([3, 7, 20], dt)}")
    j = g.op(f"fuse.concat {sp}#2, {e}, {sp}#0 {{axis = 2}} : {t([3, 7, 8], dt)}, {t([3, 7, 20], dt)}, {t([3, 7, 5], dt)}")
    s2 = g.op(f"fuse.slice {y} {{offsets = array<i64: 1, 2, 0>, sizes = array<i64: 2, 5, 30>}} : {t([3, 7, 33], dt)}")
    s3 = g.op(f"fuse.slice {j} {{offsets = array<i64: 0, 1, 3>, sizes = array<i64: 2, 5, 30>}} : {t([3, 7, 33], dt)}")
    r = g.op(f"fuse.add {s2}, {s3} : {t([2, 5, 30], dt)}, {t([2, 5, 30], dt)}")
    return g.text([(o, t([1, 10, 12, 24], dt)), (j, t([3, 7, 33], dt)), (r, t([2, 5, 30], dt))])


def gather_case(dt):
    """Ropes and transposes a thread moves as vectors (half-split and
    interleaved ropes, read through a transpose that splits heads), and
    transposes that move the innermost axis through shared-memory tiles:
    odd extents (partial tiles, element stores) and even ones (paired
    stores), rank 3 and an NHWC -> NCHW change of layout."""
    g = Graph("g")
    x = g.arg([2, 7, 3, 32], dt)
    c, s = g.arg([7, 16], dt), g.arg([7, 16], dt)
    y = g.arg([3, 5, 16], dt)
    c2, s2 = g.arg([5, 8], dt), g.arg([5, 8], dt)
    z = g.arg([3, 37, 45], dt)
    w = g.arg([2, 9, 70, 66], dt)
    h = g.op(f"fuse.transpose {x} {{permutation = array<i64: 0, 2, 1, 3>}} : {t([2, 7, 3, 32], dt)}")
    r1 = g.op(f"fuse.rope {h}, {c}, {s} : {t([2, 3, 7, 32], dt)}, {t([7, 16], dt)}")
    r2 = g.op(f"fuse.rope {y}, {c2}, {s2} {{interleaved}} : {t([3, 5, 16], dt)}, {t([5, 8], dt)}")
    r2 = g.op(f"fuse.silu {r2} : {t([3, 5, 16], dt)}")
    t1 = g.op(f"fuse.transpose {z} {{permutation = array<i64: 0, 2, 1>}} : {t([3, 37, 45], dt)}")
    t2 = g.op(f"fuse.transpose {w} {{permutation = array<i64: 0, 3, 1, 2>}} : {t([2, 9, 70, 66], dt)}")
    t2 = g.op(f"fuse.relu {t2} : {t([2, 66, 9, 70], dt)}")
    # Both innermost extents even: paired stores, partial tiles.
    u = g.arg([2, 5, 24, 72], dt)
    v = g.arg([3, 40, 136], dt)
    t3 = g.op(f"fuse.transpose {u} {{permutation = array<i64: 0, 3, 1, 2>}} : {t([2, 5, 24, 72], dt)}")
    t4 = g.op(f"fuse.transpose {v} {{permutation = array<i64: 0, 2, 1>}} : {t([3, 40, 136], dt)}")
    return g.text([(r1, t([2, 3, 7, 32], dt)), (r2, t([3, 5, 16], dt)), (t1, t([3, 45, 37], dt)),
                   (t2, t([2, 66, 9, 70], dt)), (t3, t([2, 72, 5, 24], dt)), (t4, t([3, 136, 40], dt))])


def sliced_gather_case(dt):
    """Transposes and a rope that read a slice of a larger tensor (a head of
    a fused QKV projection) through it in one pass: vector moves (the last
    axis stays), shared-memory tiles (it moves, odd extents) and a rope on
    an unaligned slice (element loads)."""
    g = Graph("g")
    qkv = g.arg([3, 11, 15, 32], dt)
    y = g.arg([5, 41, 37], dt)
    z = g.arg([2, 9, 7, 18], dt)
    c, s = g.arg([9, 4], dt), g.arg([9, 4], dt)
    outs = []
    for i in range(3):
        h = g.op(f"fuse.slice {qkv} {{offsets = array<i64: 0, 0, {5 * i}, 0>, sizes = array<i64: 3, 11, 5, 32>}} : "
                 f"{t([3, 11, 15, 32], dt)}")
        outs.append((g.op(f"fuse.transpose {h} {{permutation = array<i64: 0, 2, 1, 3>}} : {t([3, 11, 5, 32], dt)}"),
                     t([3, 5, 11, 32], dt)))
    w = g.op(f"fuse.slice {y} {{offsets = array<i64: 1, 3, 2>, sizes = array<i64: 4, 37, 35>}} : {t([5, 41, 37], dt)}")
    outs.append((g.op(f"fuse.transpose {w} {{permutation = array<i64: 0, 2, 1>}} : {t([4, 37, 35], dt)}"),
                 t([4, 35, 37], dt)))
    v = g.op(f"fuse.slice {z} {{offsets = array<i64: 0, 0, 1, 5>, sizes = array<i64: 2, 9, 5, 8>}} : {t([2, 9, 7, 18], dt)}")
    outs.append((g.op(f"fuse.transpose {v} {{permutation = array<i64: 0, 2, 1, 3>}} : {t([2, 9, 5, 8], dt)}"),
                 t([2, 5, 9, 8], dt)))
    u = g.op(f"fuse.slice {z} {{offsets = array<i64: 1, 0, 2, 3>, sizes = array<i64: 1, 9, 5, 8>}} : {t([2, 9, 7, 18], dt)}")
    u = g.op(f"fuse.transpose {u} {{permutation = array<i64: 0, 2, 1, 3>}} : {t([1, 9, 5, 8], dt)}")
    u = g.op(f"fuse.silu {u} : {t([1, 5, 9, 8], dt)}")  # a rope's input in memory
    r = g.op(f"fuse.slice {u} {{offsets = array<i64: 0, 1, 0, 0>, sizes = array<i64: 1, 3, 9, 8>}} : {t([1, 5, 9, 8], dt)}")
    outs.append((g.op(f"fuse.rope {r}, {c}, {s} : {t([1, 3, 9, 8], dt)}, {t([9, 4], dt)}"), t([1, 3, 9, 8], dt)))
    return g.text(outs)


def attention_cases():
    """The tensor-core attention over odd shapes (checked against the interpreter)."""
    out = []
    for dt in ("f16", "bf16"):
        def add(name, text):
            out.append((f"flash_{name}_{dt}", text, dt, []))
        add("d64_q77_k1000_causal_gqa", attention_case(dt, 1, 4, 2, 77, 1000, 64, 64, causal=True))
        add("d64_q1000_k77", attention_case(dt, 1, 2, 1, 1000, 77, 64, 64))
        add("d64_q1000_k1000_causal", attention_case(dt, 1, 2, 2, 1000, 1000, 64, 64, causal=True))
        add("d64_q1_k4097", attention_case(dt, 1, 2, 1, 1, 4097, 64, 64))
        add("d64_q17_k4097_causal", attention_case(dt, 1, 1, 1, 17, 4097, 64, 64, causal=True))
        add("d128_q130_k300_b3_gqa", attention_case(dt, 3, 4, 2, 130, 300, 128, 128))
        add("d80_q197_k197_mask", attention_case(dt, 3, 2, 2, 197, 197, 80, 80, mask=[3, 1, 1, 197]))
        add("d96_q64_k129_mask2d", attention_case(dt, 1, 3, 1, 64, 129, 96, 96, mask=[64, 129], scale=0.05))
        add("d112_q33_k1_causal", attention_case(dt, 2, 2, 2, 33, 1, 112, 112, causal=True))
        add("d256_q100_k100_causal", attention_case(dt, 1, 2, 1, 100, 100, 256, 256, causal=True))
        add("d32_dv72_q40_k50", attention_case(dt, 2, 2, 2, 40, 50, 32, 72))
        other = "f32" if dt == "f16" else "f16"
        add("d64_q77_k1000_mask_" + other, attention_case(dt, 2, 2, 1, 77, 1000, 64, 64, mask=[2, 1, 77, 1000],
                                                        mask_dt=other))
        add("d128_q1_k77_causal_mask_f32", attention_case(dt, 1, 2, 2, 1, 77, 128, 128, causal=True,
                                                         mask=[1, 77], mask_dt="f32"))
        add("fused_qkv_split", fused_qkv_case(dt, 2, 45, 4, 2, 64))
        add("split_heads_causal", split_heads_case(dt, 2, 37, 4, 2, 32, True))
        add("split_heads_d64", split_heads_case(dt, 1, 70, 2, 1, 64, False))
        # Rope tables sliced for a position offset, read in place by the
        # attention kernel (this once crashed its tiling), and the same
        # graphs with the tables as given.
        for base, tag in ((None, "no_offset"), (5, "offset5"), (37, "offset37")):
            add(f"rope_{tag}_d64_q77_k131_causal_gqa", rope_offset_case(dt, 1, 4, 2, 77, 131, 64, base, True))
            add(f"rope_{tag}_d128_q33_k33_interleaved", rope_offset_case(dt, 2, 2, 2, 33, 33, 128, base, False,
                                                                         interleaved=True))
        add("rope_offset11_d32_q1_k257_split_heads", rope_offset_case(dt, 2, 3, 1, 1, 257, 32, 11, False,
                                                                      split_heads=True))
        add("rope_offset3_d64_q45_k45_causal_interleaved", rope_offset_case(dt, 1, 2, 1, 45, 45, 64, 3, True,
                                                                            interleaved=True))
        add("rope_operand_copies", operand_copies_case(dt))
    # f32 attention stays direct, reading through the same views.
    out.append(("direct_split_heads_f32", split_heads_case("f32", 2, 19, 4, 2, 16, True), "f32", []))
    out.append(("direct_rope_offset7_f32", rope_offset_case("f32", 2, 4, 2, 13, 19, 16, 7, True), "f32", []))
    out.append(("direct_rope_offset3_interleaved_f32",
                rope_offset_case("f32", 1, 2, 1, 9, 9, 24, 3, False, interleaved=True), "f32", []))
    return out


def gemm_cases():
    """Convolutions, linear layers and matrix products that run as GEMMs, on
    odd shapes: M, N, K off multiples of 16, channels 3, 5, 33, 70, both
    layouts, every transpose; for f32 with --fp32-math=tf32 as well (dtype
    "tf32"). Each (name, text, dtype, compile flags)."""
    out = []
    for dt in ("f16", "bf16", "tf32"):
        gd = "f32" if dt == "tf32" else dt
        flags = ["--fp32-math=tf32"] if dt == "tf32" else []

        def add(name, text):
            out.append((f"{name}_{dt}", text, dt, flags))
        for L in ("nhwc", "nchw"):
            # Input channels 3, 5, 33, 70 (element by element), 16 and 64
            # (16-byte copies in NHWC); odd spatial sizes, batch 1 and 3.
            add(f"mma_conv_c3_{L}", conv_case("g", gd, L, 1, 3, 17, 23, 33, 3, p=1, bias=True))
            add(f"mma_conv_c5_stride_{L}", conv_case("g", gd, L, 3, 5, 19, 13, 40, 5, s=2, p=2))
            add(f"mma_conv_c33_{L}", conv_case("g", gd, L, 2, 33, 11, 9, 70, 3, p=1, act="silu"))
            add(f"mma_conv_c70_1x1_{L}", conv_case("g", gd, L, 1, 70, 7, 9, 33, 1, act="relu6"))
            add(f"mma_conv_c16_dilated_{L}", conv_case("g", gd, L, 1, 16, 15, 14, 24, 3, p=2, d=2, act="gelu"))
            add(f"mma_conv_c64_residual_{L}", conv_case("g", gd, L, 2, 64, 13, 11, 72, 3, p=1, residual=True))
            add(f"mma_conv_grouped_{L}", conv_case("g", gd, L, 2, 64, 9, 10, 96, 3, p=1, g=2, act="silu"))
        # Big enough for 128x128 tiles, several k-tiles and every stage.
        add("mma_conv_c64_big", conv_case("g", gd, "nhwc", 4, 64, 23, 21, 136, 3, p=1, bias=True))
        add("mma_conv_stem", conv_case("g", gd, "nhwc", 2, 3, 45, 39, 64, 7, s=2, p=3))
        add("mma_linear_k70", linear_case(gd, [3, 37], 70, 129))
        add("mma_linear_k264", linear_case(gd, [2, 155], 264, 200, act="silu", residual=True))
        add("mma_linear_m1", linear_case(gd, [1], 40, 24, bias=False, act=None))
        # Tiles the heuristic picks for larger problems, an odd number of n8
        # fragments per warp, 8 warps, 2 and 3 stages, 2 and 4 warp groups
        # splitting k.
        bk = 16 if dt == "tf32" else 32
        for tag, tile in (("128x128", f"bm = 128, bn = 128, bk = {bk}, warps_m = 2, warps_n = 2, stages = 4"),
                          ("128x64_w8", f"bm = 128, bn = 64, bk = {bk}, warps_m = 4, warps_n = 2, stages = 3"),
                          ("64x32_odd", f"bm = 64, bn = 32, bk = {2 * bk}, warps_m = 1, warps_n = 4, stages = 2"),
                          ("64x64_k2", f"bm = 64, bn = 64, bk = {2 * bk}, warps_m = 2, warps_n = 2, stages = 4, "
                                       "warps_k = 2"),
                          ("64x32_k4", f"bm = 64, bn = 32, bk = {4 * bk}, warps_m = 2, warps_n = 1, stages = 3, "
                                       "warps_k = 4")):
            add(f"mma_tile{tag}", tiled_linear_case(gd, 300, 136, 264, tile))
        for ta in (False, True):
            for tb in (False, True):
                tag = ("t" if ta else "n") + ("t" if tb else "n")
                add(f"mma_matmul_{tag}_odd", matmul_case(gd, [2, 1], [3], 37, 45, 29, ta, tb))
                add(f"mma_matmul_{tag}_x8", matmul_case(gd, [3], [3], 72, 136, 88, ta, tb, act="relu"))
        # A 2-D rhs: the lhs's batch dims fold into the GEMM's rows (odd rows
        # per batch, so tiles straddle batches).
        for tb in (False, True):
            add(f"mma_matmul_fold_n{'t' if tb else 'n'}",
                matmul_case(gd, [3, 2], [], 37, 45, 24, False, tb, act="relu"))
    return out


def wgmma_cases():
    """GEMMs for Hopper's warpgroup MMA (their sm_90a artifacts take it):
    several k-tiles around the stage ring, edges of every tile, K a multiple
    of 8 but not of 64, every tile the family takes, broadcast batches with
    MN-major operands, merged weights, a 1x1 convolution with a residual."""
    out = []
    for dt in ("f16", "bf16"):
        def add(name, text):
            out.append((f"wgmma_{name}_{dt}", text, dt, []))
        add("linear_k1000", linear_case(dt, [3, 100], 1000, 520))
        for tag, tile in (("128x256_s3", "bm = 128, bn = 256, bk = 64, warps_m = 8, warps_n = 1, stages = 3"),
                          ("64x192_s2", "bm = 64, bn = 192, bk = 64, warps_m = 4, warps_n = 1, stages = 2"),
                          ("128x64_s8", "bm = 128, bn = 64, bk = 64, warps_m = 8, warps_n = 1, stages = 8")):
            # Tiles only the warpgroup GEMM takes: sm_90a alone.
            out.append((f"wgmma_tile{tag}_{dt}", tiled_linear_case(dt, 300, 520, 264, tile), dt, [], ["sm_90a"]))
        # Persistent kernels (more tiles than blocks at once, few k-tiles),
        # compiled for a GPU of 4 SMs so that small problems reach them:
        # each block walks several tiles, the epilogue staged through memory
        # of its own, or from the fragments (n odd); batches in the walk; a
        # small forced tile, two blocks an SM; an implicit-GEMM convolution.
        few = ["--sm-count=4"]
        out.append((f"wgmma_linear_persistent_{dt}",
                    linear_case(dt, [3, 100], 200, 700, residual=True), dt, few))
        out.append((f"wgmma_linear_persistent_n701_{dt}", linear_case(dt, [300], 200, 701), dt, few))
        out.append((f"wgmma_matmul_persistent_batched_{dt}",
                    matmul_case(dt, [4], [4], 130, 300, 64, False, True, act="relu"), dt, few))
        out.append((f"wgmma_tile64x64_persistent_{dt}", tiled_linear_case(
            dt, 300, 200, 520, "bm = 64, bn = 64, bk = 64, warps_m = 4, warps_n = 1, stages = 4"), dt, few,
            ["sm_90a"]))
        out.append((f"wgmma_conv_persistent_{dt}", conv_case("g", dt, "nhwc", 2, 32, 20, 20, 256, 3, p=1), dt, few))
        add("matmul_broadcast_nn", matmul_case(dt, [2, 1], [3], 70, 200, 96, False, False, act="silu"))
        add("matmul_broadcast_tt", matmul_case(dt, [2, 1], [3], 72, 200, 96, True, True))
        # Folded batches (a 2-D rhs) with a GeLU gradient reading a full-size
        # input in the epilogue: the heuristic's tile, and bn = 192 forced,
        # whose staged epilogue rows (24 threads of 8 columns) leave 16 of
        # 256 threads idle.
        fs, ws, os_ = [5, 77, 256], [256, 576], [5, 77, 576]
        tanh = "{activation = #fuse.activation<gelu_tanh>}"
        g = Graph("g")
        a, w, h = g.arg(fs, dt), g.arg(ws, dt), g.arg(os_, dt)
        v = g.op(f"fuse.matmul {a}, {w} : {t(fs, dt)}, {t(ws, dt)}")
        v = g.op(f"fuse.activation_grad {v}, {h} {tanh} : {t(os_, dt)}")
        add("matmul_fold_gelu_grad", g.text([(v, t(os_, dt))]))
        tile = "bm = 128, bn = 192, bk = 64, warps_m = 8, warps_n = 1, stages = 4"
        text = (f"func.func @g(%a: {t(fs, dt)}, %w: {t(ws, dt)}, %h: {t(os_, dt)}) -> {t(os_, dt)} {{\n"
                f"  %0 = fuse.kernel \"k0_matmul\"(%a, %w, %h) {{tile = #fuse.tile<{tile}>}}\n"
                f"      : ({t(fs, dt)}, {t(ws, dt)}, {t(os_, dt)}) -> {t(os_, dt)} {{\n"
                f"  ^bb0(%x: {t(fs, dt)}, %y: {t(ws, dt)}, %z: {t(os_, dt)}):\n"
                f"    %1 = fuse.matmul %x, %y : {t(fs, dt)}, {t(ws, dt)}\n"
                f"    %2 = fuse.activation_grad %1, %z {tanh} : {t(os_, dt)}\n"
                f"    fuse.yield %2 : {t(os_, dt)}\n  }}\n  return %0 : {t(os_, dt)}\n}}\n")
        out.append((f"wgmma_tile128x192_fold_gelu_grad_{dt}", text, dt, [], ["sm_90a"]))
        g = Graph("g")
        x = g.arg([2, 45, 96], dt)
        outs = []
        for n, act in ((64, "relu"), (128, "silu"), (192, "tanh")):
            w, bias = g.arg([n, 96], dt), g.arg([n], dt)
            v = g.op(f"fuse.linear {x}, {w}, {bias} : {t([2, 45, 96], dt)}, {t([n, 96], dt)}, {t([n], dt)}")
            outs.append((g.op(f"fuse.{act} {v} : {t([2, 45, n], dt)}"), t([2, 45, n], dt)))
        add("merged_linears", g.text(outs))
        add("conv_1x1_residual", conv_case("g", dt, "nhwc", 3, 64, 13, 11, 136, 1, residual=True))
        # Implicit GEMMs through im2col maps: two channel blocks, the second
        # partial (80 = 64 + 16); a 3x5 filter with padding and dilation
        # different along H and W (the corners' and offsets' axis order).
        add("conv_c80", conv_case("g", dt, "nhwc", 2, 80, 9, 11, 72, 3, p=1, act="silu"))
        g = Graph("g")
        x, w, bias = g.arg([2, 13, 17, 24], dt), g.arg([40, 3, 5, 24], dt), g.arg([40], dt)
        v = g.op(f"fuse.conv2d {x}, {w}, {bias} {{padding = array<i64: 1, 0, 2, 1>, dilation = array<i64: 1, 2>}}"
                 f" : {t([2, 13, 17, 24], dt)}, {t([40, 3, 5, 24], dt)}, {t([40], dt)}")
        v = g.op(f"fuse.relu {v} : {t([2, 12, 12, 40], dt)}")
        add("conv_asymmetric", g.text([(v, t([2, 12, 12, 40], dt))]))
        # Attention with its consumer warpgroups in turns (ping-pong), and
        # free-running with 64-key tiles: odd lengths, grouped heads, causal.
        for tag, shape, causal, tile in (
                ("pingpong_d64", (2, 4, 2, 130, 300, 64), False, "bm = 128, bn = 128, bk = 16, warps_n = 2"),
                ("pingpong_d128_causal", (1, 2, 1, 257, 257, 128), True, "bm = 128, bn = 128, bk = 16, warps_n = 2"),
                ("pingpong_k64_d96", (1, 3, 3, 77, 45, 96), False, "bm = 128, bn = 64, bk = 16, warps_n = 2"),
                ("free_k64_d64_causal", (2, 2, 1, 200, 200, 64), True, "bm = 128, bn = 64, bk = 16, warps_n = 1")):
            out.append((f"wgmma_attention_{tag}_{dt}", tiled_attention_case(dt, *shape, causal, tile), dt, [],
                        ["sm_90a"]))
    return out


def build_cases():
    cases = []

    def add(name, text, dtype, flags=(), archs=None):
        # Graphs that ask for deterministic gradients run twice and must
        # give the same bits.
        cases.append({"name": name, "mlir": text, "dtype": dtype, "flags": list(flags),
                      "archs": archs or [arch for arch, _ in ARCHS],
                      "identical": bool(re.search(r"\bdeterministic\b", text))})

    for dt in ("f32", "f16", "bf16"):
        for layout in ("nhwc", "nchw"):
            L = layout
            # Direct (narrow groups) and tiled (wide groups) convolutions.
            add(f"conv_small_{L}_{dt}", conv_case("g", dt, L, 1, 3, 17, 23, 5, 3, p=1), dt)
            add(f"conv_tiled_{L}_{dt}", conv_case("g", dt, L, 3, 19, 13, 11, 70, 3, s=2, p=1, bias=True), dt)
            add(f"conv_1x1_{L}_{dt}", conv_case("g", dt, L, 2, 40, 9, 7, 33, 1, act="relu6"), dt)
            add(f"conv_dilated_{L}_{dt}", conv_case("g", dt, L, 1, 16, 15, 14, 24, 3, p=2, d=2, act="gelu"), dt)
            add(f"conv_grouped_{L}_{dt}", conv_case("g", dt, L, 2, 12, 10, 9, 36, 3, p=1, g=3, act="silu"), dt)
            add(f"conv_depthwise_{L}_{dt}", conv_case("g", dt, L, 1, 7, 12, 13, 7, 3, s=2, p=1, g=7, act="hardswish"), dt)
            add(f"conv_residual_{L}_{dt}", conv_case("g", dt, L, 1, 20, 9, 9, 20, 3, p=1, residual=True), dt)
            add(f"maxpool_{L}_{dt}", pool_case("g", dt, L, "max_pool2d", 2, 5, 13, 11, 3, 2, 1), dt)
            add(f"avgpool_{L}_{dt}", pool_case("g", dt, L, "avg_pool2d", 1, 6, 9, 10, 3, 2, 1,
                                               ", count_include_pad = false"), dt)
        # Depthwise with channels in 16-byte vectors (and a bias).
        add(f"conv_dw_vector_{dt}", conv_case("g", dt, "nhwc", 2, 16, 11, 13, 16, 3, s=2, p=1, g=16,
                                              bias=True, act="relu6"), dt)
        # Pooling and resampling with a vector of channels per thread.
        add(f"maxpool_vector_{dt}", pool_case("g", dt, "nhwc", "max_pool2d", 2, 16, 13, 11, 3, 2, 1), dt)
        add(f"avgpool_vector_{dt}", pool_case("g", dt, "nhwc", "avg_pool2d", 1, 24, 9, 10, 3, 2, 1,
                                              ", count_include_pad = false"), dt)
        g = Graph("g")
        x = g.arg([2, 5, 7, 16], dt)
        u1 = g.op(f"fuse.upsample {x} {{scale = array<f64: 2.0, 2.0>}} : {t([2, 5, 7, 16], dt)}")
        u2 = g.op(f"fuse.upsample {x} {{mode = #fuse.upsample_mode<bilinear>, size = array<i64: 11, 13>}} : "
                  f"{t([2, 5, 7, 16], dt)}")
        # Bilinear 2x (a thread per 2 x 2 outputs, edges clamped), on a 1 x 1
        # image too, with a fused activation.
        y = g.arg([1, 1, 1, 8 if dt != "f32" else 4], dt)
        u3 = g.op(f"fuse.upsample {x} {{mode = #fuse.upsample_mode<bilinear>, scale = array<f64: 2.0, 2.0>}} : "
                  f"{t([2, 5, 7, 16], dt)}")
        u3 = g.op(f"fuse.silu {u3} : {t([2, 10, 14, 16], dt)}")
        yc = 8 if dt != "f32" else 4
        u4 = g.op(f"fuse.upsample {y} {{mode = #fuse.upsample_mode<bilinear>, size = array<i64: 2, 2>}} : "
                  f"{t([1, 1, 1, yc], dt)}")
        add(f"resample_vector_{dt}", g.text([(u1, t([2, 10, 14, 16], dt)), (u2, t([2, 11, 13, 16], dt)),
                                             (u3, t([2, 10, 14, 16], dt)), (u4, t([1, 2, 2, yc], dt))]), dt)
        # Stride 1, dilated, batch norm: pixels per thread share input columns.
        add(f"conv_dw_vector_s1_{dt}", conv_case("g", dt, "nhwc", 1, 24, 9, 10, 24, 3, p=2, d=2, g=24,
                                                 act="relu"), dt)
        # Big enough for the 128x64 (8x4 per thread) and 128x128 (8x8) tiles.
        add(f"conv_tile128x64_{dt}", conv_case("g", dt, "nhwc", 1, 8, 130, 131, 50, 3, p=1, act="relu"), dt)
        g = Graph("g")
        x = g.arg([66, 128, 24], dt)
        w_ = g.arg([130, 24], dt)
        v = g.op(f"fuse.linear {x}, {w_} : {t([66, 128, 24], dt)}, {t([130, 24], dt)}")
        v = g.op(f"fuse.silu {v} : {t([66, 128, 130], dt)}")
        add(f"linear_tile128x128_{dt}", g.text([(v, t([66, 128, 130], dt))]), dt)
        add(f"elementwise_{dt}", unary_chain_case("g", dt, [3, 5, 7], ["sigmoid", "tanh", "leaky_relu"], [7]), dt)
        # Normalisation, softmax, matrix products, attention, data movement.
        g = Graph("g")
        x = g.arg([3, 37, 50], dt)
        gm, bt = g.arg([50], dt), g.arg([50], dt)
        v = g.op(f"fuse.layer_norm {x} scale({gm} : {t([50], dt)}) shift({bt} : {t([50], dt)}) : {t([3, 37, 50], dt)}")
        v = g.op(f"fuse.gelu {v} {{approximate = #fuse.gelu_approx<tanh>}} : {t([3, 37, 50], dt)}")
        add(f"layer_norm_{dt}", g.text([(v, t([3, 37, 50], dt))]), dt)
        g = Graph("g")
        x = g.arg([5, 300], dt)
        r = g.arg([5, 300], dt)
        s_ = g.arg([300], dt)
        v = g.op(f"fuse.add {x}, {r} : {t([5, 300], dt)}, {t([5, 300], dt)}")
        v2 = g.op(f"fuse.rms_norm {v} scale({s_} : {t([300], dt)}) : {t([5, 300], dt)}")
        add(f"add_rms_norm_{dt}", g.text([(v2, t([5, 300], dt)), (v, t([5, 300], dt))]), dt)
        g = Graph("g")
        x = g.arg([4, 9, 6], dt)
        v = g.op(f"fuse.softmax {x} {{axis = 1}} : {t([4, 9, 6], dt)}")
        w_ = g.op(f"fuse.softmax {x} : {t([4, 9, 6], dt)}")
        add(f"softmax_{dt}", g.text([(v, t([4, 9, 6], dt)), (w_, t([4, 9, 6], dt))]), dt)
        g = Graph("g")
        x = g.arg([2, 33, 70], dt)
        w1, b1 = g.arg([129, 70], dt), g.arg([129], dt)
        w2 = g.arg([45, 129], dt)
        v = g.op(f"fuse.linear {x}, {w1}, {b1} : {t([2, 33, 70], dt)}, {t([129, 70], dt)}, {t([129], dt)}")
        v = g.op(f"fuse.gelu {v} : {t([2, 33, 129], dt)}")
        v = g.op(f"fuse.linear {v}, {w2} : {t([2, 33, 129], dt)}, {t([45, 129], dt)}")
        add(f"ffn_{dt}", g.text([(v, t([2, 33, 45], dt))]), dt)
        g = Graph("g")
        a = g.arg([2, 1, 21, 17], dt)
        b = g.arg([3, 67, 17], dt)
        v = g.op(f"fuse.matmul {a}, {b} {{transpose_rhs}} : {t([2, 1, 21, 17], dt)}, {t([3, 67, 17], dt)}")
        add(f"matmul_{dt}", g.text([(v, t([2, 3, 21, 67], dt))]), dt)
        # More batches than grid y/z take (65535): the grid folds into x
        # (SIMT GEMM: batch on z; tensor-core GEMM and attention: on y).
        if dt != "f16":
            g = Graph("g")
            a = g.arg([65537, 2, 3], dt)
            b = g.arg([65537, 3, 2], dt)
            v = g.op(f"fuse.matmul {a}, {b} : {t([65537, 2, 3], dt)}, {t([65537, 3, 2], dt)}")
            add(f"grid_fold_matmul_{dt}", g.text([(v, t([65537, 2, 2], dt))]), dt)
        if dt == "bf16":
            g = Graph("g")
            q = g.arg([1, 65537, 1, 8], dt)
            k = g.arg([1, 65537, 2, 8], dt)
            vv = g.arg([1, 65537, 2, 8], dt)
            o = g.op(f"fuse.attention {q}, {k}, {vv} : {t([1, 65537, 1, 8], dt)}, "
                     f"{t([1, 65537, 2, 8], dt)}, {t([1, 65537, 2, 8], dt)}")
            add(f"grid_fold_attention_{dt}", g.text([(o, t([1, 65537, 1, 8], dt))]), dt)
        g = Graph("g")
        q = g.arg([2, 4, 13, 16], dt)
        k = g.arg([2, 2, 19, 16], dt)
        vv = g.arg([2, 2, 19, 8], dt)
        m = g.arg([13, 19], dt)
        o1 = g.op(f"fuse.attention {q}, {k}, {vv}, {m} : {t([2, 4, 13, 16], dt)}, {t([2, 2, 19, 16], dt)}, "
                  f"{t([2, 2, 19, 8], dt)}, {t([13, 19], dt)}")
        o2 = g.op(f"fuse.attention {q}, {k}, {vv} {{causal, scale = 0.3}} : {t([2, 4, 13, 16], dt)}, "
                  f"{t([2, 2, 19, 16], dt)}, {t([2, 2, 19, 8], dt)}")
        add(f"attention_{dt}", g.text([(o1, t([2, 4, 13, 8], dt)), (o2, t([2, 4, 13, 8], dt))]), dt)
        g = Graph("g")
        x = g.arg([1, 3, 7, 6], dt)
        c_, s2 = g.arg([7, 3], dt), g.arg([7, 3], dt)
        r1 = g.op(f"fuse.rope {x}, {c_}, {s2} : {t([1, 3, 7, 6], dt)}, {t([7, 3], dt)}")
        r2 = g.op(f"fuse.rope {x}, {c_}, {s2} {{interleaved}} : {t([1, 3, 7, 6], dt)}, {t([7, 3], dt)}")
        tr = g.op(f"fuse.transpose {r2} {{permutation = array<i64: 0, 2, 1, 3>}} : {t([1, 3, 7, 6], dt)}")
        rs = g.op(f"fuse.reshape {tr} : {t([1, 7, 3, 6], dt)} to {t([7, 18], dt)}")
        add(f"rope_transpose_{dt}", g.text([(r1, t([1, 3, 7, 6], dt)), (rs, t([7, 18], dt))]), dt)
        g = Graph("g")
        x = g.arg([1, 5, 6, 3], dt)
        u1 = g.op(f"fuse.upsample {x} {{size = array<i64: 13, 11>}} : {t([1, 5, 6, 3], dt)}")
        u2 = g.op(f"fuse.upsample {x} {{mode = #fuse.upsample_mode<bilinear>, scale = array<f64: 2.0, 1.5>}} : "
                  f"{t([1, 5, 6, 3], dt)}")
        u3 = g.op(f"fuse.upsample {x} {{mode = #fuse.upsample_mode<bilinear>, size = array<i64: 9, 4>, "
                  f"align_corners}} : {t([1, 5, 6, 3], dt)}")
        gp = g.op(f"fuse.global_avg_pool {x} : {t([1, 5, 6, 3], dt)}")
        add(f"resample_{dt}", g.text([(u1, t([1, 13, 11, 3], dt)), (u2, t([1, 10, 9, 3], dt)),
                                      (u3, t([1, 9, 4, 3], dt)), (gp, t([1, 1, 1, 3], dt))]), dt)
    # Graph outputs that are inputs or repeat: the plan copies.
    g = Graph("g")
    x = g.arg([4, 6], "f32")
    v = g.op(f"fuse.relu {x} : {t([4, 6], 'f32')}")
    add("plan_copies_f32", g.text([(x, t([4, 6], "f32")), (v, t([4, 6], "f32")), (v, t([4, 6], "f32"))]), "f32")
    for dt in ("f32", "f16", "bf16"):
        add(f"views_{dt}", views_case(dt), dt)
        add(f"merged_linears_{dt}", merged_linears_case(dt), dt)
        add(f"channel_elementwise_{dt}", channel_elementwise_case(dt), dt)
        add(f"resident_rows_{dt}", resident_rows_case(dt), dt)
        add(f"streamed_rows_{dt}", streamed_rows_case(dt), dt)
        add(f"gather_{dt}", gather_case(dt), dt)
        add(f"gather_sliced_{dt}", sliced_gather_case(dt), dt)
    for case in gemm_cases() + wgmma_cases() + attention_cases() + cast_epilogue_cases():
        add(*case)
    # Training kernels: each family's cases in a module of its own
    # (training_cases_*.py beside this file), each a function cases(Graph, t)
    # returning (name, mlir, dtype[, flags[, archs]]) tuples.
    import glob
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    for path in sorted(glob.glob(os.path.join(here, "training_cases_*.py"))):
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for case in module.cases(Graph, t):
            add(*case)
    examples = os.path.join(here, "..", "..", "examples")
    for name, dt in (("resnet_block", "f32"), ("mobilenet_block", "f16"), ("transformer_block", "bf16"),
                     ("llama_block", "bf16"), ("unet_decoder", "f16")):
        with open(os.path.join(examples, name + ".mlir")) as f:
            add("example_" + name, f.read(), dt)
    return cases


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout}")
    return p.stdout


def graph_family(case):
    """The case's name without its dtype: the graph its dtype variants share."""
    return re.sub(r"_" + case["dtype"] + r"(?=_|$)", "", case["name"], count=1)


def select_cases(k, one_dtype=False):
    """The suite's cases whose name holds one of the comma-separated `k`.
    With `one_dtype`, one case per graph family: the dtype a stable hash of
    the family's name picks, so that a bounded run (CI's) still compiles
    every graph and, across families, every dtype."""
    keys = k.split(",") if k else []
    cases = [c for c in build_cases() if not keys or any(key in c["name"] for key in keys)]
    if not one_dtype:
        return cases
    families = {}
    for c in cases:
        families.setdefault(graph_family(c), []).append(c)
    picked = {id(v[zlib.crc32(f.encode()) % len(v)]) for f, v in families.items()}
    return [c for c in cases if id(c) in picked]


def hopper_redundant(path, arch, case):
    """True for a Hopper artifact that takes no Hopper-only instruction
    (warpgroup MMA, TMA): the sm_90 one already covers its code."""
    if arch == "sm_90" or "sm_90" not in case["archs"]:
        return False
    with open(path) as f:
        return not any(w in f.read() for w in HOPPER_ONLY)


def prepare(args):
    seed = args.seed if args.seed is not None else int(time.time()) % 100000
    rng = random.Random(seed)
    os.makedirs(args.out, exist_ok=True)
    manifest = {"seed": seed, "cases": []}
    cases = select_cases(args.k, args.one_dtype)
    for i, case in enumerate(cases):
        d = os.path.join(args.out, case["name"])
        os.makedirs(d, exist_ok=True)
        graph = os.path.join(d, "graph.mlir")
        with open(graph, "w") as f:
            f.write(case["mlir"])
        artifacts = {}
        for arch, name in ARCHS:
            if arch not in case["archs"]:
                continue
            ptx = os.path.join(d, name)
            run([args.fusec, graph, "-o", ptx, f"--arch={arch}"] + case["flags"])
            if hopper_redundant(ptx, arch, case):
                os.remove(ptx)
                continue
            if args.ptxas:
                run([args.ptxas, f"-arch={arch}", ptx, "-o", os.path.join(d, "kernel.cubin")])
                os.remove(os.path.join(d, "kernel.cubin"))
            artifacts[arch] = name
            if not args.cuda:
                continue
            # The same graph through the CUDA C backend (NVRTC compiles it
            # where it runs): both backends must give the same numbers.
            cu = ptx[:-len(".ptx")] + ".cu"
            run([args.fusec, graph, "-o", cu, f"--arch={arch}"] + case["flags"])
            artifacts[arch + ":cuda"] = os.path.basename(cu)
        case_seed = rng.randrange(1 << 30)
        run([args.fusec, "run", graph, "--device=cpu", f"--seed={case_seed}",
             "--output-dir=" + os.path.join(d, "ref")])
        inputs = sorted(f for f in os.listdir(os.path.join(d, "ref")) if f.startswith("input"))
        results = sorted(f for f in os.listdir(os.path.join(d, "ref")) if f.startswith("result"))
        manifest["cases"].append({"name": case["name"], "dtype": case["dtype"], "seed": case_seed,
                                  "inputs": len(inputs), "results": len(results), "artifacts": artifacts,
                                  "identical": case["identical"]})
        print(f"[{i + 1}/{len(cases)}] prepared {case['name']}", flush=True)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"{len(cases)} cases prepared in {args.out} (seed {seed})")


def nvrtc(args):
    import concurrent.futures
    cases = select_cases(args.k, args.one_dtype)
    jobs = []
    for case in cases:
        d = os.path.join(args.out, case["name"])
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "graph.mlir"), "w") as f:
            f.write(case["mlir"])
        jobs += [(case, arch, d) for arch, _ in ARCHS if arch in case["archs"]]

    def compile_one(job):
        case, arch, d = job
        cu = os.path.join(d, "kernel.cu" if arch == "sm_90" else f"kernel-{arch}.cu")
        run([args.fusec, os.path.join(d, "graph.mlir"), "-o", cu, f"--arch={arch}"] + case["flags"])
        if hopper_redundant(cu, arch, case):
            os.remove(cu)
            return None
        if not args.ptxas:
            run([args.nvrtc_check, cu])
            return cu
        ptx = cu[:-3] + ".nvrtc.ptx"
        run([args.nvrtc_check, cu, "--ptx=" + ptx])
        run([args.ptxas, f"-arch={arch}", ptx, "-o", ptx + ".cubin"])
        os.remove(ptx + ".cubin")
        return cu

    compiled, failures = 0, 0
    with concurrent.futures.ThreadPoolExecutor(args.j or os.cpu_count()) as pool:
        for job, future in zip(jobs, pool.map(lambda j: _catch(compile_one, j), jobs)):
            result, error = future
            if error:
                failures += 1
                print(f"FAILED {job[0]['name']}@{job[1]}: {error}", flush=True)
            elif result:
                compiled += 1
    print(f"{compiled} CUDA C artifacts of {len(cases)} cases compiled by NVRTC"
          + (" and checked by ptxas" if args.ptxas else "") + f", {failures} failed")
    return 1 if failures else 0


def _catch(fn, arg):
    try:
        return fn(arg), None
    except RuntimeError as e:
        return None, str(e)


def relerr(out, ref):
    import numpy as np
    out = out.astype(np.float64)
    ref = ref.astype(np.float64)
    if out.shape != ref.shape:
        return float("inf"), f"shape {out.shape} != {ref.shape}"
    if not np.isfinite(out).all() and np.isfinite(ref).all():
        return float("nan"), f"{int((~np.isfinite(out)).sum())} non-finite outputs"
    norm = np.linalg.norm(ref)
    return float(np.linalg.norm(out - ref) / (norm if norm else 1.0)), ""


def worst_relerr(results, d):
    """(the largest relerr of `results` against DIR/ref/result<i>.npy, why
    it is bad or "")."""
    import numpy as np
    worst, why = 0.0, ""
    for i, out in enumerate(results):
        e, w = relerr(out, np.load(os.path.join(d, "ref", f"result{i}.npy")))
        if not (e <= worst) or w:
            worst, why = e, w or why
    return worst, why


def differs_on_rerun(cmd, out, results, timeout):
    """Runs `cmd` (writing --output-dir=`out`) a second time: "" when every
    result has the first run's bytes, else what differs."""
    import numpy as np
    first = [np.load(os.path.join(out, f"result{i}.npy")) for i in range(results)]
    again = out + "-again"
    shutil.rmtree(again, ignore_errors=True)
    cmd = [again.join(c.rsplit(out, 1)) if c.startswith("--output-dir=") else c for c in cmd]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"the second run timed out after {timeout} s"
    if p.returncode != 0:
        return "the second run failed: " + (p.stdout.strip().splitlines() or ["?"])[-1]
    for i, a in enumerate(first):
        b = np.load(os.path.join(again, f"result{i}.npy"))
        if a.tobytes() != b.tobytes():
            n = int((a.view(np.uint8).reshape(a.size, -1) != b.view(np.uint8).reshape(b.size, -1))
                    .any(axis=1).sum())
            return f"result{i} differs on a second run in {n} of {a.size} elements"
    return ""


def run_suite(args):
    import numpy as np
    with open(os.path.join(args.cases, "manifest.json")) as f:
        manifest = json.load(f)
    rows, passed, failed = [], 0, 0
    runs = [(case, arch, artifact) for case in manifest["cases"]
            for arch, artifact in case.get("artifacts", {"sm_90": "kernel.ptx"}).items()]
    if args.k:
        runs = [r for r in runs if any(k in r[0]["name"] + "@" + r[1] for k in args.k.split(","))]
    def one(case, arch, artifact):
        d = os.path.join(args.cases, case["name"])
        name = case["name"] + ("" if arch == "sm_90" else "@" + arch)
        out = os.path.join(d, "gpu-" + arch.replace(":", "-"))
        # No result of an earlier artifact may pass for this one's.
        shutil.rmtree(out, ignore_errors=True)
        cmd = [args.runner, os.path.join(d, artifact), "--output-dir=" + out]
        cmd += [f"--input={os.path.join(d, 'ref', f'input{i}.npy')}" for i in range(case["inputs"])]
        if args.sanitize:
            # Any finding fails the run with this code; the report is the output.
            cmd = ["compute-sanitizer", "--tool", args.sanitize, "--error-exitcode", "86"] + cmd
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=args.timeout)
        except subprocess.TimeoutExpired:
            p = subprocess.CompletedProcess(cmd, 124, f"timed out after {args.timeout} s (a hang?)")
        if p.returncode != 0:
            lines = p.stdout.strip().splitlines()
            findings = [l for l in lines if l.startswith("=========") and "ERROR SUMMARY" not in l]
            why = (findings[:3] if p.returncode == 86 and findings else lines[-1:]) or ["runner failed"]
            worst, why = float("nan"), " | ".join(why)
        else:
            worst, why = worst_relerr([np.load(os.path.join(out, f"result{i}.npy"))
                                       for i in range(case["results"])], d)
            if case.get("identical") and not why:
                why = differs_on_rerun(cmd, out, case["results"], args.timeout)
                worst = float("nan") if why else worst
        return name, case["dtype"], worst, why

    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.j or 1) as pool:
        for name, dtype, worst, why in pool.map(lambda r: one(*r), runs):
            ok = worst <= TOLERANCE[dtype]
            passed, failed = passed + ok, failed + (not ok)
            rows.append({"case": name, "dtype": dtype, "relerr": worst, "ok": ok, "why": why})
            print(f"{'PASS' if ok else 'FAIL'} {name:<34} {dtype:<5} relerr={worst:.2e} "
                  f"(tol {TOLERANCE[dtype]:.0e}) {why}", flush=True)
    by_dtype = {}
    for r in rows:
        by_dtype[r["dtype"]] = max(by_dtype.get(r["dtype"], 0.0), r["relerr"]) if r["relerr"] == r["relerr"] else float("nan")
    print("worst relative error per dtype: " + ", ".join(f"{k} {v:.2e}" for k, v in sorted(by_dtype.items())))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seed": manifest["seed"], "rows": rows, "worst": by_dtype}, f, indent=1)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def run_jit(args):
    """Every case through the Python module and the JIT library, on this
    machine's GPU: each graph compiled for each of its architectures by both
    backends (PTX, and CUDA C through NVRTC), run on PyTorch tensors on the
    current stream, and compared with the CPU reference."""
    import concurrent.futures
    import numpy as np
    import torch
    import fusec
    with open(os.path.join(args.cases, "manifest.json")) as f:
        manifest = json.load(f)
    keys = args.k.split(",") if args.k else []
    jobs = [(case, arch, backend) for case in manifest["cases"]
            for arch in case.get("artifacts", {"sm_90": ""})
            if ":" not in arch and (not keys or any(k in case["name"] for k in keys))
            for backend in ("ptx", "cuda")]

    def compile_one(job):
        case, arch, backend = job
        with open(os.path.join(args.cases, case["name"], "graph.mlir")) as f:
            text = f.read()
        fp32 = "tf32" if case["dtype"] == "tf32" else "ieee"
        try:
            return fusec.compile(text, arch=arch, backend=backend, fp32_math=fp32,
                                 cache=False, name=case["name"]), ""
        except fusec.Error as e:
            return None, str(e).splitlines()[0]

    torch_dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    rows, passed, failed = [], 0, 0
    # Compilations release the GIL (ctypes), so they overlap on the CPUs.
    with concurrent.futures.ThreadPoolExecutor(args.j or os.cpu_count()) as pool:
        for job, (kernel, error) in zip(jobs, pool.map(compile_one, jobs)):
            case, arch, backend = job
            d = os.path.join(args.cases, case["name"])
            name = f"{case['name']}@{arch}:{backend}"
            worst, why = float("nan"), error
            if kernel is not None:
                try:
                    ins, outs = kernel.signature()
                    xs = [torch.from_numpy(np.load(os.path.join(d, "ref", f"input{i}.npy")))
                          .to(torch_dtype[dt]).cuda()
                          for i, (_, dt) in enumerate(ins)]
                    ys = kernel(*xs)
                    ys = ys if isinstance(ys, tuple) else (ys,)
                    kernel.synchronize(torch.cuda.current_stream().cuda_stream)
                    worst, why = worst_relerr([y.float().cpu().numpy() for y in ys], d)
                except (fusec.Error, TypeError, RuntimeError) as e:
                    worst, why = float("nan"), str(e).splitlines()[0]
            ok = worst <= TOLERANCE[case["dtype"]]
            passed, failed = passed + ok, failed + (not ok)
            rows.append({"case": name, "dtype": case["dtype"], "relerr": worst, "ok": ok,
                         "why": why, "compile_ms": kernel.milliseconds if kernel else None})
            print(f"{'PASS' if ok else 'FAIL'} {name:<44} {case['dtype']:<5} relerr={worst:.2e} "
                  f"(tol {TOLERANCE[case['dtype']]:.0e}) {why}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seed": manifest["seed"], "fusec": fusec.version(), "rows": rows}, f, indent=1)
    print(f"JIT API: {passed} passed, {failed} failed")
    return 1 if failed else 0


ONE_DTYPE_HELP = "one dtype of each graph (a stable pick per graph): CI's bounded run"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--fusec", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int)
    p.add_argument("--ptxas")
    p.add_argument("-k")
    p.add_argument("--cuda", action="store_true", help="CUDA C artifacts beside the PTX ones")
    p.add_argument("--one-dtype", action="store_true", help=ONE_DTYPE_HELP)
    n = sub.add_parser("nvrtc")
    n.add_argument("--fusec", required=True)
    n.add_argument("--nvrtc-check", required=True)
    n.add_argument("--out", required=True)
    n.add_argument("--ptxas")
    n.add_argument("-j", type=int)
    n.add_argument("-k")
    n.add_argument("--one-dtype", action="store_true", help=ONE_DTYPE_HELP)
    r = sub.add_parser("run")
    r.add_argument("--runner", required=True)
    r.add_argument("--cases", required=True)
    r.add_argument("--json")
    r.add_argument("--timeout", type=int, default=60, help="seconds an artifact may run")
    r.add_argument("-k", help="only artifacts whose CASE@ARCH holds one of these comma-separated substrings")
    r.add_argument("-j", type=int, help="artifacts run at once")
    r.add_argument("--sanitize", choices=["memcheck", "racecheck", "synccheck", "initcheck"],
                   help="run each artifact under compute-sanitizer's tool; a finding fails it")
    j = sub.add_parser("jit", help="every case through the Python module (needs fusec, torch)")
    j.add_argument("--cases", required=True)
    j.add_argument("--json")
    j.add_argument("-j", type=int, help="compilations at once")
    j.add_argument("-k")
    args = ap.parse_args()
    if args.cmd == "jit":
        return run_jit(args)
    if args.cmd == "prepare":
        prepare(args)
        return 0
    if args.cmd == "nvrtc":
        return nvrtc(args)
    return run_suite(args)


if __name__ == "__main__":
    sys.exit(main())
