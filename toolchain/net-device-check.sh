#!/usr/bin/env bash
# fv_net on a GPU machine in one go: configure and build the net's targets
# (.deps/*.deb unpacked as toolchain/device-check.sh does), run the net's unit
# and GPU tests, then (FV_NET_BENCH=1) the whole-net benchmark against PyTorch
# (apps/bench/run_net_bench.sh, its own build against PyTorch's cuDNN).
# Usage: toolchain/net-device-check.sh [OUTDIR]   (default $OUT, else /tmp/fv-net-check)
# Environment: FV_NET_TESTS (ctest -R regex, default "net|onnx|models"),
#   FV_NET_BENCH (0), FV_NET_TARGETS (extra build targets), PYTHON (python3).
set -uo pipefail
out=${1:-${OUT:-/tmp/fv-net-check}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
py=${PYTHON:-python3}
extra=()
# shellcheck source=toolchain/device-deps.sh
source toolchain/device-deps.sh && fv_device_deps
nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.used --format=csv | tee "$out/gpu.txt"
start=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DFV_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DFV_TEST_PYTHON="$(command -v "$py")" "${extra[@]}" >"$out/configure.log" 2>&1 ||
  { tail -30 "$out/configure.log"; exit 1; }
grep -E "fovea:" "$out/configure.log"
targets=(fovea test_net test_net_ops_cpu test_net_models test_gpu_net test_gpu_net_ops
         test_gpu_net_models ${FV_NET_TARGETS:-})
for t in "${targets[@]}"; do
  cmake --build build-gpu -j"$(nproc)" --target "$t" >>"$out/build.log" 2>&1 ||
    { echo "build of $t failed:"; grep -E "error" "$out/build.log" | head -30; }
done
echo "build: $(($(date +%s) - start)) s"
(cd build-gpu && ctest -R "${FV_NET_TESTS:-net|onnx|models}" --output-on-failure -V 2>&1 |
  tee "$out/tests.log" | grep -vE "^[0-9]+: \[ +(RUN|OK) " | tail -120)
if [ "${FV_NET_BENCH:-0}" = 1 ]; then
  apps/bench/run_net_bench.sh "$out/bench" 2>&1 | tail -80
fi
exit 0
