"""GPU cases for batch norm in training: fuse.batch_norm_train (batch
statistics, the running statistics updated with a momentum or cumulatively)
followed by a ReLU that fuses into its normalising pass, and
fuse.batch_norm_grad in its training and evaluation forms, in both layouts
and f32/f16/bf16, with f32 parameters and statistics (PyTorch's AMP) or the
input's. Odd shapes (C = 37, W = 13) take the scalar paths; channel counts
and widths that 16-byte vectors divide take the vector ones; the big case
splits each channel's values over many blocks.
"""


def _xs(layout, n, c, h, w):
    return [n, h, w, c] if layout == "nhwc" else [n, c, h, w]


def _train(Graph, t, name, dt, pdt, layout, n, c, h, w, attrs="", tracked=False, relu=True):
    g = Graph("g")
    xs = _xs(layout, n, c, h, w)
    x = g.arg(xs, dt)
    ps = [g.arg([c], pdt) for _ in range(4)]
    extra = ""
    if tracked:
        extra = f" tracked {g.arg([1], pdt)}"
    tail = f", {t([1], pdt)}" if tracked else ""
    attr = f"layout = #fuse.layout<{layout}>" + (f", {attrs}" if attrs else "")
    # Graph.op names one result; the batch norm has five.
    g.body.append(f"  %bn:5 = fuse.batch_norm_train {x}, {', '.join(ps)}{extra} "
                  f"{{{attr}}} : {t(xs, dt)}, {t([c], pdt)}{tail}")
    y = g.op(f"fuse.relu %bn#0 : {t(xs, dt)}") if relu else "%bn#0"
    results = [(y, t(xs, dt))] + [(f"%bn#{i}", t([c], pdt)) for i in range(1, 5)]
    return (name, g.text(results), dt)


def _grad(Graph, t, name, dt, pdt, layout, n, c, h, w, epsilon=None, params=True):
    g = Graph("g")
    xs = _xs(layout, n, c, h, w)
    dy = g.arg(xs, dt)
    x = g.arg(xs, dt)
    ps = [g.arg([c], pdt) for _ in range(3)]
    attr = f"layout = #fuse.layout<{layout}>"
    if epsilon is not None:
        attr += f", epsilon = {epsilon} : f64"
    g.body.append(f"  %g:3 = fuse.batch_norm_grad {dy}, {x}, {', '.join(ps)} "
                  f"{{{attr}}} : {t(xs, dt)}, {t([c], pdt)}")
    results = [("%g#0", t(xs, dt))]
    if params:
        results += [("%g#1", t([c], pdt)), ("%g#2", t([c], pdt))]
    return (name, g.text(results), dt)


def cases(Graph, t):
    out = []
    for layout in ("nhwc", "nchw"):
        for dt in ("f32", "f16", "bf16"):
            odd = (3, 37, 7, 13)
            # Vectors: C (NHWC) or W (NCHW) a multiple of 8.
            even = (2, 64, 5, 8) if layout == "nchw" else (2, 64, 5, 7)
            out.append(_train(Graph, t, f"bn_train_relu_{layout}_{dt}", dt, "f32", layout, *odd))
            out.append(_train(Graph, t, f"bn_train_relu_vec_{layout}_{dt}", dt, "f32", layout, *even,
                              attrs="momentum = 0.25 : f64, epsilon = 1.0e-3 : f64"))
            out.append(_train(Graph, t, f"bn_train_cumulative_{layout}_{dt}", dt, "f32", layout, *odd,
                              attrs="cumulative", tracked=True, relu=False))
            out.append(_grad(Graph, t, f"bn_grad_{layout}_{dt}", dt, "f32", layout, *odd))
            out.append(_grad(Graph, t, f"bn_grad_vec_{layout}_{dt}", dt, "f32", layout, *even))
            out.append(_grad(Graph, t, f"bn_grad_eval_{layout}_{dt}", dt, "f32", layout, *odd,
                             epsilon="1.0e-5"))
            out.append(_grad(Graph, t, f"bn_grad_eval_dx_{layout}_{dt}", dt, "f32", layout, *even,
                             epsilon="1.0e-5", params=False))
        # Parameters and statistics in the input's type.
        out.append(_train(Graph, t, f"bn_train_relu_params_f16_{layout}", "f16", "f16", layout, 3, 37, 7, 13))
        out.append(_grad(Graph, t, f"bn_grad_params_bf16_{layout}", "bf16", "bf16", layout, 3, 37, 7, 13))
        # A big M: each channel's 32 x 28 x 28 values split over many blocks.
        out.append(_train(Graph, t, f"bn_train_relu_big_{layout}_bf16", "bf16", "f32", layout, 32, 64, 28, 28))
        out.append(_grad(Graph, t, f"bn_grad_big_{layout}_bf16", "bf16", "f32", layout, 32, 64, 28, 28))
    return out
