#!/usr/bin/env python3
"""Per-kernel GPU times of a training step: the ResNet-50 bottleneck of
bench/training.py's section (c), or (--block) a transformer block of its
section (g): fusec's forward and backward and eager PyTorch's, recorded
with torch.profiler (CUPTI sees the kernels fusec launches through the
driver API as it sees PyTorch's).

    python3 bench/profile_step.py [--block bottleneck|block_vit_b|block_llama_7b]
                                  [--batch 32] [--steps 5] [--out DIR]

Prints one table per contender: each kernel's mean time per step, its
share, and the bytes it would move at the copy bandwidth where fusec's plan
says which buffers it reads and writes (`moved`, each buffer once). Times
are kernel durations: the gaps between kernels (launch latency the GPU does
not hide) are the step's wall time less their sum, printed last. Writes
profile.json to --out (default $OUT, else the current directory).
"""

import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import training  # noqa: E402


def plan_bytes(artifact):
    """{kernel: bytes of the distinct buffers among its arguments} of both
    plans of a training artifact."""
    out = {}
    for m in re.finditer(r"^// fusec-plan: (\{.*\})$", artifact, re.M):
        plan = json.loads(m.group(1))
        size = {b["id"]: b["bytes"] for b in plan["buffers"]}
        for s in plan["steps"]:
            if s.get("kind") != "launch":
                continue
            ids = {a if isinstance(a, int) else a["tensor_map"]["buffer"] for a in s["args"]}
            out[s["kernel"]] = sum(size[i] for i in ids)
    return out


def profile(torch, fn, steps):
    """[(kernel name, total µs)] over `steps` calls of fn, and the wall µs
    of one call (CUDA events)."""
    from torch.profiler import ProfilerActivity, profile as prof
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        fn()
    end.record()
    torch.cuda.synchronize()
    wall = start.elapsed_time(end) * 1e3 / steps
    with prof(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    kernels = {}
    order = []
    for e in p.events():
        if e.device_type.name != "CUDA":
            continue
        name = e.name
        if name not in kernels:
            order.append(name)
            kernels[name] = 0.0
        kernels[name] += e.device_time if hasattr(e, "device_time") else e.cuda_time
    return [(k, kernels[k] / steps) for k in order], wall


def host_and_graph(torch, b, fn, report):
    import time
    fn()
    torch.cuda.synchronize()
    reps = 20
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    host = (time.perf_counter() - t0) * 1e6 / reps
    torch.cuda.synchronize()
    report["fusec_host_us"] = host
    line = f"fusec host time to enqueue a step: {host:.1f} us"
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        torch.cuda.synchronize()
        ms = b.time([g.replay], reps=9, inner=5)
        report["fusec_graph_us"] = ms * 1e3
        line += f"; the step captured in a CUDA graph replays in {ms * 1e3:.1f} us"
    except Exception as e:  # noqa: BLE001
        report["fusec_graph_error"] = str(e)
        line += f"; capture failed: {e}"
    return line


def table(title, rows, wall, moved=None, copy_tbps=None):
    total = sum(us for _, us in rows)
    lines = [f"{title}: kernels {total:.1f} us per step, wall {wall:.1f} us "
             f"(gaps {wall - total:.1f} us)"]
    lines.append(f"    {'us':>8} {'share':>6} {'MB':>8} {'frac':>5}  kernel")
    for name, us in rows:
        mb = frac = ""
        if moved and name in moved:
            mb = f"{moved[name] / 1e6:8.1f}"
            if copy_tbps:
                frac = f"{moved[name] / (us * 1e-6) / 1e12 / copy_tbps:5.2f}"
        lines.append(f"    {us:8.1f} {us / total:6.1%} {mb:>8} {frac:>5}  {name[:90]}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--block", default="bottleneck",
                    choices=["bottleneck"] + [r[1] for r in training.TRANSFORMERS])
    ap.add_argument("--batch", type=int, default=32, help="the bottleneck's batch")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args()
    import torch
    import fusec
    if not torch.cuda.is_available():
        print("profile_step: skipped (no CUDA device)")
        return 0
    torch.backends.cudnn.benchmark = True
    b = training.Bench(torch, "cuda", quick=True, budget_s=600)

    # The copy bandwidth (bytes read + written), as training.py measures it.
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = b.time([lambda: dst.copy_(src)], reps=5, inner=3)
    copy_tbps = 2 * src.numel() / (copy_ms * 1e-3) / 1e12
    del src, dst

    if args.block == "bottleneck":
        block, dt = training.BLOCK, training.BLOCK_DTYPE
        n, hw, cin = args.batch, block["hw"], block["cin"]
        title = f"bottleneck n{n} {dt}"
        model = training.make_bottleneck(torch, block, b.dtype(dt), b.device)
        x = b.randn(n, cin, hw, hw, dtype=dt, channels_last=True).requires_grad_()
        dy = b.randn(n, cin, hw, hw, dtype=dt, channels_last=True)
        wrt = [x] + list(model.parameters())
        step = fusec.compile(training.bottleneck_train_graph(n, block, dt), train=True)
        dys = training.nhwc(dy)
        report_name = f"profile-n{n}.json"
    else:
        # As training.py's transformer_row: every argument but the rope
        # tables differentiated.
        row = next(r for r in training.TRANSFORMERS if r[1] == args.block)
        dt = training.TRANSFORMER_DTYPE
        title = f"{args.block} {dt}"
        p = training.transformer_params(b, row, dt)
        names = list(p)
        wrt_names = [k for k in names if k not in training.TRANSFORMER_CONSTANTS]
        model = training.make_transformer(torch, row, p)
        x = p["x"].requires_grad_()
        dy = dys = b.randn(row[2], row[3], row[4], dtype=dt)
        wrt = [x] + model.weights()
        step = fusec.compile(training.transformer_graph(row, dt), train=True,
                             wrt=[names.index(k) for k in wrt_names])
        report_name = f"profile-{args.block}.json"
    fargs = model.fusec_args(x)
    moved = plan_bytes(step.artifact)

    def fusec_step():
        step.forward(*fargs)
        step.backward(dys)

    def eager_step():
        return torch.autograd.grad(model(x), wrt, dy)

    report = {"block": title, "copy_TBps": copy_tbps, "gpu": torch.cuda.get_device_name()}
    text = [f"{title}, {report['gpu']}, copy {copy_tbps:.2f} TB/s"]
    for name, fn, mv in (("fusec", fusec_step, moved), ("eager", eager_step, None)):
        rows, wall = profile(torch, fn, args.steps)
        report[name] = {"wall_us": wall, "kernels": rows}
        text.append(table(name, rows, wall, mv, copy_tbps))
    # Where the gaps come from: the host's time to enqueue one step (is the
    # GPU waiting for it?), and the same step captured in a CUDA graph and
    # replayed (what the gaps are without the host).
    text.append(host_and_graph(torch, b, fusec_step, report))
    print("\n\n".join(text))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, report_name), "w") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
