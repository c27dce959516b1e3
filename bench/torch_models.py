#!/usr/bin/env python3
"""torch.compile(model, backend="fusec") end to end, the way a user runs it
(docs/PyTorch.md): random weights, synthetic data with fixed seeds, no
downloads.

    python3 bench/torch_models.py infer [--models resnet50,vit_b] [--json F]
    python3 bench/torch_models.py train [--steps 200] [--json F]
    python3 bench/torch_models.py coverage --device cpu --quick

infer: each model's forward under no_grad and bf16 autocast, with fusec
  (default and reduce-overhead), eager, a CUDA-graph replay of eager and
  the torch.compile alternatives named by --against; the error
  against eager, the share of ATen ops and FLOPs fusec took, graph breaks,
  recompiles, cold compile time and the time from fusec's kernel cache.
train: training steps with AMP bf16 (forward and backward compiled, the
  optimizer eager), the loss of each step beside eager's from the same
  weights and data, and the final weights' distance (also for fusec's
  reduce-overhead); then the times of a step (gradients set to None,
  forward, loss, backward; no optimizer) beside eager, a CUDA-graph replay
  of eager's step and the --against modes.
coverage: what the backend takes of each model, without timing (on CPU the
  partitions run on the reference interpreter, so keep --quick shapes).
Times are CUDA-event medians over --repeat calls after warm-up, in one
process; ratio = best alternative / fusec.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timing  # noqa: E402


# ---- Models ------------------------------------------------------------------

class GPTBlock(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.out = nn.Linear(4 * width, width)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, n, self.heads, d // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, n, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    """GPT-2-small-shaped: 6 layers, 768 wide, 12 heads, 1024 tokens."""

    def __init__(self, layers=6, width=768, heads=12, tokens=1024,
                 vocab=50304):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(tokens, width)
        self.blocks = nn.ModuleList(GPTBlock(width, heads)
                                    for _ in range(layers))
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


class RMSNorm(nn.Module):
    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * self.weight).to(x.dtype)


class LlamaLayer(nn.Module):
    """A LLaMA-style decoder layer: RMSNorm, rotary embedding, grouped-query
    causal attention, SwiGLU."""

    def __init__(self, width=4096, heads=32, kv_heads=8, hidden=11008):
        super().__init__()
        self.heads, self.kv_heads, self.dim = heads, kv_heads, width // heads
        self.norm1, self.norm2 = RMSNorm(width), RMSNorm(width)
        self.q = nn.Linear(width, width, bias=False)
        self.k = nn.Linear(width, kv_heads * self.dim, bias=False)
        self.v = nn.Linear(width, kv_heads * self.dim, bias=False)
        self.o = nn.Linear(width, width, bias=False)
        self.gate = nn.Linear(width, hidden, bias=False)
        self.up = nn.Linear(width, hidden, bias=False)
        self.down = nn.Linear(hidden, width, bias=False)

    @staticmethod
    def rope(x, cos, sin):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    def forward(self, x, cos, sin):
        b, n, d = x.shape
        h = self.norm1(x)
        q = self.q(h).view(b, n, self.heads, self.dim).transpose(1, 2)
        k = self.k(h).view(b, n, self.kv_heads, self.dim).transpose(1, 2)
        v = self.v(h).view(b, n, self.kv_heads, self.dim).transpose(1, 2)
        q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, n, d))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def _rope_tables(tokens, dim, device):
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2, device=device) / dim))
    angles = torch.outer(torch.arange(tokens, device=device).float(), inv)
    return angles.cos(), angles.sin()


def make(name, device, quick=False):
    """(model, example inputs, train batch maker or None)."""
    import torchvision.models as tv
    g = torch.Generator(device="cpu").manual_seed(0)
    torch.manual_seed(0)
    if name == "resnet18_cifar":
        m = tv.resnet18(num_classes=10)
        batch = 2 if quick else 64
        x = torch.randn(batch, 3, 32, 32, generator=g)
        labels = torch.randint(0, 10, (batch,), generator=g)
        return m, (x,), labels
    if name == "gpt2_small6":
        m = GPT(layers=1 if quick else 6, width=64 if quick else 768,
                heads=4 if quick else 12, tokens=32 if quick else 1024,
                vocab=256 if quick else 50304)
        batch, tokens = (2, 32) if quick else (8, 1024)
        idx = torch.randint(0, m.head.out_features, (batch, tokens),
                            generator=g)
        labels = torch.randint(0, m.head.out_features, (batch, tokens),
                               generator=g)
        return m, (idx,), labels
    size = 32 if quick else 224
    images = (torch.randn(2 if quick else 32, 3, size, size, generator=g),)
    if name == "resnet50":
        return tv.resnet50(), images, None
    if name == "mobilenet_v2":
        return tv.mobilenet_v2(), images, None
    if name == "vit_b":
        m = tv.vit_b_16(image_size=size)
        nn.init.normal_(m.heads.head.weight, std=0.02)  # zeros by default
        return m, images, None
    if name == "llama_layer":
        width, heads, kv, hidden = ((64, 4, 2, 128) if quick else
                                    (4096, 32, 8, 11008))
        tokens = 16 if quick else 2048
        m = LlamaLayer(width, heads, kv, hidden)
        x = torch.randn(1, tokens, width, generator=g) / 4
        cos, sin = _rope_tables(tokens, width // heads, "cpu")
        return m, (x, cos, sin), None
    raise SystemExit("unknown model %r" % name)


INFER = ["resnet50", "mobilenet_v2", "vit_b", "llama_layer"]
TRAIN = ["resnet18_cifar", "gpt2_small6"]


# ---- Measuring ---------------------------------------------------------------

def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def _time(fn, device, repeat, warmup=3):
    for _ in range(warmup):
        fn()
    _sync(device)
    if device != "cuda":
        t = time.perf_counter()
        for _ in range(repeat):
            fn()
        return (time.perf_counter() - t) / repeat * 1e3
    times = []
    for _ in range(repeat):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def _relerr(a, b):
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return ((a - b).norm() / max(b.norm().item(), 1e-30)).item()


def _counts():
    from torch._dynamo.utils import counters
    breaks = sum(counters["graph_break"].values())
    graphs = counters["stats"]["unique_graphs"]
    return breaks, graphs


def _coverage(first):
    import fusec.torch as ft
    reps = ft.reports()[first:]
    ops = sum(r.ops for r in reps)
    taken = sum(r.taken for r in reps)
    flops = sum(r.flops for r in reps)
    flops_taken = sum(r.flops_taken for r in reps)
    left = {}
    for r in reps:
        for reason, counts in r.left.items():
            for op, n in counts.items():
                left[op] = left.get(op, 0) + n
    return {"graphs": len(reps), "aten_ops": ops, "ops_taken": taken,
            "op_share": taken / ops if ops else 0.0,
            "flop_share": flops_taken / flops if flops else 0.0,
            "left": left, "partitions": sum(len(r.kernels) for r in reps),
            "failed": [f for r in reps for f in r.failed]}


def _fresh_cache():
    os.environ["FUSEC_CACHE_DIR"] = tempfile.mkdtemp(prefix="fusec-cache-")
    import fusec
    fusec.clear_memory_cache()


def _compile_fusec(model, args, device, options, mode=None):
    """Compiles (dynamo + fusec) by the first call; returns (fn, seconds)."""
    import torch._dynamo
    torch._dynamo.reset()
    # torch.compile takes a mode or options, not both: the option.
    options = dict(_FUSEC_OPTIONS, **options)
    if mode == "reduce-overhead":
        options["cudagraphs"] = True
    fn = torch.compile(model, backend="fusec", options=options)
    t = time.perf_counter()
    fn(*args)
    _sync(device)
    return fn, time.perf_counter() - t


_FUSEC_MODES = {"fusec": None, "fusec-reduce-overhead": "reduce-overhead"}
_FUSEC_OPTIONS = {}  # --fusec-options


def infer(name, device, quick, against, repeat, out):
    import torch._dynamo
    from torch._dynamo.utils import counters
    import fusec.torch as ft
    model, args, _ = make(name, device, quick)
    model = model.to(device).eval()
    args = tuple(a.to(device) for a in args)
    amp = torch.autocast(device, dtype=torch.bfloat16)
    row = {"model": name, "fusec_options": _FUSEC_OPTIONS}
    with torch.no_grad(), amp:
        ref = model(*args)
        counters.clear()
        first = len(ft.reports())
        _fresh_cache()
        fn, cold = _compile_fusec(model, args, device, {})
        row["compile_cold_s"] = cold
        row["graph_breaks"], graphs = _counts()
        row["coverage"] = _coverage(first)
        y = fn(*args)
        row["relerr"] = _relerr(y, ref)
        for _ in range(2):
            fn(*args)
        row["recompiles"] = _counts()[1] - graphs
        import fusec
        fusec.clear_memory_cache()  # the disk cache stays
        _, warm = _compile_fusec(model, args, device, {})
        row["compile_cached_s"] = warm
        fn, _ = _compile_fusec(model, args, device, {})
        if device == "cuda":
            row["fusec_ms"] = _time(lambda: fn(*args), device, repeat)
            # The same kernels replayed from CUDA graphs.
            ro, t = _compile_fusec(model, args, device, {},
                                   "reduce-overhead")
            row["compile_fusec-reduce-overhead_s"] = t
            row["fusec-reduce-overhead_relerr"] = _relerr(
                ro(*args).clone(), ref)
            row["fusec-reduce-overhead_ms"] = _time(lambda: ro(*args),
                                                    device, repeat)
            row["eager_ms"] = _time(lambda: model(*args), device, repeat)
            alternatives = {"eager": row["eager_ms"]}
            # Autocast may not cache its casts in a capture.
            with torch.autocast(device, dtype=torch.bfloat16,
                                cache_enabled=False):
                replay, _ = timing.cuda_graph(torch, lambda: model(*args))
            alternatives["cuda-graph-eager"] = _time(replay, device, repeat)
            del replay
            for mode in against:
                torch._dynamo.reset()
                t = time.perf_counter()
                alt = torch.compile(model, mode=None if mode == "default"
                                    else mode)
                alt(*args)
                _sync(device)
                row["compile_%s_s" % mode] = time.perf_counter() - t
                alternatives[mode] = _time(lambda: alt(*args), device,
                                           repeat)
                row["%s_relerr" % mode] = _relerr(alt(*args), ref)
            row["alternatives_ms"] = alternatives
            best = min(alternatives, key=alternatives.get)
            row["best_alternative"] = best
            row["ratio"] = alternatives[best] / row["fusec_ms"]
            row["ratio_reduce_overhead"] = \
                alternatives[best] / row["fusec-reduce-overhead_ms"]
    out.append(row)
    print(json.dumps(row), flush=True)


def train(name, device, quick, steps, repeat, against, out):
    import torch._dynamo
    from torch._dynamo.utils import counters
    import fusec.torch as ft
    model, args, labels = make(name, device, quick)
    model = model.to(device).train()
    init = {k: v.clone() for k, v in model.state_dict().items()}
    x, labels = args[0].to(device), labels.to(device)
    batches = []
    g = torch.Generator(device="cpu").manual_seed(1)
    for _ in range(min(steps, 16)):
        if x.dtype.is_floating_point:
            batches.append((torch.randn(x.shape, generator=g).to(device),
                            labels))
        else:
            batches.append((torch.randint(0, model.head.out_features,
                                          x.shape, generator=g).to(device),
                            torch.randint(0, model.head.out_features,
                                          labels.shape,
                                          generator=g).to(device)))

    def run(fn, n):
        model.load_state_dict(init)
        opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
        losses = []
        for i in range(n):
            xb, yb = batches[i % len(batches)]
            with torch.autocast(device, dtype=torch.bfloat16):
                logits = fn(xb)
                loss = F.cross_entropy(logits.float().flatten(0, -2)
                                       if logits.dim() > 2 else
                                       logits.float(), yb.flatten())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, {k: v.detach().clone() for k, v in
                        model.state_dict().items()}

    row = {"model": name, "steps": steps, "fusec_options": _FUSEC_OPTIONS}
    eager_losses, eager_weights = run(model, steps)
    counters.clear()
    first = len(ft.reports())
    _fresh_cache()
    torch._dynamo.reset()
    fn = torch.compile(model, backend="fusec", options=_FUSEC_OPTIONS)
    t = time.perf_counter()
    fusec_losses, fusec_weights = run(fn, steps)
    row["run_s"] = time.perf_counter() - t
    row["graph_breaks"], row["graphs"] = _counts()
    row["coverage"] = _coverage(first)
    row["eager_loss"] = eager_losses
    row["fusec_loss"] = fusec_losses
    row["max_loss_diff"] = max(abs(a - b) for a, b in
                               zip(eager_losses, fusec_losses))
    dists = [_relerr(fusec_weights[k], eager_weights[k])
             for k in eager_weights if eager_weights[k].is_floating_point()]
    row["max_weight_relerr"] = max(dists)
    if device == "cuda":
        def step(f):
            # A training loop's step without the optimizer: a new
            # iteration for cudagraph trees (reduce-overhead modes), the
            # gradients cleared (zero_grad's set_to_none), forward, loss
            # and backward.
            torch.compiler.cudagraph_mark_step_begin()
            model.zero_grad(set_to_none=True)
            xb, yb = batches[0]
            with torch.autocast(device, dtype=torch.bfloat16):
                logits = f(xb)
                loss = F.cross_entropy(logits.float().flatten(0, -2)
                                       if logits.dim() > 2 else
                                       logits.float(), yb.flatten())
            loss.backward()
        times = {"fusec": _time(lambda: step(fn), device, repeat),
                 "eager": _time(lambda: step(model), device, repeat)}
        torch.cuda.reset_peak_memory_stats()
        step(fn)
        torch.cuda.synchronize()
        row["fusec_peak_bytes"] = torch.cuda.max_memory_allocated()
        # fusec's kernels replayed from CUDA graphs: its loss curve too.
        torch._dynamo.reset()
        ro = torch.compile(model, backend="fusec",
                           options=dict(_FUSEC_OPTIONS, cudagraphs=True))
        t = time.perf_counter()
        ro_losses, _ = run(ro, steps)
        row["fusec-reduce-overhead_run_s"] = time.perf_counter() - t
        row["fusec-reduce-overhead_loss"] = ro_losses
        row["fusec-reduce-overhead_max_loss_diff"] = max(
            abs(a - b) for a, b in zip(eager_losses, ro_losses))
        times["fusec-reduce-overhead"] = _time(lambda: step(ro), device,
                                               repeat)
        torch.cuda.reset_peak_memory_stats()
        step(ro)
        torch.cuda.synchronize()
        row["fusec-reduce-overhead_peak_bytes"] = \
            torch.cuda.max_memory_allocated()
        torch._dynamo.reset()
        # Eager's step (forward, loss, backward) replayed from one CUDA
        # graph; the warm-up makes the gradients before the capture, so the
        # replay accumulates into them.
        model.zero_grad(set_to_none=True)

        def eager_step():
            xb, yb = batches[0]
            with torch.autocast(device, dtype=torch.bfloat16,
                                cache_enabled=False):
                logits = model(xb)
                loss = F.cross_entropy(logits.float().flatten(0, -2)
                                       if logits.dim() > 2 else
                                       logits.float(), yb.flatten())
            loss.backward()
        replay, _ = timing.cuda_graph(torch, eager_step)
        times["cuda-graph-eager"] = _time(replay, device, repeat)
        del replay
        for mode in against:
            torch._dynamo.reset()
            alt = torch.compile(model, mode=None if mode == "default"
                                else mode)
            if mode == against[0]:
                # The spread between two correct implementations: the loss
                # curve of torch.compile against eager's.
                alt_losses, _ = run(alt, steps)
                row["%s_loss" % mode] = alt_losses
                row["%s_max_loss_diff" % mode] = max(
                    abs(a - b) for a, b in zip(eager_losses, alt_losses))
            times[mode] = _time(lambda: step(alt), device, repeat)
            torch.cuda.reset_peak_memory_stats()
            step(alt)
            torch.cuda.synchronize()
            row["%s_peak_bytes" % mode] = torch.cuda.max_memory_allocated()
        row["step_ms"] = times
        alternatives = {k: v for k, v in times.items()
                        if k not in _FUSEC_MODES}
        best = min(alternatives, key=alternatives.get)
        row["best_alternative"] = best
        row["ratio"] = alternatives[best] / times["fusec"]
        row["ratio_reduce_overhead"] = \
            alternatives[best] / times["fusec-reduce-overhead"]
    out.append(row)
    short = dict(row)
    for k in [k for k in row if k.endswith("_loss")]:
        short[k] = [round(v, 4) for v in row[k][:3]] + ["..."] + \
            [round(v, 4) for v in row[k][-2:]]
    print(json.dumps(short), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["infer", "train", "coverage"])
    p.add_argument("--models", default=None)
    p.add_argument("--device", default="cuda")
    p.add_argument("--quick", action="store_true",
                   help="tiny shapes (for CPU checks)")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--against", default="",
                   help="torch.compile modes to time beside eager: "
                        "default,max-autotune-no-cudagraphs,reduce-overhead")
    p.add_argument("--json", default=None)
    p.add_argument("--fusec-options", default="{}",
                   help="the backend's options, as JSON (e.g. "
                        "'{\"channels_last\": false}')")
    a = p.parse_args()
    _FUSEC_OPTIONS.update(json.loads(a.fusec_options))
    against = [m for m in a.against.split(",") if m]
    out = []

    def save():
        # After each model: a run cut short keeps the rows it finished.
        if a.json:
            with open(a.json + ".tmp", "w") as f:
                json.dump({"torch": torch.__version__, "device": a.device,
                           "gpu": torch.cuda.get_device_name()
                           if a.device == "cuda" else None,
                           "rows": out}, f, indent=1)
            os.replace(a.json + ".tmp", a.json)

    if a.what == "train":
        models = a.models.split(",") if a.models else TRAIN
        for m in models:
            train(m, a.device, a.quick, a.steps, a.repeat, against, out)
            save()
    else:
        models = a.models.split(",") if a.models else INFER + TRAIN
        for m in models:
            infer(m, a.device, a.quick, against if a.what == "infer" else [],
                  a.repeat, out)
            save()


if __name__ == "__main__":
    sys.exit(main())
