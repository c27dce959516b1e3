"""CPU check of bench/training.py's logic (run by lit: test/bench/training.test).

- every graph the benchmark compiles parses and verifies with fusec-opt (the
  declared result types are the inferred ones: conv_transpose2d's
  output_padding gives back the forward's input size);
- fusec-opt -fusec-autodiff differentiates the training graphs, and its report
  (the bytes saved, the forward arguments the backward reads) parses;
- the table prints rows with missing contenders as n/a, never fails;
- where PyTorch is installed (not in CI), the whole run on tiny shapes on the
  CPU, fusec's rows n/a.
"""
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import training  # noqa: E402

FUSEC_OPT = os.environ.get("FUSEC_OPT") or shutil.which("fusec-opt")


def have_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


class Geometry(unittest.TestCase):
    def test_output_padding(self):
        # The stem: 224 -> 112 with k7 s2 p3; the transpose needs 1 more row.
        self.assertEqual(training.conv_out(224, 7, 2, 3), 112)
        self.assertEqual(training.output_padding(224, 7, 2, 3), 1)
        for layer in training.R50_LAYERS + training.R50_N256 + training.TINY_LAYERS:
            _, n, ci, h, w, co, k, s, p, g = layer
            op = training.output_padding(h, k, s, p)
            self.assertTrue(0 <= op < max(s, 1) or op == 0, layer)
            ho = training.conv_out(h, k, s, p)
            self.assertEqual((ho - 1) * s - 2 * p + k + op, h)

    def test_flops(self):
        # WORKLOADS.md: 2*N*Ho*Wo*Co*(Ci/g)*k*k.
        self.assertEqual(training.conv_flops(32, 64, 56, 56, 64, 3, 1, 1, 1), 2 * 32 * 56 * 56 * 64 * 64 * 9)
        blk = training.block_flops(32, training.BLOCK)
        self.assertEqual(blk, 2 * 32 * 56 * 56 * (256 * 64 + 64 * 64 * 9 + 64 * 256))

    def test_transformer_rows(self):
        # Issue 26's rows, bench.py's graphs.
        self.assertEqual([r[1:] for r in training.TRANSFORMERS],
                         [("block_vit_b", 8, 197, 768, 12, 12, 64, 3072),
                          ("block_llama_7b", 1, 2048, 4096, 32, 32, 128, 11008)])
        vit, llama = training.TRANSFORMERS
        self.assertEqual(training.transformer_flops(vit),
                         2 * 8 * 197 * 768 * (4 * 768 + 2 * 3072) + 4 * 8 * 12 * 197 * 197 * 64)
        self.assertEqual(training.transformer_flops(llama),
                         2 * 2048 * 4096 * (4 * 4096 + 3 * 11008) + 2 * 32 * 2048 * 2048 * 128)
        for rows in (training.transformer_rows(), training.transformer_rows(quick=True)):
            self.assertEqual([dt for _, dt in rows], ["bf16", "bf16"])
        self.assertIn(("block_vit_b_train_bf16", training.transformer_graph(vit, "bf16")), training.train_graphs())

    def test_kernel_counts(self):
        class Step:
            artifact = ("// fusec-kernels: [...]\n.visible .entry fwd_k0_linear(\n.visible .entry fwd_k1_attention(\n"
                        ".visible .entry bwd_k0_attention_grad(\n")
        self.assertEqual(training.kernel_counts(Step()), dict(fwd_kernels=2, bwd_kernels=1))
        Step.artifact = ('extern "C" __global__ void __launch_bounds__(128) fwd_k0_linear(float* a) {\n'
                         'extern "C" __global__ void bwd_k0_linear(float* a) {\n').encode()
        self.assertEqual(training.kernel_counts(Step()), dict(fwd_kernels=1, bwd_kernels=1))
        self.assertEqual(training.kernel_counts(object()), {})

    def test_tensor_bytes(self):
        self.assertEqual(training.tensor_bytes("tensor<2x3xbf16>"), 12)
        self.assertEqual(training.tensor_bytes("tensor<5xf32>"), 20)
        self.assertEqual(training.tensor_bytes("tensor<f32>"), 4)


