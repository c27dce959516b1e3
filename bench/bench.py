"""fusec against what a user would otherwise call, timed in one process.

  bench.py prepare --fusec FUSEC --out DIR [--arch sm_90a] [-k SUBSTR[,SUBSTR...]]
      On any machine: writes the workload graphs of ../shared/bench/WORKLOADS.md
      that fusec covers and compiles each to DIR/<tag>.ptx for --arch (sm_90a
      by default: the Hopper path), the FFN's and attention's also for sm_90
      (<tag>_sm90, the portable path):
        - conv + batch norm + ReLU on the ResNet-50 and MobileNetV2 layers of
          section 1, in f16, bf16, f32 as TF32 (--fp32-math=tf32) and f32;
        - a ResNet-50 bottleneck block (projection shortcut, and identity),
          f16, batch 32;
        - section 4's FFN (linear + GeLU, linear), bf16, whole and per linear;
        - the memory-bound rows of section 3.
  bench.py run --runtime LIBFUSEC_RUNTIME --dir DIR [--tuned-dir TDIR] [--json OUT] [-k SUBSTR[,SUBSTR...]]
      On a CUDA machine with PyTorch: measures the ceilings (device-to-device
      copy; 8192^3 GEMMs), then for each workload runs fusec's artifact
      through libfusec_runtime.so on PyTorch's stream and the alternatives
      (eager; BN folded by hand; cuDNN's fused conv+bias+ReLU; torch.compile),
      on random inputs (never zeros), with fusec's output checked against a
      float64 PyTorch reference. Prints a ratio per row (best alternative time
      / fusec time: above 1 means fusec is faster) and the fraction of the
      measured ceiling fusec reaches. With --tuned-dir, the artifacts found
      there (the same graphs compiled with a tuning database, `fusec tune`)
      run as one more contender of the same rows: tuned_ms and tuned_ratio,
      beside the heuristic's fusec_ms and ratio.

Timing: CUDA events around `inner` back-to-back calls (so that host launch
overhead hides behind the GPU, for every contender alike), median of `reps`
such measurements after a warm-up; the contenders of a row take turns over
three rounds and each keeps its best median, so that a drift in clocks during
the run does not favour whoever ran first (each round starts with the next
contender, and each contender's turn starts after 100 ms of idle, so that
none inherits the clocks a heavy predecessor left: identical kernels measured
up to 10% apart without). When a workload's tensors fit in L2 several
copies of them rotate, so that no contender runs out of the cache.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys

import timing

# name, N, Cin, H, W, Cout, k, stride, pad, groups (WORKLOADS.md section 1).
CONVS = [
    ("r50_stem", 32, 3, 224, 224, 64, 7, 2, 3, 1),
    ("r50_c2_3x3", 32, 64, 56, 56, 64, 3, 1, 1, 1),
    ("r50_c2_1x1", 32, 64, 56, 56, 256, 1, 1, 0, 1),
    ("r50_c3_3x3", 32, 128, 28, 28, 128, 3, 1, 1, 1),
    ("r50_c4_3x3", 32, 256, 14, 14, 256, 3, 1, 1, 1),
    ("r50_c5_3x3", 32, 512, 7, 7, 512, 3, 1, 1, 1),
    ("mbv2_dw_3x3", 32, 96, 112, 112, 96, 3, 1, 1, 96),
]
# "tf32": an f32 graph compiled with --fp32-math=tf32, against PyTorch with
# TF32 allowed; "f32": IEEE f32 on both sides.
CONV_DTYPES = ("f16", "bf16", "tf32", "f32")
BN_RELU = ("bn_relu_infer", 64, 256, 56, 56)  # WORKLOADS.md section 3
BN_DTYPES = ("bf16", "f32")
# Residual add + norm (out and sum written) and bias + GeLU on [T, H].
ROWS = (16384, 4096)
ROW_WORKLOADS = [("add_layernorm", "bf16"), ("add_rmsnorm", "bf16"), ("bias_gelu", "bf16"), ("bias_gelu", "f32"),
                 ("softmax", "bf16")]
# Pooling and resampling (issue 9), NHWC bf16: (name, n, c, h, w).
SPATIAL = [("maxpool_3x3s2", 64, 64, 112, 112), ("upsample_bilinear2x", 16, 128, 64, 64)]
# Data movement (issue 9): (name, dtype, input shape). A rope on LLaMA-7B's
# heads (cos/sin tables [tokens, 64]); a transpose that splits heads (the
# innermost axis stays) and one that changes layout (NHWC -> NCHW, the
# innermost axis moves); casts both ways; a layer norm over rows of 65537
# (no 16-byte vector divides them).
MOVES = [("rope", "bf16", (4, 32, 2048, 128)), ("transpose_heads", "bf16", (4, 2048, 32, 128)),
         ("transpose_nhwc_nchw", "bf16", (32, 56, 56, 256)), ("cast_f32_bf16", "f32", (16384, 4096)),
         ("cast_bf16_f32", "bf16", (16384, 4096)), ("layernorm_65537", "bf16", (512, 65537))]
# ResNet-50's first bottleneck (conv2_x, block 1): 64 -> 64 -> 64 -> 256 with
# a 1x1 projection of the input; and a later block, 256 -> 64 -> 256, whose
# shortcut is the input itself. NHWC, batch 32, 56x56 (WORKLOADS.md section 5).
BOTTLENECKS = [("bottleneck_proj", 64), ("bottleneck_identity", 256)]
BLOCK_N, BLOCK_HW, BLOCK_MID = 32, 56, 64
# WORKLOADS.md section 4: 8192 tokens, 4096 -> 16384 -> 4096, bf16.
FFN = (8192, 4096, 16384)
FFN_PARTS = ("ffn", "ffn_up", "ffn_down")
# WORKLOADS.md section 2: B x H x N x D, causal or not, f16 and bf16.
ATTENTION = [(16, 16, 1024, 64), (4, 16, 4096, 64), (4, 16, 4096, 128), (1, 16, 16384, 128)]
ATTENTION_DTYPES = ("f16", "bf16")
# Transformer blocks (WORKLOADS.md / issue 7): pre-norm, separate Q/K/V
# projections, heads split by reshape + transpose, optional rope on Q and K,
# attention, heads merged, output projection + residual, LayerNorm, GeLU FFN
# + residual. (name, B, N, model dim, query heads, kv heads, head dim, FFN
# width, causal, rope)
BLOCKS = [("block_example", 1, 128, 256, 4, 2, 64, 1024, True, True),
          ("block_vit_b", 8, 197, 768, 12, 12, 64, 3072, False, False)]
# LLaMA-style decoder blocks (RMSNorm, RoPE, causal GQA, SiLU-gated FFN, no
# biases): (name, batch, tokens, features, q heads, kv heads, head dim, ffn).
LLAMA_BLOCKS = [("block_llama_7b", 1, 2048, 4096, 32, 32, 128, 11008)]


def t(shape, dt):
    return "tensor<" + "x".join(map(str, shape)) + "x" + dt + ">"


def graph_dtype(dt):
    return "f32" if dt == "tf32" else dt


def conv_graph(name, n, ci, h, w, co, k, s, p, g, dt):
    dt = graph_dtype(dt)
    ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    x, f, c, o = t([n, h, w, ci], dt), t([co, k, k, ci // g], dt), t([co], dt), t([n, ho, wo, co], dt)
    return (f"func.func @{name}(%x: {x}, %w: {f}, %m: {c}, %v: {c}, %g: {c}, %b: {c}) -> {o} {{\n"
            f"  %0 = fuse.conv2d %x, %w {{strides = array<i64: {s}, {s}>, padding = array<i64: {p}, {p}>, "
            f"groups = {g}}} : {x}, {f}\n"
            f"  %1 = fuse.batch_norm %0, %m, %v, %g, %b : {o}, {c}\n"
            f"  %2 = fuse.relu %1 : {o}\n  return %2 : {o}\n}}\n")


def bn_graph(name, n, c, h, w, dt):
    x, cc = t([n, h, w, c], dt), t([c], dt)
    return (f"func.func @{name}(%x: {x}, %m: {cc}, %v: {cc}, %g: {cc}, %b: {cc}) -> {x} {{\n"
            f"  %0 = fuse.batch_norm %x, %m, %v, %g, %b : {x}, {cc}\n"
            f"  %1 = fuse.relu %0 : {x}\n  return %1 : {x}\n}}\n")


def row_graph(name, dt):
    tt, h = t(list(ROWS), dt), t([ROWS[1]], dt)
    if name == "bias_gelu":
        return (f"func.func @{name}(%x: {tt}, %b: {h}) -> {tt} {{\n"
                f"  %0 = fuse.bias_add %x, %b : {tt}, {h}\n"
                f"  %1 = fuse.gelu %0 : {tt}\n  return %1 : {tt}\n}}\n")
    if name == "softmax":
        return (f"func.func @{name}(%x: {tt}) -> {tt} {{\n"
                f"  %0 = fuse.softmax %x : {tt}\n  return %0 : {tt}\n}}\n")
    if name == "add_layernorm":
        return (f"func.func @{name}(%x: {tt}, %r: {tt}, %w: {h}, %b: {h}) -> ({tt}, {tt}) {{\n"
                f"  %h = fuse.add %x, %r : {tt}, {tt}\n"
                f"  %0 = fuse.layer_norm %h scale(%w : {h}) shift(%b : {h}) : {tt}\n"
                f"  return %0, %h : {tt}, {tt}\n}}\n")
    return (f"func.func @{name}(%x: {tt}, %r: {tt}, %w: {h}) -> ({tt}, {tt}) {{\n"
            f"  %h = fuse.add %x, %r : {tt}, {tt}\n"
            f"  %0 = fuse.rms_norm %h scale(%w : {h}) : {tt}\n"
            f"  return %0, %h : {tt}, {tt}\n}}\n")


def spatial_graph(name, n, c, h, w):
    dt = "bf16"
    x = t([n, h, w, c], dt)
    if name.startswith("maxpool"):
        return (f"func.func @{name}(%x: {x}) -> {t([n, h // 2, w // 2, c], dt)} {{\n"
                f"  %0 = fuse.max_pool2d %x {{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, "
                f"padding = array<i64: 1, 1>}} : {x}\n  return %0 : {t([n, h // 2, w // 2, c], dt)}\n}}\n")
    o = t([n, 2 * h, 2 * w, c], dt)
    return (f"func.func @{name}(%x: {x}) -> {o} {{\n"
            f"  %0 = fuse.upsample %x {{mode = #fuse.upsample_mode<bilinear>, scale = array<f64: 2.0, 2.0>}} : {x}\n"
            f"  return %0 : {o}\n}}\n")


MOVE_PERMS = {"transpose_heads": (0, 2, 1, 3), "transpose_nhwc_nchw": (0, 3, 1, 2)}


def move_tag(name, dt):
    """Casts name both types already."""
    return name if name.startswith("cast") else f"{name}_{dt}"


def move_graph(name, dt, shape):
    x = t(shape, dt)
    if name == "rope":
        tab = t([shape[2], shape[3] // 2], dt)
        return (f"func.func @{name}(%x: {x}, %c: {tab}, %s: {tab}) -> {x} {{\n"
                f"  %0 = fuse.rope %x, %c, %s : {x}, {tab}\n  return %0 : {x}\n}}\n")
    if name in MOVE_PERMS:
        perm = MOVE_PERMS[name]
        o = t([shape[p] for p in perm], dt)
        return (f"func.func @{name}(%x: {x}) -> {o} {{\n"
                f"  %0 = fuse.transpose %x {{permutation = array<i64: {', '.join(map(str, perm))}>}} : {x}\n"
                f"  return %0 : {o}\n}}\n")
    if name.startswith("cast"):
        o = t(shape, name.split("_")[-1])
        return (f"func.func @{name}(%x: {x}) -> {o} {{\n"
                f"  %0 = fuse.cast %x : {x} to {o}\n  return %0 : {o}\n}}\n")
    row = t([shape[-1]], dt)
    return (f"func.func @{name}(%x: {x}, %w: {row}, %b: {row}) -> {x} {{\n"
            f"  %0 = fuse.layer_norm %x scale(%w : {row}) shift(%b : {row}) : {x}\n  return %0 : {x}\n}}\n")


def bottleneck_graph(name, cin):
    """x -> 1x1 (cin->64) BN ReLU -> 3x3 (64) BN ReLU -> 1x1 (64->256) BN,
    plus the shortcut (a 1x1 cin->256 + BN projection, or x), then ReLU.
    Arguments: x, then per conv its filter and BN mean, var, gamma, beta."""
    n, hw, mid, dt = BLOCK_N, BLOCK_HW, BLOCK_MID, "f16"
    args = [f"%x: {t([n, hw, hw, cin], dt)}"]
    body = []
    convs = [("c1", cin, mid, 1), ("c2", mid, mid, 3), ("c3", mid, 4 * mid, 1)]
    if cin != 4 * mid:
        convs.append(("sc", cin, 4 * mid, 1))
    for tag, ci, co, k in convs:
        args.append(f"%{tag}_w: {t([co, k, k, ci], dt)}")
        args += [f"%{tag}_{p}: {t([co], dt)}" for p in ("m", "v", "g", "b")]

    def conv(tag, src, ci, co, k, relu):
        x, o, c = t([n, hw, hw, ci], dt), t([n, hw, hw, co], dt), t([co], dt)
        body.append(f"  %{tag}_0 = fuse.conv2d %{src}, %{tag}_w {{padding = array<i64: {k // 2}, {k // 2}>}} : "
                    f"{x}, {t([co, k, k, ci], dt)}")
        body.append(f"  %{tag}_1 = fuse.batch_norm %{tag}_0, %{tag}_m, %{tag}_v, %{tag}_g, %{tag}_b : {o}, {c}")
        if relu:
            body.append(f"  %{tag}_2 = fuse.relu %{tag}_1 : {o}")
            return f"{tag}_2"
        return f"{tag}_1"
    a = conv("c1", "x", cin, mid, 1, True)
    b = conv("c2", a, mid, mid, 3, True)
    c = conv("c3", b, mid, 4 * mid, 1, False)
    short = conv("sc", "x", cin, 4 * mid, 1, False) if cin != 4 * mid else "x"
    o = t([n, hw, hw, 4 * mid], dt)
    body.append(f"  %sum = fuse.add %{c}, %{short} : {o}, {o}")
    body.append(f"  %y = fuse.relu %sum : {o}")
    return f"func.func @{name}({', '.join(args)}) -> {o} {{\n" + "\n".join(body) + f"\n  return %y : {o}\n}}\n"


def ffn_graph(part):
    tokens, d, hidden = FFN
    dt = "bf16"
    x, h, y = t([tokens, d], dt), t([tokens, hidden], dt), t([tokens, d], dt)
    w1, b1, w2, b2 = t([hidden, d], dt), t([hidden], dt), t([d, hidden], dt), t([d], dt)
    if part == "ffn_up":
        return (f"func.func @ffn_up(%x: {x}, %w1: {w1}, %b1: {b1}) -> {h} {{\n"
                f"  %0 = fuse.linear %x, %w1, %b1 : {x}, {w1}, {b1}\n"
                f"  %1 = fuse.gelu %0 {{approximate = #fuse.gelu_approx<tanh>}} : {h}\n  return %1 : {h}\n}}\n")
    if part == "ffn_down":
        return (f"func.func @ffn_down(%h: {h}, %w2: {w2}, %b2: {b2}) -> {y} {{\n"
                f"  %0 = fuse.linear %h, %w2, %b2 : {h}, {w2}, {b2}\n  return %0 : {y}\n}}\n")
    return (f"func.func @ffn(%x: {x}, %w1: {w1}, %b1: {b1}, %w2: {w2}, %b2: {b2}) -> {y} {{\n"
            f"  %0 = fuse.linear %x, %w1, %b1 : {x}, {w1}, {b1}\n"
            f"  %1 = fuse.gelu %0 {{approximate = #fuse.gelu_approx<tanh>}} : {h}\n"
            f"  %2 = fuse.linear %1, %w2, %b2 : {h}, {w2}, {b2}\n  return %2 : {y}\n}}\n")


def attention_tag(b, h, n, d, causal, dt):
    return f"attention_{b}x{h}x{n}x{d}{'_causal' if causal else ''}_{dt}"


def attention_graph(b, h, n, d, causal, dt):
    x = t([b, h, n, d], dt)
    attr = " {causal}" if causal else ""
    return (f"func.func @attention(%q: {x}, %k: {x}, %v: {x}) -> {x} {{\n"
            f"  %0 = fuse.attention %q, %k, %v{attr} : {x}, {x}, {x}\n  return %0 : {x}\n}}\n")


def block_graph(name, b, n, dm, hq, hkv, d, ffn, causal, rope, dt="bf16"):
    """The block as a fuse graph; arguments in block_inputs' order."""
    x, row = t([b, n, dm], dt), t([dm], dt)
    args = [f"%x: {x}", f"%g1: {row}", f"%b1: {row}", f"%wq: {t([hq * d, dm], dt)}",
            f"%wk: {t([hkv * d, dm], dt)}", f"%wv: {t([hkv * d, dm], dt)}", f"%wo: {t([dm, hq * d], dt)}"]
    if rope:
        args += [f"%cos: {t([n, d // 2], dt)}", f"%sin: {t([n, d // 2], dt)}"]
    args += [f"%g2: {row}", f"%b2: {row}", f"%w1: {t([ffn, dm], dt)}", f"%c1: {t([ffn], dt)}",
             f"%w2: {t([dm, ffn], dt)}", f"%c2: {row}"]
    names = {}
    body = [f"  %h = fuse.layer_norm %x scale(%g1 : {row}) shift(%b1 : {row}) : {x}"]
    for v, h in (("q", hq), ("k", hkv), ("v", hkv)):
        body.append(f"  %{v}0 = fuse.linear %h, %w{v} : {x}, {t([h * d, dm], dt)}")
        body.append(f"  %{v}1 = fuse.reshape %{v}0 : {t([b, n, h * d], dt)} to {t([b, n, h, d], dt)}")
        body.append(f"  %{v}2 = fuse.transpose %{v}1 {{permutation = array<i64: 0, 2, 1, 3>}} : "
                    f"{t([b, n, h, d], dt)}")
        last = f"%{v}2"
        if rope and v != "v":
            body.append(f"  %{v}3 = fuse.rope %{v}2, %cos, %sin : {t([b, h, n, d], dt)}, {t([n, d // 2], dt)}")
            last = f"%{v}3"
        names[v] = last
    qt, kt = t([b, hq, n, d], dt), t([b, hkv, n, d], dt)
    body.append(f"  %a = fuse.attention {names['q']}, {names['k']}, {names['v']}{' {causal}' if causal else ''} : "
                f"{qt}, {kt}, {kt}")
    body.append(f"  %a1 = fuse.transpose %a {{permutation = array<i64: 0, 2, 1, 3>}} : {qt}")
    body.append(f"  %a2 = fuse.reshape %a1 : {t([b, n, hq, d], dt)} to {t([b, n, hq * d], dt)}")
    body.append(f"  %o = fuse.linear %a2, %wo : {t([b, n, hq * d], dt)}, {t([dm, hq * d], dt)}")
    body.append(f"  %r1 = fuse.add %x, %o : {x}, {x}")
    body.append(f"  %h2 = fuse.layer_norm %r1 scale(%g2 : {row}) shift(%b2 : {row}) : {x}")
    body.append(f"  %f1 = fuse.linear %h2, %w1, %c1 : {x}, {t([ffn, dm], dt)}, {t([ffn], dt)}")
    body.append(f"  %f2 = fuse.gelu %f1 {{approximate = #fuse.gelu_approx<tanh>}} : {t([b, n, ffn], dt)}")
    body.append(f"  %f3 = fuse.linear %f2, %w2, %c2 : {t([b, n, ffn], dt)}, {t([dm, ffn], dt)}, {row}")
    body.append(f"  %y = fuse.add %r1, %f3 : {x}, {x}")
    return f"func.func @{name}({', '.join(args)}) -> {x} {{\n" + "\n".join(body) + f"\n  return %y : {x}\n}}\n"


