"""fusec's training kernels against what a user would otherwise call, in one
process (issue 25's benchmarks; docs/TrainingBenchmarks.md).

  training.py prepare --fusec-opt FUSEC_OPT --out DIR
      On any machine with fusec-opt: writes the training graphs (the BN rows',
      the bottleneck's, the transformer blocks') to DIR and runs `fusec-opt
      -fusec-autodiff` on each, recording the bytes the forward saves for
      the backward (its remark) in DIR/saved.json. The GPU machine has no fusec-opt; `run` reads
      this file when the Python module does not report the bytes itself.
  training.py run [--quick] [--json OUT] [--prepared DIR] [-k SUBSTR[,...]]
      On a CUDA machine with PyTorch and the fusec module:
        (a) per-layer conv data gradient (dgrad) and weight gradient (wgrad)
            on the ResNet-50 layers of shared/bench/WORKLOADS.md, f16 and
            bf16, NHWC: torch.ops.aten.convolution_backward (cuDNN) against
            fusec's fuse.conv_transpose2d / fuse.conv2d_filter_grad kernels;
        (b) batch norm in training (and BN + ReLU), forward and backward, in
            TB/s against the device-to-device copy bandwidth measured in the
            same process: eager, torch.compile, fusec;
        (c) a ResNet-50 bottleneck training step (forward + backward) at
            batch 32 and 64: eager, torch.compile (default and
            reduce-overhead), a CUDA-graph replay of eager, and fusec;
        (d) the bytes saved between forward and backward: eager (counted
            through torch.autograd.graph.saved_tensors_hooks) against
            fusec's autodiff report;
        (f) the attention backward on WORKLOADS.md section 2's rows, causal
            and not: SDPA's backward with the cuDNN and flash backends
            against fuse.attention_grad (on fusec's forward's O and
            log-sum-exp).
        (g) forward + backward of transformer blocks, bf16: a ViT-B block
            (batch 8, 197 tokens) and a LLaMA-7B-shaped block (batch 1,
            2048 tokens), bench.py's graphs: eager, torch.compile (default
            and reduce-overhead), a CUDA-graph replay of eager, and fusec's
            training pair.
      Each row prints ratio = best alternative time / fusec time (above 1:
      fusec is faster) beside the fraction of the hardware ceiling fusec
      reaches. A row fusec cannot compile or run prints `n/a` and the reason;
      the script goes on. A table comes last.
  training.py run --device cpu --tiny
      The same logic on tiny shapes on the CPU (no CUDA graph, no
      torch.compile, no fusec kernels): what bench/test_training.py runs
      where PyTorch is installed.

The fusec side uses the Python module: fusec.compile(text) for single kernels
and fusec.compile(text, train=True) for a forward/backward pair, an object
with forward(*inputs) and backward(*output_grads) on torch tensors.

Timing (bench/bench.py's method, from bench/timing.py): CUDA events around `inner` back-to-back
calls, median of `reps` such measurements after a warm-up; the contenders of
a row take turns over rounds, each keeping its best median, with a short idle
before each turn; inputs rotate among copies when a row's tensors fit in L2.
Inputs are random, never zeros.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

import timing
from bench import BLOCKS, CONVS, LLAMA_BLOCKS, block_graph, llama_graph

# ResNet-50 layers of WORKLOADS.md section 1 (name, N, Cin, H, W, Cout, k,
# stride, pad, groups: bench.py's), and the batch-256 layers the issue
# quotes cuDNN at.
R50_LAYERS = [layer for layer in CONVS if layer[0].startswith("r50_")]
R50_N256 = [
    ("r50_c2_3x3_n256", 256, 64, 56, 56, 64, 3, 1, 1, 1),
    ("r50_c4_3x3_n256", 256, 256, 14, 14, 256, 3, 1, 1, 1),
]
QUICK_LAYERS = ("r50_c2_3x3", "r50_c2_1x1", "r50_c4_3x3")
CONV_DTYPES = ("f16", "bf16")
# Batch norm in training, NHWC (N, C, H, W): WORKLOADS.md section 6's shape
# (and section 3's batch 64 in --quick).
BN_SHAPES = [(256, 256, 56, 56)]
BN_QUICK = [(64, 256, 56, 56)]
BN_VARIANTS = ("bn", "bn_relu")
# Norm backward (issue 26): rows x D, bf16; the bar's shape is 16k x 4k.
NORM_SHAPES = [(16384, 4096)]
NORM_QUICK = [(4096, 4096)]
TINY_NORM = [(5, 17)]
NORM_KINDS = ("layer_norm", "rms_norm")
# The bottleneck of WORKLOADS.md section 5 (256 -> 64 -> 64 -> 256, identity
# shortcut, 56x56), bf16 activations and f32 BN parameters (AMP).
BLOCK = dict(cin=256, mid=64, hw=56)
BLOCK_BATCHES = (32, 64)
BLOCK_DTYPE = "bf16"
# --tiny (CPU logic check): shapes that run in well under a second.
TINY_LAYERS = [("tiny_3x3", 2, 8, 6, 6, 8, 3, 1, 1, 1), ("tiny_s2", 2, 3, 9, 9, 4, 3, 2, 1, 1)]
TINY_BN = [(2, 8, 4, 4)]
TINY_BLOCK = dict(cin=16, mid=4, hw=6)
TINY_BATCHES = (2,)

BYTES = {"f32": 4, "f16": 2, "bf16": 2}

# Attention backward (issue 26): WORKLOADS.md section 2's rows (batch, tokens,
# head dim), 16 heads, causal and not, bf16, against SDPA's backward per
# backend (cuDNN, flash) in the same process.
ATTN_SHAPES = [(16, 1024, 64), (4, 4096, 64), (4, 4096, 128), (1, 16384, 128)]
ATTN_QUICK = [(4, 4096, 128)]
TINY_ATTN = [(1, 33, 16)]
ATTN_HEADS, TINY_ATTN_HEADS = 16, 2
BN_MOMENTUM, BN_EPS = 0.1, 1e-5

# Transformer blocks, forward + backward (issue 26), bf16: bench.py's ViT-B
# row (pre-norm LayerNorm, no mask, no rope, tanh GeLU FFN with biases) and
# its LLaMA-7B-shaped row (RMSNorm, rope, causal, SiLU-gated FFN, no biases).
# (kind, name, batch, tokens, model dim, q heads, kv heads, head dim, FFN.)
_VIT_B = next(r for r in BLOCKS if r[0] == "block_vit_b")
assert _VIT_B[8:] == (False, False), "the ViT-B row: no causal mask, no rope"
TRANSFORMERS = [("vit",) + _VIT_B[:8], ("llama",) + next(r for r in LLAMA_BLOCKS if r[0] == "block_llama_7b")]
TINY_TRANSFORMERS = [("vit", "tiny_vit", 2, 9, 32, 2, 2, 16, 64), ("llama", "tiny_llama", 1, 16, 32, 2, 2, 16, 48)]
TRANSFORMER_DTYPE = "bf16"
# The rope tables: constants of the positions, not differentiated.
TRANSFORMER_CONSTANTS = ("cos", "sin")


# ----------------------------------------------------------------------------
# Graphs (fuse dialect text)
# ----------------------------------------------------------------------------

def t(shape, dt):
    return "tensor<" + "x".join(map(str, shape)) + "x" + dt + ">"


def conv_out(h, k, s, p):
    return (h + 2 * p - k) // s + 1


def conv_flops(n, ci, h, w, co, k, s, p, g):
    """WORKLOADS.md: 2*N*Ho*Wo*Co*(Ci/g)*Kh*Kw; dgrad and wgrad do as many."""
    return 2 * n * conv_out(h, k, s, p) * conv_out(w, k, s, p) * co * (ci // g) * k * k


def output_padding(h, k, s, p):
    """What conv_transpose2d adds to give back the forward's input size."""
    return h - ((conv_out(h, k, s, p) - 1) * s - 2 * p + k)


