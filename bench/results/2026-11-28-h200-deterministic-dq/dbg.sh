#!/bin/bash
set -u
rm -rf /tmp/fusec-site
python3 -m pip install --no-deps --no-index --target /tmp/fusec-site .gpu/tw/fusec-*.whl > /tmp/pip.log 2>&1 || echo pip failed
export PYTHONPATH=/tmp/fusec-site FUSEC_CACHE_DIR=/tmp/fusec-kernel-cache PYTHONUNBUFFERED=1
timeout 250 python3 .gpu/tw/llama_dbg.py all 2>&1 | grep -v Warning | tail -12
timeout 200 python3 .gpu/tw/llama_dbg.py all fusec,graph,fusec,compile_ro,fusec,eager 2>&1 | grep -v Warning | tail -8
