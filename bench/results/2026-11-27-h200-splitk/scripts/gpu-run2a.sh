#!/usr/bin/env bash
# Run 2a: numerics (filter_grad, bn_, train_ at 1061ed7) and profiles.
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
echo "commit $(cat $S/commit | tr '\n' ' ')" | tee -a "$out/gpu.txt"
mkdir -p /tmp/c && xz -dc $S/cases.tar.xz | tar -C /tmp/c -xf -
timeout 200 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 8 \
  --json "$out/suite.json" > "$out/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^FAIL|passed|worst" "$out/suite.log" | tail -12
for g in wgrad bn_fwd bn_bwd; do
  timeout 60 ncu --clock-control none -k regex:k0 -c 4 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis $S/fusec-runner $S/prof/$g.ptx > "$out/ncu-$g.txt" 2>&1
done
grep -E "^  k0|Duration|Memory Throughput  .*byte|Achieved Occupancy" "$out"/ncu-*.txt | cut -c1-130
