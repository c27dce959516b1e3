#!/bin/bash
# 0a99be6: every attention-backward case (unordered dQ with the writer
# warp, deterministic twice), then fusec-runner timings at 1x16x2048 bf16.
set -u
W=$PWD/.gpu/v1
R=$PWD/.gpu/fusec-runner
C=$PWD/test/gpu/cases.py
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cat $W/commit
(cd /tmp && tar xJf $W/cases.tar.xz)
timeout 400 python3 $C run --runner $R --cases /tmp/v_prep --timeout 30 > $OUT/cases.txt 2>&1
echo "cases rc=$?"; grep -v "^PASS" $OUT/cases.txt | tail -8
for p in g_d128 det_g_d128 g_d64 det_g_d64 g_d128causal det_g_d128causal g_d64causal det_g_d64causal; do
  echo "== $p $(timeout 20 $R $W/$p.ptx --repeat=20 --warmup=3 2>&1 | tail -1)"; done
