#!/usr/bin/env bash
# Issue 26, norm backward: the suite's norm_grad cases (36 artifacts),
# memcheck on three, bench/training.py's norm section (16k x 4k bf16), and
# ncu of the two launches of the 16k x 4k artifacts.
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
echo "commit $(cat $S/commit | tr '\n' ' ')" | tee -a "$out/gpu.txt"
rm -rf /tmp/fusec-site
python3 -m pip install --no-deps --no-index --target /tmp/fusec-site $S/fusec-*.whl > "$out/pip.log" 2>&1 || echo "pip failed"
export PYTHONPATH=/tmp/fusec-site FUSEC_CACHE_DIR=/tmp/fusec-kernel-cache
mkdir -p /tmp/c && xz -dc $S/cases.tar.xz | tar -C /tmp/c -xf -
timeout 200 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 8 \
  --json "$out/suite.json" > "$out/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^FAIL|passed|worst" "$out/suite.log" | tail -12
timeout 100 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 4 \
  -k norm_grad_ln_4096_bf16,norm_grad_rms_65537_f16,norm_grad_ln_rows_bf16,norm_grad_ln_17_f32 \
  --sanitize memcheck > "$out/memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -2 "$out/memcheck.log"
for k in layer_norm rms_norm; do
  printf "%-12s " $k; timeout 30 $S/fusec-runner $S/norm/ng_$k.ptx --repeat=50 --warmup=5 2>&1 | grep time_ms
  timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
    $S/fusec-runner $S/norm/ng_$k.ptx --repeat=1 --warmup=0 2>&1 | grep -E "k0_|duration|bytes|throughput|registers|warps_active" | tee -a "$out/ncu-$k.txt"
done
timeout 300 python3 bench/training.py run --json "$out/training.json" --sections norm --budget 240 > "$out/training.log" 2>&1
echo "training rc=$?"; sed -n '/^== training benchmarks/,$p' "$out/training.log" | grep -v "^ *$"
