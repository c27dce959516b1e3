"""Tile sweep: the same workload under many #fuse.tile configurations, to
calibrate the tensor-core GEMM heuristic (docs/Tiling.md) against the GPU.

  sweep.py prepare --fusec FUSEC --out DIR [-k SUBSTR]
      Compiles each workload of SWEEP with fusec's own tile choice (DIR/<tag>
      /default.ptx) and with each candidate tile (DIR/<tag>/<tile>.ptx; tiles
      that do not suit the problem are skipped with fusec's message).
  sweep.py run --runtime LIBFUSEC_RUNTIME --dir DIR [--json OUT]
      On a CUDA machine with PyTorch: times every artifact of a workload on
      the same random inputs (CUDA events, back-to-back calls, median), checks
      each output against PyTorch in f32, and prints the times sorted, the
      heuristic's choice marked.
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import timing  # noqa: E402

CONV = {c[0]: c for c in bench.CONVS}
# (tag, conv layer or "ffn_up", dtype)
SWEEP = [(name, dt) for dt in ("f16", "tf32")
         for name in ("r50_stem", "r50_c2_3x3", "r50_c2_1x1", "r50_c3_3x3", "r50_c4_3x3", "r50_c5_3x3")]
SWEEP.append(("ffn_up", "bf16"))
# Attention rows of WORKLOADS.md section 2: "attention_<B>x<H>x<N>x<D>[_causal]".
ATTENTION = {bench.attention_tag(*shape, causal, "f16")[:-4]: (shape, causal)
             for shape in bench.ATTENTION for causal in (False, True)}
SWEEP += [(name, "f16") for name in ATTENTION]
# Linear layers of the transformer models of bench/torch_models.py (issue
# 27): "lin_<tokens>x<in>x<out>", bf16, no bias; the wgmma tiles only.
LINEARS = {"lin_8192x768x50304": (8192, 768, 50304),   # GPT's LM head
           "lin_8192x768x2304": (8192, 768, 2304),     # GPT's QKV
           "lin_8192x768x3072": (8192, 768, 3072),     # GPT's MLP up
           "lin_8192x3072x768": (8192, 3072, 768),     # GPT's MLP down
           "lin_6304x768x3072": (6304, 768, 3072),     # ViT-B's MLP up
           "lin_6304x3072x768": (6304, 3072, 768),     # ViT-B's MLP down
           "lin_2048x4096x11008": (2048, 4096, 11008),  # LLaMA's gate, up
           "lin_2048x11008x4096": (2048, 11008, 4096),  # LLaMA's down
           "lin_2048x4096x4096": (2048, 4096, 4096)}    # LLaMA's q, o
SWEEP += [(name, "bf16") for name in LINEARS]


def attention_tiles():
    """Candidate attention tiles: query rows per block, keys per tile."""
    for bm, bn in [(64, 32), (64, 64), (64, 128), (128, 32), (128, 64), (128, 128)]:
        yield f"q{bm}_k{bn}", f"bm = {bm}, bn = {bn}, bk = 16"


def tiles(dt):
    """Candidate tiles (name, #fuse.tile parameters): bm, bn, bk in bytes of
    k, warps_m, warps_n, stages, warps_k."""
    byte = 4 if dt == "tf32" else 2
    shapes = [(128, 256, 128, 2, 4, 3, 1), (128, 128, 64, 2, 2, 4, 1), (128, 128, 128, 2, 2, 3, 1),
              (128, 64, 64, 2, 2, 4, 1), (128, 64, 128, 2, 2, 4, 2), (128, 64, 64, 4, 2, 4, 1),
              (64, 128, 64, 2, 2, 4, 1), (64, 64, 128, 2, 2, 4, 1), (64, 64, 64, 2, 2, 4, 1)]
    for bm, bn, kb, wm, wn, st, wk in shapes:
        yield (f"{bm}x{bn}x{kb // byte}_w{wm}x{wn}x{wk}_s{st}",
               f"bm = {bm}, bn = {bn}, bk = {kb // byte}, warps_m = {wm}, warps_n = {wn}, stages = {st}, warps_k = {wk}")


def wgmma_tiles(dt):
    """Candidate wgmma tiles: bm x bn, a k-tile of 128 bytes, one
    consumer warpgroup per 64 rows, each depth of pipeline that fits."""
    byte = 4 if dt == "tf32" else 2
    for bm in (64, 128):
        for bn in (64, 128, 192, 256):
            for st in (2, 3, 4, 5, 6):
                if st * (bm + bn) * 128 > 227 * 1024:
                    continue
                yield (f"{bm}x{bn}_s{st}",
                       f"bm = {bm}, bn = {bn}, bk = {128 // byte}, warps_m = {4 * bm // 64}, warps_n = 1, "
                       f"stages = {st}, warps_k = 1")


# Each tile with and without fragment prefetch (--mma-prefetch).
PREFETCH = (("", []), ("_noprefetch", ["--mma-prefetch=false"]))


def graph(name, dt):
    if name in ATTENTION:
        shape, causal = ATTENTION[name]
        return bench.attention_graph(*shape, causal, dt)
    if name == "ffn_up":
        return bench.ffn_graph("ffn_up")
    if name in LINEARS:
        m, k, n = LINEARS[name]
        x, w, y = (f"tensor<{a}x{b}x{dt}>" for a, b in ((m, k), (n, k), (m, n)))
        return (f"func.func @{name}(%x: {x}, %w: {w}) -> {y} {{\n"
                f"  %0 = fuse.linear %x, %w : {x}, {w}\n  return %0 : {y}\n}}\n")
    c = CONV[name]
    return bench.conv_graph(*c, dt)


def prepare(args):
    for name, dt in SWEEP:
        tag = f"{name}_{dt}"
        if args.k and args.k not in tag:
            continue
        d = os.path.join(args.out, tag)
        os.makedirs(d, exist_ok=True)
        flags = ["--fp32-math=tf32"] if dt == "tf32" else []
        if name in LINEARS:
            flags.append("--arch=sm_90a")
        src = os.path.join(d, "graph.mlir")
        with open(src, "w") as f:
            f.write(graph(name, dt))
        attention = name in ATTENTION
        variants = PREFETCH[:1] if attention or name in LINEARS else PREFETCH
        for suffix, extra in variants:
            subprocess.run([args.fusec, src, "-o", os.path.join(d, f"default{suffix}.ptx")] + flags + extra,
                           check=True)
        kernels = subprocess.run([args.fusec, src, "--emit=kernels"] + flags, check=True, text=True,
                                 stdout=subprocess.PIPE).stdout
        made = 0
        candidates = attention_tiles() if attention else wgmma_tiles(dt) if name in LINEARS else tiles(dt)
        for tname, tile in candidates:
            text = re.sub(r'(fuse\.kernel "k0_[a-z0-9]+"\([^)]*\)) :', rf"\1 {{tile = #fuse.tile<{tile}>}} :",
                          kernels, count=1)
            path = os.path.join(d, tname + ".mlir")
            with open(path, "w") as f:
                f.write(text)
            for suffix, extra in variants:
                p = subprocess.run([args.fusec, path, "-o", os.path.join(d, tname + suffix + ".ptx")] + flags + extra,
                                   text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                made += p.returncode == 0
            os.remove(path)
        print(f"{tag}: {made} tiles", flush=True)


def run(args):
    import torch
    import torch.nn.functional as F
    rt = bench.Runtime(args.runtime)
    dev = "cuda"
    results = {}

    def bench_ms(fn, reps=15, inner=10):
        return timing.median_ms(torch, [fn], reps, inner, warm=5)

    for tag in sorted(os.listdir(args.dir)):
        d = os.path.join(args.dir, tag)
        name, dt = tag.rsplit("_", 1)
        tdt = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[dt]
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True
        if name in ATTENTION:
            (bsz, heads, n, hd), causal = ATTENTION[name]
            q, k, v = (torch.randn(bsz, heads, n, hd, device=dev, dtype=tdt) for _ in range(3))
            ins, out = [q, k, v], torch.empty_like(q)
            # f32 reference on the first head.
            ref = F.scaled_dot_product_attention(q[:, :1].float(), k[:, :1].float(), v[:, :1].float(),
                                                 is_causal=causal)
            got = lambda: out[:, :1].float()  # noqa: E731
            flops = 4 * bsz * heads * n * n * hd // (2 if causal else 1)
        elif name == "ffn_up":
            tokens, dm, hidden = bench.FFN
            x = torch.randn(tokens, dm, device=dev, dtype=tdt)
            w = torch.randn(hidden, dm, device=dev, dtype=tdt) / dm ** 0.5
            bb = torch.randn(hidden, device=dev, dtype=tdt) * 0.1
            ins, out = [x, w, bb], torch.empty(tokens, hidden, device=dev, dtype=tdt)
            ref = F.gelu(F.linear(x.float(), w.float(), bb.float()), approximate="tanh")
            got = lambda: out.float()  # noqa: E731
            flops = 2 * tokens * dm * hidden
        elif name in LINEARS:
            tokens, dm, hidden = LINEARS[name]
            x = torch.randn(tokens, dm, device=dev, dtype=tdt)
            w = torch.randn(hidden, dm, device=dev, dtype=tdt) / dm ** 0.5
            ins, out = [x, w], torch.empty(tokens, hidden, device=dev, dtype=tdt)
            ref = F.linear(x.float(), w.float())
            got = lambda: out.float()  # noqa: E731
            flops = 2 * tokens * dm * hidden
            # What PyTorch runs for it (cuBLAS), timed the same way.
            cublas = bench_ms(lambda: torch.matmul(x, w.t(), out=out))
        else:
            _, n, ci, h, w_, co, k, s, pd, g = CONV[name]
            x = torch.randn(n, h, w_, ci, device=dev, dtype=tdt)
            wt = torch.randn(co, k, k, ci // g, device=dev, dtype=tdt) / (ci * k * k) ** 0.5
            mean = torch.rand(co, device=dev, dtype=tdt) - 0.5
            var = torch.rand(co, device=dev, dtype=tdt) + 0.5
            gamma, beta = torch.rand(co, device=dev, dtype=tdt) + 0.5, torch.rand(co, device=dev, dtype=tdt) - 0.5
            ho, wo = (h + 2 * pd - k) // s + 1, (w_ + 2 * pd - k) // s + 1
            ins, out = [x, wt, mean, var, gamma, beta], torch.empty(n, ho, wo, co, device=dev, dtype=tdt)
            ref = F.relu(F.batch_norm(F.conv2d(x.float().permute(0, 3, 1, 2), wt.float().permute(0, 3, 1, 2),
                                               None, s, pd, 1, g), mean.float(), var.float(), gamma.float(),
                                      beta.float(), False, 0.0, 1e-5))
            got = lambda: out.float().permute(0, 3, 1, 2)  # noqa: E731
            flops = 2 * n * ho * wo * co * (ci // g) * k * k
        stream = torch.cuda.current_stream().cuda_stream
        rows = []
        if name in LINEARS:
            rows.append((cublas, "cublas", 0.0))
        for f in sorted(os.listdir(d)):
            if not f.endswith(".ptx"):
                continue
            module = rt.load(os.path.join(d, f))
            go = rt.runner(module, stream, ins, [out])
            out.fill_(float("nan"))
            go()
            torch.cuda.synchronize()
            err = ((got() - ref).norm() / ref.norm()).item()
            ms = bench_ms(go)
            rt.lib.fusec_module_release(module)
            rows.append((ms, f[:-4], err))
        rows.sort()
        results[tag] = [dict(tile=t, ms=ms, TFLOPs=flops / ms / 1e9, relerr=e) for ms, t, e in rows]
        default = next(ms for ms, t, _ in rows if t == "default")
        print(f"\n{tag}: default {default:.4f} ms, best {rows[0][1]} {rows[0][0]:.4f} ms "
              f"({default / rows[0][0]:.2f}x)", flush=True)
        for ms, t, e in rows[:8] + [r for r in rows[8:] if r[1] in ("default", "cublas")]:
            print(f"  {t:<30} {ms:.4f} ms {flops / ms / 1e9:6.0f} TFLOP/s relerr {e:.1e}"
                  f"{'  <- heuristic' if t == 'default' else ''}{'  BAD' if not e < 2e-2 else ''}", flush=True)
        if name in LINEARS:
            best = next(r for r in rows if r[1] != "cublas")
            print(f"  cuBLAS / best fusec tile ({best[1]}): {cublas / best[0]:.2f}; "
                  f"cuBLAS / heuristic: {cublas / default:.2f}", flush=True)
        bad = [t for _, t, e in rows if not e < 2e-2]
        if bad:
            print(f"  wrong results: {bad}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--fusec", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("-k")
    r = sub.add_parser("run")
    r.add_argument("--runtime", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--json")
    args = ap.parse_args()
    prepare(args) if args.cmd == "prepare" else run(args)


if __name__ == "__main__":
    main()
