#!/bin/bash
# Norm backward 16384x4096 bf16 variants: threads a row, blocks an SM
# (minctasm), stages. fusec-runner times both launches.
set -u
W=$PWD/.gpu/n1
R=$PWD/.gpu/fusec-runner
for p in $(cd $W && ls *.ptx | sed 's/.ptx//'); do
  echo "== $p $(timeout 30 $R $W/$p.ptx --repeat=30 --warmup=5 2>&1 | tail -1)"; done
