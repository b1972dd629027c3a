#!/usr/bin/env bash
# What CI runs: install the dependencies, build with warnings as errors and
# run the CPU unit tests (ctest label "unit").
# Usage: toolchain/test.sh [BUILD_DIR [CMAKE_ARGS...]]   (BUILD_DIR: build)
#   e.g. toolchain/test.sh build-asan -DFV_SANITIZE=address,undefined -DFV_WITH_CUDA=OFF
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
case $build in /*) ;; *) build=$root/$build ;; esac
"$root/toolchain/install-deps.sh"
cmake -S "$root" -B "$build" -DFV_WERROR=ON "$@"
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" -L unit --output-on-failure -j"$(nproc)"
