#!/usr/bin/env bash
# Build, test (unit + gpu labels) and benchmark on a GPU machine in one go.
# Usage: toolchain/device-check.sh [OUTDIR]
# Where build dependencies cannot be installed (no package registry), put
# the Debian .deb files that toolchain/fetch-device-debs.sh downloads in
# .deps/: they are unpacked under /tmp/fv-deps and used from there.
set -uo pipefail
t_start=$(date +%s)
out=${1:-${OUT:-/tmp/fv-out}}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
extra=()
# shellcheck source=toolchain/device-deps.sh
source toolchain/device-deps.sh && fv_device_deps
nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.used --format=csv | tee "$out/gpu.txt"
start=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DFV_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DFV_TEST_PYTHON="$(command -v python3)" ${CUDNN_ROOT:+-DCUDNN_ROOT=$CUDNN_ROOT} "${extra[@]}" 2>&1 | tee "$out/configure.log" | grep -E "fovea|cuDNN|CUDA|Error" 
cmake --build build-gpu -j"$(nproc)" -- -k 2>&1 | tee "$out/build.log" | grep -E "error|warning|Error" | head -40
echo "build: $(( $(date +%s) - start )) s"
# FV_UNIT=0 / FV_GPU=0 leave out the unit / gpu label (FV_TEST_QUICK=1: the
# GPU tests' short lists, as under the sanitizers).
if [ "${FV_UNIT:-1}" != 0 ]; then
  (cd build-gpu && ctest -L unit --output-on-failure 2>&1 | tee "$out/unit.log" | tail -15)
fi
if [ "${FV_GPU:-1}" != 0 ]; then
  (cd build-gpu && ctest -L gpu --output-on-failure -V 2>&1 | tee "$out/gpu.log" |
    grep -vE "^[0-9]+: \[ +(RUN|OK) |build-gpu/tests" | tail -80)
  grep -E "tests passed|Test +#.*(Failed|Not Run|Timeout)|Total Test time" "$out/gpu.log"
fi
# FV_SANITIZER=1: the GPU tests under compute-sanitizer (memcheck, racecheck,
# initcheck, synccheck; FV_SANITIZER_TOOLS picks), summary in $out/sanitizer.
# FV_DEADLINE (seconds from this script's start): the sanitizer starts no
# program after it, so that one device call ends inside its limit.
if [ -n "${FV_SANITIZER:-}" ]; then
  if [ -n "${FV_DEADLINE:-}" ]; then
    left=$((FV_DEADLINE - ($(date +%s) - t_start)))
    export FV_SANITIZER_DEADLINE=$((left > 1 ? left : 1))
  fi
  toolchain/compute-sanitizer.sh build-gpu "$out/sanitizer" 2>&1 | tail -60
fi
if [ -x build-gpu/apps/bench/fovea-bench ] && [ -n "${FV_BENCH:-}" ]; then
  for b in $FV_BENCH; do
    build-gpu/apps/bench/fovea-bench "$b" --json "$out/bench-$b.json" 2>&1 | tee "$out/bench-$b.log" | tail -40
  done
fi
# FV_EDGE_BENCH=1: the edge-filter benchmark (apps/bench/edge_vs_peers.py:
# fovea-bench edge vs PyTorch and OpenCV) with this build's fovea-bench.
if [ -x build-gpu/apps/bench/fovea-bench ] && [ -n "${FV_EDGE_BENCH:-}" ]; then
  rm -rf /tmp/fv-edge-dump && mkdir -p /tmp/fv-edge-dump
  # shellcheck disable=SC2086
  timeout "${FV_EDGE_TIMEOUT:-300}" "${PYTHON:-python3}" apps/bench/edge_vs_peers.py \
    --bench build-gpu/apps/bench/fovea-bench --dump /tmp/fv-edge-dump \
    --peer-frames "${FV_EDGE_PEER_FRAMES:-1000}" --peer-runs "${FV_EDGE_PEER_RUNS:-5}" \
    --fovea-json "$out/fovea_edge.json" --json "$out/edge_vs_peers.json" \
    --table "$out/edge_table.txt" -- ${FV_EDGE_ARGS:-} 2>&1 | tee "$out/edge.log" | tail -60
fi
exit 0
