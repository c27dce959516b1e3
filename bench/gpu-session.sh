#!/usr/bin/env bash
# One script for a session on a GPU machine.
#
#   bench/gpu-session.sh prepare   (here, with LLVM/MLIR; FUSEC_CASES=SUBSTR,...
#       for a subset of the suite) builds fusec and the
#       runtime, plus a self-contained fusec (static LLVM/MLIR, in
#       build-static/), compiles the on-GPU numeric suite (test/gpu/cases.py)
#       and the benchmark workloads (bench/bench.py) to artifacts with CPU
#       reference results, and gathers what the GPU machine needs in .gpu/
#       (ignored by git, under the 64 MiB carry limit; carry it).
#   bench/gpu-session.sh run [suite|bench|jit|all] [-k SUBSTR]
#       (there: CUDA driver, PyTorch, no LLVM) runs the numeric suite and
#       `fusec run` on the examples (suite), the benchmarks (bench), the
#       Python module from its wheel (jit: its tests, every suite case
#       compiled there through the JIT library by both backends, the call
#       overhead, examples/jit), or all three (all, the default); writes
#       suite.json, bench.json, jit-suite.json, python-overhead.json and logs
#       to $OUT (or .gpu/out) and prints a short table last. -k limits the
#       benchmark rows (the suite cases for jit).
#   bench/gpu-session.sh run training [--quick] [-k SUBSTR[,SUBSTR...]]
#       (there) the training benchmarks of bench/training.py through the
#       Python module from its wheel: conv dgrad/wgrad against cuDNN, batch
#       norm in training against the copy bandwidth, a ResNet-50 bottleneck
#       training step against eager, torch.compile and a CUDA-graph replay,
#       and the bytes saved for the backward (fusec's side from prepare's
#       .gpu/training/saved.json when the module reports none);
#       $OUT/training.json and training.log, a table last
#       (docs/TrainingBenchmarks.md). Not part of `all`.
#   bench/gpu-session.sh run ddp
#       (there, 2 GPUs or more: the nvidia-h200-x2 kind) data-parallel
#       training through the wheel (bench/ddp_train.py under torchrun,
#       NCCL_NVLS_ENABLE=0): ResNet-18 with synchronised batch norm and the
#       GPT-2-small shape under DDP, fusec and PyTorch, at one GPU and at
#       all of them with the same global batch, then their comparisons
#       (loss curves, final weights, scaling efficiency);
#       $OUT/ddp/*.json and ddp-compare.jsonl. Not part of `all`.
#   bench/gpu-session.sh run torch [infer|train|both] [ARGS...]
#       (there) torch.compile(model, backend="fusec") through the wheel:
#       python/tests/test_torch.py, then bench/torch_models.py (ARGS go to
#       it, e.g. --models resnet50 --repeat 20) against eager, a CUDA-graph
#       replay of eager and the torch.compile modes in $FUSEC_AGAINST
#       (default,reduce-overhead), fusec in its default and reduce-overhead
#       modes; $OUT/torch-{infer,train}.json and .log, a line per model;
#       FUSEC_TORCH_TESTS=0 leaves the tests out.
#       Not part of `all`.
#   bench/gpu-session.sh tune [-k SUBSTR[,SUBSTR...]]
#       (there) `fusec tune` on the benchmark graphs (those matching -k) into
#       $OUT/tuning.json, each graph compiled again with that database into
#       .gpu/bench-tuned/, then the benchmarks with the heuristic's and the
#       tuned artifacts side by side (fusec_ms and tuned_ms of one row, one
#       process); $OUT/tune.log, bench-tuned.json.
#   bench/gpu-session.sh sweep
#       (there; prepared with FUSEC_SWEEP=1) times the workloads of bench/sweep.py under each candidate
#       tile, to calibrate the tensor-core heuristic; $OUT/sweep.json.
#   bench/gpu-session.sh fuzz [SECONDS] [JOBS]
#       (there, with .gpu/fuzz from scripts/sanitize.sh pack) the four
#       libFuzzer targets (ASan/UBSan) at once, JOBS processes each;
#       findings, logs and grown corpora in $OUT/fuzz.
#   bench/gpu-session.sh wide [-k SUBSTR]
#       (there) kernels over tensors of 2^31 elements and more, which index
#       in 64 bits (test/gpu/wide_index.py), against PyTorch;
#       $OUT/wide-index.json and .log.
#   bench/gpu-session.sh sanitize TOOL[,TOOL...] [-k SUBSTR] [-j N]
#       (there) the numeric suite under compute-sanitizer (memcheck,
#       racecheck, synccheck, initcheck): every artifact run with its inputs,
#       any finding a failure, the numbers still checked; N at once (4);
#       $OUT/sanitize-TOOL.json and .log, a table last.
#   bench/gpu-session.sh profile KERNEL_REGEX ARTIFACT...
#       (there) compute-sanitizer's memcheck on each artifact, then Nsight
#       Compute (clocks left alone) on the kernels matching KERNEL_REGEX:
#       speed of light, occupancy, warp stall reasons; into $OUT/profile.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
STAGE=${FUSEC_STAGE:-.gpu}  # where prepare gathers, and run reads

