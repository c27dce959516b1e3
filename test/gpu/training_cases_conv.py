"""GPU cases for the convolution gradients as kernels of their own:
fuse.conv_transpose2d (the data gradient, and decoders' upsampling) and
fuse.conv2d_filter_grad (the weight gradient), written directly rather than
built by fusec-autodiff, so that every variant the GEMM and direct families
take is reached: NHWC and NCHW, f32 (CUDA cores, and TF32), f16 and bf16,
odd shapes and channel counts, stride 2 with output_padding, dilation,
groups, depthwise, 1x1, bias, fused epilogues (activation_grad, add) and
hand-written tiles (warp groups splitting k, several stages).
fuse.activation_grad is not in the GEMM epilogue yet, so plain activations
stand for it.
"""


def _tuple(v):
    return f"array<i64: {v[0]}, {v[1]}>"


def conv_transpose_case(Graph, t, dt, layout, n, ci, h, w, co, k, s=1, p=0, d=1, g=1, op_=0,
                        bias=False, act=None, residual=False):
    """conv_transpose2d [+ bias] [+ residual] [-> activation], the
    epilogue fused into the kernel."""
    gr = Graph("g")
    xs = [n, h, w, ci] if layout == "nhwc" else [n, ci, h, w]
    fs = [ci, k, k, co // g] if layout == "nhwc" else [ci, co // g, k, k]
    ho = (h - 1) * s - 2 * p + d * (k - 1) + op_ + 1
    wo = (w - 1) * s - 2 * p + d * (k - 1) + op_ + 1
    os_ = [n, ho, wo, co] if layout == "nhwc" else [n, co, ho, wo]
    x, f = gr.arg(xs, dt), gr.arg(fs, dt)
    operands, types = [x, f], [t(xs, dt), t(fs, dt)]
    if bias:
        operands.append(gr.arg([co], dt))
        types.append(t([co], dt))
    attrs = [f"strides = {_tuple((s, s))}", f"padding = {_tuple((p, p))}",
             f"output_padding = {_tuple((op_, op_))}", f"dilation = {_tuple((d, d))}",
             f"groups = {g}", f"layout = #fuse.layout<{layout}>"]
    v = gr.op(f"fuse.conv_transpose2d {', '.join(operands)} {{{', '.join(attrs)}}} : {', '.join(types)}")
    if residual:
        r = gr.arg(os_, dt)
        v = gr.op(f"fuse.add {v}, {r} : {t(os_, dt)}, {t(os_, dt)}")
    if act:
        v = gr.op(f"fuse.{act} {v} : {t(os_, dt)}")
    return gr.text([(v, t(os_, dt))])


def filter_grad_case(Graph, t, dt, layout, n, ci, h, w, co, k, s=1, p=0, d=1, g=1, out_dt=None):
    """conv2d_filter_grad of x [N, Ci, H, W] and dy; its result in `out_dt`
    (a cast after it, f32 weights of an f16 model) when given."""
    gr = Graph("g")
    ho = (h + 2 * p - d * (k - 1) - 1) // s + 1
    wo = (w + 2 * p - d * (k - 1) - 1) // s + 1
    xs = [n, h, w, ci] if layout == "nhwc" else [n, ci, h, w]
    ys = [n, ho, wo, co] if layout == "nhwc" else [n, co, ho, wo]
    fs = [co, k, k, ci // g] if layout == "nhwc" else [co, ci // g, k, k]
    x, dy = gr.arg(xs, dt), gr.arg(ys, dt)
    attrs = [f"kernel = {_tuple((k, k))}", f"strides = {_tuple((s, s))}", f"padding = {_tuple((p, p))}",
             f"dilation = {_tuple((d, d))}", f"groups = {g}", f"layout = #fuse.layout<{layout}>"]
    v = gr.op(f"fuse.conv2d_filter_grad {x}, {dy} {{{', '.join(attrs)}}} : {t(xs, dt)}, {t(ys, dt)}")
    rt = dt
    if out_dt:
        v = gr.op(f"fuse.cast {v} : {t(fs, dt)} to {t(fs, out_dt)}")
        rt = out_dt
    return gr.text([(v, t(fs, rt))])


def tiled_filter_grad_case(dt, n, ci, h, w, co, tile):
    """An NHWC 3x3 filter gradient as a hand-written fuse.kernel with its
    own #fuse.tile (deep k over the pixels, warp groups splitting it)."""
    def t(shape, d):
        return "tensor<" + "x".join(str(x) for x in shape) + "x" + d + ">"
    xs, ys, fs = t([n, h, w, ci], dt), t([n, h, w, co], dt), t([co, 3, 3, ci], dt)
    return (f"func.func @g(%x: {xs}, %dy: {ys}) -> {fs} {{\n"
            f"  %0 = fuse.kernel \"k0_conv2d_filter_grad\"(%x, %dy) {{tile = #fuse.tile<{tile}>}}\n"
            f"      : ({xs}, {ys}) -> {fs} {{\n"
            f"  ^bb0(%a: {xs}, %b: {ys}):\n"
            f"    %1 = fuse.conv2d_filter_grad %a, %b {{kernel = array<i64: 3, 3>, "
            f"padding = array<i64: 1, 1>}} : {xs}, {ys}\n"
            f"    fuse.yield %1 : {fs}\n  }}\n  return %0 : {fs}\n}}\n")


def cases(Graph, t):
    out = []
    for dt in ("f32", "f16", "bf16", "tf32"):
        gd = "f32" if dt == "tf32" else dt
        flags = ["--fp32-math=tf32"] if dt == "tf32" else []

        def add(name, text):
            # TF32 takes the f16 path's mainloop: a few of its cases suffice.
            if dt != "tf32" or any(tag in name for tag in ("3x3_nhwc", "s2_nchw", "big")):
                out.append((f"{name}_{dt}", text, dt, flags))

        def ct(name, layout, *args, **kw):
            add(f"conv_transpose_{name}_{layout}", conv_transpose_case(Graph, t, gd, layout, *args, **kw))

        def fg(name, layout, *args, **kw):
            add(f"filter_grad_{name}_{layout}", filter_grad_case(Graph, t, gd, layout, *args, **kw))

        for L in ("nhwc", "nchw"):
            # conv_transpose2d: the GEMM (16+ output channels per group) and
            # the direct family (fewer: depthwise, decoder heads).
            ct("3x3", L, 2, 19, 9, 11, 24, 3, p=1)
            ct("s2_op1_bias", L, 2, 24, 5, 7, 16, 3, s=2, p=1, op_=1, bias=True)
            ct("c64_s2_k4", L, 1, 64, 6, 5, 40, 4, s=2, p=1)
            ct("1x1", L, 2, 40, 7, 5, 33, 1)
            ct("dilated", L, 1, 16, 9, 8, 24, 3, p=2, d=2)
            ct("grouped", L, 2, 36, 6, 7, 48, 3, s=2, p=1, g=3, op_=1)
            ct("depthwise", L, 1, 7, 12, 13, 7, 3, s=2, p=1, g=7)
            ct("head_c3", L, 2, 33, 5, 6, 3, 3, s=2, p=1, op_=1, bias=True)
            # The stem's data gradient: 7x7 stride 2 to 3 channels (the
            # direct family walks the landing taps only).
            ct("stem_k7", L, 1, 64, 6, 7, 3, 7, s=2, p=3, op_=1)
            ct("residual_relu", L, 2, 32, 7, 9, 32, 3, p=1, act="relu", residual=True)
            # conv2d_filter_grad: odd channels, strides, dilation, groups,
            # depthwise, 1x1.
            fg("3x3", L, 2, 19, 9, 11, 24, 3, p=1)
            fg("s2", L, 3, 16, 13, 10, 35, 3, s=2, p=1)
            fg("c64", L, 2, 64, 11, 9, 72, 3, p=1)
            fg("1x1", L, 2, 40, 7, 5, 33, 1)
            fg("dilated", L, 1, 16, 15, 14, 24, 3, p=2, d=2)
            fg("grouped", L, 2, 48, 10, 9, 36, 3, p=1, g=3)
            fg("depthwise", L, 1, 7, 12, 13, 7, 3, s=2, p=1, g=7)
            fg("stem_k7", L, 1, 3, 23, 21, 16, 7, s=2, p=3)
            # Deep enough that blocks split k (a second launch adds the
            # splits), with groups as the GEMM's batch.
            fg("big_split_grouped", L, 3, 48, 30, 29, 40, 3, p=1, g=2)
        # Deep reductions over the pixels (several hundred k-tiles).
        add("filter_grad_big_nhwc", filter_grad_case(Graph, t, gd, "nhwc", 4, 64, 28, 27, 64, 3, p=1))
        # NHWC, stride 1, channels in 128-byte panels: the warpgroup GEMM
        # on sm_90a (f16/bf16), split along the pixels where deep; output
        # channels past a 64-row tile (bm 128: two consumers), partial
        # tiles along both m and n.
        add("filter_grad_wgmma_split_nhwc", filter_grad_case(Graph, t, gd, "nhwc", 5, 128, 17, 19, 200, 3, p=1))
        add("filter_grad_wgmma_dilated_nhwc", filter_grad_case(Graph, t, gd, "nhwc", 2, 64, 15, 14, 24, 3, p=2, d=2))
        add("filter_grad_wgmma_1x1_nhwc", filter_grad_case(Graph, t, gd, "nhwc", 3, 64, 9, 11, 136, 1))
        add("filter_grad_wgmma_k5_c192_nhwc", filter_grad_case(Graph, t, gd, "nhwc", 3, 192, 13, 12, 72, 5, p=2))
        # Stride 1 with 16-byte channel rows: the warpgroup GEMM on sm_90a.
        add("conv_transpose_wgmma_1x1_nhwc", conv_transpose_case(Graph, t, gd, "nhwc", 2, 64, 7, 5, 72, 1))
        add("conv_transpose_wgmma_dilated_nhwc", conv_transpose_case(Graph, t, gd, "nhwc", 1, 32, 9, 8, 64, 3,
                                                                      p=1, d=2, residual=True, act="relu"))
        add("conv_transpose_big_nhwc", conv_transpose_case(Graph, t, gd, "nhwc", 4, 64, 23, 21, 136, 3, p=1,
                                                            bias=True))
        if gd != "f32":
            # f32 weights of a half model, and hand-written tiles: warp
            # groups splitting k, 2 and 3 stages.
            add("filter_grad_f32_out_nhwc", filter_grad_case(Graph, t, gd, "nhwc", 2, 32, 9, 10, 48, 3, p=1,
                                                             out_dt="f32"))
            add("filter_grad_wgmma_f32_out_nhwc", filter_grad_case(Graph, t, gd, "nhwc", 4, 64, 21, 22, 88, 3,
                                                                   p=1, out_dt="f32"))
            add("filter_grad_big_split_f32_out_nhwc", filter_grad_case(Graph, t, gd, "nhwc", 4, 24, 28, 27, 56, 3,
                                                                       p=1, out_dt="f32"))
            for tag, tile in (("64x64_k2", "bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2, stages = 3, "
                                           "warps_k = 2"),
                              ("32x128_s2", "bm = 32, bn = 128, bk = 32, warps_m = 1, warps_n = 4, stages = 2")):
                add(f"filter_grad_tile_{tag}", tiled_filter_grad_case(gd, 2, 32, 15, 13, 48, tile))
            # Warpgroup tiles: two consumers over 192 columns (three taps a
            # tile), and 256 columns whose last tile ends past the taps.
            # Only the warpgroup GEMM takes them: sm_90a alone.
            for tag, shape, tile in (
                    ("128x192", (4, 64, 28, 27, 136),
                     "bm = 128, bn = 192, bk = 64, warps_m = 8, warps_n = 1, stages = 4"),
                    ("64x256", (3, 128, 19, 17, 72),
                     "bm = 64, bn = 256, bk = 64, warps_m = 4, warps_n = 1, stages = 3")):
                out.append((f"filter_grad_tile_wgmma_{tag}_{dt}", tiled_filter_grad_case(gd, *shape, tile), dt,
                            flags, ["sm_90a"]))
    return out
