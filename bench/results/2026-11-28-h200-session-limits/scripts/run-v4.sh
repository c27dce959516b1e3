#!/bin/bash
# Variants of the deterministic dQ at 1x16x2048 bf16: _cN chains/copies,
# e = count each step once its reductions completed (else one step later),
# nw = no waiting for turns (not deterministic; the walk and counting alone).
set -u
W=$PWD/.gpu/v4
R=$PWD/.gpu/fusec-runner
for p in $(cd $W && ls *.ptx | sed 's/.ptx//'); do
  echo "== $p $(timeout 20 $R $W/$p.ptx --repeat=20 --warmup=3 2>&1 | tail -1)"; done
