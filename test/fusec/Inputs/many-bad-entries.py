"""Writes a tuning database of N malformed entries (a tile parameter out of
range), one per line: the load's time, memory and warnings are tested on it.

usage: many-bad-entries.py N OUT.json
"""
import sys

count, out = int(sys.argv[1]), sys.argv[2]
entry = ('{"kernel":"%032x","chip":"sm_90a","gpu":"NVIDIA H100 80GB HBM3",'
         '"fusec":"0.1.0+0123456789ab","family":"gemm_wgmma",'
         '"tile":{"bm":128,"bn":99999,"bk":64}}')
with open(out, "w") as f:
    f.write('{"format":"fusec-tuning","version":1,"entries":[\n')
    f.write(",\n".join(entry % i for i in range(count)))
    f.write("\n]}\n")
