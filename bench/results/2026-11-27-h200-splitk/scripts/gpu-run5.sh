#!/usr/bin/env bash
# Run 5: the mem_ and activation-gradient cases (not all run on a GPU before), and
# compute-sanitizer memcheck/racecheck/synccheck on the split-K filter gradients.
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
echo "commit $(cat $S/commit | tr '\n' ' ')" | tee -a "$out/gpu.txt"
mkdir -p /tmp/c && xz -dc $S/cases.tar.xz | tar -C /tmp/c -xf -
timeout 150 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 8 \
  --json "$out/suite.json" > "$out/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^FAIL|passed|worst" "$out/suite.log" | tail -10
OUT=$out timeout 300 bench/gpu-session.sh sanitize memcheck,racecheck,synccheck -k filter_grad_big -j 8; echo "sanitize rc=$?"
