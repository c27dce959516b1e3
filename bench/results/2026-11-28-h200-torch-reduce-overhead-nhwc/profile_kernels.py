import sys, os, torch, torch.nn.functional as F
sys.path.insert(0, "bench")
import torch_models as tm
name = sys.argv[1]; mode = sys.argv[2] if len(sys.argv) > 2 else "fusec"
model, args, labels = tm.make(name, "cuda")
infer = len(sys.argv) > 3
model = model.cuda(); model.train(not infer); args = [a.cuda() for a in args]; x = args[0]; y = labels.cuda() if labels is not None else None
fn = model if mode == "eager" else torch.compile(model, backend="fusec")
def step():
    if infer:
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            fn(*args)
        return
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = fn(x)
        loss = F.cross_entropy(logits.float().flatten(0, -2) if logits.dim() > 2 else logits.float(), y.flatten())
    loss.backward()
for _ in range(3): step()
torch.cuda.synchronize()
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CUDA]) as p:
    for _ in range(5): step()
    torch.cuda.synchronize()
evs = [e for e in p.key_averages() if e.device_time_total > 0]
evs.sort(key=lambda e: -e.device_time_total)
tot = sum(e.device_time_total for e in evs)
print("== %s %s: GPU %.2f ms per step" % (name, mode, tot / 5 / 1e3))
for e in evs[:int(os.environ.get("TOP", "30"))]:
    print("%8.1f us/step %5.1f%% x%-4d %s" % (e.device_time_total / 5, 100 * e.device_time_total / tot, e.count // 5, e.key[:110]))
