#!/usr/bin/env bash
# Issue 26, norm backward at the commit in .gpu/commit: the suite on the
# norm_grad, row-reduction and batch-norm-gradient cases, memcheck and
# racecheck on a few, the 16k x 4k artifacts through fusec-runner and ncu,
# and bench/training.py's norm section (twice).
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
echo "commit $(cat $S/commit | tr '\n' ' ')" | tee -a "$out/gpu.txt"
rm -rf /tmp/fusec-site
python3 -m pip install --no-deps --no-index --target /tmp/fusec-site $S/fusec-*.whl > "$out/pip.log" 2>&1 || echo "pip failed"
export PYTHONPATH=/tmp/fusec-site FUSEC_CACHE_DIR=/tmp/fusec-kernel-cache
mkdir -p /tmp/c && xz -dc $S/cases.tar.xz | tar -C /tmp/c -xf -
timeout 240 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 8 \
  --json "$out/suite.json" > "$out/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^FAIL|passed|worst" "$out/suite.log" | tail -8
timeout 100 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 4 \
  -k norm_grad_ln_4096_bf16,norm_grad_rms_65537_f16,norm_grad_ln_rows_bf16,norm_grad_ln_17_f32,norm_grad_ln_4096_f32 \
  --sanitize memcheck > "$out/memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -1 "$out/memcheck.log"
timeout 100 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 4 \
  -k norm_grad_ln_4096_bf16,norm_grad_ln_rows_bf16 --sanitize racecheck > "$out/racecheck.log" 2>&1; echo "racecheck rc=$?"; tail -1 "$out/racecheck.log"
for k in layer_norm rms_norm; do
  printf "%-12s " $k; timeout 30 $S/fusec-runner $S/norm/ng_$k.ptx --repeat=50 --warmup=5 2>&1 | grep time_ms | tee -a "$out/runner.txt"
done
for i in 1 2; do
  timeout 200 python3 bench/training.py run --json "$out/training-$i.json" --sections norm --budget 150 > "$out/training-$i.log" 2>&1
  echo "training $i rc=$?"; sed -n '/^== training benchmarks/,$p' "$out/training-$i.log" | grep -v "^ *$" | tee "$out/training-$i.txt"
done
