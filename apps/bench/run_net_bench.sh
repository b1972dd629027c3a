#!/usr/bin/env bash
# The whole-net benchmark on a GPU machine, in one go: builds
# fovea-bench against PyTorch's own cuDNN, as run_conv_bench.sh does (the
# same build folder, build-torchcudnn), then runs
#   net_vs_pytorch.py   for each case: weights, input and FP32 reference
#                       (apps/common/net_models.py, on the CPU), fovea-bench
#                       net (output checked, then fv_net_forward as a graph
#                       replay and eager), PyTorch FP16 channels_last
#                       (checked, then eager and CUDA-graph replay) and, with
#                       FV_NET_COMPILE=1, torch.compile + CUDA graph; a table
#                       of ms and ratios, JSON, a PNG chart
# Usage (from anywhere): apps/bench/run_net_bench.sh [OUTDIR]
#   OUTDIR defaults to $OUT, else /tmp/fv-net-bench. It receives run.log
#   (everything printed), build.log, net_vs_pytorch.json, net_ratios.png,
#   fovea_net_profile.txt (the engine choices, when autotuned) and work/
#   (the weights, references and fovea-bench's JSON per case).
# Environment:
#   FV_NET_CASES     MODEL:BATCH:SIZE,... (default: resnet18 and mobilenet_v2
#                    at batch 1 and 8, 224; unet at batch 1 and 8, 256)
#   FV_NET_ITERS (200), FV_NET_WARMUP (20)
#   FV_NET_AUTOTUNE  1 (default): fovea-bench --autotune, the choices kept in
#                    OUTDIR/fovea_net_profile.txt and reused by later cases
#                    and runs; 0: heuristics (or that profile when it exists)
#   FV_NET_LAYERS    runs of the per-layer table (fv_net_profile, 20); 0: none
#   FV_NET_COMPILE   1: torch.compile too (minutes per case: pick cases with
#                    FV_NET_CASES); FV_NET_COMPILE_BUDGET seconds in all (420)
#   FV_NET_TIMEOUT   seconds for net_vs_pytorch.py (480)
#   FV_NET_REUSE_BUILD 1: keep an existing build-torchcudnn (incremental
#                    build); 0 (default): configure afresh
#   PYTHON           the Python with torch (python3)
# A device call lasts at most 10 minutes and the build takes about 80 s:
# the default run (six cases, no compile) fits; run torch.compile in further
# calls on the warm machine, e.g.
#   FV_NET_REUSE_BUILD=1 FV_NET_COMPILE=1 FV_NET_CASES=resnet18:1:224 \
#     apps/bench/run_net_bench.sh $OUT/compile-r18
set -uo pipefail
out=${1:-${OUT:-/tmp/fv-net-bench}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
build=$root/build-torchcudnn
bench=$build/apps/bench/fovea-bench
export PYTHONUNBUFFERED=1

# step, torch_cudnn_root, bench_torch_cudnn, bench_deps, bench_configure,
# bench_build, bench_use_cudnn
# shellcheck source=apps/bench/bench_env.sh
source "$root/apps/bench/bench_env.sh" || exit 1

main() {
  cd "$root" || return 1
  step "machine"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,memory.total \
    --format=csv 2>&1
  cmake --version | head -1
  "$py" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__,
"cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' || return 1
  "$py" -c 'import torchvision; print("torchvision", torchvision.__version__)' 2>/dev/null ||
    echo "no torchvision: net_models.py's own definitions of resnet18 and mobilenet_v2 (the same)"

  step "PyTorch's cuDNN"
  local cudnn_root cmake_cudnn=() # set by bench_torch_cudnn
  bench_torch_cudnn run_net_bench || return 1

  step "configure and build (build-torchcudnn, CUDA architecture 90)"
  local extra=()
  bench_deps
  command -v ninja >/dev/null && extra+=(-G Ninja)
  if [ "${FV_NET_REUSE_BUILD:-0}" = 1 ] && [ -f "$build/CMakeCache.txt" ]; then
    echo "reusing $build (FV_NET_REUSE_BUILD=1): configured again in place, built incrementally"
  else
    rm -rf "$build"
  fi
  bench_configure || return 1
  bench_build run_net_bench || return 1
  bench_use_cudnn "$bench"

  step "fovea vs PyTorch, whole nets (net_vs_pytorch.py)"
  local args=(--bench "$bench" --iters "${FV_NET_ITERS:-200}" --warmup "${FV_NET_WARMUP:-20}"
              --work "$out/work" --json "$out/net_vs_pytorch.json" --png "$out/net_ratios.png"
              --compile-budget "${FV_NET_COMPILE_BUDGET:-420}")
  [ -n "${FV_NET_CASES:-}" ] && args+=(--cases "$FV_NET_CASES")
  if [ "${FV_NET_AUTOTUNE:-1}" != 0 ]; then
    args+=(--autotune --profile "$out/fovea_net_profile.txt")
  elif [ -f "$out/fovea_net_profile.txt" ]; then
    args+=(--profile "$out/fovea_net_profile.txt")
  fi
  [ "${FV_NET_LAYERS:-20}" != 0 ] && args+=(--layers "${FV_NET_LAYERS:-20}")
  [ "${FV_NET_COMPILE:-0}" != 0 ] && args+=(--compile)
  timeout "${FV_NET_TIMEOUT:-480}" "$py" apps/bench/net_vs_pytorch.py "${args[@]}"
  local rc=$?
  echo "net_vs_pytorch.py: exit $rc"

  step "done"
  ls -l "$out"
  return $rc
}

main 2>&1 | tee "$out/run.log"
exit "${PIPESTATUS[0]}"
