"""Where the host's time to enqueue a bottleneck training step goes:
cProfile over 50 steps of fusec's forward + backward (batch 32), no sync
inside. Run from the repository root with the wheel on PYTHONPATH."""
import cProfile
import os
import pstats
import sys

sys.path.insert(0, os.path.join(os.getcwd(), "bench"))
import torch  # noqa: E402
import fusec  # noqa: E402
import training  # noqa: E402

block, dt, n = training.BLOCK, training.BLOCK_DTYPE, 32
b = training.Bench(torch, "cuda", quick=True, budget_s=600)
model = training.make_bottleneck(torch, block, b.dtype(dt), b.device)
x = b.randn(n, block["cin"], block["hw"], block["hw"], dtype=dt, channels_last=True)
dy = b.randn(n, block["cin"], block["hw"], block["hw"], dtype=dt, channels_last=True)
step = fusec.compile(training.bottleneck_train_graph(n, block, dt), train=True)
args, dys = model.fusec_args(x), training.nhwc(dy)


def run(k):
    for _ in range(k):
        step.forward(*args)
        step.backward(dys)


run(5)
torch.cuda.synchronize()
p = cProfile.Profile()
p.enable()
run(50)
p.disable()
torch.cuda.synchronize()
pstats.Stats(p).sort_stats("tottime").print_stats(25)
