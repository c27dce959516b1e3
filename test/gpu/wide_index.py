"""Kernels over tensors of 2^31 elements and more, which index in 64 bits.

  wide_index.py prepare --fusec FUSEC --out DIR [--ptxas PTXAS]
      On any machine: compiles each case for sm_90 and sm_90a, to PTX and to
      CUDA C (DIR/<case>/kernel-<arch>.ptx, .cu), and checks that each
      gpu.module indexes in 64 bits. The tensors are too large to carry, so
      there are no reference files.
  wide_index.py run --runtime LIBFUSEC_RUNTIME --dir DIR [--json OUT]
      On a CUDA machine with PyTorch (about 40 GB of GPU memory): makes
      random inputs on the GPU, runs every artifact (outputs poisoned with NaN
      first), and compares with PyTorch in float32 as ||out - ref|| / ||ref||
      over the whole output and over the part at flat offsets of 2^31 and
      more, which is where 32-bit offsets would have wrapped.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))

TOLERANCE = {"f16": 5e-3, "bf16": 3e-2}
ARCHS = ("sm_90", "sm_90a")


def t(shape, dt):
    return "tensor<" + "x".join(map(str, shape)) + "x" + dt + ">"


def cases():
    """name -> (dtype, graph text, input shapes, torch reference)."""
    out = {}

    def add(name, dt, text, shapes, ref):
        out[name] = (dt, text, shapes, ref)

    # Elementwise: 65537 x 32771 = 2^31 + 229379 elements.
    s = [65537, 32771]
    add("add_relu_f16", "f16",
        f"""func.func @g(%a: {t(s, 'f16')}, %b: {t(s, 'f16')}) -> {t(s, 'f16')} {{
  %0 = fuse.add %a, %b : {t(s, 'f16')}, {t(s, 'f16')}
  %1 = fuse.relu %0 : {t(s, 'f16')}
  return %1 : {t(s, 'f16')}
}}
""", [s, s], lambda torch, a, b: torch.relu(a.float() + b.float()))
    # Row reductions: softmax over 262147 rows of 8192.
    s = [262147, 8192]
    add("softmax_f16", "f16",
        f"""func.func @g(%x: {t(s, 'f16')}) -> {t(s, 'f16')} {{
  %0 = fuse.softmax %x : {t(s, 'f16')}
  return %0 : {t(s, 'f16')}
}}
""", [s], lambda torch, x: torch.softmax(x.float(), -1))
    # A global average pool over 2^32 + 2^19 values (8192 x 8193 pixels of
    # 64 channels, NHWC): each sum loops past 2^31 offsets.
    s = [1, 8192, 8193, 64]
    add("global_avg_pool_f16", "f16",
        f"""func.func @g(%x: {t(s, 'f16')}) -> {t([1, 1, 1, 64], 'f16')} {{
  %0 = fuse.global_avg_pool %x : {t(s, 'f16')}
  return %0 : {t([1, 1, 1, 64], 'f16')}
}}
""", [s], lambda torch, x: torch.mean(x, (1, 2), keepdim=True, dtype=torch.float32))
    # A GEMM whose output has 2^31 + ... elements: mma.sync on sm_90, the
    # warpgroup GEMM (TMA) on sm_90a.
    a, b, c = [65539, 64], [64, 32832], [65539, 32832]
    add("matmul_bf16", "bf16",
        f"""func.func @g(%a: {t(a, 'bf16')}, %b: {t(b, 'bf16')}) -> {t(c, 'bf16')} {{
  %0 = fuse.matmul %a, %b : {t(a, 'bf16')}, {t(b, 'bf16')}
  return %0 : {t(c, 'bf16')}
}}
""", [a, b], lambda torch, x, y: x.float() @ y.float())
    # Attention over 32771 x 32 heads of 32 x 64: each of Q, K, V and O
    # has 2^31 + ... elements.
    q = [32771, 32, 32, 64]
    add("attention_bf16", "bf16",
        f"""func.func @g(%q: {t(q, 'bf16')}, %k: {t(q, 'bf16')}, %v: {t(q, 'bf16')}) -> {t(q, 'bf16')} {{
  %0 = fuse.attention %q, %k, %v : {t(q, 'bf16')}, {t(q, 'bf16')}, {t(q, 'bf16')}
  return %0 : {t(q, 'bf16')}
}}
""", [q, q, q], None)
    return out


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    ok = True
    for name, (dt, text, shapes, _) in cases().items():
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "graph.mlir"), "w") as f:
            f.write(text)
        tiled = subprocess.run([args.fusec, os.path.join(d, "graph.mlir"), "--emit=tiled"],
                               capture_output=True, text=True)
        if "index = 64" not in tiled.stdout:
            print(f"FAIL {name}: the gpu.module does not index in 64 bits\n{tiled.stderr}")
            ok = False
            continue
        for arch in ARCHS:
            for ext in ("ptx", "cu"):
                path = os.path.join(d, f"kernel-{arch}.{ext}")
                r = subprocess.run([args.fusec, os.path.join(d, "graph.mlir"), f"--arch={arch}",
                                    "-o", path], capture_output=True, text=True)
                if r.returncode:
                    print(f"FAIL {name} {arch} {ext}: {r.stderr}")
                    ok = False
                elif ext == "ptx" and args.ptxas:
                    r = subprocess.run([args.ptxas, f"-arch={arch}", path, "-o", os.devnull],
                                       capture_output=True, text=True)
                    if r.returncode:
                        print(f"FAIL {name} {arch}: ptxas: {r.stderr}")
                        ok = False
        print(f"prepared {name}")
    return 0 if ok else 1


def run(args):
    import torch
    from bench import Runtime
    rt = Runtime(args.runtime)
    stream = torch.cuda.current_stream().cuda_stream
    rows, failed = [], 0
    limit = 1 << 31

    def rel(out, ref, start=0):
        """||out - ref|| / ||ref|| over flat offsets start..end, in chunks."""
        o, r = out.reshape(-1)[start:], ref.reshape(-1)[start:]
        num = den = 0.0
        step = 1 << 27
        for i in range(0, o.numel(), step):
            oc, rc = o[i:i + step].double(), r[i:i + step].double()
            if not torch.isfinite(oc).all():
                return float("nan")
            num += float(((oc - rc) ** 2).sum())
            den += float((rc ** 2).sum())
        return (num / den) ** 0.5 if den else float("nan")

    def attention_ref(torch, q, k, v):
        # In batches, so that the float32 copies stay small.
        out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
        for i in range(0, q.shape[0], 2048):
            s = slice(i, i + 2048)
            out[s] = torch.nn.functional.scaled_dot_product_attention(
                q[s].float(), k[s].float(), v[s].float())
        return out

    torch.manual_seed(0)
    for name, (dt, text, shapes, ref_fn) in cases().items():
        if args.k and not any(k in name for k in args.k.split(",")):
            continue
        tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[dt]
        t0 = time.time()
        inputs = [torch.randn(s, device="cuda", dtype=torch.float32).to(tdt) for s in shapes]
        ref = (ref_fn or attention_ref)(torch, *inputs)
        torch.cuda.synchronize()
        out = torch.empty(ref.shape, device="cuda", dtype=tdt)
        for arch in ARCHS:
            for ext in ("ptx", "cu"):
                tag = f"{name}@{arch}" + (":cuda" if ext == "cu" else "")
                path = os.path.join(args.dir, name, f"kernel-{arch}.{ext}")
                row = {"case": tag, "elements": out.numel()}
                try:
                    module = rt.load(path)
                    out.fill_(float("nan"))
                    go = rt.runner(module, stream, inputs, [out])
                    torch.cuda.synchronize()
                    t1 = time.time()
                    go()
                    torch.cuda.synchronize()
                    row["ms"] = round((time.time() - t1) * 1e3, 2)
                    row["error"] = rel(out, ref)
                    row["error_past_2^31"] = rel(out, ref, limit) if out.numel() > limit else None
                    errs = [row["error"]] + ([row["error_past_2^31"]] if row["error_past_2^31"] is not None else [])
                    row["ok"] = all(e == e and e <= TOLERANCE[dt] for e in errs)
                    rt.lib.fusec_module_release(module)
                except Exception as e:  # noqa: BLE001 - a failure is a row
                    row["ok"], row["message"] = False, str(e)
                failed += not row["ok"]
                rows.append(row)
                print(("ok  " if row["ok"] else "FAIL") + f" {tag}: " +
                      (f"error {row['error']:.2e}, past 2^31 {row['error_past_2^31']}, {row['ms']} ms"
                       if "error" in row else row.get("message", "")), flush=True)
        del inputs, ref, out
        torch.cuda.empty_cache()
        print(f"   {name}: {time.time() - t0:.1f} s", flush=True)
    print(f"{len(rows) - failed} passed, {failed} failed")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--fusec", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--ptxas")
    r = sub.add_parser("run")
    r.add_argument("--runtime", required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--json")
    r.add_argument("-k")
    args = ap.parse_args()
    sys.exit(prepare(args) if args.cmd == "prepare" else run(args))


if __name__ == "__main__":
    main()
