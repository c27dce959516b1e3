#!/bin/bash
set -u
cd /tmp && tar xJf $OLDPWD/.gpu/attgrad.tar.xz
cd $OLDPWD
R=$PWD/.gpu/fusec-runner
C=$PWD/test/gpu/cases.py
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
python3 $C run --runner $R --cases /tmp/gpuc 2>&1 | tail -48
python3 $C run --runner $R --cases /tmp/gpub 2>&1 | tail -10
python3 $C run --runner $R --cases /tmp/gpuc --sanitize memcheck -k q1_k1_d64_bf16,mask_bh_q33_k40_d64_f16,gqa_causal_q197_d80_bf16 2>&1 | tail -7
python3 $C run --runner $R --cases /tmp/gpuc --sanitize racecheck -k b3_q77_k77_d64_f16,gqa_causal_q197_d80_bf16 2>&1 | tail -6
echo "== timing d128"; $R .gpu/agb.ptx --repeat=20 --warmup=3 2>&1 | tail -1
echo "== timing d64"; $R .gpu/agb64.ptx --repeat=20 --warmup=3 2>&1 | tail -1
python3 .gpu/sdpa_bwd.py
