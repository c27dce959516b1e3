#!/usr/bin/env python3
"""Digests of every artifact the GPU suite and the benchmark compile, to show
that a change which only moves code leaves the generated code byte-identical.

  artifact-digests.py --fusec FUSEC --out FILE [-j N] [-k SUBSTR[,...]] [--keep DIR]
      Compiles each graph of test/gpu/cases.py (for each of its
      architectures, as PTX and as CUDA C) and of bench/bench.py (sm_90a, and
      sm_90 for the FFN and attention rows, as PTX and CUDA C) and writes one
      line per artifact, `<sha256>  <graph>@<arch>.<ptx|cu>`, sorted, to FILE.
      --keep DIR keeps the artifacts, to diff the ones that differ.
  artifact-digests.py --compare BEFORE AFTER
      Prints the artifacts whose digests differ, or that only one side has;
      exits 1 if any do.

No GPU is needed: this runs where fusec is built, in a few minutes.
"""
import argparse
import concurrent.futures
import hashlib
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
sys.path.insert(0, os.path.join(ROOT, "bench"))


def jobs(k):
    import bench
    import cases
    keys = k.split(",") if k else []
    out = []
    for case in cases.build_cases():
        for arch in case["archs"]:
            out.append((case["name"], case["mlir"], arch, case["flags"]))
    for tag, text, flags in bench.workloads():
        archs = ["sm_90a"] + (["sm_90"] if tag.startswith(("ffn", "attention")) else [])
        for arch in archs:
            out.append(("bench_" + tag, text, arch, flags))
    return [j for j in out if not keys or any(key in j[0] for key in keys)]


def compile_one(job, fusec, tmp, keep):
    name, text, arch, flags = job
    graph = os.path.join(tmp, f"{name}@{arch}.mlir")
    with open(graph, "w") as f:
        f.write(text)
    lines = []
    for ext in ("ptx", "cu"):
        art = os.path.join(keep or tmp, f"{name}@{arch}.{ext}")
        p = subprocess.run([fusec, graph, "-o", art, f"--arch={arch}"] + flags,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            digest = "FAILED:" + hashlib.sha256(p.stdout.encode()).hexdigest()[:16]
        else:
            with open(art, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
        lines.append(f"{digest}  {name}@{arch}.{ext}")
    return lines


def read(path):
    with open(path) as f:
        return dict(reversed(line.split()) for line in f if line.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fusec")
    ap.add_argument("--out")
    ap.add_argument("--keep")
    ap.add_argument("-j", type=int, default=os.cpu_count())
    ap.add_argument("-k")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        before, after = (read(p) for p in args.compare)
        differ = sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
        for n in differ:
            print(f"{n}: {before.get(n, 'absent')[:16]} -> {after.get(n, 'absent')[:16]}")
        print(f"{len(before.keys() | after.keys()) - len(differ)} identical, {len(differ)} differ")
        return 1 if differ else 0
    if not args.fusec or not args.out:
        ap.error("--fusec and --out are required (or --compare)")
    todo = jobs(args.k)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    lines = []
    with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(args.j) as pool:
        futures = [pool.submit(compile_one, j, args.fusec, tmp, args.keep) for j in todo]
        for i, fut in enumerate(concurrent.futures.as_completed(futures)):
            lines += fut.result()
            if (i + 1) % 50 == 0 or i + 1 == len(todo):
                print(f"[{i + 1}/{len(todo)}] compiled", file=sys.stderr, flush=True)
    tmp_out = args.out + ".tmp"
    with open(tmp_out, "w") as f:
        f.write("\n".join(sorted(lines, key=lambda l: l.split()[1])) + "\n")
    os.replace(tmp_out, args.out)
    failed = sum(l.startswith("FAILED") for l in lines)
    print(f"{len(lines)} artifacts, {failed} failed to compile, digests in {args.out}")


if __name__ == "__main__":
    sys.exit(main())
