#!/usr/bin/env python3
"""Where a model's call or training step spends its time, with
torch.profiler: the GPU's kernels (CUPTI sees fusec's driver-API launches
as it sees PyTorch's) and the host's operators, for one contender of
bench/torch_models.py.

    python3 bench/profile_model.py resnet18_cifar --train --impl fusec \
        --mode reduce-overhead [--steps 5] [--top 25] [--json F]
    python3 bench/profile_model.py resnet50 --impl inductor --device cuda

Prints, per call (inference) or step (forward, loss and backward):
- the wall time (CUDA events, with and without the profiler) and the sum of the kernels' durations; their
  difference is time the GPU waited on the host or on launches;
- every kernel's time by kind (fusec's by the op each is anchored on,
  the others by library), and the kernels with the most time;
- the host operators with the most self time (what the CPU did between
  launches: PyTorch ops, fusec's custom ops, copies of inputs into CUDA
  graphs, autograd).
On a CPU device only the host side exists.
"""

import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402


_LIBRARY_KINDS = [
    (r"nvjet|gemm|xmma|cutlass|cublas|s16816|wgmma", "library GEMM/conv"),
    (r"sdpa|flash|fmha|attention", "library attention"),
    (r"^triton_", "triton"),
    (r"[Mm]emcpy|[Mm]emset", "copy/memset"),
    (r"at::native", "ATen"),
]


def kind_of(name):
    """A kernel's kind for the per-kind totals: fusec's kernels by the op
    they are anchored on (k12_linear, bwd_k3_conv2d_filter_grad_splitk:
    "fusec linear", "fusec conv2d_filter_grad"), the others by library."""
    import re
    m = re.match(r"^(?:fwd_|bwd_)?k\d+_([a-z0-9_]+?)(?:_splitk)?$", name)
    if m:
        return "fusec " + m.group(1)
    for pattern, kind in _LIBRARY_KINDS:
        if re.search(pattern, name):
            return kind
    return "other"


def contender(model, impl, mode):
    if impl == "eager":
        return model
    if impl == "inductor":
        return torch.compile(model, mode=None if mode == "default" else mode)
    import importlib
    importlib.import_module("fusec.torch")  # registers backend="fusec"
    return torch.compile(model, backend="fusec",
                         options={"cudagraphs": mode == "reduce-overhead"})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", choices=torch_models.INFER + torch_models.TRAIN)
    p.add_argument("--train", action="store_true",
                   help="a training step (default: an inference call)")
    p.add_argument("--impl", choices=["fusec", "eager", "inductor"],
                   default="fusec")
    p.add_argument("--mode", choices=["default", "reduce-overhead"],
                   default="default")
    p.add_argument("--device", default="cuda")
    p.add_argument("--quick", action="store_true",
                   help="tiny shapes (for CPU checks)")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    cuda = a.device == "cuda"
    if a.train and a.model not in torch_models.TRAIN:
        p.error("--train takes one of %s" % ", ".join(torch_models.TRAIN))

    model, args, labels = torch_models.make(a.model, a.device, a.quick)
    model = model.to(a.device).train(a.train)
    args = tuple(x.to(a.device) for x in args)
    fn = contender(model, a.impl, a.mode)
    amp = torch.autocast(a.device, dtype=torch.bfloat16)

    def step():
        if a.mode == "reduce-overhead":
            # A new iteration: cudagraph trees may reuse the last one's
            # outputs (what a training loop's optimizer step would mark).
            torch.compiler.cudagraph_mark_step_begin()
        if not a.train:
            with torch.no_grad(), amp:
                fn(*args)
            return
        with amp:
            logits = fn(args[0])
            loss = F.cross_entropy(
                logits.float().flatten(0, -2) if logits.dim() > 2
                else logits.float(), labels.to(a.device).flatten())
        model.zero_grad(set_to_none=True)
        loss.backward()

    for _ in range(3):  # compiles, captures, warms up
        step()
    out = {"model": a.model, "train": a.train, "impl": a.impl,
           "mode": a.mode, "device": a.device, "steps": a.steps}
    if cuda:
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        # The profiler slows the host down: the wall time without it first.
        start.record()
        for _ in range(a.steps):
            step()
        end.record()
        torch.cuda.synchronize()
        out["unprofiled_wall_ms"] = start.elapsed_time(end) / a.steps
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + \
        ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        if cuda:
            start.record()
        for _ in range(a.steps):
            step()
        if cuda:
            end.record()
            torch.cuda.synchronize()
    events = prof.key_averages()
    what = "step" if a.train else "call"
    print("== %s %s, %s %s" % (a.model, what, a.impl, a.mode))
    if cuda:
        kernels = [e for e in events if e.device_time_total > 0 and
                   e.device_type == torch.autograd.DeviceType.CUDA]
        kernel_us = sum(e.device_time_total for e in kernels) / a.steps
        out["wall_ms"] = start.elapsed_time(end) / a.steps
        out["kernel_ms"] = kernel_us / 1e3
        print("wall %.3f ms per %s (%.3f ms unprofiled), kernels %.3f ms "
              "(the GPU idle %.0f%% under the profiler)"
              % (out["wall_ms"], what, out["unprofiled_wall_ms"],
                 out["kernel_ms"],
                 100 * max(0.0, 1 - out["kernel_ms"] / out["wall_ms"])))
        kernels.sort(key=lambda e: -e.device_time_total)
        # Every kernel, by kind (the list below shows the top ones only).
        kinds = {}
        for e in kernels:
            us, n = kinds.get(kind_of(e.key), (0.0, 0))
            kinds[kind_of(e.key)] = (us + e.device_time_total / a.steps,
                                     n + e.count // a.steps)
        out["by_kind"] = sorted(([k, us, n] for k, (us, n) in kinds.items()),
                                key=lambda r: -r[1])
        print("-- kernels by kind (us per %s, launches per %s)"
              % (what, what))
        for k, us, n in out["by_kind"]:
            print("%9.1f  x%-4d %s" % (us, n, k))
        out["kernels"] = [(e.key, e.device_time_total / a.steps,
                           e.count // a.steps) for e in kernels[:a.top]]
        print("-- kernels (us per %s, launches per %s)" % (what, what))
        for key, us, n in out["kernels"]:
            print("%9.1f  x%-4d %s" % (us, n, key[:100]))
    host = [e for e in events if e.self_cpu_time_total > 0]
    host.sort(key=lambda e: -e.self_cpu_time_total)
    out["host"] = [(e.key, e.self_cpu_time_total / a.steps,
                    e.count // a.steps) for e in host[:a.top]]
    print("-- host operators, self time (us per %s, calls per %s)"
          % (what, what))
    for key, us, n in out["host"]:
        print("%9.1f  x%-4d %s" % (us, n, key[:100]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