class Timing(unittest.TestCase):
    """bench/timing.py, which bench.py and training.py share."""

    def test_take_turns(self):
        import timing
        order = []

        def measure(fns):
            order.append(fns[0])
            if fns[0] == "bad":
                raise RuntimeError("boom")
            return {"a": 2.0, "c": 1.0}[fns[0]] + len(order) / 100
        contenders = {"a": ["a"], "b": None, "bad": ["bad"], "c": ["c"]}
        best, errors = timing.take_turns(contenders, measure, 3, lambda: None, idle_s=0, catch=True)
        # Round r starts with the r-th name (absent ones hold their place);
        # one that raised drops out.
        self.assertEqual(order, ["a", "bad", "c", "c", "a", "c", "a"])
        self.assertEqual(best, {"a": 2.01, "b": None, "bad": None, "c": 1.03})
        self.assertEqual(list(errors), ["bad"])
        with self.assertRaises(RuntimeError):
            timing.take_turns(contenders, measure, 1, lambda: None, idle_s=0)

    def test_median_and_copies(self):
        import timing
        calls = []
        ms = timing.median_ms(None, [lambda: calls.append(0), lambda: calls.append(1)], 3, 4, 1, cuda=False)
        self.assertGreaterEqual(ms, 0)
        self.assertEqual(calls, [0] + [0, 1, 0, 1] * 3)
        self.assertEqual(timing.copies(10 << 20, 50 << 20), 8)
        self.assertEqual(timing.copies(60 << 20, 50 << 20), 3)
        self.assertEqual(timing.copies(1 << 30, 50 << 20), 1)


