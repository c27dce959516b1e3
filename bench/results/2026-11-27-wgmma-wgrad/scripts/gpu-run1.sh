#!/usr/bin/env bash
# Run 1: the suite on filter_grad,grad_conv,wgmma,train_,linear; memcheck on
# the warpgroup filter gradients; hand-tiled wgmma wgrad timings; the conv
# gradient and bottleneck rows.
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
echo "commit $(cat $S/commit | tr '\n' ' ')" | tee -a "$out/gpu.txt"
if [ "${1:-}" != training ]; then
mkdir -p /tmp/c && xz -dc $S/cases.tar.xz | tar -C /tmp/c -xf -
timeout 150 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 8 \
  --json "$out/suite.json" > "$out/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^FAIL|passed|worst" "$out/suite.log" | tail -12
timeout 120 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 4 \
  -k filter_grad_wgmma,filter_grad_tile_wgmma,filter_grad_big_nhwc --sanitize memcheck > "$out/memcheck.log" 2>&1
echo "memcheck rc=$?"; tail -3 "$out/memcheck.log"
# wgrad1/conv1: 9c9d673 (one block per SM); wgrad2/conv2: the same with
# two blocks per SM where bn <= 64 and the pipeline fits twice.
for d in wgrad1 wgrad2 conv1 conv2; do
  for f in $S/tiles/$d/*.ptx; do
    printf "%-8s %-32s " "$d" "$(basename $f .ptx)"; timeout 20 $S/fusec-runner "$f" --repeat=50 --warmup=5 2>&1 | grep -i -E " ms|time" | tail -1
  done
done | tee "$out/tiles.txt"
fi
# (a second call: one command may run 10 minutes)
[ "${1:-}" = training ] || exit 0
OUT=$out timeout 330 bench/gpu-session.sh run training --sections conv,block --budget 290 > /dev/null 2>&1; echo "training rc=$?"
sed -n '/^== training benchmarks/,$p' "$out/training.log" | grep -v "^ *$"
rm -f "$out/pip.log"
