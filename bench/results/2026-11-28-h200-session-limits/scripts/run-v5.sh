#!/bin/bash
# d <= 64: both consumers compute half of dQ's panel. All attention-backward
# cases, then timings old (0a99be6) vs new, then per-launch durations (ncu).
set -u
W=$PWD/.gpu/v5
R=$PWD/.gpu/fusec-runner
C=$PWD/test/gpu/cases.py
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cat $W/commit
(cd /tmp && tar xJf $W/cases.tar.xz)
timeout 400 python3 $C run --runner $R --cases /tmp/v5_prep --timeout 30 > $OUT/cases.txt 2>&1
echo "cases rc=$?"; grep -v "^PASS" $OUT/cases.txt | tail -6
for p in s2_16x1024x64 s2_16x1024x64causal s2_4x4096x64 s2_4x4096x64causal g_d64 g_d64causal; do
  for v in old new; do echo "== ${v}_$p $(timeout 30 $R $W/${v}_$p.ptx --repeat=20 --warmup=3 2>&1 | tail -1)"; done; done
for p in s2_4x4096x128 det_g_d64; do echo "== new_$p $(timeout 30 $R $W/new_$p.ptx --repeat=20 --warmup=3 2>&1 | tail -1)"; done
for p in new_s2_16x1024x64 new_s2_4x4096x128; do
  timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum $R $W/$p.ptx --repeat=1 --warmup=0 > $OUT/ncu_$p.txt 2>&1
  echo "== ncu $p"; grep -E "k0_attention_grad|gpu__time_duration" $OUT/ncu_$p.txt | head -8
done
