#!/usr/bin/env bash
# After sumPartialColumns (batch norm's finalize and norm_grad's parameter
# sums share it): the BN-training and norm_grad cases, memcheck on two,
# the 16k x 4k norm_grad artifacts' times.
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
mkdir -p /tmp/c3 && xz -dc $S/cases3.tar.xz | tar -C /tmp/c3 -xf -
timeout 240 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c3/cases -j 8 \
  --json "$out/suite.json" > "$out/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^FAIL|passed|worst" "$out/suite.log" | tail -8
timeout 120 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c3/cases -j 4 \
  -k bn_grad_big_nhwc_bf16,bn_train_relu_big_nchw_bf16,norm_grad_ln_rows_bf16 --sanitize memcheck > "$out/memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -1 "$out/memcheck.log"
for k in layer_norm rms_norm; do
  printf "%-12s " $k; timeout 30 $S/fusec-runner $S/norm/ng_$k.ptx --repeat=50 --warmup=5 2>&1 | grep time_ms | tee -a "$out/runner.txt"
done