def llama_graph(name, b, n, dm, hq, hkv, d, ffn, dt="bf16"):
    """A LLaMA-style block as a fuse graph; arguments in the order of the
    benchmark's parameter dict."""
    x, row = t([b, n, dm], dt), t([dm], dt)
    args = [f"%x: {x}", f"%g1: {row}", f"%wq: {t([hq * d, dm], dt)}", f"%wk: {t([hkv * d, dm], dt)}",
            f"%wv: {t([hkv * d, dm], dt)}", f"%wo: {t([dm, hq * d], dt)}", f"%cos: {t([n, d // 2], dt)}",
            f"%sin: {t([n, d // 2], dt)}", f"%g2: {row}", f"%wg: {t([ffn, dm], dt)}",
            f"%wu: {t([ffn, dm], dt)}", f"%wd: {t([dm, ffn], dt)}"]
    body = [f"  %h = fuse.rms_norm %x scale(%g1 : {row}) : {x}"]
    names = {}
    for v, h in (("q", hq), ("k", hkv), ("v", hkv)):
        body.append(f"  %{v}0 = fuse.linear %h, %w{v} : {x}, {t([h * d, dm], dt)}")
        body.append(f"  %{v}1 = fuse.reshape %{v}0 : {t([b, n, h * d], dt)} to {t([b, n, h, d], dt)}")
        body.append(f"  %{v}2 = fuse.transpose %{v}1 {{permutation = array<i64: 0, 2, 1, 3>}} : "
                    f"{t([b, n, h, d], dt)}")
        names[v] = f"%{v}2"
        if v != "v":
            body.append(f"  %{v}3 = fuse.rope %{v}2, %cos, %sin : {t([b, h, n, d], dt)}, {t([n, d // 2], dt)}")
            names[v] = f"%{v}3"
    qt, kt = t([b, hq, n, d], dt), t([b, hkv, n, d], dt)
    body.append(f"  %a = fuse.attention {names['q']}, {names['k']}, {names['v']} {{causal}} : {qt}, {kt}, {kt}")
    body.append(f"  %a1 = fuse.transpose %a {{permutation = array<i64: 0, 2, 1, 3>}} : {qt}")
    body.append(f"  %a2 = fuse.reshape %a1 : {t([b, n, hq, d], dt)} to {t([b, n, hq * d], dt)}")
    body.append(f"  %o = fuse.linear %a2, %wo : {t([b, n, hq * d], dt)}, {t([dm, hq * d], dt)}")
    body.append(f"  %r1 = fuse.add %x, %o : {x}, {x}")
    body.append(f"  %h2 = fuse.rms_norm %r1 scale(%g2 : {row}) : {x}")
    f = t([b, n, ffn], dt)
    body.append(f"  %fg = fuse.linear %h2, %wg : {x}, {t([ffn, dm], dt)}")
    body.append(f"  %fu = fuse.linear %h2, %wu : {x}, {t([ffn, dm], dt)}")
    body.append(f"  %fs = fuse.silu %fg : {f}")
    body.append(f"  %fm = fuse.mul %fs, %fu : {f}, {f}")
    body.append(f"  %fd = fuse.linear %fm, %wd : {f}, {t([dm, ffn], dt)}")
    body.append(f"  %y = fuse.add %r1, %fd : {x}, {x}")
    return f"func.func @{name}({', '.join(args)}) -> {x} {{\n" + "\n".join(body) + f"\n  return %y : {x}\n}}\n"