def dgrad_graph(layer, dt):
    """dx = conv_transpose2d(dy, w): the data gradient with the forward's
    filter as is ([Co, k, k, Ci/g], OHWI)."""
    name, n, ci, h, w, co, k, s, p, g = layer
    ho, wo = conv_out(h, k, s, p), conv_out(w, k, s, p)
    dy, f, dx = t([n, ho, wo, co], dt), t([co, k, k, ci // g], dt), t([n, h, w, ci], dt)
    attrs = [f"strides = array<i64: {s}, {s}>", f"padding = array<i64: {p}, {p}>"]
    oph, opw = output_padding(h, k, s, p), output_padding(w, k, s, p)
    if oph or opw:
        attrs.append(f"output_padding = array<i64: {oph}, {opw}>")
    if g != 1:
        attrs.append(f"groups = {g}")
    return (f"func.func @{name}_dgrad_{dt}(%dy: {dy}, %w: {f}) -> {dx} {{\n"
            f"  %0 = fuse.conv_transpose2d %dy, %w {{{', '.join(attrs)}}} : {dy}, {f}\n"
            f"  return %0 : {dx}\n}}\n")


def wgrad_graph(layer, dt):
    """dw = conv2d_filter_grad(x, dy): a reduction over N*Ho*Wo."""
    name, n, ci, h, w, co, k, s, p, g = layer
    ho, wo = conv_out(h, k, s, p), conv_out(w, k, s, p)
    x, dy, f = t([n, h, w, ci], dt), t([n, ho, wo, co], dt), t([co, k, k, ci // g], dt)
    attrs = [f"kernel = array<i64: {k}, {k}>", f"strides = array<i64: {s}, {s}>",
             f"padding = array<i64: {p}, {p}>"]
    if g != 1:
        attrs.append(f"groups = {g}")
    return (f"func.func @{name}_wgrad_{dt}(%x: {x}, %dy: {dy}) -> {f} {{\n"
            f"  %0 = fuse.conv2d_filter_grad %x, %dy {{{', '.join(attrs)}}} : {x}, {dy}\n"
            f"  return %0 : {f}\n}}\n")


def bn_tag(variant, shape, dt):
    return f"{variant}_train_{'x'.join(map(str, shape))}_{dt}"


def bn_train_graph(variant, shape, dt):
    """The forward a training step differentiates: batch norm with batch
    statistics (f32 parameters and statistics), then ReLU for bn_relu.
    Arguments x, running mean, running var, gamma, beta; result y (the
    running statistics are computed but only y is differentiated)."""
    n, c, h, w = shape
    x, cc = t([n, h, w, c], dt), t([c], "f32")
    body = [f"  %y, %m, %i, %rm, %rv = fuse.batch_norm_train %x, %rm0, %rv0, %g, %b : {x}, {cc}"]
    out = "%y"
    if variant == "bn_relu":
        body.append(f"  %r = fuse.relu %y : {x}")
        out = "%r"
    return (f"func.func @{bn_tag(variant, shape, dt)}(%x: {x}, %rm0: {cc}, %rv0: {cc}, %g: {cc}, %b: {cc}) -> {x} {{\n"
            + "\n".join(body) + f"\n  return {out} : {x}\n}}\n")


def bn_forward_kernel_graph(variant, shape, dt):
    """The forward as one graph with what a hand-written backward needs:
    y, saved mean and inverse std, new running mean and variance."""
    n, c, h, w = shape
    x, cc = t([n, h, w, c], dt), t([c], "f32")
    relu = f"  %r = fuse.relu %y : {x}\n" if variant == "bn_relu" else ""
    out = "%r" if variant == "bn_relu" else "%y"
    return (f"func.func @{bn_tag(variant, shape, dt)}_fwd(%x: {x}, %rm0: {cc}, %rv0: {cc}, %g: {cc}, %b: {cc})"
            f" -> ({x}, {cc}, {cc}, {cc}, {cc}) {{\n"
            f"  %y, %m, %i, %rm, %rv = fuse.batch_norm_train %x, %rm0, %rv0, %g, %b : {x}, {cc}\n{relu}"
            f"  return {out}, %m, %i, %rm, %rv : {x}, {cc}, {cc}, {cc}, {cc}\n}}\n")


def bn_backward_kernel_graph(variant, shape, dt):
    """The backward by hand: (dy[, y], x, mean, invstd, gamma) -> dx, dgamma,
    dbeta; bn_relu masks dy with the forward's output first."""
    n, c, h, w = shape
    x, cc = t([n, h, w, c], dt), t([c], "f32")
    args = [f"%dy: {x}"] + ([f"%y: {x}"] if variant == "bn_relu" else []) + \
        [f"%x: {x}", f"%m: {cc}", f"%i: {cc}", f"%g: {cc}"]
    body = []
    dy = "%dy"
    if variant == "bn_relu":
        body.append(f"  %d = fuse.activation_grad %dy, %y {{activation = #fuse.activation<relu>}} : {x}")
        dy = "%d"
    body.append(f"  %dx, %dg, %db = fuse.batch_norm_grad {dy}, %x, %m, %i, %g : {x}, {cc}")
    return (f"func.func @{bn_tag(variant, shape, dt)}_bwd({', '.join(args)}) -> ({x}, {cc}, {cc}) {{\n"
            + "\n".join(body) + f"\n  return %dx, %dg, %db : {x}, {cc}, {cc}\n}}\n")


def norm_grad_graph(kind, shape, dt):
    """fuse.norm_grad of a layer (or RMS) norm with a scale: dx, dscale,
    dshift (the RMS norm's dshift unused)."""
    rows, d = shape
    x, p = t([rows, d], dt), t([d], dt)
    eps = " {epsilon = 1.0e-6 : f64, rms}" if kind == "rms_norm" else ""
    return (f"func.func @{kind}_grad_{rows}x{d}_{dt}(%dy: {x}, %x: {x}, %g: {p}) -> ({x}, {p}, {p}) {{\n"
            f"  %0:3 = fuse.norm_grad %dy, %x scale(%g : {p}){eps} : {x}\n"
            f"  return %0#0, %0#1, %0#2 : {x}, {p}, {p}\n}}\n")


def block_tag(n, block, dt):
    return f"bottleneck_train_{block['cin']}_{block['mid']}_{block['hw']}_n{n}_{dt}"


BLOCK_CONVS = ("c1", "c2", "c3")


def block_convs(block):
    """(tag, Cin, Cout, k) of the bottleneck's convolutions."""
    cin, mid = block["cin"], block["mid"]
    return [("c1", cin, mid, 1), ("c2", mid, mid, 3), ("c3", mid, 4 * mid, 1)]


def bottleneck_train_graph(n, block, dt):
    """ResNet-50 bottleneck in training mode: 1x1 -> BN -> ReLU -> 3x3 -> BN
    -> ReLU -> 1x1 -> BN, + x, ReLU; NHWC, `dt` activations and filters, f32
    BN parameters and statistics. Arguments: x, then per convolution its
    filter (OHWI), running mean, running var, gamma, beta. Result: y."""
    hw = block["hw"]
    assert block["cin"] == 4 * block["mid"], "identity shortcut"
    args, body = [f"%x: {t([n, hw, hw, block['cin']], dt)}"], []
    src = "%x"
    for i, (tag, ci, co, k) in enumerate(block_convs(block)):
        xi, o, c, f = t([n, hw, hw, ci], dt), t([n, hw, hw, co], dt), t([co], "f32"), t([co, k, k, ci], dt)
        args += [f"%{tag}_w: {f}"] + [f"%{tag}_{p}: {c}" for p in ("rm", "rv", "g", "b")]
        pad = f" {{padding = array<i64: {k // 2}, {k // 2}>}}" if k > 1 else ""
        body.append(f"  %{tag}_c = fuse.conv2d {src}, %{tag}_w{pad} : {xi}, {f}")
        body.append(f"  %{tag}_n, %{tag}_m, %{tag}_i, %{tag}_nrm, %{tag}_nrv = fuse.batch_norm_train "
                    f"%{tag}_c, %{tag}_rm, %{tag}_rv, %{tag}_g, %{tag}_b : {o}, {c}")
        src = f"%{tag}_n"
        if i < 2:
            body.append(f"  %{tag}_r = fuse.relu {src} : {o}")
            src = f"%{tag}_r"
    o = t([n, hw, hw, 4 * block["mid"]], dt)
    body.append(f"  %s = fuse.add {src}, %x : {o}, {o}")
    body.append(f"  %y = fuse.relu %s : {o}")
    return (f"func.func @{block_tag(n, block, dt)}({', '.join(args)}) -> {o} {{\n"
            + "\n".join(body) + f"\n  return %y : {o}\n}}\n")


def block_flops(n, block):
    """Forward convolution FLOPs; a training step does three times as many
    (forward, dgrad, wgrad)."""
    hw = block["hw"]
    return sum(conv_flops(n, ci, hw, hw, co, k, 1, k // 2, 1) for _, ci, co, k in block_convs(block))


def train_graphs(quick=False, tiny=False):
    """(name, text) of every graph whose forward/backward pair runs."""
    out = []
    for shape in (TINY_BN if tiny else BN_QUICK if quick else BN_SHAPES):
        for dt in (("bf16",) if quick or tiny else ("f16", "bf16")):
            for v in BN_VARIANTS:
                out.append((bn_tag(v, shape, dt), bn_train_graph(v, shape, dt)))
    block = TINY_BLOCK if tiny else BLOCK
    for n in (TINY_BATCHES if tiny else BLOCK_BATCHES[:1] if quick else BLOCK_BATCHES):
        out.append((block_tag(n, block, BLOCK_DTYPE), bottleneck_train_graph(n, block, BLOCK_DTYPE)))
    for row, dt in transformer_rows(quick, tiny):
        out.append((transformer_tag(row, dt), transformer_graph(row, dt)))
    return out


def transformer_rows(quick=False, tiny=False):
    """(row, dtype) of the transformer blocks of (g); --quick keeps both."""
    if tiny:
        return [(r, "f32") for r in TINY_TRANSFORMERS]
    return [(r, TRANSFORMER_DTYPE) for r in TRANSFORMERS]


def transformer_tag(row, dt):
    return f"{row[1]}_train_{dt}"


def transformer_graph(row, dt):
    """The block's graph: bench.py's block_graph (ViT, no mask, no rope) or
    llama_graph, named after the row. Arguments: x, then the parameters in
    transformer_params' order; result: y."""
    kind, _, bsz, n, dm, hq, hkv, hd, ffn = row
    if kind == "vit":
        return block_graph(transformer_tag(row, dt), bsz, n, dm, hq, hkv, hd, ffn, False, False, dt)
    return llama_graph(transformer_tag(row, dt), bsz, n, dm, hq, hkv, hd, ffn, dt)


def transformer_flops(row):
    """The forward's FLOPs as bench.py counts them (the linears, and
    attention's two products, halved when causal); a training step does
    three times as many."""
    kind, _, bsz, n, dm, hq, hkv, hd, ffn = row
    if kind == "vit":
        return 2 * bsz * n * dm * (hq * hd + 2 * hkv * hd + hq * hd + 2 * ffn) + 4 * bsz * hq * n * n * hd
    return 2 * bsz * n * dm * (2 * hq * hd + 2 * hkv * hd + 3 * ffn) + 4 * bsz * hq * n * n * hd // 2


def attn_tag(shape, heads, causal, dt):
    b, n, d = shape
    return f"attn_{b}x{heads}x{n}x{d}{'_causal' if causal else ''}_{dt}"


def attention_graphs(shape, heads, causal, dt, deterministic=False):
    """(forward, backward) kernel graphs of one attention row: the training
    forward (O and the row log-sum-exp) and fuse.attention_grad (with
    `deterministic`, its bit-for-bit reproducible dQ)."""
    b, n, d = shape
    tag = attn_tag(shape, heads, causal, dt)
    x, lse = t([b, heads, n, d], dt), t([b, heads, n], "f32")
    attrs = ["causal"] if causal else []
    fwd_attr = " {" + ", ".join(["return_lse"] + attrs) + "}"
    bwd_attrs = attrs + (["deterministic"] if deterministic else [])
    bwd_attr = " {" + ", ".join(bwd_attrs) + "}" if bwd_attrs else ""
    fwd = (f"func.func @{tag}_fwd(%q: {x}, %k: {x}, %v: {x}) -> ({x}, {lse}) {{\n"
           f"  %o, %lse = fuse.attention %q, %k, %v{fwd_attr} : {x}, {x}, {x}\n"
           f"  return %o, %lse : {x}, {lse}\n}}\n")
    # The deterministic one named apart: both go into one module in the check.
    bwd_name = f"{tag}_bwd_det" if deterministic else f"{tag}_bwd"
    bwd = (f"func.func @{bwd_name}(%q: {x}, %k: {x}, %v: {x}, %o: {x}, %do: {x}, %lse: {lse}) -> "
           f"({x}, {x}, {x}) {{\n"
           f"  %dq, %dk, %dv = fuse.attention_grad %q, %k, %v, %o, %do, %lse{bwd_attr} : "
           f"{x}, {x}, {x}, {x}, {lse}\n"
           f"  return %dq, %dk, %dv : {x}, {x}, {x}\n}}\n")
    return fwd, bwd


def attention_rows(quick=False, tiny=False):
    """(shape, heads, dtype) of the attention rows."""
    if tiny:
        return [(s, TINY_ATTN_HEADS, "f32") for s in TINY_ATTN]
    return [(s, ATTN_HEADS, "bf16") for s in (ATTN_QUICK if quick else ATTN_SHAPES)]


def kernel_graphs(quick=False, tiny=False):
    """(name, text) of the single-kernel graphs of (a) and (b)."""
    out = []
    for layer in conv_layers(quick, tiny):
        for dt in conv_dtypes(quick):
            out.append((f"{layer[0]}_dgrad_{dt}", dgrad_graph(layer, dt)))
            out.append((f"{layer[0]}_wgrad_{dt}", wgrad_graph(layer, dt)))
    for shape in (TINY_BN if tiny else BN_QUICK if quick else BN_SHAPES):
        for dt in (("bf16",) if quick or tiny else ("f16", "bf16")):
            for v in BN_VARIANTS:
                out.append((bn_tag(v, shape, dt) + "_fwd", bn_forward_kernel_graph(v, shape, dt)))
                out.append((bn_tag(v, shape, dt) + "_bwd", bn_backward_kernel_graph(v, shape, dt)))
    for shape in (TINY_NORM if tiny else NORM_QUICK if quick else NORM_SHAPES):
        dt = "f32" if tiny else "bf16"
        for kind in NORM_KINDS:
            out.append((f"{kind}_grad_{shape[0]}x{shape[1]}_{dt}", norm_grad_graph(kind, shape, dt)))
    for shape, heads, dt in attention_rows(quick, tiny):
        for causal in (False, True):
            fwd, bwd = attention_graphs(shape, heads, causal, dt)
            det = attention_graphs(shape, heads, causal, dt, deterministic=True)[1]
            tag = attn_tag(shape, heads, causal, dt)
            out += [(tag + "_fwd", fwd), (tag + "_bwd", bwd), (tag + "_bwd_det", det)]
    return out


def conv_layers(quick=False, tiny=False):
    if tiny:
        return TINY_LAYERS
    if quick:
        return [l for l in R50_LAYERS if l[0] in QUICK_LAYERS]
    return R50_LAYERS + R50_N256


def conv_dtypes(quick=False):
    return ("bf16",) if quick else CONV_DTYPES


# ----------------------------------------------------------------------------
# fusec's autodiff report
# ----------------------------------------------------------------------------

SAVED_REMARK = re.compile(r"@([\w.$-]+): the forward saves (\d+) tensors? \((\d+) bytes\)")
TENSOR_TYPE = re.compile(r"tensor<((?:\d+x)*)(f32|f16|bf16|i1|i8|i32|i64)>")


def tensor_bytes(type_text):
    """Bytes of a ranked tensor type's text (tensor<2x3xbf16>)."""
    m = TENSOR_TYPE.fullmatch(type_text.strip())
    if not m:
        raise ValueError("not a tensor type: " + type_text)
    dims = [int(d) for d in m.group(1).split("x") if d]
    width = {"f32": 4, "f16": 2, "bf16": 2, "i1": 1, "i8": 1, "i32": 4, "i64": 8}[m.group(2)]
    return math.prod(dims) * width


def parse_autodiff(output):
    """What `fusec-opt -fusec-autodiff` printed (remarks and the module):
    {name: {saved_tensors, saved_bytes, forward_arg_bytes,
    forward_result_bytes}} per graph; forward_arg_bytes counts the forward's
    arguments the backward reads (fusec.forward_args), which eager saves too
    (the block's input and its weights); forward_result_bytes the graph's
    results it reads again instead of saving them (fusec.forward_results),
    which eager saves (the last ReLU's output)."""
    report = {}
    for name, count, nbytes in SAVED_REMARK.findall(output):
        report[name] = dict(saved_tensors=int(count), saved_bytes=int(nbytes))
    for m in re.finditer(r"func\.func @([\w.$-]+)_backward\((.*?)\)\s*(?:->|attributes)", output, re.S):
        name = m.group(1)
        types = TENSOR_TYPE.finditer(m.group(2))
        types = [tensor_bytes(x.group(0)) for x in types]
        tail = output[m.end():m.end() + 4000]
        def count(attr):
            m = re.search(r"fusec\.%s = array<i64(?::\s*([\d, ]*))?>" % attr, tail)
            return len([v for v in m.group(1).split(",") if v.strip()]) if m and m.group(1) else 0
        nargs, nresults = count("forward_args"), count("forward_results")
        entry = report.setdefault(name, {})
        entry["forward_arg_bytes"] = sum(types[:nargs])
        entry["forward_result_bytes"] = sum(types[nargs:nargs + nresults])
    return report


def run_autodiff(fusec_opt, text, timeout=600):
    """(report, error) of fusec-opt -fusec-autodiff on `text`."""
    try:
        r = subprocess.run([fusec_opt, "-fusec-autodiff", "-"], input=text, capture_output=True,
                           text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{fusec_opt}: {e}"
    if r.returncode != 0:
        return None, first_line(r.stderr) or f"exit {r.returncode}"
    return parse_autodiff(r.stderr + r.stdout), None


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    saved = {}
    graphs = dict(train_graphs() + train_graphs(quick=True) + train_graphs(tiny=True))
    for name, text in graphs.items():
        with open(os.path.join(args.out, name + ".mlir"), "w") as f:
            f.write(text)
        report, error = run_autodiff(args.fusec_opt, text)
        saved[name] = report.get(name, {"error": "no remark"}) if report else {"error": error}
        print(f"{name}: {saved[name]}", flush=True)
    with open(os.path.join(args.out, "saved.json"), "w") as f:
        json.dump(saved, f, indent=1, sort_keys=True)
    return 0


# ----------------------------------------------------------------------------
# Rows, n/a, the table
# ----------------------------------------------------------------------------

def first_line(text, limit=160):
    lines = [l.strip() for l in str(text).strip().splitlines() if l.strip()]
    line = lines[0] if lines else ""
    # fusec's diagnostics start with the location; the message is what helps.
    return line if len(line) <= limit else line[:limit - 3] + "..."


def reason(e):
    return f"{type(e).__name__}: {first_line(e)}"


def ratio(alternatives, fusec_ms):
    """best alternative / fusec, or None."""
    best = [v for v in alternatives if v]
    return min(best) / fusec_ms if best and fusec_ms else None


def bandwidth_cells(r):
    """A bandwidth row's eager, compile and fusec cells: TB/s (fraction
    of copy), or n/a."""
    cells = []
    for c in ("eager", "compile", "fusec"):
        tb = r.get(c + "_TBps")
        cells.append("%-11s" % ("n/a" if tb is None else "%.2f (%s)" % (tb, fmt(r.get(c + "_frac"), ".2f"))))
    return cells


def fmt(v, spec=".3f"):
    return "n/a" if v is None else format(v, spec)


class Report:
    def __init__(self, json_path=None):
        self.rows = []
        self.json = open(json_path, "w") if json_path else None

    def emit(self, **row):
        self.rows.append(row)
        line = json.dumps(row, sort_keys=False, default=str)
        print(line, flush=True)
        if self.json:
            self.json.write(line + "\n")
            self.json.flush()

    def close(self):
        if self.json:
            self.json.close()
            self.json = None

    def table(self):
        """The short table printed last (bench/gpu-session.sh shows it)."""
        out = ["== training benchmarks: ratio = best alternative / fusec (>1: fusec faster); "
               "frac = fusec against the ceiling"]
        ceil = next((r for r in self.rows if r.get("kind") == "ceilings"), None)
        if ceil:
            out.append("ceilings: copy %s TB/s, gemm bf16 %s / f16 %s TFLOP/s (%s)" % (
                fmt(ceil.get("copy_TBps"), ".2f"), fmt(ceil.get("gemm_bf16_TFLOPs"), ".0f"),
                fmt(ceil.get("gemm_f16_TFLOPs"), ".0f"), ceil.get("device", "")))
        conv = [r for r in self.rows if r.get("kind") == "conv_grad"]
        if conv:
            out.append("(a) conv gradients         dtype  cudnn_ms  fusec_ms  ratio  fusec_TFLOP/s  frac   note")
            for r in conv:
                out.append("    %-22s %-5s  %-8s  %-8s  %-5s  %-13s  %-5s  %s" % (
                    f"{r['layer']} {r['grad']}", r["dtype"], fmt(r.get("cudnn_ms")), fmt(r.get("fusec_ms")),
                    fmt(r.get("ratio"), ".2f"), fmt(r.get("fusec_TFLOPs"), ".0f"),
                    fmt(r.get("frac"), ".2f"), r.get("fusec_na", "") or
                    ("" if r.get("timing", "").startswith("CUDA graph") else r.get("timing", ""))))
            methods = sorted({r["timing"] for r in conv if r.get("timing", "").startswith("CUDA graph")})
            if methods:
                out.append("    timed as replays of a " + methods[0] + " (both contenders)")
            for grad in ("dgrad", "wgrad"):
                rs = [r.get("ratio") for r in conv if r["grad"] == grad and r.get("k") == 3]
                got = [x for x in rs if x]
                if got:
                    out.append("    %s 3x3: min ratio %.2f (bar 0.9), geomean %.2f (bar 1.0), %d/%d rows ran" % (
                        grad, min(got), math.exp(sum(map(math.log, got)) / len(got)), len(got), len(rs)))
                elif rs:
                    out.append(f"    {grad} 3x3: no fusec row ran")
        bn = [r for r in self.rows if r.get("kind") == "bn_train"]
        if bn:
            out.append("(b) BN training, TB/s (frac of copy)    eager       compile     fusec       ratio  note")
            for r in bn:
                cells = bandwidth_cells(r)
                out.append("    %-34s %s %s %s %-5s  %s" % (
                    f"{r['variant']} {r['pass']} {r['shape']} {r['dtype']}", *cells,
                    fmt(r.get("ratio"), ".2f"), r.get("fusec_na", "")))
            out.append("    bar: fusec at least 0.85 of copy, forward and backward (eager about 0.55)")
        nrm = [r for r in self.rows if r.get("kind") == "norm_grad"]
        if nrm:
            out.append("(e) norm backward, TB/s (frac of copy)  eager       compile     fusec       ratio  add(2r+1w)  note")
            for r in nrm:
                cells = bandwidth_cells(r)
                out.append("    %-34s %s %s %s %-5s  %-10s  %s" % (
                    f"{r['norm']} {r['shape']} {r['dtype']}", *cells, fmt(r.get("ratio"), ".2f"),
                    fmt(r.get("add_TBps"), ".2f"), r.get("fusec_na", "")))
            out.append("    bar: fusec at least 0.85 of copy on 16k x 4k rows, bf16 (bytes: dy, x read, dx written)")
        blk = [r for r in self.rows if r.get("kind") == "bottleneck_step"]
        if blk:
            out.append("(c) bottleneck step, ms    eager    compile  comp-ro  graph    fusec    ratio  frac   note")
            for r in blk:
                out.append("    %-22s %-8s %-8s %-8s %-8s %-8s %-5s  %-5s  %s" % (
                    f"n{r['batch']} {r['dtype']}", fmt(r.get("eager_ms")), fmt(r.get("compile_ms")),
                    fmt(r.get("compile_ro_ms")), fmt(r.get("graph_ms")), fmt(r.get("fusec_ms")),
                    fmt(r.get("ratio"), ".2f"), fmt(r.get("frac"), ".2f"), r.get("fusec_na", "")))
            out.append("    bar: ratio at least 1.3 (frac: 3x the forward conv FLOPs at the GEMM rate / fusec time)")
        att = [r for r in self.rows if r.get("kind") == "attention_grad"]
        if att:
            out.append("(f) attention backward, ms            cudnn    flash    fusec    ratio  TFLOP/s  frac   "
                       "det      ratio  same  note")
            for r in att:
                same = {True: "yes", False: "NO"}.get(r.get("det_identical"), "-")
                out.append("    %-34s %-8s %-8s %-8s %-5s  %-7s  %-5s  %-8s %-5s  %-4s  %s" % (
                    r["shape"] + (" causal" if r["causal"] else "") + " " + r["dtype"],
                    fmt(r.get("cudnn_ms")), fmt(r.get("flash_ms")), fmt(r.get("fusec_ms")),
                    fmt(r.get("ratio"), ".2f"), fmt(r.get("fusec_TFLOPs"), ".0f"), fmt(r.get("frac"), ".2f"),
                    fmt(r.get("fusec_det_ms")), fmt(r.get("det_ratio"), ".2f"), same,
                    " ".join(r.get(k, "") for k in ("fusec_na", "fusec_det_na") if r.get(k))))
            out.append("    bar: ratio (best SDPA backend / fusec) at least 1.0 on every row, causal and not;")
            out.append("         det (deterministic dQ, the same bits twice: same) at least 0.85")
        tfm = [r for r in self.rows if r.get("kind") == "transformer_step"]
        if tfm:
            out.append("(g) transformer block step, ms    eager    compile  comp-ro  graph    fusec    ratio  frac   "
                       "fusec-g  ratio  kernels  note")
            for r in tfm:
                kernels = ("%s+%s" % (r["fwd_kernels"], r["bwd_kernels"])
                           if r.get("fwd_kernels") is not None and r.get("bwd_kernels") is not None else "-")
                note = " ".join(x for x in (r.get("fusec_na", ""), (r.get("notes") or {}).get("fusec_graph", "")) if x)
                out.append("    %-30s %-8s %-8s %-8s %-8s %-8s %-5s  %-5s  %-8s %-5s  %-7s  %s" % (
                    f"{r['block']} {r['dtype']}", fmt(r.get("eager_ms")), fmt(r.get("compile_ms")),
                    fmt(r.get("compile_ro_ms")), fmt(r.get("graph_ms")), fmt(r.get("fusec_ms")),
                    fmt(r.get("ratio"), ".2f"), fmt(r.get("frac"), ".2f"), fmt(r.get("fusec_graph_ms")),
                    fmt(r.get("ratio_graph"), ".2f"), kernels, note))
            out.append("    bar: ratio at least 1.1 (kernels: fusec's forward + backward; frac: 3x the forward's "
                       "FLOPs at the GEMM rate / fusec time;")
            out.append("         fusec-g: fusec's step captured in a CUDA graph (torch.cuda.graph), its ratio beside)")
        saved = [r for r in self.rows if r.get("kind") == "saved_bytes"]
        if saved:
            out.append("(d) bytes saved fwd->bwd, MB          eager(all)  eager(interm.)  fusec(all)  fusec(interm.)  "
                       "eager/fusec  note")
            for r in saved:
                mb = lambda v: fmt(None if v is None else v / 1e6, ".1f")  # noqa: E731
                out.append("    %-34s %-11s %-15s %-11s %-15s %-12s %s" % (
                    r["graph"], mb(r.get("eager_bytes")), mb(r.get("eager_intermediate_bytes")),
                    mb(r.get("fusec_bytes")), mb(r.get("fusec_intermediate_bytes")),
                    fmt(r.get("ratio"), ".2f"), r.get("fusec_na", "")))
            out.append("    bar: fusec at most what eager saves (eager/fusec at least 1)")
        na = [r for r in self.rows if r.get("kind") == "skipped"]
        for r in na:
            out.append(f"skipped {r['what']}: {r['reason']}")
        return "\n".join(out)


# ----------------------------------------------------------------------------
# Running (needs PyTorch)
# ----------------------------------------------------------------------------

class Bench:
    """Timing and tensors on one device, in one process."""

    def __init__(self, torch, device, quick, budget_s):
        self.torch = torch
        self.device = device
        self.cuda = device.startswith("cuda")
        self.quick = quick
        self.t0 = time.time()
        self.budget_s = budget_s
        self.l2 = torch.cuda.get_device_properties(0).L2_cache_size if self.cuda else 1 << 20
        self.reps, self.inner, self.warm, self.rounds = (9, 5, 3, 2) if quick else (15, 10, 5, 3)
        if not self.cuda:
            self.reps, self.inner, self.warm, self.rounds = 3, 1, 1, 1

    def over_budget(self):
        return time.time() - self.t0 > self.budget_s

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def time(self, fns, reps=None, inner=None, warm=None):
        """Median ms per call of fns[i % len(fns)] called back to back."""
        reps, inner, warm = reps or self.reps, inner or self.inner, warm if warm is not None else self.warm
        return timing.median_ms(self.torch, fns, reps, inner, warm, cuda=self.cuda)

    def interleaved(self, contenders, **kw):
        """{name: best median ms or None} of {name: fns, or None (absent)},
        the contenders taking turns over rounds; a contender that raises is
        None, with the reason in errors[name]."""
        present = {name: fns for name, fns in contenders.items() if fns is not None}
        times, errors = timing.take_turns(present, lambda fns: self.time(fns, **kw), self.rounds, self.sync,
                                          idle_s=0.1 if self.cuda else 0, catch=True)
        return ({name: times.get(name) for name in contenders},
                {name: reason(e) for name, e in errors.items()})

    def copies(self, nbytes):
        """How many copies of a working set of `nbytes` rotate past L2."""
        return timing.copies(nbytes, self.l2) if self.cuda else 1

    def dtype(self, name):
        torch = self.torch
        return {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[name]

    def randn(self, *shape, dtype="f32", channels_last=False, scale=1.0):
        x = self.torch.randn(*shape, device=self.device, dtype=self.dtype(dtype) if isinstance(dtype, str)
                             else dtype) * scale
        return x.contiguous(memory_format=self.torch.channels_last) if channels_last else x


def relerr(out, ref):
    out, ref = out.double(), ref.double()
    if not bool(out.isfinite().all()):
        return float("nan")
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def nhwc(x):
    """The NHWC (or OHWI) view of a channels_last NCHW tensor: contiguous,
    what fusec's graphs take."""
    return x.permute(0, 2, 3, 1)


def nchw(x):
    """The NCHW view (channels_last memory) of an NHWC tensor."""
    return x.permute(0, 3, 1, 2)


class Fusec:
    """The fusec module, or why it is not there; kernels compiled once."""

    def __init__(self, bench, enabled=True):
        self.bench = bench
        self.module, self.why = None, None
        if not enabled:
            self.why = "fusec kernels need CUDA"
            return
        try:
            import fusec
            self.module = fusec
        except Exception as e:  # noqa: BLE001
            self.why = "import fusec: " + reason(e)

    def kernel(self, text):
        if self.module is None:
            raise RuntimeError(self.why)
        return self.module.compile(text)

    def train(self, text, wrt=None):
        """A forward/backward pair: fusec.compile(text, train=True), with
        `wrt` (argument positions) when given."""
        if self.module is None:
            raise RuntimeError(self.why)
        kw = {} if wrt is None else {"wrt": list(wrt)}
        try:
            step = self.module.compile(text, train=True, **kw)
        except TypeError as e:
            if "train" in str(e) or "wrt" in str(e):
                raise RuntimeError(f"fusec.compile(text, train=True{', wrt=...' if kw else ''}) is not in this "
                                   "fusec module") from None
            raise
        for attr in ("forward", "backward"):
            if not callable(getattr(step, attr, None)):
                raise RuntimeError(f"fusec.compile(train=True) gave an object without {attr}()")
        return step

    def tolerance(self, dt):
        try:
            return self.module.tolerance(dt)
        except Exception:  # noqa: BLE001
            return {"f32": 1e-4, "f16": 1e-2, "bf16": 3e-2}[dt]


def as_list(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def saved_bytes_attr(step):
    """The bytes fusec's training object says its forward saves, if it says."""
    for name in ("saved_bytes", "saved_nbytes", "bytes_saved"):
        v = getattr(step, name, None)
        if v is not None:
            return int(v() if callable(v) else v)
    report = getattr(step, "report", None)
    if isinstance(report, dict):
        for name in ("saved_bytes", "bytes_saved"):
            if name in report:
                return int(report[name])
    return None


# A kernel of a training artifact: `.entry fwd_k0_...` in PTX, `__global__
# void [__launch_bounds__(..)] bwd_k1_...` in CUDA C (docs/Training.md).
KERNEL_ENTRY = re.compile(r"(?:\.entry|__global__\s+void(?:\s+__launch_bounds__\([^)]*\))?)\s+(fwd|bwd)_")


def kernel_counts(step):
    """{fwd_kernels, bwd_kernels}: the kernels of the forward's and the
    backward's plans, counted in the training object's artifact (its code);
    {} where it shows none."""
    text = getattr(step, "artifact", None)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    found = KERNEL_ENTRY.findall(text) if isinstance(text, str) else []
    return dict(fwd_kernels=found.count("fwd"), bwd_kernels=found.count("bwd")) if found else {}


def measure_ceilings(b, rep):
    torch = b.torch
    row = dict(kind="ceilings")
    if b.cuda:
        p = torch.cuda.get_device_properties(0)
        row.update(device=p.name, sms=p.multi_processor_count, torch=torch.__version__,
                   cudnn=torch.backends.cudnn.version())
        x = torch.empty(2 << 30, device=b.device, dtype=torch.uint8)
        y = torch.empty_like(x)
        row["copy_TBps"] = 2 * x.numel() / b.time([lambda: y.copy_(x)], reps=7, inner=3) / 1e9
        del x, y
        n = 8192
        for name in ("bf16", "f16"):
            a, c = b.randn(n, n, dtype=name), b.randn(n, n, dtype=name)
            row[f"gemm_{name}_TFLOPs"] = 2 * n**3 / b.time([lambda: a @ c], reps=5, inner=3, warm=2) / 1e9
            del a, c
    else:
        row.update(device="cpu", torch=torch.__version__, copy_TBps=None, gemm_bf16_TFLOPs=None,
                   gemm_f16_TFLOPs=None)
    rep.emit(**row)
    return row


# Calls per CUDA graph when timing single kernels (run_conv_grads).
GRAPH_CALLS = 20


def graphed(torch, fns, count):
    """A replay of `count` calls of fns (in turn) captured in one CUDA
    graph (timing.cuda_graph: warmed up on a side stream first)."""
    calls = [fns[i % len(fns)] for i in range(count)]
    replay, _ = timing.cuda_graph(torch, lambda: [c() for c in calls])
    return replay


def run_conv_grads(b, fz, rep, ceil, layers, dtypes, keys):
    torch = b.torch
    for layer in layers:
        name, n, ci, h, w, co, k, s, p, g = layer
        for dt in dtypes:
            if not wanted(keys, f"{name}_dgrad_{dt}", f"{name}_wgrad_{dt}"):
                continue
            if b.over_budget():
                rep.emit(kind="skipped", what=f"{name} {dt}", reason="time budget spent")
                continue
            flops = conv_flops(n, ci, h, w, co, k, s, p, g)
            ho, wo = conv_out(h, k, s, p), conv_out(w, k, s, p)
            nbytes = (n * ci * h * w + n * co * ho * wo + co * ci // g * k * k) * BYTES[dt]
            sets = []
            for _ in range(b.copies(nbytes)):
                x = b.randn(n, ci, h, w, dtype=dt, channels_last=True)
                wt = b.randn(co, ci // g, k, k, dtype=dt, channels_last=True, scale=(ci // g * k * k) ** -0.5)
                dy = b.randn(n, co, ho, wo, dtype=dt, channels_last=True)
                sets.append((x, wt, dy))
            geo = ([s, s], [p, p], [1, 1], False, [0, 0], g)
            for grad, mask in (("dgrad", [True, False, False]), ("wgrad", [False, True, False])):
                row = dict(kind="conv_grad", layer=name, grad=grad, dtype=dt, k=k,
                           shape=f"{n}x{ci}x{h}x{w}->{co} k{k}s{s}p{p}g{g}", GFLOP=flops / 1e9)

                def cudnn(x, wt, dy, mask=mask):
                    return torch.ops.aten.convolution_backward(dy, x, wt, None, *geo, mask)

                alt = {"cudnn": [lambda st=st: cudnn(*st) for st in sets]}
                fusec_fns, check = None, None
                try:
                    if grad == "dgrad":
                        kern = fz.kernel(dgrad_graph(layer, dt))
                        outs = [torch.empty(n, h, w, ci, device=b.device, dtype=b.dtype(dt)) for _ in sets]
                        fusec_fns = [lambda st=st, o=o: kern(nhwc(st[2]), nhwc(st[1]), out=o)
                                     for st, o in zip(sets, outs)]
                    else:
                        kern = fz.kernel(wgrad_graph(layer, dt))
                        outs = [torch.empty(co, k, k, ci // g, device=b.device, dtype=b.dtype(dt)) for _ in sets]
                        fusec_fns = [lambda st=st, o=o: kern(nhwc(st[0]), nhwc(st[2]), out=o)
                                     for st, o in zip(sets, outs)]
                    check = outs[0]
                except Exception as e:  # noqa: BLE001
                    row["fusec_na"] = "n/a: " + reason(e)
                if fusec_fns:
                    try:
                        x, wt, dy = sets[0]
                        check.fill_(float("nan"))
                        fusec_fns[0]()
                        b.sync()
                        ref = torch.ops.aten.convolution_backward(dy.float(), x.float(), wt.float(), None, *geo,
                                                                  mask)[0 if grad == "dgrad" else 1]
                        row["relerr"] = relerr(nchw(check), ref)
                        if not row["relerr"] <= 4 * fz.tolerance(dt):
                            row["fusec_na"] = f"wrong: relerr {row['relerr']:.2e}"
                    except Exception as e:  # noqa: BLE001
                        row["fusec_na"] = "n/a: " + reason(e)
                        fusec_fns = None
                contenders = dict(alt, fusec=fusec_fns if "fusec_na" not in row else None)
                calls = 1
                if b.cuda:
                    # Each contender's calls replayed from a CUDA graph: a
                    # call from Python costs about 20 us of dispatch (aten's
                    # or fusec's), more than a batch-32 layer's kernels, so
                    # back-to-back calls would time the host.
                    try:
                        contenders = {name: fns and [graphed(torch, fns, GRAPH_CALLS)]
                                      for name, fns in contenders.items()}
                        calls = GRAPH_CALLS
                        row["timing"] = f"CUDA graph of {GRAPH_CALLS} calls"
                    except Exception as e:  # noqa: BLE001
                        row["timing"] = "back-to-back calls (capture failed: " + reason(e) + ")"
                times, errors = b.interleaved(contenders)
                times = {name: t / calls if t else t for name, t in times.items()}
                row["cudnn_ms"], row["fusec_ms"] = times["cudnn"], times["fusec"]
                if "fusec" in errors:
                    row["fusec_na"] = "n/a: " + errors["fusec"]
                if "cudnn" in errors:
                    row["cudnn_error"] = errors["cudnn"]
                row["cudnn_TFLOPs"] = flops / times["cudnn"] / 1e9 if times["cudnn"] else None
                row["fusec_TFLOPs"] = flops / times["fusec"] / 1e9 if times["fusec"] else None
                row["ratio"] = ratio([times["cudnn"]], times["fusec"])
                gemm = ceil.get(f"gemm_{dt}_TFLOPs")
                row["frac"] = row["fusec_TFLOPs"] / gemm if row["fusec_TFLOPs"] and gemm else None
                rep.emit(**row)
            del sets


def bn_eager_fn(torch, variant):
    F = torch.nn.functional

    def fwd(x, rm, rv, g, bb):
        y = F.batch_norm(x, rm, rv, g, bb, training=True, momentum=BN_MOMENTUM, eps=BN_EPS)
        return F.relu(y) if variant == "bn_relu" else y
    return fwd


def grad_step(torch, y, inputs, dy):
    return torch.autograd.grad(y, inputs, dy, retain_graph=True)


def run_bn(b, fz, rep, ceil, shapes, dtypes, keys):
    torch = b.torch
    for shape in shapes:
        n, c, h, w = shape
        for dt in dtypes:
            for variant in BN_VARIANTS:
                tag = bn_tag(variant, shape, dt)
                if not wanted(keys, tag):
                    continue
                if b.over_budget():
                    rep.emit(kind="skipped", what=tag, reason="time budget spent")
                    continue
                numel = n * c * h * w
                es = BYTES[dt]
                # Fewest bytes: forward reads x, writes y; backward reads dy
                # and x (the ReLU mask follows from x and the statistics),
                # writes dx. Per-channel vectors are negligible.
                min_bytes = {"fwd": 2 * numel * es, "bwd": 3 * numel * es}
                x = b.randn(n, c, h, w, dtype=dt, channels_last=True).requires_grad_()
                dy = b.randn(n, c, h, w, dtype=dt, channels_last=True)
                rm, rv = torch.zeros(c, device=b.device), torch.ones(c, device=b.device)
                g = (1 + 0.1 * b.randn(c)).requires_grad_()
                bb = (0.1 * b.randn(c)).requires_grad_()
                inputs = [x, g, bb]
                fwd = bn_eager_fn(torch, variant)
                fns = {"eager": fwd}
                if b.cuda:
                    try:
                        fns["compile"] = torch.compile(fwd)
                    except Exception as e:  # noqa: BLE001
                        fns["compile"] = None
                        rep.emit(kind="skipped", what=f"{tag} torch.compile", reason=reason(e))
                contenders = {"fwd": {}, "bwd": {}}
                notes = {}
                for name, f in fns.items():
                    if f is None:
                        continue
                    contenders["fwd"][name] = [lambda f=f: f(x, rm, rv, g, bb)]
                    try:
                        # The backward's graph: one forward on running
                        # statistics of its own, then the backward alone
                        # again and again (retain_graph). A CUDA batch norm
                        # saves the running statistics for its backward and
                        # bumps their version when it updates them: on the
                        # forward contender's rm/rv, every timed forward
                        # would make this graph's backward refuse to run.
                        y = f(x, rm.clone(), rv.clone(), g, bb)
                        for _ in range(2):  # repeatable (retain_graph)?
                            grad_step(torch, y, inputs, dy)
                        contenders["bwd"][name] = [lambda y=y: grad_step(torch, y, inputs, dy)]
                    except Exception as e:  # noqa: BLE001 - retain_graph refused: time fwd+bwd
                        notes[name] = "bwd = (fwd+bwd) - fwd: " + reason(e)
                        contenders["bwd"][name + "_step"] = [
                            lambda f=f: grad_step(torch, f(x, rm, rv, g, bb), inputs, dy)]
                # fusec: the forward/backward pair of the training graph.
                fusec_na = None
                xs, dys = nhwc(x.detach()), nhwc(dy)
                try:
                    step = fz.train(bn_train_graph(variant, shape, dt))
                    args = (xs, rm.clone(), rv.clone(), g.detach(), bb.detach())
                    out = as_list(step.forward(*args))
                    ref = fwd(x.detach(), rm.clone(), rv.clone(), g.detach(), bb.detach())
                    e_fwd = relerr(nchw(out[0]), ref)
                    grads = as_list(step.backward(dys))
                    b.sync()
                    ref_dx = grad_step(torch, fwd(x, rm.clone(), rv.clone(), g, bb), [x], dy)[0]
                    e_bwd = relerr(nchw(grads[0]), ref_dx)
                    tol = 4 * fz.tolerance(dt)
                    if not (e_fwd <= tol and e_bwd <= tol):
                        fusec_na = f"wrong: relerr fwd {e_fwd:.2e} bwd {e_bwd:.2e}"
                    else:
                        contenders["fwd"]["fusec"] = [lambda: step.forward(*args)]
                        try:  # backward again after one forward?
                            step.backward(dys)
                            contenders["bwd"]["fusec"] = [lambda: step.backward(dys)]
                        except Exception as e:  # noqa: BLE001
                            notes["fusec"] = "bwd = (fwd+bwd) - fwd: " + reason(e)
                            contenders["bwd"]["fusec_step"] = [lambda: (step.forward(*args), step.backward(dys))]
                except Exception as e:  # noqa: BLE001
                    fusec_na = "n/a: " + reason(e)
                # fusec's single kernels (pure BN only): the hand-written pair.
                try:
                    kf = fz.kernel(bn_forward_kernel_graph(variant, shape, dt))
                    kb = fz.kernel(bn_backward_kernel_graph(variant, shape, dt))
                    args = (xs, rm.clone(), rv.clone(), g.detach(), bb.detach())
                    fo = as_list(kf(*args))
                    bargs = (dys,) + ((fo[0],) if variant == "bn_relu" else ()) + (xs, fo[1], fo[2], g.detach())
                    bo = as_list(kb(*bargs))
                    contenders["fwd"]["fusec_kernels"] = [lambda: kf(*args, out=fo)]
                    contenders["bwd"]["fusec_kernels"] = [lambda: kb(*bargs, out=bo)]
                except Exception as e:  # noqa: BLE001
                    notes["fusec_kernels"] = "n/a: " + reason(e)
                times = {}
                for pas in ("fwd", "bwd"):
                    times[pas], errors = b.interleaved(contenders[pas])
                    for k_, v in errors.items():
                        notes[f"{k_} {pas}"] = v
                for name in list(times["bwd"]):
                    if name.endswith("_step"):
                        base = name[:-5]
                        st, fw = times["bwd"].pop(name), times["fwd"].get(base)
                        times["bwd"][base] = st - fw if st and fw else None
                for pas in ("fwd", "bwd"):
                    t_ = times[pas]
                    fus = [v for v in (t_.get("fusec"), t_.get("fusec_kernels")) if v]
                    fusec_ms = min(fus) if fus else None
                    row = dict(kind="bn_train", variant=variant, **{"pass": pas}, shape="x".join(map(str, shape)),
                               dtype=dt, min_bytes=min_bytes[pas])
                    copy = ceil.get("copy_TBps")
                    for name, ms in (("eager", t_.get("eager")), ("compile", t_.get("compile")),
                                     ("fusec", fusec_ms)):
                        row[name + "_ms"] = ms
                        row[name + "_TBps"] = min_bytes[pas] / ms / 1e9 if ms else None
                        row[name + "_frac"] = row[name + "_TBps"] / copy if ms and copy else None
                    row["fusec_pair_ms"], row["fusec_kernels_ms"] = t_.get("fusec"), t_.get("fusec_kernels")
                    row["ratio"] = ratio([t_.get("eager"), t_.get("compile")], fusec_ms)
                    if fusec_ms is None:
                        row["fusec_na"] = fusec_na or notes.get("fusec_kernels") or "n/a"
                    elif fusec_na:
                        row["fusec_pair_na"] = fusec_na
                    if notes:
                        row["notes"] = notes
                    rep.emit(**row)
                del x, dy


def run_norm(b, fz, rep, ceil, shapes, dtypes, keys):
    """Layer and RMS norm backward: what loss.backward() runs for
    F.layer_norm / F.rms_norm in eager and under torch.compile (Inductor
    generates the backward of the compiled forward), against fusec's
    fuse.norm_grad kernel (dx, dscale, dshift). Fewest bytes: dy and x read,
    dx written."""
    torch = b.torch
    F = torch.nn.functional
    for shape in shapes:
        rows, d = shape
        for dt in dtypes:
            for kind in NORM_KINDS:
                tag = f"{kind}_grad_{rows}x{d}_{dt}"
                if not wanted(keys, tag):
                    continue
                if b.over_budget():
                    rep.emit(kind="skipped", what=tag, reason="time budget spent")
                    continue
                es = BYTES[dt]
                min_bytes = 3 * rows * d * es
                x = b.randn(rows, d, dtype=dt).requires_grad_()
                dy = b.randn(rows, d, dtype=dt)
                w = (1 + 0.1 * b.randn(d, dtype=dt)).requires_grad_()
                bias = (0.1 * b.randn(d, dtype=dt)).requires_grad_()
                if kind == "layer_norm":
                    inputs = [x, w, bias]
                    fwd = lambda x, w, bias: F.layer_norm(x, (d,), w, bias, 1e-5)  # noqa: E731
                else:
                    inputs = [x, w]
                    fwd = lambda x, w, bias: F.rms_norm(x, (d,), w, 1e-6)  # noqa: E731
                fns = {"eager": fwd}
                if b.cuda:
                    try:
                        fns["compile"] = torch.compile(fwd)
                    except Exception as e:  # noqa: BLE001
                        rep.emit(kind="skipped", what=f"{tag} torch.compile", reason=reason(e))
                contenders, notes = {}, {}
                for name, f in fns.items():
                    try:
                        y = f(x, w, bias)
                        for _ in range(2):
                            grad_step(torch, y, inputs, dy)
                        contenders[name] = [lambda y=y: grad_step(torch, y, inputs, dy)]
                    except Exception as e:  # noqa: BLE001
                        notes[name] = "n/a: " + reason(e)
                fusec_na = None
                try:
                    k = fz.kernel(norm_grad_graph(kind, shape, dt))
                    args = (dy, x.detach(), w.detach())
                    out = as_list(k(*args))
                    ref = grad_step(torch, fwd(x, w, bias), inputs, dy)
                    errs = [relerr(out[0], ref[0]), relerr(out[1], ref[1])]
                    if kind == "layer_norm":
                        errs.append(relerr(out[2], ref[2]))
                    tol = 4 * fz.tolerance(dt)
                    if max(errs) > tol:
                        fusec_na = "wrong: relerr " + " ".join(f"{e:.2e}" for e in errs)
                    else:
                        contenders["fusec"] = [lambda: k(*args, out=out)]
                except Exception as e:  # noqa: BLE001
                    fusec_na = "n/a: " + reason(e)
                # The same traffic without arithmetic (two tensors read, one
                # written): what the memory system gives this pattern.
                acc_out = torch.empty_like(dy)
                contenders["add"] = [lambda: torch.add(dy, x.detach(), out=acc_out)]
                times, errors = b.interleaved(contenders)
                notes.update(errors)
                row = dict(kind="norm_grad", norm=kind, shape=f"{rows}x{d}", dtype=dt, min_bytes=min_bytes)
                if times.get("add"):
                    row["add_ms"] = times["add"]
                    row["add_TBps"] = min_bytes / times["add"] / 1e9
                copy = ceil.get("copy_TBps")
                for name in ("eager", "compile", "fusec"):
                    ms = times.get(name)
                    row[name + "_ms"] = ms
                    row[name + "_TBps"] = min_bytes / ms / 1e9 if ms else None
                    row[name + "_frac"] = row[name + "_TBps"] / copy if ms and copy else None
                row["ratio"] = ratio([times.get("eager"), times.get("compile")], times.get("fusec"))
                if fusec_na:
                    row["fusec_na"] = fusec_na
                if notes:
                    row["notes"] = notes
                rep.emit(**row)
                del x, dy


def run_attention(b, fz, rep, ceil, rows, keys):
    """(f): SDPA's backward per backend (torch.autograd.grad of its output,
    the backend its forward ran) against fusec's fuse.attention_grad kernel
    on fusec's own forward's O and log-sum-exp, checked against SDPA's
    gradients first; and the same with its deterministic dQ (`fusec_det`),
    which must also give the same bits twice. FLOPs: 2.5 x the forward's
    4 B H N^2 D (halved causal)."""
    torch = b.torch
    F = torch.nn.functional
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = ([("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)]
                if b.cuda else [("math", SDPBackend.MATH)])
    for shape, heads, dt in rows:
        for causal in (False, True):
            tag = attn_tag(shape, heads, causal, dt)
            if not wanted(keys, tag, "attention"):
                continue
            if b.over_budget():
                rep.emit(kind="skipped", what=tag, reason="time budget spent")
                continue
            bsz, n, d = shape
            q, k, v = [b.randn(bsz, heads, n, d, dtype=dt).requires_grad_() for _ in range(3)]
            do = b.randn(bsz, heads, n, d, dtype=dt)
            flops = 2.5 * 4 * bsz * heads * n * n * d * (0.5 if causal else 1)
            contenders, notes, ref = {}, {}, None
            for name, backend in backends:
                try:
                    with sdpa_kernel(backend):
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    grads = torch.autograd.grad(o, (q, k, v), do, retain_graph=True)
                    ref = ref or grads
                    contenders[name] = [lambda o=o: torch.autograd.grad(o, (q, k, v), do, retain_graph=True)]
                except Exception as e:  # noqa: BLE001
                    notes[name] = "n/a: " + reason(e)
            fusec_na, identical = {}, None
            try:
                fwd_text, bwd_text = attention_graphs(shape, heads, causal, dt)
                det_text = attention_graphs(shape, heads, causal, dt, deterministic=True)[1]
                fwd = fz.kernel(fwd_text)
                qd, kd, vd = q.detach(), k.detach(), v.detach()
                o_f, lse_f = as_list(fwd(qd, kd, vd))
                args = (qd, kd, vd, o_f, do, lse_f)
                for name, text in (("fusec", bwd_text), ("fusec_det", det_text)):
                    bwd = fz.kernel(text)
                    out = as_list(bwd(*args))
                    if ref is None:
                        fusec_na[name] = "no SDPA gradient to check against"
                        continue
                    errs = [relerr(a, r) for a, r in zip(out, ref)]
                    if max(errs) > 4 * fz.tolerance(dt):
                        fusec_na[name] = "wrong: relerr " + " ".join(f"{e:.2e}" for e in errs)
                        continue
                    if name == "fusec_det":
                        again = as_list(bwd(*args))
                        identical = all(torch.equal(a.contiguous().view(torch.uint8), c.contiguous().view(torch.uint8))
                                        for a, c in zip(out, again))
                    contenders[name] = [lambda bwd=bwd, out=out: bwd(*args, out=out)]
            except Exception as e:  # noqa: BLE001
                fusec_na.setdefault("fusec", "n/a: " + reason(e))
            times, errors = b.interleaved(contenders)
            notes.update(errors)
            row = dict(kind="attention_grad", shape=f"{bsz}x{heads}x{n}x{d}", causal=causal, dtype=dt,
                       flops=flops)
            for name in ("cudnn", "flash", "math", "fusec", "fusec_det"):
                if name in times:
                    row[name + "_ms"] = times[name]
            fusec_ms = times.get("fusec")
            alternatives = [times.get(name) for name, _ in backends]
            row["ratio"] = ratio(alternatives, fusec_ms)
            row["det_ratio"] = ratio(alternatives, times.get("fusec_det"))
            row["det_identical"] = identical
            row["fusec_TFLOPs"] = flops / fusec_ms / 1e9 if fusec_ms else None
            peak = ceil.get("gemm_bf16_TFLOPs") if dt == "bf16" else None
            row["frac"] = row["fusec_TFLOPs"] / peak if row["fusec_TFLOPs"] and peak else None
            for name, why in fusec_na.items():
                row[name + "_na"] = why
            if notes:
                row["notes"] = notes
            rep.emit(**row)
            del q, k, v, do


def make_bottleneck(torch, block, dt, device):
    """The eager block, an nn.Module in training mode: channels_last, `dt`
    convolutions, f32 batch norm (AMP's types)."""
    nn, F = torch.nn, torch.nn.functional

    class Bottleneck(nn.Module):
        def __init__(self):
            super().__init__()
            self.convs, self.bns = nn.ModuleList(), nn.ModuleList()
            for _, ci, co, k in block_convs(block):
                self.convs.append(nn.Conv2d(ci, co, k, padding=k // 2, bias=False))
                bn = nn.BatchNorm2d(co, momentum=BN_MOMENTUM, eps=BN_EPS)
                with torch.no_grad():
                    bn.weight.uniform_(0.5, 1.5)
                    bn.bias.uniform_(-0.2, 0.2)
                self.bns.append(bn)

        def forward(self, x):
            h = x
            for i in range(3):
                h = self.bns[i](self.convs[i](h))
                if i < 2:
                    h = F.relu(h)
            return F.relu(h + x)

        def fusec_args(self, x):
            """x and per conv: filter (OHWI), running mean, running var,
            gamma, beta; what bottleneck_train_graph takes."""
            args = [nhwc(x.detach())]
            for conv, bn in zip(self.convs, self.bns):
                args += [nhwc(conv.weight.detach()), bn.running_mean.clone(), bn.running_var.clone(),
                         bn.weight.detach(), bn.bias.detach()]
            return args

    m = Bottleneck().to(device)
    m.convs.to(dtype=dt, memory_format=torch.channels_last)
    return m.train()


def eager_saved_bytes(torch, fn, inputs, params, dy):
    """Bytes the forward of fn(*inputs) saves for its backward, counted with
    saved_tensors_hooks: each storage once; 'intermediate' leaves out the
    storages of the inputs and parameters (which exist anyway). Also the
    reference: the result (detached) and the gradients of inputs and params
    for `dy`; no autograd graph of this forward outlives the call (its
    AccumulateGrad nodes would break a later CUDA-graph capture:
    timing.cuda_graph)."""
    seen = {}

    def pack(t_):
        try:
            st = t_.untyped_storage()
            key, nbytes = st.data_ptr(), st.nbytes()
        except Exception:  # noqa: BLE001 - a tensor without storage (a view of a wrapper)
            key, nbytes = id(t_), t_.numel() * t_.element_size()
        seen[key] = max(seen.get(key, 0), nbytes)
        return t_

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t_: t_):
        y = fn(*inputs)
    own = set()
    for p in list(inputs) + list(params):
        try:
            own.add(p.untyped_storage().data_ptr())
        except Exception:  # noqa: BLE001
            pass
    total = sum(seen.values())
    inter = sum(v for k, v in seen.items() if k not in own)
    grads = torch.autograd.grad(y, list(inputs) + list(params), dy)
    return total, inter, len(seen), y.detach(), grads


def finish_step_row(rep, row, flops, gemm_TFLOPs, fusec_na, errors, notes):
    """Completes and emits a step row holding eager_ms, compile_ms,
    compile_ro_ms, graph_ms and fusec_ms: the ratio (best alternative /
    fusec), the FLOPs' floor at the GEMM rate and fusec's fraction of it,
    why fusec has no time, the notes."""
    alternatives = [row.get(k + "_ms") for k in ("eager", "compile", "compile_ro", "graph")]
    row["ratio"] = ratio(alternatives, row["fusec_ms"])
    if row.get("fusec_graph_ms"):
        row["ratio_graph"] = ratio(alternatives, row["fusec_graph_ms"])
    row["GFLOP"] = flops / 1e9
    row["floor_ms"] = flops / gemm_TFLOPs / 1e9 if gemm_TFLOPs else None
    row["frac"] = row["floor_ms"] / row["fusec_ms"] if row["floor_ms"] and row["fusec_ms"] else None
    if row["fusec_ms"] is None:
        row["fusec_na"] = fusec_na or ("n/a: " + errors["fusec"] if "fusec" in errors else "n/a")
    if notes:
        row["notes"] = notes
    rep.emit(**row)


def grads_by_name(grads, names, wrt_names):
    """{name: gradient} of a training step's backward, which returns one
    gradient per argument (None for the rope tables) or one per `wrt`."""
    return dict(zip(names, grads)) if len(grads) == len(names) else dict(zip(wrt_names, grads))


def add_fusec_graph(b, step, args, dy, ref, names, wrt_names, contenders, notes):
    """fusec's step (forward, then backward) captured in a CUDA graph the
    way a user would with torch.cuda.graph, into `contenders` as
    "fusec_graph" once a replay's gradients match `ref` (eager's): what is
    left of fusec's time without the host's launches."""
    torch = b.torch
    try:
        replay, (_, grads) = timing.cuda_graph(torch, lambda: (step.forward(*args), step.backward(dy)))
        replay()
        b.sync()
        grads = as_list(grads)
        got = grads_by_name(grads, names, wrt_names)
        worst = max(relerr(got[k], ref[k]) for k in ("x", "wq"))
        if worst > 0.05:
            notes["fusec_graph"] = f"wrong after replay: relerr {worst:.2e}"
        else:
            contenders["fusec_graph"] = [replay]
    except Exception as e:  # noqa: BLE001
        notes["fusec_graph"] = reason(e)


def add_compiled(torch, model, x, wrt, dy, contenders, notes):
    """The step of `model` under torch.compile, default ("compile") and
    reduce-overhead ("compile_ro"), warmed up, into `contenders`: the
    gradients of model(x) for dy with respect to `wrt`; a mode that fails
    goes into `notes`."""
    for mode, name in ((None, "compile"), ("reduce-overhead", "compile_ro")):
        try:
            cm = torch.compile(model, mode=mode) if mode else torch.compile(model)

            def cstep(cm=cm, ro=mode is not None):
                if ro:
                    torch.compiler.cudagraph_mark_step_begin()
                return torch.autograd.grad(cm(x), wrt, dy)
            for _ in range(3):
                cstep()
            contenders[name] = [cstep]
        except Exception as e:  # noqa: BLE001
            notes[name] = reason(e)


def run_bottleneck(b, fz, rep, ceil, block, batches, dt, keys, prepared):
    torch = b.torch
    for n in batches:
        tag = block_tag(n, block, dt)
        if not wanted(keys, tag, "bottleneck"):
            continue
        if b.over_budget():
            rep.emit(kind="skipped", what=tag, reason="time budget spent")
            continue
        hw, cin = block["hw"], block["cin"]
        model = make_bottleneck(torch, block, b.dtype(dt), b.device)
        params = list(model.parameters())
        x = b.randn(n, cin, hw, hw, dtype=dt, channels_last=True).requires_grad_()
        dy = b.randn(n, cin, hw, hw, dtype=dt, channels_last=True)
        wrt = [x] + params

        # (d) bytes saved, eager.
        total, inter, count, y_eager, grads_eager = eager_saved_bytes(torch, model, [x], params, dy)
        saved = dict(kind="saved_bytes", graph=tag, eager_bytes=total, eager_intermediate_bytes=inter,
                     eager_tensors=count)

        def eager_step():
            return torch.autograd.grad(model(x), wrt, dy)
        contenders = {"eager": [eager_step]}
        notes = {}
        if b.cuda:
            # A CUDA-graph replay of the eager step (static x, dy, grads).
            try:
                replay, static_grads = timing.cuda_graph(torch, eager_step)  # noqa: F841 - the graph writes them
                contenders["graph"] = [replay]
            except Exception as e:  # noqa: BLE001
                notes["graph"] = reason(e)
            add_compiled(torch, model, x, wrt, dy, contenders, notes)
        # fusec: forward then backward of the pair.
        fusec_na = None
        try:
            step = fz.train(bottleneck_train_graph(n, block, dt))
            args = model.fusec_args(x)
            dys = nhwc(dy)
            out = as_list(step.forward(*args))
            grads = as_list(step.backward(dys))
            b.sync()
            e_y = relerr(nchw(out[0]), y_eager)
            e_dx = relerr(nchw(grads[0]), grads_eager[0])
            saved.update(fusec_relerr_y=e_y, fusec_relerr_dx=e_dx)
            if not (e_y <= 0.05 and e_dx <= 0.05):
                fusec_na = f"wrong: relerr y {e_y:.2e} dx {e_dx:.2e}"
            else:
                contenders["fusec"] = [lambda: (step.forward(*args), step.backward(dys))]
            sb = saved_bytes_attr(step)
            if sb is not None:
                saved["fusec_intermediate_bytes"] = sb
                saved["fusec_source"] = "module"
        except Exception as e:  # noqa: BLE001
            fusec_na = "n/a: " + reason(e)
        times, errors = b.interleaved(contenders)
        notes.update(errors)
        row = dict(kind="bottleneck_step", batch=n, dtype=dt, block=f"{cin}-{block['mid']}-{cin} {hw}x{hw}",
                   eager_ms=times.get("eager"), compile_ms=times.get("compile"),
                   compile_ro_ms=times.get("compile_ro"), graph_ms=times.get("graph"), fusec_ms=times.get("fusec"))
        finish_step_row(rep, row, 3 * block_flops(n, block), ceil.get(f"gemm_{dt}_TFLOPs"),
                        fusec_na, errors, notes)

        # (d) fusec's side: the module's report, else fusec-opt's (prepare).
        if "fusec_intermediate_bytes" not in saved:
            entry = (prepared or {}).get(tag)
            if entry and "saved_bytes" in entry:
                # The results the backward reads again stay alive like the
                # tensors saved (eager counts the ReLU output it saves).
                kept = entry["saved_bytes"] + entry.get("forward_result_bytes", 0)
                saved["fusec_intermediate_bytes"] = kept
                saved["fusec_source"] = "fusec-opt -fusec-autodiff (prepare)"
                if "forward_arg_bytes" in entry:
                    saved["fusec_bytes"] = kept + entry["forward_arg_bytes"]
            else:
                saved["fusec_na"] = "n/a: " + (entry or {}).get(
                    "error", "no report: the module gave none and no prepared saved.json has this graph")
        fi = saved.get("fusec_intermediate_bytes")
        saved["ratio"] = inter / fi if fi else None
        rep.emit(**saved)
        del model, x, dy, contenders
        if b.cuda:
            torch.cuda.empty_cache()


def transformer_params(b, row, dt):
    """The block's arguments, x first, in its graph's order (bench.py's
    values: weights scaled by fan-in^-1/2, norm scales about 1, the rope
    tables of the positions)."""
    torch = b.torch
    kind, _, bsz, n, dm, hq, hkv, hd, ffn = row

    def rnd(*shape, s=1.0):
        return b.randn(*shape, dtype=dt, scale=s)
    p = dict(x=rnd(bsz, n, dm), g1=1 + rnd(dm, s=0.1))
    if kind == "vit":
        p["b1"] = rnd(dm, s=0.1)
    p.update(wq=rnd(hq * hd, dm, s=dm ** -0.5), wk=rnd(hkv * hd, dm, s=dm ** -0.5),
             wv=rnd(hkv * hd, dm, s=dm ** -0.5), wo=rnd(dm, hq * hd, s=(hq * hd) ** -0.5))
    if kind == "vit":
        p.update(g2=1 + rnd(dm, s=0.1), b2=rnd(dm, s=0.1), w1=rnd(ffn, dm, s=dm ** -0.5), c1=rnd(ffn, s=0.1),
                 w2=rnd(dm, ffn, s=ffn ** -0.5), c2=rnd(dm, s=0.1))
    else:
        pos = torch.arange(n, device=b.device)[:, None]
        ang = pos * 10000 ** (-torch.arange(hd // 2, device=b.device) / (hd // 2))
        p.update(cos=ang.cos().to(b.dtype(dt)), sin=ang.sin().to(b.dtype(dt)), g2=1 + rnd(dm, s=0.1),
                 wg=rnd(ffn, dm, s=dm ** -0.5), wu=rnd(ffn, dm, s=dm ** -0.5), wd=rnd(dm, ffn, s=ffn ** -0.5))
    return p


def transformer_eager_fn(torch, row):
    """The block in PyTorch as a function of its parameter dict (x
    included), what transformer_graph computes: LayerNorm's epsilon 1e-5
    and RMSNorm's 1e-6 (fuse.layer_norm's and fuse.rms_norm's defaults),
    rope on the two halves of each head (bench.py's), SDPA's default
    scale."""
    F = torch.nn.functional
    kind, _, bsz, n, dm, hq, hkv, hd, ffn = row
    causal = rope = kind == "llama"
    gqa = {"enable_gqa": True} if hq != hkv else {}

    def split(p, h, w, heads):
        v = F.linear(h, p[w]).view(bsz, n, heads, hd).transpose(1, 2)
        if rope and w != "wv":
            v0, v1 = v[..., :hd // 2], v[..., hd // 2:]
            v = torch.cat([v0 * p["cos"] - v1 * p["sin"], v1 * p["cos"] + v0 * p["sin"]], -1)
        return v

    def attend(p, h):
        a = F.scaled_dot_product_attention(split(p, h, "wq", hq), split(p, h, "wk", hkv), split(p, h, "wv", hkv),
                                           is_causal=causal, **gqa)
        return p["x"] + F.linear(a.transpose(1, 2).reshape(bsz, n, hq * hd), p["wo"])

    if kind == "vit":
        def fwd(p):
            r1 = attend(p, F.layer_norm(p["x"], (dm,), p["g1"], p["b1"], 1e-5))
            h2 = F.layer_norm(r1, (dm,), p["g2"], p["b2"], 1e-5)
            return r1 + F.linear(F.gelu(F.linear(h2, p["w1"], p["c1"]), approximate="tanh"), p["w2"], p["c2"])
    else:
        def fwd(p):
            r1 = attend(p, F.rms_norm(p["x"], (dm,), p["g1"], eps=1e-6))
            h2 = F.rms_norm(r1, (dm,), p["g2"], eps=1e-6)
            return r1 + F.linear(F.silu(F.linear(h2, p["wg"])) * F.linear(h2, p["wu"]), p["wd"])
    return fwd


def make_transformer(torch, row, p):
    """The eager block as an nn.Module over the tensors of `p` (shared):
    the weights its parameters (what torch.compile's reduce-overhead mode
    keeps in place instead of copying each call), the rope tables buffers,
    x the forward's argument."""
    nn = torch.nn
    fwd = transformer_eager_fn(torch, row)
    names = list(p)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.names = names
            for k in names[1:]:
                if k in TRANSFORMER_CONSTANTS:
                    self.register_buffer(k, p[k])
                else:
                    self.register_parameter(k, nn.Parameter(p[k]))

        def forward(self, x):
            return fwd({k: x if k == "x" else getattr(self, k) for k in self.names})

        def weights(self):
            """The parameters in the graph's order."""
            return [getattr(self, k) for k in self.names[1:] if k not in TRANSFORMER_CONSTANTS]

        def fusec_args(self, x):
            return [x.detach()] + [getattr(self, k).detach() for k in self.names[1:]]

    return Block().train()


def run_transformer(b, fz, rep, ceil, rows, keys):
    """(g): forward + backward of a transformer block: eager, torch.compile
    (default and reduce-overhead), a CUDA-graph replay of the eager step,
    against fusec's training pair (forward, then backward), checked against
    eager first (y, dx, dwq). The gradients: of x and of every weight (not
    the rope tables). FLOPs: 3x the forward's."""
    for row, dt in rows:
        tag = transformer_tag(row, dt)
        if not wanted(keys, tag, "transformer"):
            continue
        if b.over_budget():
            rep.emit(kind="skipped", what=tag, reason="time budget spent")
            continue
        transformer_row(b, fz, rep, ceil, row, dt)
        if b.cuda:
            try:  # torch.compile's graphs and reduce-overhead's memory pools
                b.torch._dynamo.reset()
            except Exception:  # noqa: BLE001
                pass
            b.torch.cuda.empty_cache()


def transformer_row(b, fz, rep, ceil, row, dt):
    torch = b.torch
    kind, name, bsz, n, dm, hq, hkv, hd, ffn = row
    p = transformer_params(b, row, dt)
    names = list(p)
    wrt_names = [k for k in names if k not in TRANSFORMER_CONSTANTS]
    model = make_transformer(torch, row, p)
    params = model.weights()
    x = p["x"].requires_grad_()
    dy = b.randn(bsz, n, dm, dtype=dt)
    wrt = [x] + params

    # The reference: no autograd graph of it outlives the call (one would
    # break the CUDA-graph capture below).
    total, inter, count, y_eager, grads_eager = eager_saved_bytes(torch, model, [x], params, dy)
    ref = dict(zip(wrt_names, grads_eager))

    def eager_step():
        return torch.autograd.grad(model(x), wrt, dy)
    contenders = {"eager": [eager_step]}
    notes, graph_ms = {}, None
    if b.cuda:
        # The CUDA-graph replay first, timed beside eager, and dropped before
        # torch.compile runs: a graph captured before torch.compile's
        # contenders faulted at its first replay after them on the LLaMA
        # row (reduce-overhead clears cuBLAS's workspaces, which the graph
        # may still read: not traced), and a capture after them fails (an
        # autograd node of another stream alive).
        try:
            replay, static_grads = timing.cuda_graph(torch, eager_step)  # noqa: F841 - the graph writes them
            gtimes, gerrors = b.interleaved({"eager": [eager_step], "graph": [replay]})
            graph_ms = gtimes.get("graph")
            if gerrors.get("graph"):
                notes["graph"] = gerrors["graph"]
            del replay, static_grads
        except Exception as e:  # noqa: BLE001
            notes["graph"] = reason(e)
        add_compiled(torch, model, x, wrt, dy, contenders, notes)
    out = dict(kind="transformer_step", block=name, batch=bsz, tokens=n, dim=dm, heads=f"{hq}/{hkv}x{hd}",
               ffn=ffn, dtype=dt, eager_saved_bytes=total, eager_intermediate_bytes=inter)
    # fusec: forward then backward of the pair, every argument but the rope
    # tables differentiated.
    fusec_na = None
    try:
        step = fz.train(transformer_graph(row, dt), wrt=[names.index(k) for k in wrt_names])
        out.update(kernel_counts(step))
        args = model.fusec_args(x)
        y = as_list(step.forward(*args))[0]
        grads = as_list(step.backward(dy))
        b.sync()
        got = grads_by_name(grads, names, wrt_names)
        errs = {"y": relerr(y, y_eager)}
        for k in wrt_names:
            errs["d" + k] = relerr(got[k], ref[k]) if got.get(k) is not None else float("nan")
        out.update(relerr_y=errs["y"], relerr_dx=errs["dx"], relerr_dwq=errs["dwq"])
        worst = max(errs, key=lambda k: errs[k] if errs[k] == errs[k] else math.inf)
        out.update(relerr_max=errs[worst], relerr_max_of=worst)
        if not all(errs[k] <= 0.05 for k in ("y", "dx", "dwq")):
            fusec_na = f"wrong: relerr y {errs['y']:.2e} dx {errs['dx']:.2e} dwq {errs['dwq']:.2e}"
        else:
            contenders["fusec"] = [lambda: (step.forward(*args), step.backward(dy))]
            if b.cuda:
                add_fusec_graph(b, step, args, dy, ref, names, wrt_names, contenders, notes)
        sb = saved_bytes_attr(step)
        if sb is not None:
            out["fusec_saved_bytes"] = sb
    except Exception as e:  # noqa: BLE001
        fusec_na = "n/a: " + reason(e)
    times, errors = b.interleaved(contenders)
    notes.update(errors)
    out.update(eager_ms=times.get("eager"), compile_ms=times.get("compile"), compile_ro_ms=times.get("compile_ro"),
               graph_ms=graph_ms, fusec_ms=times.get("fusec"), fusec_graph_ms=times.get("fusec_graph"))
    flops = 3 * transformer_flops(row)
    out["fusec_TFLOPs"] = flops / out["fusec_ms"] / 1e9 if out["fusec_ms"] else None
    finish_step_row(rep, out, flops, ceil.get(f"gemm_{dt}_TFLOPs"), fusec_na, errors, notes)


def wanted(keys, *tags):
    return not keys or any(k in tag for k in keys for tag in tags)


def run(args):
    try:
        import torch
    except ImportError as e:
        print(f"training.py run needs PyTorch: {e}", file=sys.stderr)
        return 2
    rep = Report(args.json)
    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: use --device cpu --tiny for the logic check", file=sys.stderr)
        return 2
    if device == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    b = Bench(torch, device, args.quick, args.budget)
    fz = Fusec(b, enabled=b.cuda or args.fusec_on_cpu)
    keys = [k for k in (args.k or "").split(",") if k]
    prepared = None
    if args.prepared:
        path = os.path.join(args.prepared, "saved.json")
        try:
            with open(path) as f:
                prepared = json.load(f)
        except OSError as e:
            rep.emit(kind="skipped", what="prepared saved.json", reason=reason(e))
    ceil = measure_ceilings(b, rep)
    if fz.module is None:
        rep.emit(kind="skipped", what="fusec", reason=fz.why)
    else:
        try:
            rep.emit(kind="fusec", version=fz.module.version())
        except Exception as e:  # noqa: BLE001
            rep.emit(kind="skipped", what="fusec.version()", reason=reason(e))
    sections = set(args.sections.split(","))
    # Each section on its own: one that fails still leaves the others' rows.
    for sec, fn in (("conv", lambda: run_conv_grads(b, fz, rep, ceil, conv_layers(args.quick, args.tiny),
                                                    ("f32",) if args.tiny else conv_dtypes(args.quick), keys)),
                    ("bn", lambda: run_bn(b, fz, rep, ceil, TINY_BN if args.tiny else BN_QUICK if args.quick
                                          else BN_SHAPES, ("f32",) if args.tiny else ("bf16",) if args.quick
                                          else ("f16", "bf16"), keys)),
                    ("norm", lambda: run_norm(b, fz, rep, ceil, TINY_NORM if args.tiny else NORM_QUICK
                                              if args.quick else NORM_SHAPES,
                                              ("f32",) if args.tiny else ("bf16",), keys)),
                    ("block", lambda: run_bottleneck(b, fz, rep, ceil, TINY_BLOCK if args.tiny else BLOCK,
                                                     TINY_BATCHES if args.tiny else BLOCK_BATCHES[:1]
                                                     if args.quick else BLOCK_BATCHES,
                                                     "f32" if args.tiny else BLOCK_DTYPE, keys, prepared)),
                    ("attention", lambda: run_attention(b, fz, rep, ceil, attention_rows(args.quick, args.tiny),
                                                        keys)),
                    ("transformer", lambda: run_transformer(b, fz, rep, ceil,
                                                            transformer_rows(args.quick, args.tiny), keys))):
        if sec not in sections:
            continue
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - report and go on
            import traceback
            traceback.print_exc()
            rep.emit(kind="skipped", what=f"section {sec}", reason=reason(e))
    print()
    print(rep.table(), flush=True)
    rep.close()
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--fusec-opt", required=True)
    p.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--quick", action="store_true", help="fewer rows, fewer repetitions")
    r.add_argument("--tiny", action="store_true", help="tiny shapes (the CPU logic check)")
    r.add_argument("--device", default="cuda")
    r.add_argument("--json")
    r.add_argument("--prepared", help="prepare's directory (its saved.json)")
    r.add_argument("--sections", default="conv,bn,norm,block,attention,transformer")
    r.add_argument("--fusec-on-cpu", action="store_true", help=argparse.SUPPRESS)  # the test's stand-in module
    r.add_argument("-k", help="only rows whose tag holds one of these substrings")
    r.add_argument("--budget", type=float, default=float(os.environ.get("BUDGET_S", "420")),
                   help="seconds after which the remaining rows are skipped")
    args = ap.parse_args(argv)
    return prepare(args) if args.cmd == "prepare" else run(args)


if __name__ == "__main__":
    sys.exit(main())
