#!/usr/bin/env bash
# The variants' runs (variants/devN): the norm_grad cases compiled here with
# `cases.py prepare -k norm_grad` into .gpu/cases2 (tarred), the 16k x 4k
# artifacts of bench/training.py's norm_grad_graph compiled with
# `fusec --arch=sm_90a` into .gpu/norm; then the suite, memcheck,
# racecheck, fusec-runner and ncu there.
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
mkdir -p /tmp/c2 && xz -dc $S/cases2.tar.xz | tar -C /tmp/c2 -xf -
timeout 200 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c2/cases2 -j 8 \
  --json "$out/suite.json" > "$out/suite.log" 2>&1
timeout 100 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c2/cases2 -j 4 \
  -k norm_grad_ln_4096_bf16,norm_grad_rms_65537_f16,norm_grad_ln_rows_bf16,norm_grad_ln_17_f32,norm_grad_ln_4096_f32 \
  --sanitize memcheck > "$out/memcheck.log" 2>&1
timeout 100 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c2/cases2 -j 4 \
  -k norm_grad_ln_4096_bf16,norm_grad_ln_rows_bf16 --sanitize racecheck > "$out/racecheck.log" 2>&1
for k in layer_norm rms_norm; do
  timeout 30 $S/fusec-runner $S/norm/ng_$k.ptx --repeat=50 --warmup=5 2>&1 | grep time_ms
  timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem \
    $S/fusec-runner $S/norm/ng_$k.ptx --repeat=1 --warmup=0 2>&1 | tee "$out/ncu-$k.txt"
done
# The full sections (run after dev8's variant):
# ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
#   --section InstructionStats --section Occupancy --section MemoryWorkloadAnalysis -k regex:rows -c 1 \
#   $S/fusec-runner $S/norm/ng_layer_norm.ptx --repeat=1 --warmup=0
