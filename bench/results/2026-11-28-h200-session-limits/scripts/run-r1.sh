#!/bin/bash
# reduce_sum over columns split over row groups: the reduce_sum GPU cases,
# bias-gradient timings old vs new, and (g) from the wheel with the change.
set -u
W=$PWD/.gpu/r1
R=$PWD/.gpu/fusec-runner
C=$PWD/test/gpu/cases.py
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cat $W/commit
(cd /tmp && tar xJf $W/cases.tar.xz)
timeout 200 python3 $C run --runner $R --cases /tmp/r_prep --timeout 30 > $OUT/cases.txt 2>&1
echo "cases rc=$?"; grep -v "^PASS" $OUT/cases.txt | tail -6
for p in bias768 bias3072; do for v in old new; do
  echo "== ${v}_$p $(timeout 30 $R $W/${v}_$p.ptx --repeat=50 --warmup=5 2>&1 | tail -1)"; done; done
rm -rf /tmp/fusec-site
python3 -m pip install --no-deps --no-index --target /tmp/fusec-site $W/fusec-*.whl > /tmp/pip.log 2>&1 || echo "pip failed"
export PYTHONPATH=/tmp/fusec-site FUSEC_CACHE_DIR=/tmp/fusec-kernel-cache PYTHONUNBUFFERED=1
timeout 300 python3 bench/training.py run --sections transformer --json "$OUT/training.json" --budget 250 > "$OUT/training.log" 2>&1
echo "rc=$?"
sed -n '/^(g)/,/bar:/p' "$OUT/training.log"
timeout 120 python3 bench/profile_step.py --block block_vit_b --out $OUT > $OUT/profile-block_vit_b.txt 2>&1
grep -E "reduce_sum|kernels .* per step" $OUT/profile-block_vit_b.txt