case "${1:-}" in
prepare)
  ./setup.sh
  rm -rf "$STAGE" && mkdir -p "$STAGE"
  # FUSEC_CASES=SUBSTR[,SUBSTR...] prepares only the cases matching one.
  python3 test/gpu/cases.py prepare --fusec build/bin/fusec --out "$STAGE/cases" --cuda \
    --ptxas "$(command -v ptxas)" ${FUSEC_CASES:+-k "$FUSEC_CASES"}
  # The cases' reference data: compressed, it fits the carry limit.
  tar -C "$STAGE" -cf - cases | xz -T2 -6 > "$STAGE/cases.tar.xz"
  rm -rf "$STAGE/cases"
  python3 bench/bench.py prepare --fusec build/bin/fusec --out "$STAGE/bench"
  # The training graphs' autodiff reports (the GPU machine has no fusec-opt).
  python3 bench/training.py prepare --fusec-opt build/bin/fusec-opt --out "$STAGE/training"
  python3 test/gpu/wide_index.py prepare --fusec build/bin/fusec --out "$STAGE/wide" \
    --ptxas "$(command -v ptxas)"
  # The tile sweep only when asked (FUSEC_SWEEP=1): the suite's reference
  # data leaves little of the carry limit.
  if [ "${FUSEC_SWEEP:-0}" = 1 ]; then
    python3 bench/sweep.py prepare --fusec build/bin/fusec --out "$STAGE/sweep"
    tar -C "$STAGE" -cf - sweep | xz -T2 -6 > "$STAGE/sweep.tar.xz"
    rm -rf "$STAGE/sweep"
  fi
  cp build/bin/fusec-runner "$(find build -name 'libfusec_runtime.so' | head -n1)" "$STAGE/"
  BUILD_DIR=build-static FUSEC_CMAKE_ARGS=-DFUSEC_LINK_MLIR_DYLIB=OFF ./setup.sh fusec-stripped
  xz -T2 -6 -c build-static/bin/fusec.stripped > "$STAGE/fusec.xz"
  # The Python module as pip builds it (LLVM/MLIR inside libfusec_jit.so),
  # and examples/jit built against the installed library package of the
  # same static build (it runs there with the wheel's copy of the
  # libraries: the same build, stripped).
  FUSEC_BUILD_DIR=build-static python3 -m pip wheel --no-build-isolation --no-deps \
    --no-index -w "$STAGE" .
  rm -rf /tmp/fusec-prefix /tmp/fusec-jit-example
  cmake --install build-static --component library --prefix /tmp/fusec-prefix --strip
  cmake -S examples/jit -B /tmp/fusec-jit-example -DCMAKE_PREFIX_PATH=/tmp/fusec-prefix >/dev/null
  cmake --build /tmp/fusec-jit-example
  cp /tmp/fusec-jit-example/jit-example "$STAGE/"
  git rev-parse HEAD > "$STAGE/commit"
  git status --porcelain --untracked-files=no | grep -q . && echo dirty >> "$STAGE/commit" || true
  du -sh "$STAGE"
  ;;
