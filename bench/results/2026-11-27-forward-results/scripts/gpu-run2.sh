#!/usr/bin/env bash
# Run 2 (8e71de9: the staged GEMM epilogue loads the full-size inputs of up
# to 8 rows before storing): the suite on 147 cases with residuals, ReLU
# masks and the wgmma/linear/matmul families, memcheck on three of them,
# per-kernel profiles of the bottleneck step; `training` as the argument:
# the bottleneck rows of bench/training.py.
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
  timeout 540 python3 bench/training.py run --json "$out/training.json" --prepared $S/training \
    --sections block --budget 480 "$@" > "$out/training.log" 2>&1; echo "training rc=$?"
  sed -n '/^== training benchmarks/,$p' "$out/training.log" | grep -v "^ *$"
  exit 0
fi
mkdir -p /tmp/c && xz -dc $S/cases.tar.xz | tar -C /tmp/c -xf -
timeout 300 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 8 \
  --json "$out/suite.json" > "$out/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^FAIL|passed|worst" "$out/suite.log" | tail -8
timeout 100 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 4 \
  -k wgmma_conv_1x1_residual,conv_transpose_residual_relu_nhwc_bf16,grad_conv1x1_nhwc_bf16 \
  --sanitize memcheck > "$out/memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -2 "$out/memcheck.log"
timeout 100 python3 bench/profile_step.py --batch 32 --out "$out" > "$out/profile-n32.txt" 2>&1; echo "profile rc=$?"
sed -n '/^fusec:/,/^$/p' "$out/profile-n32.txt"
# Hand-tiled 1x1 GEMMs of the bottleneck at batch 32 (k = 64, one k-tile):
# the dgrad with the residual (k7) and the forward 256-wide conv (k4).
for f in $S/tiles/*.ptx; do
  printf "%-20s " "$(basename $f .ptx)"; timeout 20 $S/fusec-runner "$f" --repeat=50 --warmup=5 2>&1 | grep -i -E " ms|time" | tail -1
done | tee "$out/tiles.txt"