def workloads():
    """(tag, graph text, fusec flags) of every workload, in run order."""
    jobs = []
    for dt in CONV_DTYPES:
        for (name, n, ci, h, w, co, k, s, p, g) in CONVS:
            flags = ["--fp32-math=tf32"] if dt == "tf32" else []
            jobs.append((f"{name}_{dt}", conv_graph(name, n, ci, h, w, co, k, s, p, g, dt), flags))
    for name, cin in BOTTLENECKS:
        jobs.append((f"{name}_f16", bottleneck_graph(name, cin), []))
    for part in FFN_PARTS:
        jobs.append((f"{part}_bf16", ffn_graph(part), []))
    for blk in BLOCKS:
        jobs.append((f"{blk[0]}_bf16", block_graph(*blk), []))
    for blk in LLAMA_BLOCKS:
        jobs.append((f"{blk[0]}_bf16", llama_graph(*blk), []))
    for dt in ATTENTION_DTYPES:
        for shape in ATTENTION:
            for causal in (False, True):
                jobs.append((attention_tag(*shape, causal, dt), attention_graph(*shape, causal, dt), []))
    for dt in BN_DTYPES:
        name, n, c, h, w = BN_RELU
        jobs.append((f"{name}_{dt}", bn_graph(name, n, c, h, w, dt), []))
    for name, dt in ROW_WORKLOADS:
        jobs.append((f"{name}_{dt}", row_graph(name, dt), []))
    for spatial in SPATIAL:
        jobs.append((f"{spatial[0]}_bf16", spatial_graph(*spatial), []))
    for name, dt, shape in MOVES:
        jobs.append((move_tag(name, dt), move_graph(name, dt, shape), []))
    return jobs


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    for tag, text, flags in workloads():
        # The FFN's GEMMs on the portable path as well (mma.sync on sm_90),
        # to set the two paths side by side.
        variants = [(tag, args.arch)] + ([(tag + "_sm90", "sm_90")] if tag.startswith(("ffn", "attention"))
                                         else [])
        for name, arch in variants:
            if args.k and not any(k in name for k in args.k.split(",")):
                continue
            graph = os.path.join(args.out, name + ".mlir")
            with open(graph, "w") as f:
                f.write(text)
            subprocess.run([args.fusec, graph, "-o", os.path.join(args.out, name + ".ptx"), f"--arch={arch}"] +
                           flags, check=True)
            # How it was compiled, to compile it again with a tuning database.
            with open(os.path.join(args.out, name + ".flags"), "w") as f:
                f.write(" ".join([f"--arch={arch}"] + flags) + "\n")
            print("compiled", name, flush=True)


