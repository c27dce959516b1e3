#!/usr/bin/env bash
# An AddressSanitizer + UndefinedBehaviorSanitizer build of fusec, with
# libFuzzer's coverage instrumentation, in build-sanitize/ (clang 22; installed
# if missing), and what runs on it:
#
#   scripts/sanitize.sh [lit]               the CPU test suite (lit) on the
#       instrumented tools and unit tests; any report fails the test
#   scripts/sanitize.sh fuzz [SECONDS] [TARGET...]
#       each fuzz target (npy plan builder pipeline; all by default) for
#       SECONDS (60) under libFuzzer, starting from a copy of its corpus in
#       fuzz/corpus; crashes, leaks and hangs (over 20 s) are written to
#       build-sanitize/fuzz-out/TARGET/ and fail the run
#   scripts/sanitize.sh pack DIR
#       the fuzz targets and their corpora in DIR, to run on a machine with
#       more CPUs (bench/gpu-session.sh fuzz)
#
# docs/Fuzzing.md says how to triage a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${SANITIZE_BUILD_DIR:-build-sanitize}

# Clang 22, as LLVM: fusec's C++ captures structured bindings in lambdas,
# which clang learnt in 16.
if ! command -v clang++-22 >/dev/null || [ ! -d /usr/lib/llvm-22/lib/clang/22/lib ]; then
  SUDO=
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    clang-22 libclang-rt-22-dev >/dev/null
fi
source scripts/sanitizer-options.sh

# SANITIZE_STATIC=1 links LLVM and MLIR statically (with lld), for binaries
# that run where LLVM is not installed (the GPU machine's CPUs).
link=
[ -z "${SANITIZE_STATIC:-}" ] || link="-DFUSEC_LINK_MLIR_DYLIB=OFF -DLLVM_USE_LINKER=lld"

# Configures (once, through setup.sh) and builds the given targets.
build() {
  BUILD_DIR=$BUILD FUSEC_CMAKE_ARGS="-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUSEC_SANITIZE=ON -DFUSEC_FUZZ=ON $link" ./setup.sh "$1"
  shift
  [ $# -eq 0 ] || ninja -C "$BUILD" "$@"
}

case "${1:-lit}" in
lit)
  build fusec fusec-opt fusec-runner fusec-translate fusec-nvrtc-check FusecUnitTests \
    fusec-compile-times FuseDialectDocGen FusecPassesDocGen
  # Not here: tests that load fusec's libraries into a process that was not
  # built with ASan (Python, the installed-package example).
  lit-22 -sv "$BUILD/test" --filter-out 'python/|fusec/install.test|fuzz/'
  ;;
fuzz)
  seconds=${2:-60}
  shift $(($# >= 2 ? 2 : 1))
  targets=("$@")
  [ ${#targets[@]} -gt 0 ] || targets=(npy plan builder pipeline)
  build "${targets[@]/#/fusec-fuzz-}"
  status=0
  for t in "${targets[@]}"; do
    work=$BUILD/fuzz-out/$t
    rm -rf "$work" && mkdir -p "$work/corpus"
    cp fuzz/corpus/"$t"/* "$work/corpus/"
    echo "== fusec-fuzz-$t, $seconds s"
    if ! "$BUILD/bin/fusec-fuzz-$t" "$work/corpus" -max_total_time="$seconds" -timeout=20 \
        -rss_limit_mb=4096 -max_len=8192 -artifact_prefix="$work/" -print_final_stats=1 \
        >"$work/log" 2>&1; then
      status=1
      echo "FOUND: $(grep -m1 -E 'ERROR|SUMMARY|timeout|leak' "$work/log" || tail -n1 "$work/log")"
      ls "$work" | grep -E '^(crash|leak|timeout|oom)-' || true
    fi
    grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$work/log" | tail -n2 || true
  done
  exit $status
  ;;
pack)
  # The fuzz targets (stripped of debug info, xz-compressed) and their
  # corpora in DIR, for `bench/gpu-session.sh fuzz` on a machine with more
  # CPUs; build with SANITIZE_STATIC=1 so that they run without LLVM.
  dir=${2:?usage: $0 pack DIR}
  build fusec-fuzz-npy fusec-fuzz-plan fusec-fuzz-builder fusec-fuzz-pipeline
  rm -rf "$dir" && mkdir -p "$dir/corpus"
  for t in npy plan builder pipeline; do
    strip --strip-debug -o "$dir/fusec-fuzz-$t" "$BUILD/bin/fusec-fuzz-$t"
    xz -T2 -6 "$dir/fusec-fuzz-$t"
    cp -r "fuzz/corpus/$t" "$dir/corpus/$t"
  done
  du -sh "$dir"
  ;;
*)
  echo "usage: $0 [lit] | fuzz [SECONDS] [TARGET...] | pack DIR" >&2
  exit 2
  ;;
esac
