#!/usr/bin/env bash
# Installs what fusec needs to build and test on Debian 12 (idempotent: it
# installs only what is missing), then configures and builds it.
#
#   ./setup.sh                 install + configure + build (into build/)
#   ./setup.sh <ninja target>  the same, building that target instead
#
# `./setup.sh check-fusec` also installs PyTorch (CPU use; from PyPI) into a
# virtual environment of its own, for the tests of fusec.torch.
#
# Environment: BUILD_DIR (default build), FUSEC_CMAKE_ARGS (extra cmake args),
# FUSEC_TORCH_VENV (default ~/.cache/fusec/torch-venv; FUSEC_TORCH=0 skips it).
set -euo pipefail
cd "$(dirname "$0")"

BUILD_DIR=${BUILD_DIR:-build}
PACKAGES=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools  # LLVM/MLIR, lit, FileCheck
  cmake ninja-build ccache g++
  libgtest-dev                                            # unit tests
  nlohmann-json3-dev                                      # runtime: launch plan JSON
  libzstd-dev zlib1g-dev                                  # static fusec (FUSEC_LINK_MLIR_DYLIB=OFF)
  python3 python3-numpy python3-pip python3-venv         # lit, its NumPy checks, the Python module (pip install . in a venv)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# PyTorch for python/tests/test_torch.py (lit's `torch` feature), pinned to
# the release those tests were last run with.
TORCH_VENV=${FUSEC_TORCH_VENV:-$HOME/.cache/fusec/torch-venv}
if [ "${1:-}" = check-fusec ] && [ "${FUSEC_TORCH:-1}" != 0 ] &&
    ! "$TORCH_VENV/bin/python" -c "import torch, numpy" 2>/dev/null; then
  echo "setup: installing PyTorch into $TORCH_VENV (a few GB from PyPI)"
  python3 -m venv "$TORCH_VENV"
  "$TORCH_VENV/bin/python" -m pip install -q --disable-pip-version-check \
    torch==2.15.0 numpy
fi

LLVM_PREFIX=$(llvm-config-22 --prefix)
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  # shellcheck disable=SC2086
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$(command -v lit-22)" \
    ${FUSEC_CMAKE_ARGS:-}
fi
ninja -C "$BUILD_DIR" "${1:-all}"
