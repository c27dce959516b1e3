#!/bin/bash
# The deterministic dQ with a writer warp (and the writer for the unordered
# dQ, wr_*): cases (det twice: same bits), timings, same bits at 1x16x2048,
# synccheck/racecheck.
set -u
W=$PWD/.gpu/det2
R=$PWD/.gpu/fusec-runner
C=$PWD/test/gpu/cases.py
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cat $W/commit
(cd /tmp && tar xJf $W/cases.tar.xz)
for p in det_g_d64causal det_g_d128 g_d128 wr_g_d128 det_g_d64 g_d64 wr_g_d64 g_d128causal wr_g_d128causal det_g_d128causal g_d64causal wr_g_d64causal; do
  echo "== $p $(timeout 20 $R $W/$p.ptx --repeat=20 --warmup=3 2>&1 | tail -1)"; done
python3 $C run --runner $R --cases /tmp/det_prep2 --timeout 20 -k sm_90a 2>&1 | tail -8
python3 $C run --runner $R --cases /tmp/wr_prep --timeout 20 -k sm_90a 2>&1 | tail -4
for p in det_g_d128 det_g_d64causal wr_g_d128; do
  for i in 1 2 3; do timeout 20 $R $W/$p.ptx --output-dir=/tmp/o_${p}_$i >/dev/null 2>&1 || echo "run failed $p $i"; done
  python3 - $p <<'PY'
import sys, numpy as np
p = sys.argv[1]
print(p, "3 runs identical per result:", [len({np.load(f"/tmp/o_{p}_{i}/result{r}.npy").tobytes() for i in (1, 2, 3)}) == 1 for r in range(3)])
PY
done
python3 $C run --runner $R --cases /tmp/det_prep2 --timeout 60 --sanitize synccheck -k det_causal_q77_k1000_d64_f16@sm_90a,det_gqa_q197_k1000_d128_bf16@sm_90a 2>&1 | tail -2
python3 $C run --runner $R --cases /tmp/det_prep2 --timeout 60 --sanitize racecheck -k det_causal_q77_k1000_d64_bf16@sm_90a 2>&1 | tail -2
