#!/usr/bin/env bash
# The edge-filter benchmark on a GPU machine, in one go:
# builds fovea (Release, CUDA architecture 90) against PyTorch's own cuDNN,
# as run_conv_bench.sh does, then runs edge_vs_peers.py, which runs
#   fovea-bench edge   fv_pipeline end to end, copy floor, GPU-only (AUTO/fused
#                      and CONV), zero allocations; outputs checked on a photo
#                      against the CPU backend before anything is timed
# and PyTorch (plain and 3-stream loops, GPU-only) and OpenCV (1 thread, all
# threads) on the same frames, and prints the merged table with the targets.
# Usage (from anywhere): apps/bench/run_edge_bench.sh [OUTDIR [BUILDDIR]]
#   OUTDIR defaults to $OUT, else /tmp/fv-edge-bench. It receives: run.log
#   (everything printed), build.log, edge_table.txt (the final table),
#   edge_vs_peers.json (merged results and targets), fovea_edge.json
#   (fovea-bench edge's own). BUILDDIR defaults to <repo>/build-edge.
# Environment: PYTHON (python3), FV_EDGE_SIZES (1080p,4k), FV_EDGE_FORMATS
#   (rgb,yuyv), FV_EDGE_PEER_FRAMES (1000), FV_EDGE_PEER_RUNS (5),
#   FV_EDGE_ARGS (more fovea-bench edge options, e.g. "--frames 1000 --runs 3"),
#   FV_EDGE_NO_OPENCV=1 (skip OpenCV when cv2 is missing). Debian .debs in
#   .deps/ (libpng headers for the platform library) are unpacked and used.
# Exit status: edge_vs_peers.py's (0 all ran and checked, 1 a run or check
# failed, 2 missing tools), or 1 when the build fails.
set -uo pipefail
out=${1:-${OUT:-/tmp/fv-edge-bench}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$root/build-edge}
py=${PYTHON:-python3}
bench=$build/apps/bench/fovea-bench
export PYTHONUNBUFFERED=1

# step, torch_cudnn_root, bench_torch_cudnn, bench_deps, bench_configure,
# bench_build, bench_use_cudnn
# shellcheck source=apps/bench/bench_env.sh
source "$root/apps/bench/bench_env.sh" || exit 1

main() {
  cd "$root" || return 1
  step "machine"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,memory.total,pcie.link.gen.current,pcie.link.width.current \
    --format=csv 2>&1
  cmake --version | head -1
  "$py" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__,
"cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' || {
    echo "run_edge_bench: $py has no working torch: stopping" >&2; return 2; }
  "$py" -c 'import cv2; print("opencv", cv2.__version__)' ||
    echo "run_edge_bench: WARNING: no cv2 (set FV_EDGE_NO_OPENCV=1 to run without OpenCV)"

  step "PyTorch's cuDNN"
  local cudnn_root cmake_cudnn=() # set by bench_torch_cudnn
  bench_torch_cudnn run_edge_bench || return 1

  step "configure and build ($build, Release, CUDA architecture 90)"
  local extra=()
  bench_deps
  command -v ninja >/dev/null && [ ! -f "$build/Makefile" ] && extra+=(-G Ninja)
  if ! bench_configure; then
    echo "run_edge_bench: configure failed (build.log)" >&2
    return 1
  fi
  bench_build run_edge_bench || return 1
  bench_use_cudnn "$bench"

  step "fovea vs PyTorch and OpenCV (edge_vs_peers.py)"
  local peer=(--peer-frames "${FV_EDGE_PEER_FRAMES:-1000}" --peer-runs "${FV_EDGE_PEER_RUNS:-5}")
  [ "${FV_EDGE_NO_OPENCV:-0}" = 1 ] && peer+=(--no-opencv)
  rm -rf /tmp/fv-edge-dump && mkdir -p /tmp/fv-edge-dump
  # shellcheck disable=SC2086
  timeout 540 "$py" apps/bench/edge_vs_peers.py --bench "$bench" \
    --sizes "${FV_EDGE_SIZES:-1080p,4k}" --formats "${FV_EDGE_FORMATS:-rgb,yuyv}" "${peer[@]}" \
    --dump /tmp/fv-edge-dump --fovea-json "$out/fovea_edge.json" --json "$out/edge_vs_peers.json" \
    --table "$out/edge_table.txt" -- ${FV_EDGE_ARGS:-}
  local rc=$?
  echo "edge_vs_peers.py: exit $rc"
  step "done"
  ls -l "$out"
  return $rc
}

main 2>&1 | tee "$out/run.log"
exit "${PIPESTATUS[0]}"
