#!/bin/bash
set -u
R=$PWD/.gpu/fusec-runner
C=$PWD/test/gpu/cases.py
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
(cd /tmp && tar xJf $OLDPWD/.gpu/final.tar.xz)
python3 $C run --runner $R --cases /tmp/gpus 2>&1 | tail -26
python3 $C run --runner $R --cases /tmp/gpuc 2>&1 | tail -2