class Report(unittest.TestCase):
    def test_parse_autodiff(self):
        text = ("loc: remark: @blk: the forward saves 3 tensors (1200 bytes) for the backward\n"
                "func.func @blk_forward(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {} {\n}\n"
                "func.func @blk_backward(%arg0: tensor<2x4xf32>, %arg1: tensor<4xbf16>, %arg2: tensor<8xf32>)"
                " -> tensor<2x4xf32> attributes {fusec.forward = \"blk_forward\", "
                "fusec.forward_args = array<i64: 0, 3>, fusec.num_saved = 1 : i64} {\n}\n")
        r = training.parse_autodiff(text)
        self.assertEqual(r["blk"], dict(saved_tensors=3, saved_bytes=1200, forward_arg_bytes=32 + 8,
                                        forward_result_bytes=0))
        # The results the backward reads again follow the arguments.
        r = training.parse_autodiff(text.replace("fusec.forward_args = array<i64: 0, 3>,",
                                                 "fusec.forward_args = array<i64: 0>, "
                                                 "fusec.forward_results = array<i64: 0>,"))
        self.assertEqual(r["blk"]["forward_arg_bytes"], 32)
        self.assertEqual(r["blk"]["forward_result_bytes"], 8)
        empty = training.parse_autodiff(
            "remark: @f: the forward saves 0 tensors (0 bytes) for the backward\n"
            "func.func @f_backward(%arg0: tensor<4xf32>) -> tensor<4xf32> attributes "
            "{fusec.forward_args = array<i64>} {\n}\n")
        self.assertEqual(empty["f"], dict(saved_tensors=0, saved_bytes=0, forward_arg_bytes=0,
                                          forward_result_bytes=0))

    def test_table_with_na(self):
        rep = training.Report()
        with redirect_stdout(io.StringIO()):
            rep.emit(kind="ceilings", device="cpu", copy_TBps=None, gemm_bf16_TFLOPs=None, gemm_f16_TFLOPs=None)
            rep.emit(kind="conv_grad", layer="r50_c2_3x3", grad="dgrad", dtype="bf16", k=3, cudnn_ms=0.1,
                     fusec_ms=None, ratio=None, fusec_TFLOPs=None, frac=None, fusec_na="n/a: Error: no lowering")
            rep.emit(kind="conv_grad", layer="r50_c4_3x3", grad="dgrad", dtype="bf16", k=3, cudnn_ms=0.1,
                     fusec_ms=0.08, ratio=1.25, fusec_TFLOPs=500.0, frac=0.65)
            rep.emit(kind="bn_train", variant="bn", **{"pass": "fwd"}, shape="64x256x56x56", dtype="bf16",
                     eager_TBps=1.7, eager_frac=0.56, compile_TBps=None, fusec_TBps=2.6, fusec_frac=None,
                     ratio=1.5)
            rep.emit(kind="bottleneck_step", batch=32, dtype="bf16", eager_ms=3.0, compile_ms=None,
                     compile_ro_ms=2.5, graph_ms=2.4, fusec_ms=None, ratio=None, frac=None, fusec_na="n/a: x")
            rep.emit(kind="saved_bytes", graph="blk", eager_bytes=10e6, eager_intermediate_bytes=8e6,
                     fusec_intermediate_bytes=None, ratio=None, fusec_na="n/a: no report")
            rep.emit(kind="norm_grad", norm="rms_norm", shape="16384x4096", dtype="bf16", eager_TBps=2.0,
                     eager_frac=0.47, compile_TBps=None, fusec_TBps=None, ratio=None, fusec_na="n/a: y")
            rep.emit(kind="transformer_step", block="block_vit_b", dtype="bf16", eager_ms=1.5, compile_ms=1.2,
                     compile_ro_ms=None, graph_ms=1.1, fusec_ms=None, ratio=None, frac=None,
                     fusec_na="n/a: RuntimeError: no lowering")
            rep.emit(kind="transformer_step", block="block_llama_7b", dtype="bf16", eager_ms=6.0, compile_ms=5.0,
                     compile_ro_ms=4.9, graph_ms=5.2, fusec_ms=4.0, ratio=1.225, frac=0.7, fwd_kernels=9,
                     bwd_kernels=14, fusec_graph_ms=3.5, ratio_graph=1.4)
            rep.emit(kind="skipped", what="section bn", reason="RuntimeError: boom")
        table = rep.table()
        self.assertIn("bar: ratio at least 1.1", table)
        self.assertRegex(table, r"block_vit_b bf16 +1\.500 +1\.200 +n/a +1\.100 +n/a +n/a .* - +n/a: RuntimeError")
        self.assertRegex(table, r"block_llama_7b bf16 .* 4\.000 +1\.23 +0\.70 +3\.500 +1\.40 +9\+14 ")
        self.assertIn("n/a: Error: no lowering", table)
        self.assertIn("dgrad 3x3: min ratio 1.25 (bar 0.9), geomean 1.25 (bar 1.0), 1/2 rows ran", table)
        self.assertIn("1.70 (0.56)", table)
        self.assertIn("2.60 (n/a)", table)
        self.assertIn("skipped section bn: RuntimeError: boom", table)
        self.assertIn("rms_norm 16384x4096 bf16", table)
        self.assertIn("2.00 (0.47)", table)

    def test_ratio(self):
        self.assertEqual(training.ratio([2.0, None, 1.0], 0.5), 2.0)
        self.assertIsNone(training.ratio([None], 0.5))
        self.assertIsNone(training.ratio([1.0], None))

    def test_step_row_graph_ratio(self):
        class Rep:
            def emit(self, **row):
                self.row = row
        rep = Rep()
        row = dict(eager_ms=2.0, compile_ms=None, compile_ro_ms=1.5, graph_ms=1.0, fusec_ms=2.0,
                   fusec_graph_ms=0.5)
        training.finish_step_row(rep, row, 1e9, None, None, {}, {})
        self.assertEqual(rep.row["ratio"], 0.5)
        self.assertEqual(rep.row["ratio_graph"], 2.0)
        row = dict(eager_ms=2.0, compile_ms=None, compile_ro_ms=None, graph_ms=None, fusec_ms=1.0)
        training.finish_step_row(rep, row, 1e9, None, None, {}, {})
        self.assertNotIn("ratio_graph", rep.row)


