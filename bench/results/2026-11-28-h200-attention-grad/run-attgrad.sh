#!/bin/bash
# Attention backward cases (direct kernel) and the transformer/LLaMA block
# training cases: numerics against float64, then memcheck on a few.
set -u
cd /tmp && tar xJf $OLDPWD/.gpu/attgrad.tar.xz
R=$OLDPWD/.gpu/fusec-runner
C=$OLDPWD/test/gpu/cases.py
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
python3 $C run --runner $R --cases /tmp/gpuc 2>&1 | tail -62
python3 $C run --runner $R --cases /tmp/gpub 2>&1 | tail -12
python3 $C run --runner $R --cases /tmp/gpuc --sanitize memcheck -k q1_k1_d64_bf16,mask_bh_q33_k40_d64_f16,gqa_causal_q197_d80_f32 2>&1 | tail -8
python3 $C run --runner $R --cases /tmp/gpuc --sanitize racecheck -k q1_k1_d64_bf16,b3_q77_k77_d64_f16 2>&1 | tail -6
