#!/usr/bin/env bash
# One script for a session on a GPU machine.
#
#   bench/gpu-session.sh prepare   (here, with LLVM/MLIR) builds fusec and the
#       runtime, plus a self-contained fusec (static LLVM/MLIR, in
#       build-static/), compiles the on-GPU numeric suite (test/gpu/cases.py)
#       and the benchmark workloads (bench/bench.py) to artifacts with CPU
#       reference results, and gathers what the GPU machine needs in .gpu/
#       (ignored by git; carry it).
#   bench/gpu-session.sh run       (there: CUDA driver, PyTorch, no LLVM)
#       runs the numeric suite, `fusec run` on the examples, then the
#       benchmarks; writes suite.json, bench.json and logs to $OUT (or
#       .gpu/out) and prints a short table.
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
  BUILD_DIR=build-static FUSEC_CMAKE_ARGS=-DFUSEC_LINK_MLIR_DYLIB=OFF ./setup.sh fusec-stripped
  xz -T2 -6 -c build-static/bin/fusec.stripped > "$STAGE/fusec.xz"
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
  # The user's command on a GPU: compile, run, compare with the reference.
  python3 -c "import lzma, sys; open('/tmp/fusec', 'wb').write(lzma.open(sys.argv[1]).read())" \
    "$STAGE/fusec.xz" && chmod +x /tmp/fusec
  fusec_run=0
  for e in resnet_block mobilenet_block transformer_block; do
    /tmp/fusec run "examples/$e.mlir" --device=gpu 2>&1 | tee -a "$out/fusec-run.log" || fusec_run=1
  done
  python3 bench/bench.py run --runtime "$STAGE/libfusec_runtime.so" --dir "$STAGE/bench" \
    --json "$out/bench.json" 2>&1 | tee "$out/bench.log"
  echo
  grep -E "^worst relative error|passed, " "$out/suite.log"
  grep -E "^@|vs reference" "$out/fusec-run.log"
  sed -n '/^workload /,$p' "$out/bench.log"
  [ "$fusec_run" -eq 0 ] || echo "fusec run on the GPU failed (fusec-run.log)"
  exit $((suite | fusec_run))
  ;;
*)
  echo "usage: $0 prepare|run" >&2
  exit 2
  ;;
esac
