#!/bin/bash
# The deterministic dQ: cases (twice, same bits), timings, sanitizers,
# a same-bits check at 1x16x2048, then bench/training.py (f) in one process.
set -u
W=$PWD/.gpu/det
R=$PWD/.gpu/fusec-runner
C=$PWD/test/gpu/cases.py
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cat $W/commit
(cd /tmp && tar xJf $W/cases.tar.xz)
python3 $C run --runner $R --cases /tmp/det_prep 2>&1 | grep -v "^PASS" | tail -30
python3 $C run --runner $R --cases /tmp/det_prep -k det_ 2>&1 | tail -14
for p in g_d128 det_g_d128 g_d64 det_g_d64 g_d128causal det_g_d128causal g_d64causal det_g_d64causal; do
  echo "== $p"; $R $W/$p.ptx --repeat=20 --warmup=3 2>&1 | tail -1; done
python3 $W/sdpa_bwd.py
for p in det_g_d128 g_d128 det_g_d64causal; do
  for i in 1 2 3; do $R $W/$p.ptx --output-dir=/tmp/o_${p}_$i >/dev/null 2>&1 || echo "run failed $p $i"; done
  python3 - $p <<'PY'
import sys, numpy as np
p = sys.argv[1]
for r in range(3):
    a = [np.load(f"/tmp/o_{p}_{i}/result{r}.npy").tobytes() for i in (1, 2, 3)]
    print(f"{p} result{r}: 3 runs identical: {a[0] == a[1] == a[2]}")
PY
done
python3 $C run --runner $R --cases /tmp/det_prep --sanitize memcheck -k det_gqa_q197_k1000_d128_bf16,det_causal_q1000_d80_f16 2>&1 | grep -v "^PASS" | tail -4
python3 $C run --runner $R --cases /tmp/det_prep --sanitize racecheck -k det_gqa_q197_k1000_d128_bf16,det_causal_q77_k1000_d64_f16 2>&1 | grep -v "^PASS" | tail -4
python3 $C run --runner $R --cases /tmp/det_prep --sanitize synccheck -k det_gqa_q197_k1000_d128_bf16 2>&1 | grep -v "^PASS" | tail -3
