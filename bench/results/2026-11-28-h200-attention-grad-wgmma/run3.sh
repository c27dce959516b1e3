#!/bin/bash
set -u
W=$PWD/.gpu/wg
R=$PWD/.gpu/fusec-runner
C=$PWD/test/gpu/cases.py
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
(cd /tmp && tar xJf $W/cases.tar.xz)
python3 $C run --runner $R --cases /tmp/new_prep 2>&1 | grep -v "^PASS" | tail -30
for p in d128 d64 d128causal d64causal ms_d128 ms_d64; do echo "== $p"; $R $W/$p.ptx --repeat=20 --warmup=3 2>&1 | tail -1; done
python3 $W/sdpa_bwd.py
python3 $C run --runner $R --cases /tmp/new_prep --sanitize memcheck -k q1_k1_d64_bf16,mask_bh_q33_k40_d64_f16,gqa_causal_q197_d80_bf16,causal_q77_k1000_d128_dv64_f16 2>&1 | grep -v "^PASS" | tail -5
python3 $C run --runner $R --cases /tmp/new_prep --sanitize racecheck -k b3_q77_k77_d64_f16,gqa_causal_q197_d80_bf16 2>&1 | grep -v "^PASS" | tail -4
python3 $C run --runner $R --cases /tmp/new_prep --sanitize synccheck -k b3_q77_k77_d64_f16,gqa_causal_q197_d80_bf16 2>&1 | grep -v "^PASS" | tail -4
for p in d128 d64; do echo "== ncu $p"; ncu --clock-control none --metrics gpu__time_duration.sum $R $W/$p.ptx --repeat=1 --warmup=0 2>&1 | grep -v PROF | grep -E "k0_attention_grad|gpu__time_duration" | tail -6; done
