import sys
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
for d in (128, 64):
  for causal in (False, True):
    q, k, v = [torch.randn(1, 16, 2048, d, device='cuda', dtype=torch.bfloat16, requires_grad=True) for _ in range(3)]
    for be in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
        with sdpa_kernel(be):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            g = torch.randn_like(o)
            for _ in range(5):
                torch.autograd.grad(o, (q, k, v), g, retain_graph=True)
            torch.cuda.synchronize()
            trials = []
            for _ in range(5):
                s = torch.cuda.Event(enable_timing=True)
                e = torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(20):
                    torch.autograd.grad(o, (q, k, v), g, retain_graph=True)
                e.record()
                torch.cuda.synchronize()
                trials.append(s.elapsed_time(e) / 20)
            ms = sorted(trials)[2]
            flops = 2.5 * 4 * 2048 * 2048 * d * 16 * (0.5 if causal else 1)
            print(f"median of 5x20: d{d}{' causal' if causal else ''} {be.name} bwd ms {ms:.4f} TFLOP/s {flops / ms / 1e9:.0f}")
