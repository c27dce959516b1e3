#!/usr/bin/env bash
# Session 2026-11-27 afternoon, run 1: split-K wgrad numerics, bench fixes, profiles.
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
echo "commit $(cat $S/commit | tr '\n' ' ')" | tee -a "$out/gpu.txt"
mkdir -p /tmp/c && xz -dc $S/cases.tar.xz | tar -C /tmp/c -xf -
timeout 200 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 8 \
  --json "$out/suite.json" > "$out/suite.log" 2>&1; echo "suite rc=$?"; grep -E "FAIL|passed|worst" "$out/suite.log" | tail -15
ncu --clock-control none -k regex:k0 -c 4 --section SpeedOfLight --section Occupancy --section LaunchStats \
  --section WarpStateStats --section MemoryWorkloadAnalysis $S/fusec-runner $S/prof/wgrad.ptx > "$out/ncu-wgrad.txt" 2>&1
for g in bn_fwd bn_bwd; do
  timeout 120 ncu --clock-control none -k regex:k0 -c 4 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis $S/fusec-runner $S/prof/$g.ptx > "$out/ncu-$g.txt" 2>&1
done
grep -E "^  k0|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Grid Size|Block Size" "$out"/ncu-*.txt | cut -c1-150
timeout 60 python3 bench/test_training.py CudaGraph -v 2>&1 | tail -3
