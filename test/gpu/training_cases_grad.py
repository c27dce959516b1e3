"""GPU cases for gradients: the backward function fusec-autodiff builds for
one forward op (or a short chain), in f32, f16 and bf16 on odd shapes.

Each case is the @g_backward function alone, so the suite checks it like
any graph: the GPU result against the float64 reference on the same random
inputs (saved tensors and output gradients included). Finite differences
check the rules themselves on the CPU (test/gradcheck); these check the
backward kernels. fusec-opt comes from $FUSEC_OPT or the build next to this
checkout; without it there are no cases (a message says so).
"""
import glob
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _fusec_opt():
    candidates = [os.environ.get("FUSEC_OPT", ""),
                  os.path.join(HERE, "..", "..", "build", "bin", "fusec-opt"),
                  shutil.which("fusec-opt") or ""]
    return next((c for c in candidates if c and os.path.exists(c)), None)


def pair_of(opt, text, what):
    """{"forward": text, "backward": text} of the pair fusec-autodiff makes
    of `text`'s one function, each alone in a module; None on failure."""
    out = subprocess.run([opt, "-fusec-autodiff"], input=text, capture_output=True, text=True)
    if out.returncode:
        sys.stderr.write(f"training_cases_grad: fusec-autodiff failed on {what}:\n{out.stderr}\n")
        return None
    pair = {}
    for m in re.finditer(r"^  func\.func @(\w+)_(forward|backward)\(.*?^  }$", out.stdout, re.S | re.M):
        pair[m.group(2)] = m.group(0) + "\n"
    return pair if len(pair) == 2 else None


def backward_of(opt, text):
    pair = pair_of(opt, text, "a forward op")
    return pair and pair["backward"]


