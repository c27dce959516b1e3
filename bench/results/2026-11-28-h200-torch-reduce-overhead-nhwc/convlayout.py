import torch, fusec, fusec.torch as ft, torch.nn.functional as F
def t(fn, n=50):
    for _ in range(5): fn()
    torch.cuda.synchronize()
    a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n): fn()
    b.record(); b.synchronize()
    return a.elapsed_time(b) / n * 1e3
shapes = [("r18 l1 3x3", 64, 64, 8, 8, 64, 3, 1, 1), ("r18 l3 3x3", 64, 256, 2, 2, 256, 3, 1, 1),
          ("r18 l4 3x3", 64, 512, 1, 1, 512, 3, 1, 1), ("r18 l4 ds 1x1 s2", 64, 256, 2, 2, 512, 1, 2, 0),
          ("r50 c3 3x3", 32, 128, 28, 28, 128, 3, 1, 1), ("r50 c2 1x1", 32, 256, 56, 56, 64, 1, 1, 0),
          ("r50 c5 3x3", 32, 512, 7, 7, 512, 3, 1, 1)]
for name, n, c, h, w, co, k, s, p in shapes:
    ho = (h + 2 * p - k) // s + 1; wo = (w + 2 * p - k) // s + 1
    x = torch.randn(n, c, h, w, device="cuda", dtype=torch.bfloat16)
    wt = torch.randn(co, c, k, k, device="cuda", dtype=torch.bfloat16) * 0.05
    row = [name]
    ref = F.conv2d(x, wt, stride=s, padding=p)
    for lay in ("nchw", "nhwc"):
        if lay == "nchw":
            xs, ws, ys = (n, c, h, w), (co, c, k, k), (n, co, ho, wo)
            xa, wa = x, wt
        else:
            xs, ws, ys = (n, h, w, c), (co, k, k, c), (n, ho, wo, co)
            xa, wa = x.permute(0, 2, 3, 1).contiguous(), wt.permute(0, 2, 3, 1).contiguous()
        ty = lambda sh: "tensor<%sxbf16>" % "x".join(map(str, sh))
        text = ('func.func @c(%%x: %s, %%w: %s) -> %s {\n  %%y = fuse.conv2d %%x, %%w {strides = array<i64: %d, %d>, padding = array<i64: %d, %d>, layout = #fuse.layout<%s>} : %s, %s\n  return %%y : %s\n}\n'
                % (ty(xs), ty(ws), ty(ys), s, s, p, p, lay, ty(xs), ty(ws), ty(ys)))
        try:
            op = ft.op(text, train=False)
            y = op(xa, wa)
            if lay == "nhwc": y = y.permute(0, 3, 1, 2)
            err = ((y.float() - ref.float()).norm() / ref.float().norm()).item()
            row.append("%s %.1fus (err %.1e)" % (lay, t(lambda: op(xa, wa)), err))
        except Exception as e:
            row.append("%s failed: %s" % (lay, str(e)[:200]))
    xc = x.to(memory_format=torch.channels_last); wc = wt.to(memory_format=torch.channels_last)
    row.append("cudnn nchw %.1fus" % t(lambda: F.conv2d(x, wt, stride=s, padding=p)))
    row.append("cudnn cl %.1fus" % t(lambda: F.conv2d(xc, wc, stride=s, padding=p)))
    print(" | ".join(row), flush=True)
