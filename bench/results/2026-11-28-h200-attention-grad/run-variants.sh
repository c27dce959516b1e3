#!/bin/bash
set -u
R=$PWD/.gpu/fusec-runner
C=$PWD/test/gpu/cases.py
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for v in agbB agbC agb64C; do echo "== $v"; $R .gpu/v/$v.ptx --repeat=20 --warmup=3 2>&1 | tail -1; done
python3 .gpu/v/sdpa_bwd.py
(cd /tmp && tar xJf $OLDPWD/.gpu/attgradC.tar.xz)
python3 $C run --runner $R --cases /tmp/gpuc 2>&1 | tail -2
python3 $C run --runner $R --cases /tmp/gpuc --sanitize racecheck -k b3_q77_k77_d64_f16,gqa_causal_q197_d80_bf16 2>&1 | tail -2
python3 $C run --runner $R --cases /tmp/gpuc --sanitize memcheck -k mask_bh_q33_k40_d64_bf16,causal_q1000_k77_d64_f16 2>&1 | tail -2
