"""Which kernels cuDNN and cuBLAS run for the benchmark's hardest rows, and how
long each takes (torch.profiler), so that a gap to them can be explained.

Run on the GPU machine: python3 bench/alt_kernels.py
"""
import torch, torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity
torch.backends.cudnn.benchmark = True
dev = "cuda"
def show(tag, fn):
    for _ in range(5): fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(3): fn()
        torch.cuda.synchronize()
    ks = sorted({(e.key, round(e.device_time_total/3, 1)) for e in p.key_averages() if e.device_time_total > 0}, key=lambda x: -x[1])
    print(tag); [print("   ", us, "us", n[:150]) for n, us in ks[:4]]
for dt in (torch.float16, torch.float32):
    torch.backends.cudnn.allow_tf32 = dt == torch.float32
    for name, n, c, hw, k, pd, s in [("c4", 32, 256, 14, 3, 1, 1), ("c5", 32, 512, 7, 3, 1, 1), ("stem", 32, 3, 224, 7, 3, 2)]:
        co = 64 if name == "stem" else c
        x = torch.randn(n, c, hw, hw, device=dev, dtype=dt).to(memory_format=torch.channels_last)
        w = torch.randn(co, c, k, k, device=dev, dtype=dt).to(memory_format=torch.channels_last)
        b = torch.randn(co, device=dev, dtype=dt)
        show(f"{name} {dt}", lambda: torch.cudnn_convolution_relu(x, w, b, (s, s), (pd, pd), (1, 1), 1))
x = torch.randn(8192, 4096, device=dev, dtype=torch.bfloat16); w = torch.randn(16384, 4096, device=dev, dtype=torch.bfloat16)
show("ffn_up linear", lambda: F.linear(x, w))
