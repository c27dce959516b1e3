"""GPU cases for the attention backward (fuse.attention_grad).

Each graph runs the training forward (fuse.attention {return_lse}) and the
backward on its results, as a training step does, and returns O, the row
log-sum-exp, dQ, dK and dV: the forward kernels' log-sum-exp (the
tensor-core ones for f16 and bf16, on sm_90 mma.sync and on sm_90a wgmma;
the direct one for f32) and the backward are checked against the float64
reference on the same random Q, K, V and dO. Query and key counts of 1, 77,
197, 1000 and 4097, head dims 64, 80, 128 and 256 (one Dv != D), causal and
not, an additive mask, grouped-query heads, batch 1 and 3; the deterministic
dQ (f16, bf16), which must also give the same bits twice; and the score
gradient dS (return_score_grad, what the mask's gradient sums), causal and
not, stored by every family.
"""


def _attention_grad(Graph, t, name, dt, b, hq, hkv, nq, nk, d, dv=None, causal=False,
                    mask=None, scale=None, deterministic=False, score_grad=False):
    dv = dv or d
    g = Graph("g")
    qs, ks, vs, os_ = [b, hq, nq, d], [b, hkv, nk, d], [b, hkv, nk, dv], [b, hq, nq, dv]
    q, k, v = g.arg(qs, dt), g.arg(ks, dt), g.arg(vs, dt)
    do = g.arg(os_, dt)
    operands, types = f"{q}, {k}, {v}", f"{t(qs, dt)}, {t(ks, dt)}, {t(vs, dt)}"
    mask_operand, mask_type = "", ""
    if mask:
        m = g.arg(mask, "f32")
        mask_operand, mask_type = f", {m}", f", {t(mask, 'f32')}"
    attrs = ["causal"] if causal else []
    if scale:
        attrs.append(f"scale = {scale} : f64")
    fwd_attr = " {" + ", ".join(["return_lse"] + attrs) + "}"
    if deterministic:
        attrs.append("deterministic")
    if score_grad:
        attrs.append("return_score_grad")
    grad_attr = f" {{{', '.join(attrs)}}}" if attrs else ""
    ls = [b, hq, nq]
    g.body.append(f"  %o, %lse = fuse.attention {operands}{mask_operand}{fwd_attr} : {types}{mask_type}")
    ds = ", %ds" if score_grad else ""
    g.body.append(f"  %dq, %dk, %dv{ds} = fuse.attention_grad {operands}, %o, {do}, %lse{mask_operand}{grad_attr} "
                  f": {types}, {t(os_, dt)}, {t(ls, 'f32')}{mask_type}")
    results = [("%o", t(os_, dt)), ("%lse", t(ls, "f32")), ("%dq", t(qs, dt)),
               ("%dk", t(ks, dt)), ("%dv", t(vs, dt))]
    if score_grad:
        results.append(("%ds", t([b, hq, nq, nk], "f32" if mask else dt)))
    return (name, g.text(results), dt)


def cases(Graph, t):
    out = []
    for dt in ("f32", "f16", "bf16"):
        def add(tag, *args, **kw):
            out.append(_attention_grad(Graph, t, f"attention_grad_{tag}_{dt}", dt, *args, **kw))
        add("b3_q77_k77_d64", 3, 2, 2, 77, 77, 64)
        add("gqa_causal_q197_d80", 1, 4, 2, 197, 197, 80, causal=True)
        add("q1_k1000_d128", 1, 2, 1, 1, 1000, 128)
        add("q1_k1_d64", 3, 1, 1, 1, 1, 64)
        add("causal_q1000_k77_d64", 1, 2, 2, 1000, 77, 64, causal=True)
        add("causal_q77_k1000_d128_dv64", 1, 2, 2, 77, 1000, 128, dv=64, causal=True)
        add("mask_q77_k197_d256", 3, 2, 1, 77, 197, 256, mask=[77, 197], scale="0.05")
        add("mask_bh_q33_k40_d64", 2, 3, 3, 33, 40, 64, mask=[2, 3, 1, 40])
        add("causal_q4097_d64", 1, 1, 1, 4097, 4097, 64, causal=True)
        # dS for the mask's gradient: past the tiles' edges, and (causal)
        # the keys after each query, zeroed by the first launch.
        add("ds_causal_gqa_q197_k77_d64", 2, 4, 2, 197, 77, 64, causal=True,
            mask=[2, 1, 197, 77], score_grad=True)
        add("ds_q77_k1000_d128", 1, 2, 1, 77, 1000, 128, mask=[77, 1000],
            score_grad=True)
        add("ds_causal_q1000_d80_nomask", 1, 2, 2, 1000, 1000, 80, causal=True,
            score_grad=True)
        if dt == "f32":
            continue
        # The deterministic dQ (sm_90a: ordered by counters; sm_90: the
        # direct family): several key blocks per tile, causal with Nq above
        # and below Nk, a narrow last panel. The suite runs these twice and
        # wants the same bits.
        add("det_gqa_q197_k1000_d128", 2, 4, 2, 197, 1000, 128, deterministic=True)
        add("det_causal_q1000_d80", 1, 2, 1, 1000, 1000, 80, causal=True, deterministic=True)
        add("det_causal_q77_k1000_d64", 3, 2, 2, 77, 1000, 64, causal=True, deterministic=True)
    return out
