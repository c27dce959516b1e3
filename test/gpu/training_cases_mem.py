"""GPU cases for the memory-bound training kernels: neg and activation_grad
fused as elementwise epilogues, reduce_sum (rows, columns, the per-channel
bias gradient of NHWC and NCHW tensors, keep_dims), the gradients of max and
average pooling and of upsampling (gathers, no atomics), and slice_grad, each
in f32, f16 and bf16 on odd shapes, NHWC and NCHW where a layout applies.
The graphs are written directly (training_cases_grad.py has the backward
graphs fusec-autodiff builds).
"""


def cases(Graph, t):
    out = []
    for dt in ("f32", "f16", "bf16"):
        def add(name, g, results):
            out.append((f"mem_{name}_{dt}", g.text(results), dt))

        # neg and every activation's derivative, one elementwise kernel each
        # with a fused epilogue (scale by a broadcast operand, then relu).
        for act, attrs in (("relu", ""), ("relu6", ""), ("clamp", ", min = -0.5 : f64, max = 0.7 : f64"),
                           ("leaky_relu", ", alpha = 0.2 : f64"), ("gelu", ""), ("gelu_tanh", ""),
                           ("silu", ""), ("sigmoid", ""), ("tanh", ""), ("hardswish", "")):
            s = [3, 17, 13]
            g = Graph("g")
            dy, v, w = g.arg(s, dt), g.arg(s, dt), g.arg([13], dt)
            r = g.op(f"fuse.activation_grad {dy}, {v} {{activation = #fuse.activation<{act}>{attrs}}} : {t(s, dt)}")
            m = g.op(f"fuse.mul {r}, {w} : {t(s, dt)}, {t([13], dt)}")
            n = g.op(f"fuse.neg {m} : {t(s, dt)}")
            add(f"activation_grad_{act}", g, [(n, t(s, dt))])
        # Vectorised (innermost 16 elements) with neg feeding the derivative.
        s = [5, 7, 16]
        g = Graph("g")
        dy, v = g.arg(s, dt), g.arg(s, dt)
        n = g.op(f"fuse.neg {dy} : {t(s, dt)}")
        r = g.op(f"fuse.activation_grad {n}, {v} {{activation = #fuse.activation<silu>}} : {t(s, dt)}")
        add("neg_silu_grad_vector", g, [(r, t(s, dt))])

        # reduce_sum.
        def reduce(name, shape, axes, keep=False, epilogue=False):
            g = Graph("g")
            x = g.arg(shape, dt)
            kd = ", keep_dims" if keep else ""
            r = g.op(f"fuse.reduce_sum {x} {{axes = array<i64: {', '.join(map(str, axes))}>{kd}}} : {t(shape, dt)}")
            rank = len(shape)
            norm = [a % rank for a in axes]
            rs = [1 if i in norm else d for i, d in enumerate(shape) if keep or i not in norm]
            if epilogue:
                r = g.op(f"fuse.neg {r} : {t(rs, dt)}")
            add(f"reduce_sum_{name}", g, [(r, t(rs, dt))])
        # Bias gradients: N, H, W of NHWC (columns; channels in vectors and
        # not), of NCHW (N and H, W: rows with a kept axis in between).
        reduce("nhwc_bias_c64", [3, 13, 11, 64], [0, 1, 2], epilogue=True)
        reduce("nhwc_bias_c7", [2, 17, 9, 7], [0, 1, 2])
        reduce("nhwc_bias_c40_big", [8, 35, 33, 40], [0, 1, 2])
        # A linear layer's bias over 8 x 197 tokens (the sum split over
        # blocks, then their partials added), and a kept axis between two
        # long summed ones.
        reduce("tokens_bias_c768", [8, 197, 768], [0, 1], epilogue=True)
        reduce("split_middle_kept", [64, 3, 50, 24], [0, 2])
        reduce("nchw_bias", [3, 7, 13, 11], [0, 2, 3])
        reduce("nchw_bias_big", [4, 5, 63, 67], [0, 2, 3])
        # Rows, all axes, negative axes, keep_dims, a middle axis.
        reduce("last_axis", [37, 129], [-1])
        reduce("last_axis_keep", [5, 9, 13], [2], keep=True, epilogue=True)
        reduce("all", [7, 33, 19], [0, 1, 2])
        reduce("leading", [33, 5, 24], [0])
        reduce("middle_keep", [4, 21, 6], [1], keep=True)
        reduce("broadcast_undo", [2, 5, 7, 3], [0, 2], keep=True)

        for L in ("nhwc", "nchw"):
            def img(n, c, h, w):
                return [n, h, w, c] if L == "nhwc" else [n, c, h, w]
            lay = f"layout = #fuse.layout<{L}>"
            # max_pool2d_grad: overlapping windows with padding, and 2x2/2.
            for tag, c, (h, w), (oh, ow), attrs in (
                    ("k3s2p1", 5, (9, 11), (5, 6), "kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>"),
                    ("k2s2_c16", 16, (10, 7), (5, 3), "kernel = array<i64: 2, 2>"),
                    ("k3s1", 3, (7, 9), (5, 7), "kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>")):
                g = Graph("g")
                x, dy = g.arg(img(2, c, h, w), dt), g.arg(img(2, c, oh, ow), dt)
                r = g.op(f"fuse.max_pool2d_grad {x}, {dy} {{{attrs}, {lay}}} : "
                         f"{t(img(2, c, h, w), dt)}, {t(img(2, c, oh, ow), dt)}")
                add(f"max_pool_grad_{tag}_{L}", g, [(r, t(img(2, c, h, w), dt))])
            # avg_pool2d_grad: with and without the padding counted, global.
            for tag, c, (h, w), (oh, ow), attrs in (
                    ("k3s2p1_nopad", 5, (9, 11), (5, 6), "kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, count_include_pad = false"),
                    ("k3s2p1", 16, (9, 11), (5, 6), "kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>"),
                    ("global", 24, (7, 5), (1, 1), "kernel = array<i64: 7, 5>")):
                g = Graph("g")
                dy = g.arg(img(3, c, oh, ow), dt)
                r = g.op(f"fuse.avg_pool2d_grad {dy} {{{attrs}, {lay}}} : "
                         f"{t(img(3, c, oh, ow), dt)} -> {t(img(3, c, h, w), dt)}")
                add(f"avg_pool_grad_{tag}_{L}", g, [(r, t(img(3, c, h, w), dt))])
            # upsample_grad: nearest 2x and non-integer, bilinear 2x (both
            # corner rules) and to a size.
            for tag, c, (h, w), (oh, ow), attrs in (
                    ("nearest_2x", 5, (9, 11), (18, 22), "mode = #fuse.upsample_mode<nearest>, scale = array<f64: 2.0, 2.0>"),
                    ("nearest_size", 8, (7, 9), (17, 20), "mode = #fuse.upsample_mode<nearest>, size = array<i64: 17, 20>"),
                    ("bilinear_2x", 16, (9, 11), (18, 22), "mode = #fuse.upsample_mode<bilinear>, scale = array<f64: 2.0, 2.0>"),
                    ("bilinear_ac", 5, (9, 11), (17, 23), "mode = #fuse.upsample_mode<bilinear>, size = array<i64: 17, 23>, align_corners"),
                    ("bilinear_size", 3, (6, 13), (19, 14), "mode = #fuse.upsample_mode<bilinear>, size = array<i64: 19, 14>")):
                g = Graph("g")
                dy = g.arg(img(2, c, oh, ow), dt)
                r = g.op(f"fuse.upsample_grad {dy} {{{attrs}, {lay}}} : "
                         f"{t(img(2, c, oh, ow), dt)} -> {t(img(2, c, h, w), dt)}")
                add(f"upsample_grad_{tag}_{L}", g, [(r, t(img(2, c, h, w), dt))])

        # slice_grad: element by element, and vectors along the innermost axis.
        for tag, small, big, offsets in (("odd", [2, 5, 7], [4, 9, 13], [1, 2, 3]),
                                          ("vector", [3, 5, 16], [3, 9, 48], [0, 2, 16])):
            g = Graph("g")
            dy = g.arg(small, dt)
            r = g.op(f"fuse.slice_grad {dy} {{offsets = array<i64: {', '.join(map(str, offsets))}>}} : "
                     f"{t(small, dt)} -> {t(big, dt)}")
            add(f"slice_grad_{tag}", g, [(r, t(big, dt))])
    return out
