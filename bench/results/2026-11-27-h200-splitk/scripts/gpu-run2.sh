#!/usr/bin/env bash
# Session 2026-11-27 afternoon, run 2: numerics (filter_grad, bn_, train_), profiles, training benchmarks, Python tests.
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
echo "commit $(cat $S/commit | tr '\n' ' ')" | tee -a "$out/gpu.txt"
mkdir -p /tmp/c && xz -dc $S/cases.tar.xz | tar -C /tmp/c -xf -
timeout 150 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 8 \
  --json "$out/suite.json" > "$out/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^FAIL|passed|worst" "$out/suite.log" | tail -12
for g in wgrad bn_fwd bn_bwd; do
  timeout 60 ncu --clock-control none -k regex:k0 -c 4 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis $S/fusec-runner $S/prof/$g.ptx > "$out/ncu-$g.txt" 2>&1
done
grep -E "^  k0|Duration|Memory Throughput  .*byte|Achieved Occupancy" "$out"/ncu-*.txt | cut -c1-130
OUT=$out timeout 300 bench/gpu-session.sh run training --quick --budget 240 > /dev/null 2>&1; echo "training rc=$?"
sed -n '/^== training benchmarks/,$p' "$out/training.log"
PYTHONPATH=/tmp/fusec-site timeout 100 python3 -m unittest python/tests/test_training.py python/tests/test_fusec.py > "$out/py-tests.log" 2>&1; echo "py rc=$?"; tail -4 "$out/py-tests.log"
