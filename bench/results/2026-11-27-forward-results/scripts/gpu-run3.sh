#!/usr/bin/env bash
# Run 3 (494b825: pipelines no deeper than their k-tiles; the two-block rule
# checks the launch registers): the suite on 36 cases of 1x1 and wgmma
# GEMMs, memcheck on three of them, per-kernel profiles of the bottleneck
# step at batch 32 and 64 (with host time and CUDA-graph replay); `training`
# as the argument: the bottleneck rows of bench/training.py.
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
echo "commit $(cat $S/commit | tr '\n' ' ')" | tee -a "$out/gpu.txt"
rm -rf /tmp/fusec-site
python3 -m pip install --no-deps --no-index --target /tmp/fusec-site $S/fusec-*.whl > "$out/pip.log" 2>&1 || echo "pip failed"
export PYTHONPATH=/tmp/fusec-site FUSEC_CACHE_DIR=/tmp/fusec-kernel-cache
if [ "${1:-}" = training ]; then
  shift
  timeout 60 python3 bench/results/2026-11-27-forward-results/scripts/host_profile.py > "$out/host-profile.txt" 2>&1; echo "host profile rc=$?"; head -45 "$out/host-profile.txt" | tail -32
  timeout 480 python3 bench/training.py run --json "$out/training.json" --prepared $S/training \
    --sections block --budget 420 "$@" > "$out/training.log" 2>&1; echo "training rc=$?"
  sed -n '/^== training benchmarks/,$p' "$out/training.log" | grep -v "^ *$"
  exit 0
fi
mkdir -p /tmp/c && xz -dc $S/cases.tar.xz | tar -C /tmp/c -xf -
timeout 300 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 8 \
  --json "$out/suite.json" > "$out/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^FAIL|passed|worst" "$out/suite.log" | tail -8
timeout 100 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 4 \
  -k wgmma_conv_1x1_residual,conv_transpose_residual_relu_nhwc_bf16,grad_conv1x1_nhwc_bf16 \
  --sanitize memcheck > "$out/memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -2 "$out/memcheck.log"
for n in 32 64; do
  timeout 120 python3 bench/profile_step.py --batch $n --out "$out" > "$out/profile-n$n.txt" 2>&1; echo "profile n$n rc=$?"
  grep -E "^(fusec|eager):|host time" "$out/profile-n$n.txt"
done
