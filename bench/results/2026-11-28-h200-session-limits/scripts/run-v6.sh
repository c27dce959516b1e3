#!/bin/bash
# The attention backward's first launch with a group of lanes a row: every
# attention-backward case, timings old vs new, the launches' durations (ncu).
set -u
W=$PWD/.gpu/v6
R=$PWD/.gpu/fusec-runner
C=$PWD/test/gpu/cases.py
cat $W/commit
(cd /tmp && tar xJf $W/cases.tar.xz)
timeout 400 python3 $C run --runner $R --cases /tmp/v6_prep --timeout 30 > $OUT/cases.txt 2>&1
echo "cases rc=$?"; grep -v "^PASS" $OUT/cases.txt | tail -6
for p in s2_16x1024x64 s2_16x1024x64causal s2_4x4096x64 s2_4x4096x128; do for v in old new; do
  echo "== ${v}_$p $(timeout 30 $R $W/${v}_$p.ptx --repeat=20 --warmup=3 2>&1 | tail -1)"; done; done
for p in new_s2_16x1024x64 new_s2_4x4096x128; do
  timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum $R $W/$p.ptx --repeat=1 --warmup=0 > $OUT/ncu_$p.txt 2>&1
  echo "== ncu $p"; grep -E "^  k0_attention_grad|gpu__time_duration" $OUT/ncu_$p.txt | head -6 | paste - - | awk '{print $1, $NF}'
done