@unittest.skipUnless(FUSEC_OPT, "fusec-opt not found")
class Graphs(unittest.TestCase):
    def opt(self, text, *flags):
        return subprocess.run([FUSEC_OPT, *flags, "-"], input=text, capture_output=True, text=True)

    def test_graphs_verify(self):
        graphs = dict(training.kernel_graphs() + training.kernel_graphs(quick=True) +
                      training.kernel_graphs(tiny=True) + training.train_graphs() +
                      training.train_graphs(quick=True) + training.train_graphs(tiny=True))
        r = self.opt("\n".join(graphs.values()))
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in graphs:
            self.assertIn("@" + name + "(", r.stdout)

    def test_autodiff_report(self):
        for name, text in training.train_graphs(tiny=True):
            report, error = training.run_autodiff(FUSEC_OPT, text)
            if error and "no gradient rule" in error:
                self.skipTest("gradient rules missing: " + error)
            self.assertIsNone(error, name)
            self.assertIn(name, report)
            self.assertGreater(report[name]["saved_bytes"], 0, name)
            self.assertIn("forward_arg_bytes", report[name])

    def test_prepare(self):
        with tempfile.TemporaryDirectory() as d, redirect_stdout(io.StringIO()):
            self.assertEqual(training.main(["prepare", "--fusec-opt", FUSEC_OPT, "--out", d]), 0)
            with open(os.path.join(d, "saved.json")) as f:
                saved = json.load(f)
        for name, _ in training.train_graphs() + training.train_graphs(quick=True):
            self.assertIn(name, saved)


class StandIn:
    """A stand-in for the fusec module on the CPU, computing with PyTorch
    what each of the script's graphs computes, to check the script's side:
    the arguments' order and layout, out=, forward/backward."""

    def __init__(self):
        import torch
        self.torch = torch

    def version(self):
        return "stand-in"

    def tolerance(self, dt):
        return 1e-4

    def compile(self, text, train=False, wrt=None):
        import re
        m = re.search(r"func\.func @(\w+)\((.*?)\) ->", text)
        name = m.group(1)
        if not train:
            return StandInKernel(self.torch, name)
        # The arguments' names in the graph's order: the transformer blocks'
        # stand-in takes them by name, as the graph does by position.
        return StandInStep(self.torch, name, re.findall(r"%(\w+):", m.group(2)), wrt)


def _layer(name):
    return next(l for l in training.TINY_LAYERS if name.startswith(l[0] + "_"))


class StandInKernel:
    def __init__(self, torch, name):
        self.torch, self.name = torch, name

    def __call__(self, *args, out=None):
        torch, nchw, nhwc = self.torch, training.nchw, training.nhwc
        F = torch.nn.functional
        n = self.name
        if "_dgrad_" in n or "_wgrad_" in n:
            _, N, ci, h, w, co, k, s, p, g = _layer(n)
            geo = ([s, s], [p, p], [1, 1], False, [0, 0], g)
            if "_dgrad_" in n:
                dy, wt = nchw(args[0]), nchw(args[1])
                x = torch.empty(N, ci, h, w, dtype=dy.dtype)
                res = (nhwc(torch.ops.aten.convolution_backward(dy, x, wt, None, *geo, [True, False, False])[0]),)
            else:
                x, dy = nchw(args[0]), nchw(args[1])
                wt = torch.empty(co, ci // g, k, k, dtype=x.dtype)
                res = (nhwc(torch.ops.aten.convolution_backward(dy, x, wt, None, *geo, [False, True, False])[1]),)
        elif n.startswith("attn_"):
            # O and the row log-sum-exp, or the gradients of O through them.
            causal = "_causal_" in n
            q, k, v = args[:3]
            s = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
            if causal:
                s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), float("-inf"))
            if n.endswith("_fwd"):
                res = (F.scaled_dot_product_attention(q, k, v, is_causal=causal), s.logsumexp(-1))
            else:
                leaves = [a.detach().clone().requires_grad_() for a in (q, k, v)]
                o = F.scaled_dot_product_attention(*leaves, is_causal=causal)
                res = torch.autograd.grad(o, leaves, args[4])
        elif n.endswith("_fwd"):
            x, rm, rv, g, b = args
            rm, rv = rm.clone(), rv.clone()
            y, m, i = torch.native_batch_norm(nchw(x), g, b, rm, rv, True, training.BN_MOMENTUM, training.BN_EPS)
            res = (nhwc(F.relu(y) if n.startswith("bn_relu") else y), m, i, rm, rv)
        elif n.endswith("_bwd"):
            if n.startswith("bn_relu"):
                dy, y, x, m, i, g = args
                dy = dy * (y > 0)
            else:
                dy, x, m, i, g = args
            dx, dg, db = torch.ops.aten.native_batch_norm_backward(
                nchw(dy), nchw(x), g, None, None, m, i, True, training.BN_EPS, [True, True, True])
            res = (nhwc(dx), dg, db)
        else:
            raise RuntimeError("stand-in: no kernel for " + n)
        if out is None:
            return res[0] if len(res) == 1 else res
        for o, r in zip(out if isinstance(out, (list, tuple)) else [out], res):
            o.copy_(r)
        return out