def forward_graphs(Graph, t, dt):
    """(name, forward graph text) pairs for dtype `dt`."""
    graphs = []

    def unary(name, op, shape, attrs=""):
        g = Graph("g")
        x = g.arg(shape, dt)
        v = g.op(f"fuse.{op} {x} {attrs}: {t(shape, dt)}")
        graphs.append((name, g.text([(v, t(shape, dt))])))

    for op, attrs in (("relu", ""), ("relu6", ""), ("clamp", "{min = -0.5 : f64, max = 0.7 : f64} "),
                      ("leaky_relu", "{alpha = 0.2 : f64} "), ("gelu", ""),
                      ("gelu", "{approximate = #fuse.gelu_approx<tanh>} "), ("silu", ""),
                      ("sigmoid", ""), ("tanh", ""), ("hardswish", ""), ("neg", "")):
        suffix = "_tanh" if "tanh>" in attrs else ""
        unary(f"grad_{op}{suffix}_{dt}", op, [3, 17, 5], attrs)

    # Broadcasting binary ops: the operand gradients sum over broadcast axes.
    for op in ("add", "sub", "mul", "div"):
        g = Graph("g")
        x = g.arg([2, 5, 7, 3], dt)
        w = g.arg([5, 1, 3], dt)
        if op == "div":
            # A divisor in (0, 1) away from zero: x / w^2 of a random w near
            # zero overflows f16 in the reference as on the GPU.
            w = g.op(f"fuse.sigmoid {w} : {t([5, 1, 3], dt)}")
        v = g.op(f"fuse.{op} {x}, {w} : {t([2, 5, 7, 3], dt)}, {t([5, 1, 3], dt)}")
        graphs.append((f"grad_{op}_broadcast_{dt}", g.text([(v, t([2, 5, 7, 3], dt))])))

    def conv(name, layout, n, c, h, w, co, k, s=1, p=1, d=1, groups=1, bias=False, transpose=False, op_=0):
        g = Graph("g")
        xs = [n, h, w, c] if layout == "nhwc" else [n, c, h, w]
        if transpose:
            fs = [c, k, k, co // groups] if layout == "nhwc" else [c, co // groups, k, k]
            ho = (h - 1) * s - 2 * p + d * (k - 1) + op_ + 1
            wo = (w - 1) * s - 2 * p + d * (k - 1) + op_ + 1
        else:
            fs = [co, k, k, c // groups] if layout == "nhwc" else [co, c // groups, k, k]
            ho = (h + 2 * p - d * (k - 1) - 1) // s + 1
            wo = (w + 2 * p - d * (k - 1) - 1) // s + 1
        os_ = [n, ho, wo, co] if layout == "nhwc" else [n, co, ho, wo]
        x, f = g.arg(xs, dt), g.arg(fs, dt)
        operands, types = [x, f], [t(xs, dt), t(fs, dt)]
        if bias:
            operands.append(g.arg([co], dt))
            types.append(t([co], dt))
        attrs = [f"strides = array<i64: {s}, {s}>", f"padding = array<i64: {p}, {p}>",
                 f"dilation = array<i64: {d}, {d}>", f"groups = {groups}", f"layout = #fuse.layout<{layout}>"]
        if transpose:
            attrs.append(f"output_padding = array<i64: {op_}, {op_}>")
        kind = "conv_transpose2d" if transpose else "conv2d"
        v = g.op(f"fuse.{kind} {', '.join(operands)} {{{', '.join(attrs)}}} : {', '.join(types)}")
        graphs.append((f"grad_{name}_{layout}_{dt}", g.text([(v, t(os_, dt))])))

    for layout in ("nhwc", "nchw"):
        conv("conv3x3", layout, 2, 19, 9, 11, 24, 3)
        conv("conv_s2_bias", layout, 3, 16, 13, 10, 35, 3, s=2, bias=True)
        conv("conv1x1", layout, 2, 40, 7, 5, 33, 1, p=0)
        conv("conv_dilated", layout, 1, 16, 15, 14, 24, 3, p=2, d=2)
        conv("conv_grouped", layout, 2, 12, 10, 9, 36, 3, groups=3)
        conv("conv_depthwise", layout, 1, 7, 12, 13, 7, 3, s=2, groups=7)
        conv("conv_transpose", layout, 2, 24, 5, 7, 16, 3, s=2, bias=True, transpose=True, op_=1)

        # Batch norm in training and evaluation, f32 parameters.
        xs = [3, 5, 7, 6] if layout == "nhwc" else [3, 6, 5, 7]
        g = Graph("g")
        x = g.arg(xs, dt)
        ps = [g.arg([6], "f32") for _ in range(4)]
        # Graph.op names one result; the batch norm has five.
        g.body.append(f"  %bn:5 = fuse.batch_norm_train {x}, {', '.join(ps)} "
                      f"{{layout = #fuse.layout<{layout}>}} : {t(xs, dt)}, {t([6], 'f32')}")
        v = g.op(f"fuse.relu %bn#0 : {t(xs, dt)}")
        graphs.append((f"grad_batch_norm_train_relu_{layout}_{dt}", g.text([(v, t(xs, dt))])))
        g = Graph("g")
        x = g.arg(xs, dt)
        ps = [g.arg([6], dt) for _ in range(4)]
        v = g.op(f"fuse.batch_norm {x}, {', '.join(ps)} {{layout = #fuse.layout<{layout}>}} : "
                 f"{t(xs, dt)}, {t([6], dt)}")
        graphs.append((f"grad_batch_norm_eval_{layout}_{dt}", g.text([(v, t(xs, dt))])))

        g = Graph("g")
        x = g.arg([2, 9, 11, 5] if layout == "nhwc" else [2, 5, 9, 11], dt)
        xs = [2, 9, 11, 5] if layout == "nhwc" else [2, 5, 9, 11]
        pool_out = [2, 5, 6, 5] if layout == "nhwc" else [2, 5, 5, 6]
        v = g.op(f"fuse.max_pool2d {x} {{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, "
                 f"padding = array<i64: 1, 1>, layout = #fuse.layout<{layout}>}} : {t(xs, dt)}")
        graphs.append((f"grad_max_pool_{layout}_{dt}", g.text([(v, t(pool_out, dt))])))
        g = Graph("g")
        x = g.arg(xs, dt)
        v = g.op(f"fuse.avg_pool2d {x} {{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, "
                 f"padding = array<i64: 1, 1>, count_include_pad = false, layout = #fuse.layout<{layout}>}} "
                 f": {t(xs, dt)}")
        graphs.append((f"grad_avg_pool_{layout}_{dt}", g.text([(v, t(pool_out, dt))])))
        g = Graph("g")
        x = g.arg(xs, dt)
        gap = [2, 1, 1, 5] if layout == "nhwc" else [2, 5, 1, 1]
        v = g.op(f"fuse.global_avg_pool {x} {{layout = #fuse.layout<{layout}>}} : {t(xs, dt)}")
        graphs.append((f"grad_global_avg_pool_{layout}_{dt}", g.text([(v, t(gap, dt))])))
        for mode, extra, name in (("nearest", "scale = array<f64: 2.0, 2.0>", "nearest"),
                                  ("bilinear", "size = array<i64: 17, 23>, align_corners", "bilinear_ac"),
                                  ("bilinear", "scale = array<f64: 2.0, 2.0>", "bilinear")):
            g = Graph("g")
            x = g.arg(xs, dt)
            hw = (17, 23) if "size" in extra else (18, 22)
            out = [2, hw[0], hw[1], 5] if layout == "nhwc" else [2, 5, hw[0], hw[1]]
            v = g.op(f"fuse.upsample {x} {{mode = #fuse.upsample_mode<{mode}>, {extra}, "
                     f"layout = #fuse.layout<{layout}>}} : {t(xs, dt)}")
            graphs.append((f"grad_upsample_{name}_{layout}_{dt}", g.text([(v, t(out, dt))])))

    # Data movement and matrix products.
    g = Graph("g")
    x = g.arg([4, 9, 13], dt)
    s = g.op(f"fuse.slice {x} {{offsets = array<i64: 1, 2, 3>, sizes = array<i64: 2, 5, 7>}} : {t([4, 9, 13], dt)}")
    r = g.op(f"fuse.reshape {s} : {t([2, 5, 7], dt)} to {t([10, 7], dt)}")
    tr = g.op(f"fuse.transpose {r} {{permutation = array<i64: 1, 0>}} : {t([10, 7], dt)}")
    graphs.append((f"grad_slice_reshape_transpose_{dt}", g.text([(tr, t([7, 10], dt))])))
    g = Graph("g")
    a = g.arg([3, 4, 5], dt)
    b = g.arg([3, 2, 5], dt)
    c = g.op(f"fuse.concat {a}, {b} {{axis = 1}} : {t([3, 4, 5], dt)}, {t([3, 2, 5], dt)}")
    m = g.op(f"fuse.mul {c}, {c} : {t([3, 6, 5], dt)}, {t([3, 6, 5], dt)}")
    graphs.append((f"grad_concat_{dt}", g.text([(m, t([3, 6, 5], dt))])))
    g = Graph("g")
    x = g.arg([3, 17, 40], dt)
    w = g.arg([24, 40], dt)
    b = g.arg([24], dt)
    v = g.op(f"fuse.linear {x}, {w}, {b} : {t([3, 17, 40], dt)}, {t([24, 40], dt)}, {t([24], dt)}")
    graphs.append((f"grad_linear_{dt}", g.text([(v, t([3, 17, 24], dt))])))
    g = Graph("g")
    x = g.arg([2, 3, 19, 12], dt)
    y = g.arg([3, 21, 12], dt)
    v = g.op(f"fuse.matmul {x}, {y} {{transpose_rhs}} : {t([2, 3, 19, 12], dt)}, {t([3, 21, 12], dt)}")
    graphs.append((f"grad_matmul_broadcast_{dt}", g.text([(v, t([2, 3, 19, 21], dt))])))
    # Softmax along the last axis and an inner one; rope, half-split and
    # interleaved (the tables carry no gradient).
    for axis, shape in ((-1, [3, 7, 129]), (1, [4, 33, 5])):
        g = Graph("g")
        x = g.arg(shape, dt)
        v = g.op(f"fuse.softmax {x} {{axis = {axis} : i64}} : {t(shape, dt)}")
        graphs.append((f"grad_softmax_axis{axis % 3}_{dt}", g.text([(v, t(shape, dt))])))
    for interleaved in (False, True):
        g = Graph("g")
        xs = [2, 3, 17, 64]
        x = g.arg(xs, dt)
        c, sn = g.arg([17, 32], dt), g.arg([17, 32], dt)
        attr = " {interleaved}" if interleaved else ""
        v = g.op(f"fuse.rope {x}, {c}, {sn}{attr} : {t(xs, dt)}, {t([17, 32], dt)}")
        graphs.append((f"grad_rope{'_interleaved' if interleaved else ''}_{dt}", g.text([(v, t(xs, dt))])))
    # Attention whose additive mask needs a gradient: dS summed over the
    # heads the mask was broadcast along (causal, grouped-query heads).
    g = Graph("g")
    qs, ks, ms = [2, 4, 37, 64], [2, 2, 53, 64], [2, 1, 37, 53]
    q, k, v, m = g.arg(qs, dt), g.arg(ks, dt), g.arg(ks, dt), g.arg(ms, "f32")
    o = g.op(f"fuse.attention {q}, {k}, {v}, {m} {{causal}} : {t(qs, dt)}, {t(ks, dt)}, "
             f"{t(ks, dt)}, {t(ms, 'f32')}")
    graphs.append((f"grad_attention_mask_{dt}", g.text([(o, t(qs, dt))])))
    if dt != "f32":
        g = Graph("g")
        x = g.arg([5, 7], dt)
        v = g.op(f"fuse.cast {x} : {t([5, 7], dt)} to {t([5, 7], 'f32')}")
        graphs.append((f"grad_cast_{dt}", g.text([(v, t([5, 7], "f32"))])))
    return graphs


def cases(Graph, t):
    opt = _fusec_opt()
    if not opt:
        sys.stderr.write("training_cases_grad: no fusec-opt (set FUSEC_OPT); no gradient cases\n")
        return []
    out = []
    for dt in ("f32", "f16", "bf16"):
        for name, text in forward_graphs(Graph, t, dt):
            backward = backward_of(opt, text)
            if backward:
                out.append((name, backward, dt))
    # Whole blocks in training mode: the forward (batch statistics, running
    # statistics updated) and the backward, each a case; and the inference
    # examples' transformer blocks (attention, norms, rope, GQA).
    examples = os.path.join(HERE, "..", "..", "examples")
    blocks = sorted(glob.glob(os.path.join(examples, "training", "*.mlir")))
    blocks += [os.path.join(examples, f"{b}.mlir") for b in ("transformer_block", "llama_block")]
    for path in blocks:
        with open(path) as f:
            text = f.read()
        dt = next((d for d in ("bf16", "f16", "f32") if f"x{d}>" in text), "f32")
        pair = pair_of(opt, text, path)
        if pair:
            block = os.path.basename(path)[:-len(".mlir")]
            out.append((f"train_{block}_forward", pair["forward"], dt))
            out.append((f"train_{block}_backward", pair["backward"], dt))
    return out
