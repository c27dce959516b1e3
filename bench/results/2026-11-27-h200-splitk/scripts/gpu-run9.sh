#!/usr/bin/env bash
# Run 9 (a533976): the filter_grad cases with the 64x64 tile everywhere; the full conv-gradient and bottleneck rows.
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
echo "commit $(cat $S/commit | tr '\n' ' ')" | tee -a "$out/gpu.txt"
mkdir -p /tmp/c && xz -dc $S/cases.tar.xz | tar -C /tmp/c -xf -
timeout 90 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 8 \
  --json "$out/suite.json" > "$out/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^FAIL|passed|worst" "$out/suite.log" | tail -8
OUT=$out timeout 330 bench/gpu-session.sh run training --sections conv,block --budget 290 > /dev/null 2>&1; echo "training rc=$?"
sed -n '/^== training benchmarks/,$p' "$out/training.log" | grep -v "^ *$"
rm -f "$out/pip.log" "$out/suite.log"
