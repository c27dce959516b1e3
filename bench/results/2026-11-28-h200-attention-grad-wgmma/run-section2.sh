#!/bin/bash
S=$PWD/.gpu/s2
R=$PWD/.gpu/fusec-runner
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for f in $S/*.ptx; do echo "== $(basename $f .ptx) $($R $f --repeat=10 --warmup=3 2>&1 | tail -1)"; done
python3 $S/sdpa.py