class Runtime:
    """libfusec_runtime.so through ctypes: device, modules, runs."""

    class Buffer(ctypes.Structure):
        _fields_ = [("ptr", ctypes.c_uint64), ("bytes", ctypes.c_uint64)]

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.fusec_last_error_message.restype = ctypes.c_char_p
        self.device = ctypes.c_void_p()
        self.check(self.lib.fusec_device_open(0, ctypes.byref(self.device)))

    def check(self, status):
        if status != 0:
            raise RuntimeError(self.lib.fusec_last_error_message().decode())

    def load(self, path):
        module = ctypes.c_void_p()
        self.check(self.lib.fusec_module_load_file(self.device, path.encode(), ctypes.byref(module)))
        return module

    def runner(self, module, stream, inputs, outputs):
        """A closure that runs `module` on these tensors (buffers marshalled once)."""
        ins = (self.Buffer * len(inputs))(*[self.Buffer(x.data_ptr(), x.numel() * x.element_size()) for x in inputs])
        outs = (self.Buffer * len(outputs))(*[self.Buffer(x.data_ptr(), x.numel() * x.element_size())
                                              for x in outputs])
        run, lib = self.lib.fusec_module_run, self
        s = ctypes.c_void_p(stream)

        def go():
            lib.check(run(module, s, ins, len(inputs), outs, len(outputs)))
        return go


