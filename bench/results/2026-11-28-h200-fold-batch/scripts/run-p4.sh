#!/bin/bash
# Per-kernel times of the ViT-B and LLaMA-7B block steps, fusec and eager.
set -u
rm -rf /tmp/fusec-site
python3 -m pip install --no-deps --no-index --target /tmp/fusec-site .gpu/b4/fusec-*.whl > /tmp/pip.log 2>&1 || echo "pip failed"
export PYTHONPATH=/tmp/fusec-site FUSEC_CACHE_DIR=/tmp/fusec-kernel-cache PYTHONUNBUFFERED=1
for blk in block_vit_b block_llama_7b; do
  timeout 200 python3 bench/profile_step.py --block $blk --out $OUT > $OUT/profile-$blk.txt 2>&1; echo "rc=$?"
  grep -v Warning $OUT/profile-$blk.txt | head -100
done
