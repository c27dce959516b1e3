import torch, torch.nn.functional as F
for name, M, K, N in (("ffn1", 1576, 768, 3072), ("ffn2", 1576, 3072, 768), ("qkv", 1576, 768, 768)):
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16); w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, device="cuda", dtype=torch.bfloat16); out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    for _ in range(20): torch.addmm(b, x, w.t(), out=out)
    s, e = torch.cuda.Event(True), torch.cuda.Event(True); ts = []
    for _ in range(20):
        s.record(); [torch.addmm(b, x, w.t(), out=out) for _ in range(20)]; e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) / 20)
    ts.sort(); print(f"== cublas_{name} time_ms median={ts[10]:.4f} min={ts[0]:.4f}")
