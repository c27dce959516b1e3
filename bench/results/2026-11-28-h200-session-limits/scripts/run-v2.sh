#!/bin/bash
# The deterministic dQ in chains with copies of the accumulator: the
# deterministic cases (twice, same bits), timings at 1x16x2048 bf16, three
# runs compared bit for bit.
set -u
W=$PWD/.gpu/v2
R=$PWD/.gpu/fusec-runner
C=$PWD/test/gpu/cases.py
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cat $W/commit
(cd /tmp && tar xJf $W/cases.tar.xz)
timeout 200 python3 $C run --runner $R --cases /tmp/v2_prep --timeout 30 > $OUT/cases.txt 2>&1
echo "cases rc=$?"; tail -4 $OUT/cases.txt
for p in g_d128 det_g_d128 g_d64 det_g_d64 g_d128causal det_g_d128causal g_d64causal det_g_d64causal; do
  echo "== $p $(timeout 20 $R $W/$p.ptx --repeat=20 --warmup=3 2>&1 | tail -1)"; done
for p in det_g_d128 det_g_d128causal g_d128; do
  for i in 1 2 3; do timeout 20 $R $W/$p.ptx --output-dir=/tmp/o_${p}_$i >/dev/null 2>&1 || echo "run failed $p $i"; done
  python3 - $p <<'PY'
import sys, numpy as np
p = sys.argv[1]
print(p, "3 runs identical per result:", [len({np.load(f"/tmp/o_{p}_{i}/result{r}.npy").tobytes() for i in (1, 2, 3)}) == 1 for r in range(3)])
PY
done
