#!/usr/bin/env bash
# Run 2 (a9ee6d0: two blocks an SM for 64-column wgmma tiles, the split
# filter gradient's cost model): the suite on the warpgroup cases, memcheck
# on two-block artifacts, forward rows before (9c9d673's artifacts) and
# after; `training` as the argument: the conv-gradient and bottleneck rows.
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
echo "commit $(cat $S/commit | tr '\n' ' ')" | tee -a "$out/gpu.txt"
if [ "${1:-}" != training ]; then
  mkdir -p /tmp/c && xz -dc $S/cases.tar.xz | tar -C /tmp/c -xf -
  timeout 170 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 8 \
    --json "$out/suite.json" > "$out/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^FAIL|passed|worst" "$out/suite.log" | tail -12
  timeout 100 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 4 \
    -k wgmma_conv,conv_tile128x64,grad_conv3x3_nhwc_bf16 --sanitize memcheck > "$out/memcheck.log" 2>&1
  echo "memcheck rc=$?"; tail -2 "$out/memcheck.log"
  for d in $S/tiles/bench-old $S/bench; do
    echo "== $d"
    timeout 120 python3 bench/bench.py run --runtime $S/libfusec_runtime.so --dir $d \
      -k r50_c2,r50_c3,r50_c4,r50_c5,ffn,bottleneck 2>&1 | grep -v "^ *$" | tail -40
  done | tee "$out/bench-forward.txt"
  exit 0
fi
OUT=$out timeout 330 bench/gpu-session.sh run training --sections conv,block --budget 290 > /dev/null 2>&1; echo "training rc=$?"
sed -n '/^== training benchmarks/,$p' "$out/training.log" | grep -v "^ *$"
rm -f "$out/pip.log"
