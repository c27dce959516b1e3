"""Writes a tuning database for the kernels of a fusec artifact.

usage: make-tuning-db.py ARTIFACT OUT KERNEL=FAMILY:bm,bn,bk,warps_m,warps_n,stages ...
  --fusec=VERSION [--gpu=NAME] [--chip=CHIP]

Each KERNEL's signature is read from the artifact's `// fusec-kernels` line,
so the entries match what the compiler looks up.
"""
import json
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
artifact, out, wanted = args[0], args[1], args[2:]
kernels = {}
with open(artifact) as f:
    for line in f:
        if line.startswith("// fusec-kernels: "):
            kernels = {k["kernel"]: k for k in json.loads(line[18:])}
version = opts["fusec"]
entries = []
for spec in wanted:
    name, rest = spec.split("=", 1)
    family, tile = rest.split(":", 1)
    keys = ["bm", "bn", "bk", "warps_m", "warps_n", "stages"]
    entries.append({
        "kernel": kernels[name]["signature"],
        "description": name,
        "chip": opts.get("chip", "sm_90a"),
        "gpu": opts.get("gpu", "NVIDIA H100 80GB HBM3"),
        "fusec": version,
        "family": family,
        "tile": dict(zip(keys, map(int, tile.split(",")))),
        "ms": 1.0,
        "heuristic_ms": 1.5,
    })
with open(out, "w") as f:
    json.dump({"format": "fusec-tuning", "version": 1, "entries": entries}, f)
