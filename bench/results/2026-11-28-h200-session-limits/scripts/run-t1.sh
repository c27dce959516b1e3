#!/bin/bash
# ViT-B's GEMM shapes (1576 tokens), bf16 + bias: fusec tiles vs cuBLAS.
set -u
W=$PWD/.gpu/t1
R=$PWD/.gpu/fusec-runner
for p in $(cd $W && ls *.ptx | sed 's/.ptx//'); do
  echo "== $p $(timeout 20 $R $W/$p.ptx --repeat=50 --warmup=5 2>&1 | tail -1)"; done
timeout 60 python3 $W/cublas.py
