#!/usr/bin/env bash
# Run 6: conv_transpose and conv-gradient cases after the strided direct transpose change; the stem's rows.
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
echo "commit $(cat $S/commit | tr '\n' ' ')" | tee -a "$out/gpu.txt"
mkdir -p /tmp/c && xz -dc $S/cases.tar.xz | tar -C /tmp/c -xf -
timeout 120 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 8 \
  --json "$out/suite.json" > "$out/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^FAIL|passed|worst" "$out/suite.log" | tail -8
OUT=$out timeout 200 bench/gpu-session.sh run training --sections conv -k r50_stem --budget 150 > /dev/null 2>&1; echo "training rc=$?"
sed -n '/^== training benchmarks/,$p' "$out/training.log" | grep -v "^ *$" | head -12
rm -f "$out/pip.log" "$out/suite.log"
