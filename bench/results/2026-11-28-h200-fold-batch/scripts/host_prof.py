"""Where the host time of fusec's ViT-B training step goes: cProfile over
50 steps (forward + backward), top functions by own time."""
import cProfile, os, pstats, sys, time
sys.path.insert(0, os.path.join(os.getcwd(), "bench"))
import torch, fusec, training
b = training.Bench(torch, "cuda", quick=True, budget_s=600)
row = next(r for r in training.TRANSFORMERS if r[1] == "block_vit_b")
dt = training.TRANSFORMER_DTYPE
p = training.transformer_params(b, row, dt)
names = list(p)
wrt_names = [k for k in names if k not in training.TRANSFORMER_CONSTANTS]
model = training.make_transformer(torch, row, p)
x = p["x"].requires_grad_()
dy = b.randn(row[2], row[3], row[4], dtype=dt)
step = fusec.compile(training.transformer_graph(row, dt), train=True,
                     wrt=[names.index(k) for k in wrt_names])
fargs = model.fusec_args(x)
def fstep():
    step.forward(*fargs); step.backward(dy)
for _ in range(5): fstep()
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(50): fstep()
print("host us/step %.1f" % ((time.perf_counter() - t0) * 1e6 / 50))
torch.cuda.synchronize()
pr = cProfile.Profile(); pr.enable()
for _ in range(50): fstep()
pr.disable(); torch.cuda.synchronize()
pstats.Stats(pr).sort_stats("tottime").print_stats(25)
