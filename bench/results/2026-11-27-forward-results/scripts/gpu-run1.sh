#!/usr/bin/env bash
# Run 1 (forward_results: the bottleneck's backward reads the block's output
# where the caller holds it, no copy): the suite on the training-block
# backward cases, the Python tests from the wheel, per-kernel profiles of
# the bottleneck step (bench/profile_step.py); `training` as the argument:
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
  timeout 500 python3 bench/training.py run --json "$out/training.json" --prepared $S/training \
    --sections block --budget 440 "$@" > "$out/training.log" 2>&1; echo "training rc=$?"
  sed -n '/^== training benchmarks/,$p' "$out/training.log" | grep -v "^ *$"
  exit 0
fi
mkdir -p /tmp/c && xz -dc $S/cases.tar.xz | tar -C /tmp/c -xf -
timeout 120 python3 test/gpu/cases.py run --runner $S/fusec-runner --cases /tmp/c/cases -j 8 \
  --json "$out/suite.json" > "$out/suite.log" 2>&1; echo "suite rc=$?"; grep -E "^FAIL|passed|worst" "$out/suite.log" | tail -8
(cd /tmp && timeout 150 python3 -m unittest discover -s "$OLDPWD/python/tests" -p 'test_training.py' -v) > "$out/python-training.log" 2>&1
echo "python rc=$?"; grep -E "test_|^OK|FAILED|Error" "$out/python-training.log" | tail -20
for n in 32 64; do
  timeout 150 python3 bench/profile_step.py --batch $n --out "$out" > "$out/profile-n$n.txt" 2>&1; echo "profile n$n rc=$?"
  cat "$out/profile-n$n.txt"
done
