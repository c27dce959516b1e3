#!/usr/bin/env python3
"""Data-parallel training with fusec (docs/PyTorch.md, "Data-parallel
training"), launched by torchrun:

    torchrun --nproc_per_node 2 bench/ddp_train.py --model resnet18_cifar \
        --impl fusec --out r18-fusec-w2.json
    python3 bench/ddp_train.py compare r18-fusec-w1.json r18-fusec-w2.json

train (the default): `--steps` SGD steps under AMP bf16 on the global batch
  `--global-batch`, split evenly across the ranks (deterministic synthetic
  data, random weights, no downloads); the loss of each step is the global
  batch's. Then step times with `--time-batch` samples per rank (weak
  scaling), CUDA-event medians. Rank 0 writes the JSON and the final
  weights beside it (.pt).
  --impl fusec: batch norm -> fusec.distributed.SyncBatchNorm, the model
    wrapped in DDP (or sharded by FSDP2) and compiled with
    torch.compile(backend="fusec") (DDP's optimizer splits the graph at
    gradient-bucket boundaries);
  --impl eager / inductor: nn.SyncBatchNorm and PyTorch's DDP, eager or
    torch.compile's default.
  --dtype f32 --lr 0.002 keeps the trajectories of two correct runs close
  for 100 steps; under bf16 autocast at lr 0.02 they part after a few steps
  (PyTorch's own one- and two-GPU runs as much as fusec's).
compare A B: the largest loss difference per step and the largest relative
  weight difference between two runs (same model, same global batch).
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _batches(model_name, head, global_batch, count, quick):
    g = torch.Generator().manual_seed(1)
    out = []
    for _ in range(count):
        if model_name == "resnet18_cifar":
            size = 8 if quick else 32
            out.append((torch.randn(global_batch, 3, size, size,
                                    generator=g),
                        torch.randint(0, 10, (global_batch,), generator=g)))
        else:
            tokens = 32 if quick else 1024
            out.append((torch.randint(0, head, (global_batch, tokens),
                                      generator=g),
                        torch.randint(0, head, (global_batch, tokens),
                                      generator=g)))
    return out


def _sync(cuda):
    if cuda:
        torch.cuda.synchronize()


def _loss(logits, labels):
    if logits.dim() > 2:
        return F.cross_entropy(logits.float().flatten(0, -2),
                               labels.flatten())
    return F.cross_entropy(logits.float(), labels)


def train(args):
    from torch_models import make
    cuda = not args.cpu
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", 0))
    if cuda:
        torch.cuda.set_device(local)
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    model, _, _ = make(args.model, "cpu", args.quick)
    head = model.head.out_features if hasattr(model, "head") else 10
    if args.impl == "fusec":
        import fusec.distributed as fd
        model = fd.convert_sync_batchnorm(model)
    else:
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = model.to(device).train()

    if args.mode == "fsdp2":
        from torch.distributed.fsdp import fully_shard
        for block in getattr(model, "blocks", []):
            fully_shard(block)
        wrapped = fully_shard(model)
    else:
        from torch.nn.parallel import DistributedDataParallel as DDP
        wrapped = DDP(model, device_ids=[local] if cuda else None)
    t = time.perf_counter()
    if args.impl == "fusec" and not args.no_compile:
        fn = torch.compile(wrapped, backend="fusec")
    elif args.impl == "inductor":
        fn = torch.compile(wrapped)
    else:
        fn = wrapped

    if args.global_batch % world:
        raise SystemExit("--global-batch %d is not a multiple of the %d "
                         "ranks" % (args.global_batch, world))
    share = args.global_batch // world
    batches = _batches(args.model, head, args.global_batch, 16,
                       args.quick)
    opt = torch.optim.SGD(wrapped.parameters(), lr=args.lr, momentum=0.9)

    def step(x, y):
        with torch.autocast(device.type, dtype=torch.bfloat16,
                            enabled=args.dtype == "bf16"):
            loss = _loss(fn(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    losses = []
    for i in range(args.steps):
        x, y = batches[i % len(batches)]
        x = x[rank * share:(rank + 1) * share].to(device, non_blocking=True)
        y = y[rank * share:(rank + 1) * share].to(device, non_blocking=True)
        loss = step(x, y).detach()
        dist.all_reduce(loss)
        losses.append(loss / world)
        if i == 0:
            _sync(cuda)
            first_s = time.perf_counter() - t
    losses = [v.item() for v in losses]
    # The weights after the training steps (the timing below takes more).
    if args.mode == "fsdp2":
        from torch.distributed.tensor import DTensor
        state = {k: (v.full_tensor() if isinstance(v, DTensor) else v)
                 for k, v in model.state_dict().items()}
    else:
        state = model.state_dict()
    state = {k: v.detach().cpu().clone() for k, v in state.items()}

    # Weak scaling: --time-batch samples per rank.
    x, y = batches[0]
    tx, ty = x[:args.time_batch].to(device), y[:args.time_batch].to(device)
    for _ in range(5):
        step(tx, ty)
    _sync(cuda)
    dist.barrier()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        if cuda:
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
        step(tx, ty)
        if cuda:
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        else:
            times.append((time.perf_counter() - t) * 1e3)
    ms = torch.tensor(statistics.median(times), device=device)
    dist.all_reduce(ms, op=dist.ReduceOp.MAX)

    if rank == 0:
        torch.save(state, os.path.splitext(args.out)[0] + ".pt")
        row = {"model": args.model, "impl": args.impl, "mode": args.mode,
               "world": world,
               "gpu": torch.cuda.get_device_name() if cuda else "cpu",
               "global_batch": args.global_batch, "steps": args.steps,
               "compiled": args.impl != "eager" and not args.no_compile,
               "dtype": args.dtype, "lr": args.lr,
               "loss": losses, "first_step_s": first_s,
               "time_batch_per_rank": args.time_batch,
               "step_ms": ms.item(),
               "peak_bytes": torch.cuda.max_memory_allocated()
               if cuda else None,
               "torch": torch.__version__}
        if args.impl == "fusec":
            import fusec.torch as ft
            reps = ft.reports()
            row["fusec_graphs"] = len(reps)
            row["fusec_ops_taken"] = sum(r.taken for r in reps)
            row["fusec_aten_ops"] = sum(r.ops for r in reps)
            row["fusec_failed"] = [f for r in reps for f in r.failed]
        from torch._dynamo.utils import counters
        row["graph_breaks"] = sum(counters["graph_break"].values())
        with open(args.out, "w") as f:
            json.dump(row, f, indent=1)
        print(json.dumps({k: v for k, v in row.items() if k != "loss"} |
                         {"loss_first_last": [losses[0], losses[-1]]}),
              flush=True)
    dist.destroy_process_group()


def compare(a_path, b_path):
    a, b = (json.load(open(p)) for p in (a_path, b_path))
    wa, wb = (torch.load(os.path.splitext(p)[0] + ".pt") for p in
              (a_path, b_path))
    diff = max(abs(x - y) for x, y in zip(a["loss"], b["loss"]))
    rel = {k: ((wa[k].double() - wb[k].double()).norm() /
               max(wb[k].double().norm().item(), 1e-30)).item()
           for k in wb if wb[k].is_floating_point()}
    worst = max(rel, key=rel.get)
    print(json.dumps({"a": a_path, "b": b_path,
                      "max_loss_diff": diff,
                      "final_loss": [a["loss"][-1], b["loss"][-1]],
                      "max_weight_relerr": rel[worst],
                      "worst_weight": worst,
                      "scaling_efficiency_b_over_a":
                          a["step_ms"] / b["step_ms"]}))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "compare":
        return compare(sys.argv[2], sys.argv[3])
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="resnet18_cifar",
                   choices=["resnet18_cifar", "gpt2_small6"])
    p.add_argument("--impl", default="fusec",
                   choices=["fusec", "eager", "inductor"])
    p.add_argument("--mode", default="ddp", choices=["ddp", "fsdp2"])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--global-batch", type=int)
    p.add_argument("--time-batch", type=int)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--dtype", default="bf16", choices=["bf16", "f32"],
                   help="bf16: AMP autocast; f32: none")
    p.add_argument("--no-compile", action="store_true",
                   help="--impl fusec: only the modules (synchronised "
                   "batch norm) are fusec's; no torch.compile")
    p.add_argument("--out", required=True)
    p.add_argument("--cpu", action="store_true",
                   help="gloo on CPU tensors (fusec's reference "
                   "interpreter): a smoke run; use with --quick")
    p.add_argument("--quick", action="store_true",
                   help="small models and batches")
    args = p.parse_args()
    cnn = args.model == "resnet18_cifar"
    args.global_batch = args.global_batch or (128 if cnn else 8)
    args.time_batch = args.time_batch or (64 if cnn else 4)
    if args.time_batch > args.global_batch:
        raise SystemExit("--time-batch is at most --global-batch")
    train(args)


if __name__ == "__main__":
    main()