run)
  what=${2:-all}
  shift $(($# >= 2 ? 2 : 1))
  out=${OUT:-$STAGE/out}
  mkdir -p "$out"
  export PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
  echo "commit $(cat "$STAGE/commit" | tr '\n' ' ')" | tee -a "$out/gpu.txt"
  if [ "$what" = ddp ]; then
    gpus=$(nvidia-smi -L | wc -l)
    [ "$gpus" -ge 2 ] || { echo "run ddp needs 2 GPUs or more; this machine has $gpus"; exit 1; }
    rm -rf /tmp/fusec-site
    python3 -m pip install --no-deps --no-index --target /tmp/fusec-site "$STAGE"/fusec-*.whl \
      >"$out/pip.log" 2>&1 || { echo "the wheel did not install (pip.log)"; exit 1; }
    export PYTHONPATH=/tmp/fusec-site FUSEC_CACHE_DIR=/tmp/fusec-kernel-cache NCCL_NVLS_ENABLE=0
    rm -rf /tmp/fusec-ddp "$out/ddp-compare.jsonl"
    mkdir -p /tmp/fusec-ddp "$out/ddp"
    status=0
    for model in resnet18_cifar gpt2_small6; do
      for impl in fusec eager; do
        for w in "$gpus" 1; do
          python3 -m torch.distributed.run --standalone --nproc_per_node "$w" bench/ddp_train.py \
            --model "$model" --impl "$impl" --out "/tmp/fusec-ddp/$model-$impl-w$w.json" \
            >"$out/ddp/$model-$impl-w$w.log" 2>&1 || { status=1; echo "$model $impl W=$w failed"; }
          cp "/tmp/fusec-ddp/$model-$impl-w$w.json" "$out/ddp/" 2>/dev/null || true
        done
      done
      for pair in "fusec-w1 fusec-w$gpus" "eager-w1 eager-w$gpus" "eager-w$gpus fusec-w$gpus"; do
        set -- $pair
        python3 bench/ddp_train.py compare "/tmp/fusec-ddp/$model-$1.json" \
          "/tmp/fusec-ddp/$model-$2.json" >>"$out/ddp-compare.jsonl" || status=1
      done
    done
    cat "$out/ddp-compare.jsonl"
    exit "$status"
  fi
  if [ "$what" = torch ]; then
    # torch.compile(model, backend="fusec") end to end through the wheel:
    # the backend's tests, then bench/torch_models.py (infer, train or both;
    # the rest of the arguments go to it, e.g. --models resnet50).
    part=${1:-both}
    shift $(($# >= 1 ? 1 : 0))
    rm -rf /tmp/fusec-site
    python3 -m pip install --no-deps --no-index --target /tmp/fusec-site "$STAGE"/fusec-*.whl \
      >"$out/pip.log" 2>&1 || { echo "the wheel did not install (pip.log)"; exit 1; }
    export PYTHONPATH=/tmp/fusec-site FUSEC_CACHE_DIR=/tmp/fusec-kernel-cache
    status=0
    # FUSEC_TORCH_TESTS=0 leaves the tests out (a second call of a session).
    if [ "${FUSEC_TORCH_TESTS:-1}" != 0 ]; then
      (cd /tmp && python3 -m unittest discover -s "$OLDPWD/python/tests" -p test_torch.py) \
        >"$out/torch-tests.log" 2>&1 || { status=1; echo "test_torch failed (torch-tests.log)"; }
      tail -n 3 "$out/torch-tests.log"
    fi
    against=${FUSEC_AGAINST:-default,reduce-overhead}
    for p in infer train; do
      [ "$part" = both ] || [ "$part" = "$p" ] || continue
      python3 bench/torch_models.py "$p" --against "$against" --json "$out/torch-$p.json" "$@" \
        >"$out/torch-$p.log" 2>&1 || { status=1; echo "torch_models $p failed (torch-$p.log)"; }
      python3 - "$out/torch-$p.json" <<'PY' || true
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    t = r.get("step_ms") or dict(r.get("alternatives_ms", {}),
                                 fusec=r.get("fusec_ms"), **{
        "fusec-reduce-overhead": r.get("fusec-reduce-overhead_ms")})
    print("%-16s %s  best %s  ratio %.2f (reduce-overhead %.2f)" % (
        r["model"], " ".join("%s=%.2f" % kv for kv in sorted(t.items())
                             if kv[1] is not None),
        r.get("best_alternative"), r.get("ratio", 0),
        r.get("ratio_reduce_overhead", 0)))
PY
    done
    exit "$status"
  fi
  if [ "$what" = training ]; then
    # The module from its wheel (LLVM/MLIR inside: it compiles here).
    rm -rf /tmp/fusec-site
    python3 -m pip install --no-deps --no-index --target /tmp/fusec-site "$STAGE"/fusec-*.whl \
      >"$out/pip.log" 2>&1 || echo "the wheel did not install (pip.log): fusec's rows will be n/a"
    export PYTHONPATH=/tmp/fusec-site FUSEC_CACHE_DIR=/tmp/fusec-kernel-cache
    status=0
    python3 bench/training.py run --json "$out/training.json" --prepared "$STAGE/training" "$@" \
      2>&1 | tee "$out/training.log" || status=$?
    echo
    sed -n '/^== training benchmarks/,$p' "$out/training.log"
    exit "$status"
  fi
  suite=0
  fusec_run=0
  if [ "$what" != bench ] && [ "$what" != jit ]; then
    rm -rf /tmp/fusec-cases && mkdir -p /tmp/fusec-cases
    xz -dc "$STAGE/cases.tar.xz" | tar -C /tmp/fusec-cases -xf -
    python3 test/gpu/cases.py run --runner "$STAGE/fusec-runner" --cases /tmp/fusec-cases/cases \
      --json "$out/suite.json" 2>&1 | tee "$out/suite.log" || suite=$?
    # The user's command on a GPU: compile, run, compare with the reference.
    python3 -c "import lzma, sys; open('/tmp/fusec', 'wb').write(lzma.open(sys.argv[1]).read())" \
      "$STAGE/fusec.xz" && chmod +x /tmp/fusec
    for e in resnet_block mobilenet_block transformer_block llama_block unet_decoder; do
      /tmp/fusec run "examples/$e.mlir" --device=gpu 2>&1 | tee -a "$out/fusec-run.log" || fusec_run=1
    done
  fi
  jit=0
  if [ "$what" = jit ] || [ "$what" = all ]; then
    # The Python module and the JIT library on this machine (no LLVM here):
    # its tests, every suite case through both backends, the call
    # overhead, and the installed-package example.
    [ -d /tmp/fusec-cases/cases ] || { mkdir -p /tmp/fusec-cases &&
      xz -dc "$STAGE/cases.tar.xz" | tar -C /tmp/fusec-cases -xf -; }
    rm -rf /tmp/fusec-site
    python3 -m pip install --no-deps --no-index --target /tmp/fusec-site "$STAGE"/fusec-*.whl \
      >"$out/pip.log" 2>&1 || jit=1
    export PYTHONPATH=/tmp/fusec-site FUSEC_CACHE_DIR=/tmp/fusec-kernel-cache
    rm -rf "$FUSEC_CACHE_DIR"
    python3 -m unittest discover -s python/tests -v >"$out/python-tests.log" 2>&1 || jit=1
    python3 test/gpu/cases.py jit --cases /tmp/fusec-cases/cases --json "$out/jit-suite.json" \
      "$@" >"$out/jit-suite.log" 2>&1 || jit=1
    python3 bench/python-overhead.py --json "$out/python-overhead.json" \
      2>&1 | tee "$out/python-overhead.log" || jit=1
    for pass in cold warm; do
      echo "== $pass" >>"$out/jit-example.log"
      LD_LIBRARY_PATH=/tmp/fusec-site/fusec "$STAGE/jit-example" >>"$out/jit-example.log" 2>&1 || jit=1
    done
    # The wheel's fusec command (the driver inside libfusec_jit.so).
    for e in resnet_block llama_block; do
      /tmp/fusec-site/bin/fusec run "examples/$e.mlir" --device=gpu >>"$out/wheel-fusec.log" 2>&1 || jit=1
    done
  fi
  if [ "$what" != suite ] && [ "$what" != jit ]; then
    python3 bench/bench.py run --runtime "$STAGE/libfusec_runtime.so" --dir "$STAGE/bench" \
      --json "$out/bench.json" "$@" 2>&1 | tee "$out/bench.log"
  fi
  echo
  if [ "$what" = jit ] || [ "$what" = all ]; then
    grep -E "^FAIL" "$out/jit-suite.log" || true
    tail -n 1 "$out/jit-suite.log"
    grep -E "^(OK|FAILED)|^Ran " "$out/python-tests.log"
    grep -E "^ran on|relative error" "$out/jit-example.log" || cat "$out/jit-example.log"
    grep -E "^@|vs reference" "$out/wheel-fusec.log" || cat "$out/wheel-fusec.log"
    [ "$jit" -eq 0 ] || echo "the Python/JIT part failed (pip.log, python-tests.log, jit-suite.log)"
  fi
  if [ "$what" != bench ] && [ "$what" != jit ]; then
    grep -E "^FAIL" "$out/suite.log" || true
    grep -E "^worst relative error|passed, " "$out/suite.log"
    grep -E "^@|vs reference" "$out/fusec-run.log"
    [ "$fusec_run" -eq 0 ] || echo "fusec run on the GPU failed (fusec-run.log)"
  fi
  [ "$what" = suite ] || [ "$what" = jit ] || sed -n '/^ceilings: /,$p' "$out/bench.log"
  exit $((suite | fusec_run | jit))
  ;;
fuzz)
  # libFuzzer on this machine's CPUs: every target at once (or those in
  # FUZZ_TARGETS), JOBS processes each (fork mode: a finding is recorded and
  # the run goes on), SECONDS long, from .gpu/fuzz (scripts/sanitize.sh pack
  # .gpu/fuzz). The grown corpora (fuzz-corpus.tar.xz) and the findings with
  # the logs (findings.tar.xz) go to $OUT/fuzz.
  seconds=${2:-300}
  jobs=${3:-4}
  targets=${FUZZ_TARGETS:-npy plan builder pipeline}
  out=${OUT:-$STAGE/out}
  mkdir -p "$out/fuzz"
  source scripts/sanitizer-options.sh
  rm -rf /tmp/fusec-fuzz /tmp/fusec-findings && mkdir -p /tmp/fusec-fuzz /tmp/fusec-findings
  # The corpora as packed, or as an earlier run's fuzz-corpus.tar.xz left
  # them (a tenth of the size).
  if [ -f "$STAGE/fuzz/corpus.tar.xz" ]; then
    xz -dc "$STAGE/fuzz/corpus.tar.xz" | tar -C /tmp/fusec-fuzz -xf -
  else
    cp -r "$STAGE"/fuzz/corpus/* /tmp/fusec-fuzz/
  fi
  for t in $targets; do
    work=/tmp/fusec-findings/$t
    mkdir -p "$work"
    xz -dc "$STAGE/fuzz/fusec-fuzz-$t.xz" > "/tmp/fusec-fuzz/fusec-fuzz-$t"
    chmod +x "/tmp/fusec-fuzz/fusec-fuzz-$t"
    "/tmp/fusec-fuzz/fusec-fuzz-$t" "/tmp/fusec-fuzz/$t" -fork="$jobs" -ignore_crashes=1 \
      -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$seconds" -timeout=20 \
      -rss_limit_mb=4096 -max_len=8192 -artifact_prefix="$work/" >"$work/log" 2>&1 &
  done
  wait
  # Few files: the machine returns a limited number.
  tar -C /tmp/fusec-fuzz -cf - $targets | xz -T4 -6 > "$out/fuzz/fuzz-corpus.tar.xz"
  for t in $targets; do
    echo "$t: $(grep -E '^#[0-9]+: ' "/tmp/fusec-findings/$t/log" | tail -n1)"
    ls "/tmp/fusec-findings/$t" | grep -E '^(crash|leak|timeout|oom)-' || true
  done
  # Each log holds the stack of every finding (fork mode copies the child's
  # report into it).
  tar -C /tmp/fusec-findings -cf - . | xz -T4 -6 > "$out/fuzz/findings.tar.xz"
  ;;
wide)
  # Tensors of 2^31 elements and more (about 40 GB of GPU memory).
  out=${OUT:-$STAGE/out}
  mkdir -p "$out"
  PYTHONUNBUFFERED=1 python3 test/gpu/wide_index.py run --runtime "$STAGE/libfusec_runtime.so" \
    --dir "$STAGE/wide" --json "$out/wide-index.json" "${@:2}" 2>&1 | tee "$out/wide-index.log"
  # fusec-runner's host memory on two inputs and an output of 2^31 + 229,379
  # f16 elements each (12.9 GB of tensors): it streams them in pieces.
  python3 - "$STAGE/fusec-runner" "$STAGE/wide/add_relu_f16/kernel-sm_90a.ptx" <<'PY' 2>&1 |
import resource, subprocess, sys, time
start = time.time()
r = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(r.stdout + r.stderr, end="")
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
print("fusec-runner add_relu_f16: exit %d, %.1f s, max RSS %.2f GiB"
      % (r.returncode, time.time() - start, rss))
PY
    tee "$out/runner-memory.log"
  ;;
sanitize)
  tools=${2:?name the compute-sanitizer tools: memcheck,racecheck,synccheck}
  shift 2
  out=${OUT:-$STAGE/out}
  mkdir -p "$out"
  rm -rf /tmp/fusec-cases && mkdir -p /tmp/fusec-cases
  xz -dc "$STAGE/cases.tar.xz" | tar -C /tmp/fusec-cases -xf -
  status=0
  for tool in ${tools//,/ }; do
    python3 test/gpu/cases.py run --runner "$STAGE/fusec-runner" --cases /tmp/fusec-cases/cases \
      --sanitize "$tool" --timeout 300 -j 4 --json "$out/sanitize-$tool.json" "$@" \
      >"$out/sanitize-$tool.log" 2>&1 || status=1
    grep FAIL "$out/sanitize-$tool.log" | head -20 || true
    echo "$tool: $(tail -n1 "$out/sanitize-$tool.log")"
  done
  exit $status
  ;;
tune)
  shift
  [ "${1:-}" = -k ] && keys=$2 || keys=
  out=${OUT:-$STAGE/out}
  mkdir -p "$out"
  export PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
  echo "commit $(cat "$STAGE/commit" | tr '\n' ' ')" | tee -a "$out/gpu.txt"
  python3 -c "import lzma, sys; open('/tmp/fusec', 'wb').write(lzma.open(sys.argv[1]).read())" \
    "$STAGE/fusec.xz" && chmod +x /tmp/fusec
  /tmp/fusec --version | tee -a "$out/gpu.txt"
  db="$out/tuning.json"
  rm -rf "$STAGE/bench-tuned" && mkdir -p "$STAGE/bench-tuned"
  for graph in "$STAGE"/bench/*.mlir; do
    name=$(basename "$graph" .mlir)
    # The portable twins (_sm90) are not what `fusec run` picks here.
    case "$name" in *_sm90) continue ;; esac
    if [ -n "$keys" ]; then
      hit=0
      for k in ${keys//,/ }; do case "$name" in *"$k"*) hit=1 ;; esac; done
      [ "$hit" = 1 ] || continue
    fi
    flags=$(cat "$STAGE/bench/$name.flags")
    echo "== $name" | tee -a "$out/tune.log"
    # shellcheck disable=SC2086
    /tmp/fusec tune "$graph" --tuning-db="$db" $flags 2>&1 | tee -a "$out/tune.log"
    # shellcheck disable=SC2086
    /tmp/fusec "$graph" -o "$STAGE/bench-tuned/$name.ptx" --tuning-db="$db" $flags
  done
  python3 bench/bench.py run --runtime "$STAGE/libfusec_runtime.so" --dir "$STAGE/bench" \
    --tuned-dir "$STAGE/bench-tuned" --json "$out/bench-tuned.json" ${keys:+-k "$keys"} 2>&1 |
    tee "$out/bench-tuned.log"
  echo
  grep -E "^kernel  |^k[0-9]+_" "$out/tune.log" || true
  sed -n '/^ceilings: /,$p' "$out/bench-tuned.log"
  ;;
sweep)
  # Every workload of bench/sweep.py under each candidate tile.
  out=${OUT:-$STAGE/out}
  mkdir -p "$out"
  rm -rf /tmp/fusec-sweep && mkdir -p /tmp/fusec-sweep
  xz -dc "$STAGE/sweep.tar.xz" | tar -C /tmp/fusec-sweep -xf -
  PYTHONUNBUFFERED=1 python3 bench/sweep.py run --runtime "$STAGE/libfusec_runtime.so" \
    --dir /tmp/fusec-sweep/sweep --json "$out/sweep.json" 2>&1 | tee "$out/sweep.log"
  ;;
profile)
  regex=$2
  shift 2
  out=${OUT:-$STAGE/out}
  mkdir -p "$out"
  for artifact in "$@"; do
    echo "== memcheck $artifact" | tee -a "$out/profile.txt"
    timeout 120 compute-sanitizer --tool memcheck "$STAGE/fusec-runner" "$artifact" 2>&1 |
      tail -n 5 | tee -a "$out/profile.txt" || true
    echo "== ncu $artifact" | tee -a "$out/profile.txt"
    timeout 240 ncu --clock-control none -k "regex:$regex" -c 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section MemoryWorkloadAnalysis \
      "$STAGE/fusec-runner" "$artifact" 2>&1 | tee -a "$out/profile.txt" | tail -n 80 || true
  done
  ;;
*)
  echo "usage: $0 prepare|run [suite|bench|jit|all] [-k SUBSTR]|run training [--quick] [-k SUBSTR]|fuzz [SECONDS] [JOBS]|wide [-k SUBSTR]|sanitize TOOLS [-k SUBSTR] [-j N]|tune [-k SUBSTR]|sweep|profile KERNEL_REGEX ARTIFACT..." >&2
  exit 2
  ;;
esac