def run_bench(args):
    import torch
    import torch.nn.functional as F

    torch.backends.cudnn.benchmark = True
    dev = "cuda"
    rt = Runtime(args.runtime)
    tdt = {"f16": torch.float16, "f32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16}
    props = torch.cuda.get_device_properties(0)
    l2 = props.L2_cache_size

    def allow_tf32(on):
        torch.backends.cuda.matmul.allow_tf32 = on
        torch.backends.cudnn.allow_tf32 = on

    def bench(fns, reps=15, inner=10, warm=5):
        """Median ms per call of fns[i % len(fns)] called back to back."""
        return timing.median_ms(torch, fns, reps, inner, warm)

    def interleaved(contenders, rounds=3, **kw):
        """Best median ms of each {name: fns} (None: absent), in turns
        (each round starting one contender later, each turn after 100 ms
        of idle: timing.take_turns)."""
        if "fusec" in contenders and tuned_runners:
            contenders = dict(contenders, fusec_tuned=list(tuned_runners))
            tuned_runners.clear()
        best, _ = timing.take_turns(contenders, lambda fns: bench(fns, **kw), rounds, torch.cuda.synchronize)
        return best

    def copies(nbytes):
        """How many copies of a working set of `nbytes` rotate past L2."""
        return timing.copies(nbytes, l2)

    def relerr(out, ref):
        out, ref = out.double(), ref.double()
        if not torch.isfinite(out).all():
            return float("nan")
        return ((out - ref).norm() / ref.norm()).item()

    # The tuned twin of each loaded artifact: every runner made for the
    # artifact gets a twin on the same tensors, and the row's next
    # interleaved() times them as one more contender.
    twins, tuned_runners = {}, []
    untuned_runner = rt.runner

    def runner(module, stream, inputs, outputs):
        twin = twins.get(module.value)
        if twin is not None:
            tuned_runners.append(untuned_runner(twin, stream, inputs, outputs))
        return untuned_runner(module, stream, inputs, outputs)
    rt.runner = runner

    def load(tag):
        module = rt.load(os.path.join(args.dir, tag + ".ptx"))
        tuned_runners.clear()
        # Only the current module has a twin: a released module's address
        # may come back for the next one.
        twins.clear()
        tuned = os.path.join(args.tuned_dir, tag + ".ptx") if args.tuned_dir else None
        if tuned and os.path.exists(tuned):
            twins[module.value] = rt.load(tuned)
        return module

    def tuned_fields(tuned_ms, best):
        return dict(tuned_ms=tuned_ms, tuned_ratio=best / tuned_ms) if tuned_ms else {}

    stream = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731
    rows = []

    def emit(row):
        rows.append(row)
        print(json.dumps(row), flush=True)

    def wanted(tag):
        """Asked for, and prepared (a run may carry a subset)."""
        asked = not args.k or any(k in tag for k in args.k.split(","))
        return asked and os.path.exists(os.path.join(args.dir, tag + ".ptx"))

    print(f"device {props.name}, {props.multi_processor_count} SMs, L2 {l2 >> 20} MiB, torch {torch.__version__}, "
          f"cudnn {torch.backends.cudnn.version()}", flush=True)

    # Ceilings, measured in this process: device-to-device copy (bytes read +
    # written) and 8192^3 GEMMs through cuBLAS.
    ceil = {}
    x = torch.empty(2 << 30, device=dev, dtype=torch.uint8)
    y = torch.empty_like(x)
    ceil["copy_TBps"] = 2 * x.numel() / bench([lambda: y.copy_(x)], reps=7, inner=3) / 1e9
    del x, y
    for name, d in (("bf16", torch.bfloat16), ("f16", torch.float16), ("tf32", torch.float32)):
        allow_tf32(name == "tf32")
        a = torch.randn(8192, 8192, device=dev, dtype=d)
        b = torch.randn(8192, 8192, device=dev, dtype=d)
        ceil[f"gemm_{name}_TFLOPs"] = 2 * 8192 ** 3 / bench([lambda: a @ b], reps=7, inner=3) / 1e9
        del a, b
    allow_tf32(False)
    ceil["gemm_f32_TFLOPs"] = None
    emit(dict(workload="ceilings", **ceil))

    def compute_row(workload, dt, fusec_ms, alts, flops, err, **extra):
        alts = dict(alts)
        tuned = alts.pop("fusec_tuned", None)
        best = min(v for v in alts.values() if v)
        extra = dict(extra, **tuned_fields(tuned, best))
        peak = ceil.get(f"gemm_{'bf16' if dt == 'bf16' else 'f16' if dt == 'f16' else 'tf32'}_TFLOPs")
        tf = flops / fusec_ms / 1e9
        row = dict(workload=workload, dtype=dt, fusec_ms=fusec_ms, **{k + "_ms": v for k, v in alts.items()},
                   best_alt_ms=best, ratio=best / fusec_ms, fusec_TFLOPs=tf,
                   ceiling_fraction=tf / peak if peak and dt != "f32" else None, relerr=err, **extra)
        emit(row)

    def memory_row(workload, dt, fusec_ms, alts, nbytes, err):
        alts = dict(alts)
        tuned = alts.pop("fusec_tuned", None)
        best = min(v for v in alts.values() if v)
        tb = nbytes / fusec_ms / 1e9
        emit(dict(workload=workload, dtype=dt, fusec_ms=fusec_ms, **{k + "_ms": v for k, v in alts.items()},
                  best_alt_ms=best, ratio=best / fusec_ms, fusec_TBps=tb, ceiling_fraction=tb / ceil["copy_TBps"],
                  relerr=err, **tuned_fields(tuned, best)))

    def eager_and_compiled(fns_of):
        """{eager, compile} contenders for fns_of(f) -> list of closures."""
        return dict(eager=fns_of(lambda f: f), compile=None if args.no_compile else fns_of(torch.compile))

    # --- Conv + BN + ReLU (section 1).
    for dt in CONV_DTYPES:
        allow_tf32(dt == "tf32")
        for (name, n, ci, h, w, co, k, s, pd, g) in CONVS:
            tag = f"{name}_{dt}"
            if not wanted(tag):
                continue
            module = load(tag)
            d = tdt[dt]
            ho, wo = (h + 2 * pd - k) // s + 1, (w + 2 * pd - k) // s + 1
            conv = torch.nn.Conv2d(ci, co, k, s, pd, groups=g, bias=False).to(dev, d).to(
                memory_format=torch.channels_last).eval()
            bn = torch.nn.BatchNorm2d(co).to(dev, d).eval()
            with torch.no_grad():
                bn.running_mean.uniform_(-1, 1)
                bn.running_var.uniform_(0.5, 2)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.5, 0.5)
            esize = torch.tensor([], dtype=d).element_size()
            nsets = copies((n * ci * h * w + n * co * ho * wo) * esize)
            xs = [torch.randn(n, ci, h, w, device=dev, dtype=d).to(memory_format=torch.channels_last)
                  for _ in range(nsets)]
            outs = [torch.full((n, ho, wo, co), float("nan"), device=dev, dtype=d) for _ in range(nsets)]
            # NHWC activations and OHWI filters are PyTorch's channels-last memory.
            wt = conv.weight.detach().permute(0, 2, 3, 1).contiguous()
            params = [bn.running_mean, bn.running_var, bn.weight.detach(), bn.bias.detach()]
            fusec = [rt.runner(module, stream(), [x.permute(0, 2, 3, 1), wt] + params, [o])
                     for x, o in zip(xs, outs)]
            with torch.no_grad():
                fusec[0]()
                torch.cuda.synchronize()
                ref = F.relu(F.batch_norm(F.conv2d(xs[0].double(), conv.weight.double(), None, s, pd, 1, g),
                                          bn.running_mean.double(), bn.running_var.double(), bn.weight.double(),
                                          bn.bias.double(), False, 0.0, bn.eps))
                err = relerr(outs[0].permute(0, 3, 1, 2), ref)
                del ref
                scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
                wf = (conv.weight * scale.view(-1, 1, 1, 1)).contiguous(memory_format=torch.channels_last)
                bf = bn.bias - bn.running_mean * scale
                conv_relu = [lambda x=x: torch.cudnn_convolution_relu(x, wf, bf, (s, s), (pd, pd), (1, 1), g)
                             for x in xs]
                try:
                    conv_relu[0]()
                except Exception:  # noqa: BLE001
                    conv_relu = None
                ms = interleaved(dict(fusec=fusec, eager=[lambda x=x: F.relu(bn(conv(x))) for x in xs],
                                      folded=[lambda x=x: F.relu(F.conv2d(x, wf, bf, s, pd, 1, g)) for x in xs],
                                      cudnn_conv_relu=conv_relu))
            flops = 2 * n * ho * wo * co * (ci // g) * k * k
            extra = {}
            if g == ci:
                # Depthwise is memory-bound: input once + output once against
                # the copy bandwidth (issue 9's bar).
                esize = 2 if dt in ("f16", "bf16") else 4
                tbps = (n * h * w * ci + n * ho * wo * co) * esize / ms["fusec"] / 1e9
                extra = dict(fusec_TBps=tbps, copy_fraction=tbps / ceil["copy_TBps"])
            compute_row(f"conv_bn_relu {name}", dt, ms.pop("fusec"), ms, flops, err, **extra)
            rt.lib.fusec_module_release(module)
            del xs, outs, conv, bn, fusec
        allow_tf32(False)

    # --- ResNet-50 bottleneck blocks, f16 (section 5).
    for name, cin in BOTTLENECKS:
        tag = f"{name}_f16"
        if not wanted(tag):
            continue
        module = load(tag)
        d, n, hw, mid = torch.float16, BLOCK_N, BLOCK_HW, BLOCK_MID
        specs = [("c1", cin, mid, 1), ("c2", mid, mid, 3), ("c3", mid, 4 * mid, 1)]
        if cin != 4 * mid:
            specs.append(("sc", cin, 4 * mid, 1))
        convs, bns = {}, {}
        for tg, ci, co, k in specs:
            convs[tg] = torch.nn.Conv2d(ci, co, k, 1, k // 2, bias=False).to(dev, d).to(
                memory_format=torch.channels_last).eval()
            bns[tg] = torch.nn.BatchNorm2d(co).to(dev, d).eval()
            with torch.no_grad():
                bns[tg].running_mean.uniform_(-0.5, 0.5)
                bns[tg].running_var.uniform_(0.5, 2)
                bns[tg].weight.uniform_(0.5, 1.5)
                bns[tg].bias.uniform_(-0.5, 0.5)
                # Keep activations O(1) through the block.
                convs[tg].weight.mul_(1.0 / (ci * k * k) ** 0.5 / convs[tg].weight.std())

        def block(x, cv=convs, bn=bns):
            a = F.relu(bn["c1"](cv["c1"](x)))
            b = F.relu(bn["c2"](cv["c2"](a)))
            c = bn["c3"](cv["c3"](b))
            sc = bn["sc"](cv["sc"](x)) if "sc" in cv else x
            return F.relu(c + sc)

        folded = {}
        for tg in convs:
            scale = bns[tg].weight / torch.sqrt(bns[tg].running_var + bns[tg].eps)
            folded[tg] = ((convs[tg].weight * scale.view(-1, 1, 1, 1)).contiguous(memory_format=torch.channels_last),
                          bns[tg].bias - bns[tg].running_mean * scale)

        def block_folded(x, fw=folded):
            def c(tg, v, act):
                w, b = fw[tg]
                p = w.shape[-1] // 2
                if act:
                    return torch.cudnn_convolution_relu(v, w, b, (1, 1), (p, p), (1, 1), 1)
                return F.conv2d(v, w, b, 1, p)
            a = c("c1", x, True)
            b2 = c("c2", a, True)
            y = c("c3", b2, False)
            sc = c("sc", x, False) if "sc" in fw else x
            return F.relu(y + sc)

        nsets = copies(n * hw * hw * (cin + 4 * mid) * 2)
        xs = [torch.randn(n, cin, hw, hw, device=dev, dtype=d).to(memory_format=torch.channels_last)
              for _ in range(nsets)]
        outs = [torch.full((n, hw, hw, 4 * mid), float("nan"), device=dev, dtype=d) for _ in range(nsets)]
        params = []
        for tg, ci, co, k in specs:
            params.append(convs[tg].weight.detach().permute(0, 2, 3, 1).contiguous())
            params += [bns[tg].running_mean, bns[tg].running_var, bns[tg].weight.detach(), bns[tg].bias.detach()]
        fusec = [rt.runner(module, stream(), [x.permute(0, 2, 3, 1)] + params, [o]) for x, o in zip(xs, outs)]
        with torch.no_grad():
            fusec[0]()
            torch.cuda.synchronize()
            cv64 = {tg: torch.nn.Conv2d(ci, co, k, 1, k // 2, bias=False).to(dev, torch.float64)
                    for tg, ci, co, k in specs}
            bn64 = {tg: torch.nn.BatchNorm2d(co).to(dev, torch.float64).eval() for tg, ci, co, k in specs}
            for tg in cv64:
                cv64[tg].load_state_dict({k_: v.double() for k_, v in convs[tg].state_dict().items()})
                bn64[tg].load_state_dict({k_: v.double() if v.is_floating_point() else v
                                          for k_, v in bns[tg].state_dict().items()})
            ref = block(xs[0].double().contiguous(), cv64, bn64)
            err = relerr(outs[0].permute(0, 3, 1, 2), ref)
            del ref, cv64, bn64
            fold_c = None if args.no_compile else torch.compile(block_folded)
            ms = interleaved(dict(fusec=fusec,
                                  **eager_and_compiled(lambda wrap, f=block: [lambda x=x, f=wrap(f): f(x)
                                                                              for x in xs]),
                                  folded=[lambda x=x: block_folded(x) for x in xs],
                                  folded_compile=fold_c and [lambda x=x: fold_c(x) for x in xs]))
        flops = sum(2 * n * hw * hw * co * ci * k * k for _, ci, co, k in specs)
        compute_row(name, "f16", ms.pop("fusec"), ms, flops, err)
        rt.lib.fusec_module_release(module)
        del xs, outs, fusec, params

    # --- FFN, bf16 (section 4): the whole block and each linear.
    tokens, dm, hidden = FFN
    d = torch.bfloat16
    ffn_tags = [(p, f"{p}_bf16{suffix}", suffix) for p in FFN_PARTS for suffix in ("", "_sm90")]
    if any(wanted(tag) for _, tag, _ in ffn_tags):
        x = torch.randn(tokens, dm, device=dev, dtype=d)
        w1 = torch.randn(hidden, dm, device=dev, dtype=d) / dm ** 0.5
        b1 = torch.randn(hidden, device=dev, dtype=d) * 0.1
        w2 = torch.randn(dm, hidden, device=dev, dtype=d) / hidden ** 0.5
        b2 = torch.randn(dm, device=dev, dtype=d) * 0.1
        hmid = F.gelu(F.linear(x, w1, b1), approximate="tanh")
        for part, tag, suffix in ffn_tags:
            if not wanted(tag):
                continue
            module = load(tag)
            if part == "ffn_up":
                ins, out = [x, w1, b1], torch.full((tokens, hidden), float("nan"), device=dev, dtype=d)
                eager = lambda: F.gelu(F.linear(x, w1, b1), approximate="tanh")  # noqa: E731
                refd = lambda: F.gelu(F.linear(x.double(), w1.double(), b1.double()), approximate="tanh")  # noqa
                flops = 2 * tokens * dm * hidden
                cublas = lambda: F.linear(x, w1, b1)  # noqa: E731
            elif part == "ffn_down":
                ins, out = [hmid, w2, b2], torch.full((tokens, dm), float("nan"), device=dev, dtype=d)
                eager = lambda: F.linear(hmid, w2, b2)  # noqa: E731
                refd = lambda: F.linear(hmid.double(), w2.double(), b2.double())  # noqa: E731
                flops = 2 * tokens * dm * hidden
                cublas = eager
            else:
                ins, out = [x, w1, b1, w2, b2], torch.full((tokens, dm), float("nan"), device=dev, dtype=d)
                eager = lambda: F.linear(F.gelu(F.linear(x, w1, b1), approximate="tanh"), w2, b2)  # noqa: E731
                refd = lambda: F.linear(F.gelu(F.linear(x.double(), w1.double(), b1.double()), approximate="tanh"),  # noqa
                                        w2.double(), b2.double())
                flops = 4 * tokens * dm * hidden
                cublas = None
            fusec = [rt.runner(module, stream(), ins, [out])]
            with torch.no_grad():
                fusec[0]()
                torch.cuda.synchronize()
                err = relerr(out, refd())
                ms = interleaved(dict(fusec=fusec, **eager_and_compiled(lambda wrap: [wrap(eager)]),
                                      cublas=cublas and [cublas]), reps=9, inner=3)
            ms_f, ms_cb = ms.pop("fusec"), ms.pop("cublas")
            ms_t = ms.get("fusec_tuned")
            compute_row(part + (" (sm_90)" if suffix else ""), "bf16", ms_f, ms, flops, err, cublas_linear_ms=ms_cb,
                        ratio_vs_cublas_linear=ms_cb / ms_f if ms_cb else None,
                        **(dict(tuned_ratio_vs_cublas_linear=ms_cb / ms_t) if ms_cb and ms_t else {}))
            rt.lib.fusec_module_release(module)
        del x, w1, b1, w2, b2, hmid

    # --- Attention forward (section 2), against SDPA's FlashAttention-2 and
    # cuDNN backends.
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for dt in ATTENTION_DTYPES:
        d = tdt[dt]
        for (bsz, heads, n, hd), causal, suffix in [(a, c, x) for a in ATTENTION for c in (False, True)
                                                    for x in ("", "_sm90")]:
                tag = attention_tag(bsz, heads, n, hd, causal, dt) + suffix
                if not wanted(tag):
                    continue
                module = load(tag)
                q, k, v = (torch.randn(bsz, heads, n, hd, device=dev, dtype=d) for _ in range(3))
                out = torch.full_like(q, float("nan"))
                fusec = [rt.runner(module, stream(), [q, k, v], [out])]

                def sdpa(backend, q=q, k=k, v=v, causal=causal):
                    def call():
                        with sdpa_kernel(backend):
                            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    try:
                        call()
                        return [call]
                    except RuntimeError:
                        return None
                with torch.no_grad():
                    fusec[0]()
                    torch.cuda.synchronize()
                    # float64 reference on the first head of each batch only
                    # (the whole one would not fit in memory at N = 16384).
                    ref = F.scaled_dot_product_attention(q[:, :1].double(), k[:, :1].double(),
                                                         v[:, :1].double(), is_causal=causal)
                    err = relerr(out[:, :1], ref)
                    del ref
                    ms = interleaved(dict(fusec=fusec, flash=sdpa(SDPBackend.FLASH_ATTENTION),
                                          cudnn=sdpa(SDPBackend.CUDNN_ATTENTION)), reps=9, inner=5)
                flops = 4 * bsz * heads * n * n * hd // (2 if causal else 1)
                ms_f, ms_cudnn = ms.pop("fusec"), ms.pop("cudnn")
                name = attention_tag(bsz, heads, n, hd, causal, dt)[: -len(dt) - 1]
                ms_t = ms.get("fusec_tuned")
                compute_row(name + (" (sm_90)" if suffix else ""), dt, ms_f, ms, flops, err, cudnn_sdpa_ms=ms_cudnn,
                            ratio_vs_cudnn=ms_cudnn / ms_f if ms_cudnn else None,
                            **(dict(tuned_ratio_vs_cudnn=ms_cudnn / ms_t) if ms_cudnn and ms_t else {}))
                rt.lib.fusec_module_release(module)
                del q, k, v, out, fusec

    # --- Transformer blocks (issue 7), bf16, against eager PyTorch (SDPA)
    # and torch.compile; kernels per block next to each time.
    for (name, bsz, n, dm, hq, hkv, hd, ffn, causal, rope) in BLOCKS:
        tag = f"{name}_bf16"
        if not wanted(tag):
            continue
        module = load(tag)
        with open(os.path.join(args.dir, tag + ".ptx")) as f:
            kernels = f.read().count(".entry ")
        d = torch.bfloat16

        def rnd(*shape, s=1.0):
            return torch.randn(*shape, device=dev, dtype=d) * s
        p = dict(x=rnd(bsz, n, dm), g1=1 + rnd(dm, s=0.1), b1=rnd(dm, s=0.1),
                 wq=rnd(hq * hd, dm, s=dm ** -0.5), wk=rnd(hkv * hd, dm, s=dm ** -0.5),
                 wv=rnd(hkv * hd, dm, s=dm ** -0.5), wo=rnd(dm, hq * hd, s=(hq * hd) ** -0.5))
        if rope:
            ang = torch.arange(n, device=dev)[:, None] * 10000 ** (-torch.arange(hd // 2, device=dev) / (hd // 2))
            p.update(cos=ang.cos().to(d), sin=ang.sin().to(d))
        p.update(g2=1 + rnd(dm, s=0.1), b2=rnd(dm, s=0.1), w1=rnd(ffn, dm, s=dm ** -0.5), c1=rnd(ffn, s=0.1),
                 w2=rnd(dm, ffn, s=ffn ** -0.5), c2=rnd(dm, s=0.1))

        def block(p=p, bsz=bsz, n=n, dm=dm, hq=hq, hkv=hkv, hd=hd, causal=causal, rope=rope):
            def rot(v):
                if not rope:
                    return v
                v0, v1 = v[..., :hd // 2], v[..., hd // 2:]
                return torch.cat([v0 * p["cos"] - v1 * p["sin"], v1 * p["cos"] + v0 * p["sin"]], -1)
            h = F.layer_norm(p["x"], (dm,), p["g1"], p["b1"])
            q = rot(F.linear(h, p["wq"]).view(bsz, n, hq, hd).transpose(1, 2))
            k = rot(F.linear(h, p["wk"]).view(bsz, n, hkv, hd).transpose(1, 2))
            v = F.linear(h, p["wv"]).view(bsz, n, hkv, hd).transpose(1, 2)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=hq != hkv)
            r1 = p["x"] + F.linear(a.transpose(1, 2).reshape(bsz, n, hq * hd), p["wo"])
            h2 = F.layer_norm(r1, (dm,), p["g2"], p["b2"])
            f = F.gelu(F.linear(h2, p["w1"], p["c1"]), approximate="tanh")
            return r1 + F.linear(f, p["w2"], p["c2"])
        out = torch.full_like(p["x"], float("nan"))
        fusec = [rt.runner(module, stream(), list(p.values()), [out])]
        with torch.no_grad():
            fusec[0]()
            torch.cuda.synchronize()
            ref = block({k_: v_.double() for k_, v_ in p.items()})
            err = relerr(out, ref)
            del ref
            ms = interleaved(dict(fusec=fusec, **eager_and_compiled(lambda wrap: [wrap(block)])))
        flops = 2 * bsz * n * dm * (hq * hd + 2 * hkv * hd + hq * hd + 2 * ffn) + \
            4 * bsz * hq * n * n * hd // (2 if causal else 1)
        compute_row(name, "bf16", ms.pop("fusec"), ms, flops, err, kernels=kernels)
        rt.lib.fusec_module_release(module)

    for (name, bsz, n, dm, hq, hkv, hd, ffn) in LLAMA_BLOCKS:
        tag = f"{name}_bf16"
        if not wanted(tag):
            continue
        module = load(tag)
        with open(os.path.join(args.dir, tag + ".ptx")) as f:
            kernels = f.read().count(".entry ")
        d = torch.bfloat16

        def rnd(*shape, s=1.0):
            return torch.randn(*shape, device=dev, dtype=d) * s
        ang = torch.arange(n, device=dev)[:, None] * 10000 ** (-torch.arange(hd // 2, device=dev) / (hd // 2))
        p = dict(x=rnd(bsz, n, dm), g1=1 + rnd(dm, s=0.1), wq=rnd(hq * hd, dm, s=dm ** -0.5),
                 wk=rnd(hkv * hd, dm, s=dm ** -0.5), wv=rnd(hkv * hd, dm, s=dm ** -0.5),
                 wo=rnd(dm, hq * hd, s=(hq * hd) ** -0.5), cos=ang.cos().to(d), sin=ang.sin().to(d),
                 g2=1 + rnd(dm, s=0.1), wg=rnd(ffn, dm, s=dm ** -0.5), wu=rnd(ffn, dm, s=dm ** -0.5),
                 wd=rnd(dm, ffn, s=ffn ** -0.5))

        def llama(p=p, bsz=bsz, n=n, dm=dm, hq=hq, hkv=hkv, hd=hd):
            def rot(v):
                v0, v1 = v[..., :hd // 2], v[..., hd // 2:]
                return torch.cat([v0 * p["cos"] - v1 * p["sin"], v1 * p["cos"] + v0 * p["sin"]], -1)
            h = F.rms_norm(p["x"], (dm,), p["g1"], eps=1e-6)
            q = rot(F.linear(h, p["wq"]).view(bsz, n, hq, hd).transpose(1, 2))
            k = rot(F.linear(h, p["wk"]).view(bsz, n, hkv, hd).transpose(1, 2))
            v = F.linear(h, p["wv"]).view(bsz, n, hkv, hd).transpose(1, 2)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=hq != hkv)
            r1 = p["x"] + F.linear(a.transpose(1, 2).reshape(bsz, n, hq * hd), p["wo"])
            h2 = F.rms_norm(r1, (dm,), p["g2"], eps=1e-6)
            return r1 + F.linear(F.silu(F.linear(h2, p["wg"])) * F.linear(h2, p["wu"]), p["wd"])
        out = torch.full_like(p["x"], float("nan"))
        fusec = [rt.runner(module, stream(), list(p.values()), [out])]
        with torch.no_grad():
            fusec[0]()
            torch.cuda.synchronize()
            ref = llama({k_: v_.double() for k_, v_ in p.items()})
            err = relerr(out, ref)
            del ref
            ms = interleaved(dict(fusec=fusec, **eager_and_compiled(lambda wrap: [wrap(llama)])))
        flops = 2 * bsz * n * dm * (2 * hq * hd + 2 * hkv * hd + 3 * ffn) + 4 * bsz * hq * n * n * hd // 2
        compute_row(name, "bf16", ms.pop("fusec"), ms, flops, err, kernels=kernels)
        rt.lib.fusec_module_release(module)

    # --- Memory-bound rows (section 3).
    name, n, c, h, w = BN_RELU
    for dt in BN_DTYPES:
        tag = f"{name}_{dt}"
        if not wanted(tag):
            continue
        module = load(tag)
        d = tdt[dt]
        x = torch.randn(n, c, h, w, device=dev, dtype=d).to(memory_format=torch.channels_last)
        bn = torch.nn.BatchNorm2d(c).to(dev, d).eval()
        with torch.no_grad():
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
        out = torch.full((n, h, w, c), float("nan"), device=dev, dtype=d)
        ins = [x.permute(0, 2, 3, 1), bn.running_mean, bn.running_var, bn.weight.detach(), bn.bias.detach()]
        fusec = [rt.runner(module, stream(), ins, [out])]
        with torch.no_grad():
            fusec[0]()
            torch.cuda.synchronize()
            ref = F.relu(F.batch_norm(x.double(), bn.running_mean.double(), bn.running_var.double(),
                                      bn.weight.double(), bn.bias.double(), False, 0.0, bn.eps))
            err = relerr(out.permute(0, 3, 1, 2), ref)
            ms = interleaved(dict(fusec=fusec, **eager_and_compiled(lambda wrap: [wrap(lambda: F.relu(bn(x)))])))
        memory_row(name, dt, ms.pop("fusec"), ms, 2 * x.numel() * x.element_size(), err)
        rt.lib.fusec_module_release(module)
    T, H = ROWS
    for name, dt in ROW_WORKLOADS:
        tag = f"{name}_{dt}"
        if not wanted(tag):
            continue
        module = load(tag)
        d = tdt[dt]
        x = torch.randn(T, H, device=dev, dtype=d)
        r = torch.randn_like(x)
        w = torch.randn(H, device=dev, dtype=d)
        b = torch.randn(H, device=dev, dtype=d)
        eb = x.element_size()
        outs = [torch.full_like(x, float("nan")) for _ in range(1 if name in ("bias_gelu", "softmax") else 2)]
        ins = {"bias_gelu": [x, b], "add_layernorm": [x, r, w, b], "add_rmsnorm": [x, r, w],
               "softmax": [x]}[name]
        if name == "softmax":
            def eager():
                return F.softmax(x, -1)
            ref = [F.softmax(x.double(), -1)]
            nbytes = 2 * T * H * eb
        elif name == "bias_gelu":
            def eager():
                return F.gelu(x + b)
            ref = [F.gelu(x.double() + b.double())]
            nbytes = 2 * T * H * eb
        elif name == "add_layernorm":
            def eager():
                hh = x + r
                return F.layer_norm(hh, (H,), w, b), hh
            hd = x.double() + r.double()
            ref = [F.layer_norm(hd, (H,), w.double(), b.double()), hd]
            nbytes = 4 * T * H * eb
        else:
            def eager():
                hh = x + r
                return hh * torch.rsqrt(hh.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(d) * w, hh
            hd = x.double() + r.double()
            ref = [hd * torch.rsqrt(hd.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double(), hd]
            nbytes = 4 * T * H * eb
        fusec = [rt.runner(module, stream(), ins, outs)]
        with torch.no_grad():
            fusec[0]()
            torch.cuda.synchronize()
            err = max(relerr(o, rf) for o, rf in zip(outs, ref))
            ms = interleaved(dict(fusec=fusec, **eager_and_compiled(lambda wrap: [wrap(eager)])))
        memory_row(name, dt, ms.pop("fusec"), ms, nbytes, err)
        rt.lib.fusec_module_release(module)
    for (name, n, c, h, w) in SPATIAL:
        tag = f"{name}_bf16"
        if not wanted(tag):
            continue
        module = load(tag)
        x = torch.randn(n, c, h, w, device=dev, dtype=torch.bfloat16).to(memory_format=torch.channels_last)
        if name.startswith("maxpool"):
            def eager(x=x):
                return F.max_pool2d(x, 3, 2, 1)
            ref = F.max_pool2d(x.double(), 3, 2, 1)
        else:
            def eager(x=x):
                return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
            ref = F.interpolate(x.double(), scale_factor=2, mode="bilinear", align_corners=False)
        out = torch.full(ref.permute(0, 2, 3, 1).shape, float("nan"), device=dev, dtype=torch.bfloat16)
        fusec = [rt.runner(module, stream(), [x.permute(0, 2, 3, 1)], [out])]
        with torch.no_grad():
            fusec[0]()
            torch.cuda.synchronize()
            err = relerr(out.permute(0, 3, 1, 2), ref)
            ms = interleaved(dict(fusec=fusec, **eager_and_compiled(lambda wrap: [wrap(eager)])))
        memory_row(name, "bf16", ms.pop("fusec"), ms, (x.numel() + out.numel()) * 2, err)
        rt.lib.fusec_module_release(module)
        del x, out, ref

    for name, dt, shape in MOVES:
        tag = move_tag(name, dt)
        if not wanted(tag):
            continue
        module = load(tag)
        d = tdt[dt]
        x = torch.randn(*shape, device=dev, dtype=d)
        if name == "rope":
            n, hd = shape[2], shape[3]
            ang = torch.arange(n, device=dev)[:, None] * 10000 ** (-torch.arange(hd // 2, device=dev) / (hd // 2))
            cos, sin = ang.cos().to(d), ang.sin().to(d)
            ins = [x, cos, sin]

            def eager(x=x, cos=cos, sin=sin, h=hd // 2):
                x0, x1 = x[..., :h], x[..., h:]
                return torch.cat([x0 * cos - x1 * sin, x1 * cos + x0 * sin], -1)
            xd, cd, sd = x.double(), cos.double(), sin.double()
            ref = torch.cat([xd[..., :hd // 2] * cd - xd[..., hd // 2:] * sd,
                             xd[..., hd // 2:] * cd + xd[..., :hd // 2] * sd], -1)
            del xd
        elif name in MOVE_PERMS:
            perm = MOVE_PERMS[name]
            ins = [x]

            def eager(x=x, perm=perm):
                return x.permute(*perm).contiguous()
            ref = x.permute(*perm).double()
        elif name.startswith("cast"):
            to = tdt[name.split("_")[-1]]
            ins = [x]

            def eager(x=x, to=to):
                return x.to(to)
            ref = x.double()
        else:
            w = 1 + 0.1 * torch.randn(shape[-1], device=dev, dtype=d)
            bb = 0.1 * torch.randn(shape[-1], device=dev, dtype=d)
            ins = [x, w, bb]

            def eager(x=x, w=w, bb=bb):
                return F.layer_norm(x, (x.shape[-1],), w, bb)
            ref = F.layer_norm(x.double(), (shape[-1],), w.double(), bb.double())
        out = torch.full(ref.shape, float("nan"), device=dev, dtype=eager().dtype)
        fusec = [rt.runner(module, stream(), ins, [out])]
        with torch.no_grad():
            fusec[0]()
            torch.cuda.synchronize()
            err = relerr(out, ref)
            del ref
            ms = interleaved(dict(fusec=fusec, **eager_and_compiled(lambda wrap: [wrap(eager)])))
        nbytes = sum(i.numel() * i.element_size() for i in ins) + out.numel() * out.element_size()
        memory_row(name, dt, ms.pop("fusec"), ms, nbytes, err)
        rt.lib.fusec_module_release(module)
        del x, out, ins

    print()
    print(f"ceilings: copy {ceil['copy_TBps']:.2f} TB/s; GEMM 8192^3 bf16 {ceil['gemm_bf16_TFLOPs']:.0f}, "
          f"f16 {ceil['gemm_f16_TFLOPs']:.0f}, tf32 {ceil['gemm_tf32_TFLOPs']:.0f} TFLOP/s")
    tuned = any("tuned_ms" in r for r in rows[1:])
    print(f"{'workload':<28} {'dtype':<5} {'fusec ms':>9} {'best alt ms':>11} {'ratio':>6} {'fusec':>12} "
          f"{'of ceil':>7} {'relerr':>8}" + (f" {'tuned ms':>9} {'ratio':>6}" if tuned else ""))
    for r in rows[1:]:
        rate = f"{r['fusec_TFLOPs']:.0f} TFLOP/s" if "fusec_TFLOPs" in r else f"{r['fusec_TBps']:.2f} TB/s"
        frac = f"{r['ceiling_fraction']:.2f}" if r.get("ceiling_fraction") else "-"
        more = f" {r['tuned_ms']:>9.3f} {r['tuned_ratio']:>6.2f}" if "tuned_ms" in r else ""
        print(f"{r['workload']:<28} {r['dtype']:<5} {r['fusec_ms']:>9.3f} {r['best_alt_ms']:>11.3f} "
              f"{r['ratio']:>6.2f} {rate:>12} {frac:>7} {r['relerr']:>8.1e}{more}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": props.name, "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                       "ceilings": ceil, "rows": rows[1:]}, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--fusec", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--arch", default="sm_90a",
                   help="the target (default sm_90a, what `fusec run` picks on an H100 or H200)")
    p.add_argument("-k")
    r = sub.add_parser("run")
    r.add_argument("--runtime", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--json")
    r.add_argument("--tuned-dir", help="the same graphs compiled with a tuning database: one more contender")
    r.add_argument("--no-compile", action="store_true")
    r.add_argument("-k")
    args = ap.parse_args()
    if args.cmd == "prepare":
        prepare(args)
    else:
        run_bench(args)


if __name__ == "__main__":
    sys.exit(main())
