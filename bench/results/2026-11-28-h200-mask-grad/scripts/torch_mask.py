import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
torch.manual_seed(0)
B, H, N, D = 4, 16, 1024, 64
dt = torch.bfloat16
q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=dt, requires_grad=True) for _ in range(3))
m = torch.randn(B, 1, N, N, device="cuda", dtype=dt)
do = torch.randn(B, H, N, D, device="cuda", dtype=dt)

def bench(fn, n=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n): fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / n

for mask_grad in (True, False):
    mm = m.clone().requires_grad_(mask_grad)
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                     ("flash", SDPBackend.FLASH_ATTENTION), ("math", SDPBackend.MATH)):
        try:
            with sdpa_kernel([be]):
                o = F.scaled_dot_product_attention(q, k, v, attn_mask=mm)
                ins = (q, k, v, mm) if mask_grad else (q, k, v)
                t = bench(lambda: torch.autograd.grad(o, ins, do, retain_graph=True))
            print(f"torch {name:9s} mask_grad={mask_grad}: backward {t*1000:.1f} us")
        except Exception as ex:
            print(f"torch {name:9s} mask_grad={mask_grad}: unavailable ({type(ex).__name__}: {str(ex).splitlines()[0][:100]})")
