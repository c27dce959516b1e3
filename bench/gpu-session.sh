#!/usr/bin/env bash
# One script for a session on a GPU machine.
#
#   bench/gpu-session.sh prepare   (here, with LLVM/MLIR) builds fusec and the
#       runtime, compiles the on-GPU numeric suite (test/gpu/cases.py) and the
#       benchmark workloads (bench/bench.py) to artifacts with CPU reference
#       results, and gathers what the GPU machine needs in .gpu/ (ignored by
#       git; carry it).
#   bench/gpu-session.sh run       (there: CUDA driver, PyTorch, no LLVM)
#       runs the numeric suite, then the benchmarks, writes suite.json,
#       bench.json and logs to $OUT (or .gpu/out), and prints a short table.
set -euo pipefail
cd "$(dirname "$0")/.."
STAGE=.gpu

case "${1:-}" in
prepare)
  ./setup.sh
  rm -rf "$STAGE" && mkdir -p "$STAGE"
  python3 test/gpu/cases.py prepare --fusec build/bin/fusec --out "$STAGE/cases" \
    --ptxas "$(command -v ptxas)"
  python3 bench/bench.py prepare --fusec build/bin/fusec --out "$STAGE/bench"
  cp build/bin/fusec-runner "$(find build -name 'libfusec_runtime.so' | head -n1)" "$STAGE/"
  git rev-parse HEAD > "$STAGE/commit"
  git status --porcelain --untracked-files=no | grep -q . && echo dirty >> "$STAGE/commit" || true
  du -sh "$STAGE"
  ;;
run)
  out=${OUT:-$STAGE/out}
  mkdir -p "$out"
  export PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
  echo "commit $(cat "$STAGE/commit" | tr '\n' ' ')" | tee -a "$out/gpu.txt"
  suite=0
  python3 test/gpu/cases.py run --runner "$STAGE/fusec-runner" --cases "$STAGE/cases" \
    --json "$out/suite.json" 2>&1 | tee "$out/suite.log" || suite=$?
  python3 bench/bench.py run --runtime "$STAGE/libfusec_runtime.so" --dir "$STAGE/bench" \
    --json "$out/bench.json" 2>&1 | tee "$out/bench.log"
  echo
  grep -E "^worst relative error|passed, " "$out/suite.log"
  sed -n '/^workload /,$p' "$out/bench.log"
  exit "$suite"
  ;;
*)
  echo "usage: $0 prepare|run" >&2
  exit 2
  ;;
esac
