#!/bin/bash
set -u
cat .gpu/b5/commit
rm -rf /tmp/fusec-site
python3 -m pip install --no-deps --no-index --target /tmp/fusec-site .gpu/b5/fusec-*.whl > /tmp/pip.log 2>&1 || { echo "pip failed"; tail -5 /tmp/pip.log; }
export PYTHONPATH=/tmp/fusec-site FUSEC_CACHE_DIR=/tmp/fusec-kernel-cache PYTHONUNBUFFERED=1
timeout 200 python3 python/tests/test_training.py 2>&1 | tail -8
timeout 120 python3 bench/results/2026-11-28-h200-fold-batch/scripts/host_prof.py 2>&1 | grep -v Warn | head -22
SECTIONS=transformer
timeout 300 python3 bench/training.py run --sections transformer --json "$OUT/training.json" --budget 240 > "$OUT/training.log" 2>&1
echo "rc=$?"
sed -n '/^== training benchmarks/,$p' "$OUT/training.log" | head -8
