"""GPU cases for the layer and RMS norm backward (fuse.norm_grad): rows of
1, 17, 4096 and 65537 elements in f32, f16 and bf16. Rows that 16-byte
vectors divide and that fit kResident elements a thread stay in registers
(4096); odd rows (17) and long ones (65537) take the streamed passes. Also
the parameters' gradients alone, a normalised rank of 2, no scale, many rows
per block (the partials' sums), and the residual's gradient added in the
rows pass's epilogue. The whole-graph cases (layer_norm / rms_norm
differentiated by fusec-autodiff) run through `--train` in the suite's
training graphs.
"""


def _norm_grad(Graph, t, name, dt, shape, rank=1, rms=False, scale=True, params=True,
               residual=False, eps=None):
    g = Graph("g")
    dy = g.arg(shape, dt)
    x = g.arg(shape, dt)
    rowshape = shape[len(shape) - rank:]
    extra = ""
    if scale:
        extra = f" scale({g.arg(rowshape, dt)} : {t(rowshape, dt)})"
    attrs = []
    if rank != 1:
        attrs.append(f"normalized_rank = {rank} : i64")
    if eps is not None:
        attrs.append(f"epsilon = {eps} : f64")
    if rms:
        attrs.append("rms")
    attr = f" {{{', '.join(attrs)}}}" if attrs else ""
    g.body.append(f"  %n:3 = fuse.norm_grad {dy}, {x}{extra}{attr} : {t(shape, dt)}")
    dx = "%n#0"
    if residual:
        res = g.arg(shape, dt)
        dx = g.op(f"fuse.add %n#0, {res} : {t(shape, dt)}, {t(shape, dt)}")
    results = [(dx, t(shape, dt))]
    if params:
        results += [("%n#1", t(rowshape, dt)), ("%n#2", t(rowshape, dt))]
    return (name, g.text(results), dt)


def cases(Graph, t):
    out = []
    for dt in ("f32", "f16", "bf16"):
        for d in (1, 17, 4096, 65537):
            rows = [3, 5] if d < 65537 else [3]
            out.append(_norm_grad(Graph, t, f"norm_grad_ln_{d}_{dt}", dt, rows + [d]))
            # A row of one element is ill-conditioned for the RMS norm:
            # dx = g * eps / (x^2 + eps)^1.5 is the difference of two
            # nearly equal terms, which f32 resolves only to ~1e-7 of g
            # (relerr 1.8e-4 at eps = 1e-6 on an H200): a larger eps there.
            out.append(_norm_grad(Graph, t, f"norm_grad_rms_{d}_{dt}", dt, rows + [d], rms=True,
                                  eps="1.0e-2" if d == 1 else "1.0e-6"))
        # Many rows a block: 600 rows of 256 (the partials' sums over ~264
        # blocks), the residual's gradient fused.
        out.append(_norm_grad(Graph, t, f"norm_grad_ln_rows_{dt}", dt, [600, 256], residual=True))
        out.append(_norm_grad(Graph, t, f"norm_grad_rms_dx_{dt}", dt, [37, 512], rms=True, params=False))
        out.append(_norm_grad(Graph, t, f"norm_grad_ln_rank2_{dt}", dt, [4, 6, 40], rank=2))
        out.append(_norm_grad(Graph, t, f"norm_grad_ln_noscale_{dt}", dt, [9, 768], scale=False))
        # A warp a row (rows of up to 24 elements a lane): GPT's width with
        # more rows than a block's warps; rows of 100 (25 vectors of f32, the
        # last lanes masked), several rows a warp.
        out.append(_norm_grad(Graph, t, f"norm_grad_ln_768_{dt}", dt, [1000, 768], residual=True))
        out.append(_norm_grad(Graph, t, f"norm_grad_ln_warps_{dt}", dt, [3000, 100]))
    return out