def _transformer(name):
    return next(r for r in training.TINY_TRANSFORMERS if name.startswith(r[1] + "_"))


def transformer_reference(torch, row, p):
    """The transformer block written out (not with the script's
    functions): explicit norms, softmax attention, rope, GeLU / SiLU."""
    kind, _, bsz, n, dm, hq, hkv, hd, ffn = row
    llama = kind == "llama"

    def norm(v, g, shift):
        if llama:
            return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6) * g
        mu = v.mean(-1, keepdim=True)
        return (v - mu) * torch.rsqrt((v - mu).pow(2).mean(-1, keepdim=True) + 1e-5) * g + shift

    def heads(v, h):
        return v.reshape(bsz, n, h, hd).permute(0, 2, 1, 3)

    def rope(v):
        a, c = v[..., :hd // 2], v[..., hd // 2:]
        return torch.cat([a * p["cos"] - c * p["sin"], c * p["cos"] + a * p["sin"]], -1)
    x = p["x"]
    h = norm(x, p["g1"], p.get("b1"))
    q, k, v = heads(h @ p["wq"].T, hq), heads(h @ p["wk"].T, hkv), heads(h @ p["wv"].T, hkv)
    if llama:
        q, k = rope(q), rope(k)
    k, v = k.repeat_interleave(hq // hkv, 1), v.repeat_interleave(hq // hkv, 1)
    s = q @ k.transpose(-1, -2) / hd ** 0.5
    if llama:
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    a = (s.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(bsz, n, hq * hd)
    r1 = x + a @ p["wo"].T
    h2 = norm(r1, p["g2"], p.get("b2"))
    if llama:
        g = h2 @ p["wg"].T
        return r1 + (g * torch.sigmoid(g) * (h2 @ p["wu"].T)) @ p["wd"].T
    f = h2 @ p["w1"].T + p["c1"]
    f = 0.5 * f * (1 + torch.tanh((2 / torch.pi) ** 0.5 * (f + 0.044715 * f ** 3)))
    return r1 + f @ p["w2"].T + p["c2"]


class StandInStep:
    saved_bytes = 1234
    # One forward kernel, two backward ones, as PTX names them.
    artifact = ".visible .entry fwd_k0_a(\n.visible .entry bwd_k0_a(\n.visible .entry bwd_k1_b(\n"

    def __init__(self, torch, name, arg_names=None, wrt=None):
        self.torch, self.name, self.arg_names, self.wrt_positions = torch, name, arg_names, wrt

    def forward(self, *args):
        torch, nchw, nhwc = self.torch, training.nchw, training.nhwc
        F = torch.nn.functional
        leaves = [a.detach().clone().requires_grad_() for a in args]
        if self.name.startswith("tiny_"):
            # Gradients of the positions in wrt (every argument without).
            self.positions = list(range(len(args))) if self.wrt_positions is None else self.wrt_positions
            self.wrt = [leaves[i] for i in self.positions]
            self.y = transformer_reference(torch, _transformer(self.name), dict(zip(self.arg_names, leaves)))
            return self.y.detach()
        if self.name.startswith("bn"):
            x, rm, rv, g, b = leaves
            y = training.bn_eager_fn(torch, "bn_relu" if self.name.startswith("bn_relu") else "bn")(
                nchw(x), rm.detach(), rv.detach(), g, b)
            self.wrt = [x, g, b]
        else:
            x, h = leaves[0], nchw(leaves[0])
            self.wrt = [x]
            for c in range(3):
                w, rm, rv, g, b = leaves[1 + 5 * c:6 + 5 * c]
                wt = nchw(w)
                h = F.batch_norm(F.conv2d(h, wt, padding=wt.shape[-1] // 2), rm.detach(), rv.detach(), g, b,
                                 training=True, momentum=training.BN_MOMENTUM, eps=training.BN_EPS)
                h = F.relu(h) if c < 2 else h
                self.wrt += [w, g, b]
            y = F.relu(h + nchw(x))
        self.y = y
        return (nhwc(y).detach(),)

    def backward(self, dy):
        if self.name.startswith("tiny_"):
            # One per argument, None for those not differentiated (as fusec).
            grads = self.torch.autograd.grad(self.y, self.wrt, dy, retain_graph=True)
            out = [None] * len(self.arg_names)
            for i, g in zip(self.positions, grads):
                out[i] = g
            return tuple(out)
        # The leaves are the arguments as given (NHWC, OHWI): so are their gradients.
        return self.torch.autograd.grad(self.y, self.wrt, training.nchw(dy), retain_graph=True)


@unittest.skipUnless(have_torch(), "PyTorch not installed")
class TinyRun(unittest.TestCase):
    def run_tiny(self, *flags):
        with tempfile.TemporaryDirectory() as d:
            out = io.StringIO()
            with redirect_stdout(out):
                rc = training.main(["run", "--device", "cpu", "--tiny", "--json", os.path.join(d, "t.json"),
                                    *flags])
            self.assertEqual(rc, 0, out.getvalue())
            with open(os.path.join(d, "t.json")) as f:
                return [json.loads(line) for line in f], out.getvalue()

    def test_stand_in_fusec(self):
        sys.modules["fusec"] = StandIn()
        try:
            rows, text = self.run_tiny("--fusec-on-cpu")
        finally:
            del sys.modules["fusec"]
        for r in rows:
            self.assertNotEqual(r["kind"], "skipped", r)
            if r["kind"] in ("conv_grad", "bn_train", "bottleneck_step", "attention_grad", "transformer_step"):
                self.assertNotIn("fusec_na", r, r)
                self.assertIsNotNone(r["fusec_ms"], r)
                self.assertIsNotNone(r["ratio"], r)
            if r["kind"] == "conv_grad":
                self.assertLess(r["relerr"], 1e-5, r)
            if r["kind"] == "bn_train":
                self.assertIsNotNone(r["fusec_pair_ms"], r)
                self.assertIsNotNone(r["fusec_kernels_ms"], r)
            if r["kind"] == "saved_bytes":
                self.assertEqual(r["fusec_intermediate_bytes"], 1234)
            if r["kind"] == "transformer_step":
                # The stand-in is written out apart from the script's eager
                # block: the same math (f32), every gradient but the rope
                # tables' (which fusec is not asked for).
                self.assertLess(r["relerr_max"], 1e-4, r)
                self.assertEqual((r["fwd_kernels"], r["bwd_kernels"]), (1, 2), r)
                self.assertEqual(r["fusec_saved_bytes"], 1234)
        self.assertEqual(sorted(r["block"] for r in rows if r["kind"] == "transformer_step"),
                         ["tiny_llama", "tiny_vit"])
        self.assertIn("dgrad 3x3: min ratio", text)
        self.assertIn("(g) transformer block step", text)
        self.assertIn("tiny_llama f32", text)

    def test_run_cpu_tiny(self):
        rows, _ = self.run_tiny()
        kinds = {r["kind"] for r in rows}
        self.assertTrue({"ceilings", "conv_grad", "bn_train", "bottleneck_step", "saved_bytes",
                         "attention_grad", "transformer_step"} <= kinds, kinds)
        for r in rows:
            if r["kind"] == "conv_grad":
                self.assertIsNotNone(r["cudnn_ms"], r)
                self.assertTrue(r["fusec_na"].startswith("n/a"), r)
            if r["kind"] == "transformer_step":
                self.assertIsNotNone(r["eager_ms"], r)
                self.assertTrue(r["fusec_na"].startswith("n/a"), r)
                self.assertGreater(r["eager_intermediate_bytes"], 0, r)
            if r["kind"] == "saved_bytes":
                self.assertGreater(r["eager_intermediate_bytes"], 0, r)
        self.assertNotIn("section", " ".join(r.get("what", "") for r in rows if r["kind"] == "skipped"))

    def test_bn_backward_after_timed_forwards(self):
        # A CUDA batch norm bumps the version of the running statistics it
        # updates and saves for its backward (the CPU's does not: bumped
        # here by hand): the eager backward is timed on a graph that the
        # timed forwards leave alone (on an H200 it failed, "modified by an
        # inplace operation").
        real = training.bn_eager_fn

        def bumping(torch, variant):
            fwd = real(torch, variant)

            def f(x, rm, rv, g, bb):
                rm.add_(0)
                rv.add_(0)
                return fwd(x, rm, rv, g, bb)
            return f
        training.bn_eager_fn = bumping
        try:
            rows, _ = self.run_tiny("--sections", "bn")
        finally:
            training.bn_eager_fn = real
        bn = [r for r in rows if r["kind"] == "bn_train"]
        self.assertEqual(len(bn), 4)
        for r in bn:
            self.assertIsNotNone(r["eager_ms"], r)
            self.assertFalse(any(k.startswith("eager") for k in r.get("notes", {})), r)

    def test_transformer_params_match_graphs(self):
        # The eager block's tensors are the graph's arguments, in its order,
        # of its shapes and types (the full rows on the meta device).
        import re
        import torch
        b = training.Bench(torch, "meta", False, 1e9)
        for row, dt in training.transformer_rows() + training.transformer_rows(tiny=True):
            p = training.transformer_params(b, row, dt)
            sig = re.search(r"\((.*?)\) ->", training.transformer_graph(row, dt)).group(1)
            args = re.findall(r"%(\w+): tensor<([\dx]+)x(\w+)>", sig)
            self.assertEqual([a[0] for a in args], list(p), row)
            for name, dims, adt in args:
                self.assertEqual(list(p[name].shape), [int(d) for d in dims.split("x")], (row, name))
                self.assertEqual(p[name].dtype, b.dtype(adt), (row, name))

    def test_eager_reference_leaves_no_graph(self):
        # The block's reference (bytes saved, result, gradients) keeps no
        # autograd graph alive: one would hold the leaves' AccumulateGrad
        # nodes, made on the default stream, and break the CUDA-graph
        # capture of the eager step that follows (as on an H200).
        import torch
        model = training.make_bottleneck(torch, training.TINY_BLOCK, torch.float32, "cpu")
        params = list(model.parameters())
        x = torch.randn(2, 16, 6, 6).contiguous(memory_format=torch.channels_last).requires_grad_()
        dy = torch.randn(2, 16, 6, 6)
        total, inter, count, y, grads = training.eager_saved_bytes(torch, model, [x], params, dy)
        self.assertGreater(inter, 0)
        self.assertIsNone(y.grad_fn)
        self.assertFalse(y.requires_grad)
        self.assertEqual(len(grads), 1 + len(params))
        self.assertTrue(all(g.grad_fn is None for g in grads))


def have_cuda():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


@unittest.skipUnless(have_cuda(), "no CUDA device")
class CudaGraph(unittest.TestCase):
    def test_bottleneck_step_captures(self):
        # What run_bottleneck does before its "graph" contender: the
        # reference first (on the default stream), then the eager step
        # (forward + backward) captured and replayed; the replay's
        # gradients are the eager step's.
        import timing
        import torch
        torch.backends.cudnn.benchmark = True
        torch.manual_seed(0)
        model = training.make_bottleneck(torch, training.TINY_BLOCK, torch.bfloat16, "cuda")
        params = list(model.parameters())
        x = torch.randn(2, 16, 6, 6, device="cuda", dtype=torch.bfloat16).contiguous(
            memory_format=torch.channels_last).requires_grad_()
        dy = torch.randn_like(x)
        wrt = [x] + params
        reference = training.eager_saved_bytes(torch, model, [x], params, dy)  # alive past the capture

        def step():
            return torch.autograd.grad(model(x), wrt, dy)
        replay, static = timing.cuda_graph(torch, step)
        for _ in range(3):
            replay()
        torch.cuda.synchronize()
        ref = step()
        for got, want in zip(static, ref):
            self.assertLess(training.relerr(got, want), 0.05)
        for got, want in zip(static, reference[4]):
            self.assertLess(training.relerr(got, want), 0.05)


if __name__ == "__main__":
    unittest.main()
