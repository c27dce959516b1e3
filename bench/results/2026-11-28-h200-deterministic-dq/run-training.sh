#!/bin/bash
# bench/training.py (f) attention backward (with the deterministic dQ) and
# (g) transformer blocks fwd+bwd, in one process, fusec from its wheel.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cat .gpu/tw/commit
rm -rf /tmp/fusec-site
python3 -m pip install --no-deps --no-index --target /tmp/fusec-site .gpu/tw/fusec-*.whl > /tmp/pip.log 2>&1 || { echo "pip failed"; tail -5 /tmp/pip.log; }
export PYTHONPATH=/tmp/fusec-site FUSEC_CACHE_DIR=/tmp/fusec-kernel-cache PYTHONUNBUFFERED=1
python3 bench/training.py run --sections "${SECTIONS:-attention,transformer}" --json "$OUT/training.json" --budget "${BUDGET:-540}" > "$OUT/training.log" 2>&1
echo "rc=$?"
sed -n '/^== training benchmarks/,$p' "$OUT/training.log"
tail -5 "$OUT/training.log"
