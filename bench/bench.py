"""fusec against what a user would otherwise call, timed in one process.

  bench.py prepare --fusec FUSEC --out DIR
      On any machine: writes the workload graphs of ../shared/bench/WORKLOADS.md
      that fusec covers (conv + batch norm + ReLU on ResNet-50/MobileNetV2
      shapes, batch norm + ReLU) and compiles each to DIR/<name>.ptx.
  bench.py run --runtime LIBFUSEC_RUNTIME --dir DIR [--json OUT]
      On a CUDA machine with PyTorch: for each workload, random inputs (never
      zeros), fusec's artifact launched through libfusec_runtime.so on
      PyTorch's stream, and the alternatives (eager conv -> bn -> relu, BN
      folded into conv + bias -> relu, cuDNN's fused conv+bias+ReLU; eager and
      torch.compile for batch norm + ReLU), each timed with CUDA events:
      warm-up, then the median of many runs. Prints each result as a ratio
      (best alternative time / fusec time: above 1 means fusec is faster) and
      checks fusec's output against a float64 PyTorch reference.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys

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
CONV_DTYPES = ("f16", "f32")
BN_RELU = ("bn_relu_infer", 64, 256, 56, 56)  # WORKLOADS.md section 3
BN_DTYPES = ("bf16", "f32")
# Residual add + norm (out and sum written) and bias + GeLU on [T, H].
ROWS = (16384, 4096)
ROW_WORKLOADS = [("add_layernorm", "bf16"), ("add_rmsnorm", "bf16"), ("bias_gelu", "bf16"), ("bias_gelu", "f32")]


def t(shape, dt):
    return "tensor<" + "x".join(map(str, shape)) + "x" + dt + ">"


def conv_graph(name, n, ci, h, w, co, k, s, p, g, dt):
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
    if name == "add_layernorm":
        return (f"func.func @{name}(%x: {tt}, %r: {tt}, %w: {h}, %b: {h}) -> ({tt}, {tt}) {{\n"
                f"  %h = fuse.add %x, %r : {tt}, {tt}\n"
                f"  %0 = fuse.layer_norm %h scale(%w : {h}) shift(%b : {h}) : {tt}\n"
                f"  return %0, %h : {tt}, {tt}\n}}\n")
    return (f"func.func @{name}(%x: {tt}, %r: {tt}, %w: {h}) -> ({tt}, {tt}) {{\n"
            f"  %h = fuse.add %x, %r : {tt}, {tt}\n"
            f"  %0 = fuse.rms_norm %h scale(%w : {h}) : {tt}\n"
            f"  return %0, %h : {tt}, {tt}\n}}\n")


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    jobs = []
    for dt in CONV_DTYPES:
        for (name, n, ci, h, w, co, k, s, p, g) in CONVS:
            jobs.append((f"{name}_{dt}", conv_graph(name, n, ci, h, w, co, k, s, p, g, dt)))
    for dt in BN_DTYPES:
        name, n, c, h, w = BN_RELU
        jobs.append((f"{name}_{dt}", bn_graph(name, n, c, h, w, dt)))
    for name, dt in ROW_WORKLOADS:
        jobs.append((f"{name}_{dt}", row_graph(name, dt)))
    for tag, text in jobs:
        graph = os.path.join(args.out, tag + ".mlir")
        with open(graph, "w") as f:
            f.write(text)
        subprocess.run([args.fusec, graph, "-o", os.path.join(args.out, tag + ".ptx")], check=True)
        print("compiled", tag, flush=True)


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

    def run(self, module, stream, inputs, outputs):
        ins = (self.Buffer * len(inputs))(*[self.Buffer(x.data_ptr(), x.numel() * x.element_size()) for x in inputs])
        outs = (self.Buffer * len(outputs))(*[self.Buffer(x.data_ptr(), x.numel() * x.element_size()) for x in outputs])
        self.check(self.lib.fusec_module_run(module, ctypes.c_void_p(stream), ins, len(inputs), outs, len(outputs)))


def run_bench(args):
    import torch
    import torch.nn.functional as F

    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda"
    rt = Runtime(args.runtime)
    tdt = {"f16": torch.float16, "f32": torch.float32, "bf16": torch.bfloat16}

    def bench(fn, iters=50, warm=10):
        for _ in range(warm):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(iters):
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            ts.append(s.elapsed_time(e))
        ts.sort()
        return ts[len(ts) // 2]

    def time_eager_and_compiled(eager):
        """Eager and (unless --no-compile) torch.compile times of `eager`."""
        ms_e, ms_c = bench(eager), None
        if not args.no_compile:
            compiled = torch.compile(eager)
            compiled()
            ms_c = bench(compiled)
        return ms_e, ms_c

    def relerr(out, ref):
        out, ref = out.double(), ref.double()
        if not torch.isfinite(out).all():
            return float("nan")
        return ((out - ref).norm() / ref.norm()).item()

    p = torch.cuda.get_device_properties(0)
    rows = []
    print(f"device {p.name}, torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}", flush=True)
    for dt in CONV_DTYPES:
        for (name, n, ci, h, w, co, k, s, pd, g) in CONVS:
            tag = f"{name}_{dt}"
            module = rt.load(os.path.join(args.dir, tag + ".ptx"))
            d = tdt[dt]
            x = torch.randn(n, ci, h, w, device=dev, dtype=d).to(memory_format=torch.channels_last)
            conv = torch.nn.Conv2d(ci, co, k, s, pd, groups=g, bias=False).to(dev, d).to(
                memory_format=torch.channels_last).eval()
            bn = torch.nn.BatchNorm2d(co).to(dev, d).eval()
            with torch.no_grad():
                bn.running_mean.uniform_(-1, 1)
                bn.running_var.uniform_(0.5, 2)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.5, 0.5)
            ho, wo = (h + 2 * pd - k) // s + 1, (w + 2 * pd - k) // s + 1
            out = torch.full((n, ho, wo, co), float("nan"), device=dev, dtype=d)
            # NHWC activations and OHWI filters are PyTorch's channels-last memory.
            wt = conv.weight.detach().permute(0, 2, 3, 1).contiguous()
            xin = x.permute(0, 2, 3, 1)
            assert xin.is_contiguous()
            ins = [xin, wt, bn.running_mean, bn.running_var, bn.weight.detach(), bn.bias.detach()]
            stream = torch.cuda.current_stream().cuda_stream
            fusec = lambda: rt.run(module, stream, ins, [out])  # noqa: E731
            with torch.no_grad():
                fusec()
                torch.cuda.synchronize()
                ref = F.relu(F.batch_norm(F.conv2d(x.double(), conv.weight.double(), None, s, pd, 1, g),
                                          bn.running_mean.double(), bn.running_var.double(), bn.weight.double(),
                                          bn.bias.double(), False, 0.0, bn.eps))
                err = relerr(out.permute(0, 3, 1, 2), ref)
                ms_f = bench(fusec)
                ms_e = bench(lambda: F.relu(bn(conv(x))))
                scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
                wf = (conv.weight * scale.view(-1, 1, 1, 1)).contiguous(memory_format=torch.channels_last)
                bf = bn.bias - bn.running_mean * scale
                ms_fold = bench(lambda: F.relu(F.conv2d(x, wf, bf, s, pd, 1, g)))
                try:
                    ms_cr = bench(lambda: torch.cudnn_convolution_relu(x, wf, bf, (s, s), (pd, pd), (1, 1), g))
                except Exception:  # noqa: BLE001
                    ms_cr = None
            best = min(v for v in (ms_e, ms_fold, ms_cr) if v)
            flops = 2 * n * ho * wo * co * (ci // g) * k * k
            row = dict(workload=f"conv_bn_relu {name}", dtype=dt, fusec_ms=ms_f, eager_ms=ms_e, folded_ms=ms_fold,
                       cudnn_conv_relu_ms=ms_cr, best_alt_ms=best, ratio=best / ms_f,
                       fusec_tflops=flops / ms_f / 1e9, relerr=err)
            rows.append(row)
            print(json.dumps(row), flush=True)
            rt.lib.fusec_module_release(module)
            del x, conv, bn, out, wt, ins
    name, n, c, h, w = BN_RELU
    for dt in BN_DTYPES:
        tag = f"{name}_{dt}"
        module = rt.load(os.path.join(args.dir, tag + ".ptx"))
        d = tdt[dt]
        x = torch.randn(n, c, h, w, device=dev, dtype=d).to(memory_format=torch.channels_last)
        bn = torch.nn.BatchNorm2d(c).to(dev, d).eval()
        with torch.no_grad():
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
        out = torch.full((n, h, w, c), float("nan"), device=dev, dtype=d)
        ins = [x.permute(0, 2, 3, 1), bn.running_mean, bn.running_var, bn.weight.detach(), bn.bias.detach()]
        stream = torch.cuda.current_stream().cuda_stream
        fusec = lambda: rt.run(module, stream, ins, [out])  # noqa: E731
        with torch.no_grad():
            fusec()
            torch.cuda.synchronize()
            ref = F.relu(F.batch_norm(x.double(), bn.running_mean.double(), bn.running_var.double(),
                                      bn.weight.double(), bn.bias.double(), False, 0.0, bn.eps))
            err = relerr(out.permute(0, 3, 1, 2), ref)
            ms_f = bench(fusec)
            ms_e, ms_c = time_eager_and_compiled(lambda: F.relu(bn(x)))
        nbytes = 2 * x.numel() * x.element_size()
        best = min(v for v in (ms_e, ms_c) if v)
        row = dict(workload=name, dtype=dt, fusec_ms=ms_f, eager_ms=ms_e, compile_ms=ms_c, best_alt_ms=best,
                   ratio=best / ms_f, fusec_TBps=nbytes / ms_f / 1e9, relerr=err)
        rows.append(row)
        print(json.dumps(row), flush=True)
        rt.lib.fusec_module_release(module)
    T, H = ROWS
    for name, dt in ROW_WORKLOADS:
        module = rt.load(os.path.join(args.dir, f"{name}_{dt}.ptx"))
        d = tdt[dt]
        x = torch.randn(T, H, device=dev, dtype=d)
        r = torch.randn_like(x)
        w = torch.randn(H, device=dev, dtype=d)
        b = torch.randn(H, device=dev, dtype=d)
        eb = x.element_size()
        outs = [torch.full_like(x, float("nan")) for _ in range(1 if name == "bias_gelu" else 2)]
        ins = {"bias_gelu": [x, b], "add_layernorm": [x, r, w, b], "add_rmsnorm": [x, r, w]}[name]
        if name == "bias_gelu":
            eager = lambda: F.gelu(x + b)  # noqa: E731
            ref = [F.gelu(x.double() + b.double())]
            nbytes = 2 * T * H * eb
        elif name == "add_layernorm":
            def eager():
                h = x + r
                return F.layer_norm(h, (H,), w, b), h
            hd = x.double() + r.double()
            ref = [F.layer_norm(hd, (H,), w.double(), b.double()), hd]
            nbytes = 4 * T * H * eb
        else:
            def eager():
                h = x + r
                return h * torch.rsqrt(h.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(d) * w, h
            hd = x.double() + r.double()
            ref = [hd * torch.rsqrt(hd.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double(), hd]
            nbytes = 4 * T * H * eb
        stream = torch.cuda.current_stream().cuda_stream
        fusec = lambda: rt.run(module, stream, ins, outs)  # noqa: E731
        with torch.no_grad():
            fusec()
            torch.cuda.synchronize()
            err = max(relerr(o, rf) for o, rf in zip(outs, ref))
            ms_f = bench(fusec)
            ms_e, ms_c = time_eager_and_compiled(eager)
        best = min(v for v in (ms_e, ms_c) if v)
        row = dict(workload=name, dtype=dt, fusec_ms=ms_f, eager_ms=ms_e, compile_ms=ms_c, best_alt_ms=best,
                   ratio=best / ms_f, fusec_TBps=nbytes / ms_f / 1e9, relerr=err)
        rows.append(row)
        print(json.dumps(row), flush=True)
        rt.lib.fusec_module_release(module)
        del x, r, outs, ins, ref
    print()
    print(f"{'workload':<26} {'dtype':<5} {'fusec ms':>9} {'best alt ms':>11} {'ratio':>7} {'relerr':>9}")
    for r in rows:
        print(f"{r['workload']:<26} {r['dtype']:<5} {r['fusec_ms']:>9.3f} {r['best_alt_ms']:>11.3f} "
              f"{r['ratio']:>7.3f} {r['relerr']:>9.1e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": p.name, "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                       "rows": rows}, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--fusec", required=True)
    p.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--runtime", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--json")
    r.add_argument("--no-compile", action="store_true")
    args = ap.parse_args()
    if args.cmd == "prepare":
        prepare(args)
    else:
        run_bench(args)


if __name__ == "__main__":
    sys.exit(main())
