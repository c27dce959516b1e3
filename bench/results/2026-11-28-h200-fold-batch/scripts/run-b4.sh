#!/bin/bash
# bench/training.py (e) norm, (f) attention backward (writer warp, the
# deterministic dQ), (g) transformer blocks, one process, from the wheel.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cat .gpu/b4/commit
rm -rf /tmp/fusec-site
python3 -m pip install --no-deps --no-index --target /tmp/fusec-site .gpu/b4/fusec-*.whl > /tmp/pip.log 2>&1 || { echo "pip failed"; tail -5 /tmp/pip.log; }
export PYTHONPATH=/tmp/fusec-site FUSEC_CACHE_DIR=/tmp/fusec-kernel-cache PYTHONUNBUFFERED=1
timeout 560 python3 bench/training.py run --sections "${SECTIONS:-norm,attention,transformer}" --json "$OUT/training.json" --budget "${BUDGET:-520}" > "$OUT/training.log" 2>&1
echo "rc=$?"
sed -n '/^== training benchmarks/,$p' "$OUT/training.log"
tail -3 "$OUT/training.log"
