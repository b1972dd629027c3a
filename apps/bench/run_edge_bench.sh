#!/usr/bin/env bash
# The edge-filter benchmark on a GPU machine, in one go (the issue's item 7):
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

step() { printf '\n==== %s (%s, %d s in)\n' "$1" "$(date +%T)" "$SECONDS"; }

# Where PyTorch's libcudnn lives: the file PyTorch maps after a convolution,
# else the nvidia.cudnn package. Prints the root (the folder above lib/).
torch_cudnn_root() {
  "$py" - <<'EOF'
import os, sys
root = None
try:
    import torch
    if torch.cuda.is_available():
        x = torch.randn(1, 8, 16, 16, device="cuda", dtype=torch.half)
        w = torch.randn(8, 8, 3, 3, device="cuda", dtype=torch.half)
        torch.nn.functional.conv2d(x, w, padding=1)
        torch.cuda.synchronize()
        for line in open("/proc/self/maps"):
            p = line[line.find("/"):].strip() if "/" in line else ""
            if os.path.basename(p).startswith("libcudnn.so"):
                root = os.path.dirname(os.path.dirname(os.path.realpath(p)))
                break
    print(f"PyTorch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, maps: {root}",
          file=sys.stderr)
except Exception as e:
    print(f"torch probe failed: {e}", file=sys.stderr)
if root is None:
    try:
        import nvidia.cudnn as m
        f = getattr(m, "__file__", None)
        root = os.path.dirname(f) if f else list(m.__path__)[0]
        print(f"nvidia.cudnn package: {root}", file=sys.stderr)
    except Exception as e:
        print(f"no nvidia.cudnn package: {e}", file=sys.stderr)
print(root or "")
EOF
}

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
  local cudnn_root cmake_cudnn=()
  cudnn_root=$(torch_cudnn_root)
  if [ -z "$cudnn_root" ] || ! compgen -G "$cudnn_root/lib/libcudnn.so*" >/dev/null; then
    echo "run_edge_bench: cannot find PyTorch's libcudnn (got '$cudnn_root'): stopping" >&2
    return 1
  fi
  ls -l "$cudnn_root"/lib/libcudnn.so* "$cudnn_root"/include/cudnn_version.h 2>&1
  if [ -f "$cudnn_root/include/cudnn_version.h" ]; then
    cmake_cudnn=(-DCUDNN_ROOT="$cudnn_root")
  else
    # headers from elsewhere (same major), the library from the wheel
    local inc=""
    for d in /usr/local/cuda/include /usr/include /usr/include/x86_64-linux-gnu; do
      [ -f "$d/cudnn_version.h" ] && inc=$d && break
    done
    if [ -z "$inc" ]; then
      echo "run_edge_bench: $cudnn_root has no include/cudnn_version.h and no other cuDNN" \
           "headers were found: stopping" >&2
      return 1
    fi
    local lib
    lib=$(ls "$cudnn_root"/lib/libcudnn.so* | head -1)
    echo "WARNING: the wheel ships no headers: compiling against $inc, linking $lib"
    cmake_cudnn=(-DCUDNN_INCLUDE_DIR="$inc" -DCUDNN_LIBRARY="$lib")
  fi
  grep -E "define CUDNN_(MAJOR|MINOR|PATCHLEVEL) " "$cudnn_root/include/cudnn_version.h" 2>/dev/null

  step "configure and build ($build, Release, CUDA architecture 90)"
  local extra=()
  if compgen -G ".deps/*.deb" >/dev/null; then
    rm -rf /tmp/fv-deps && mkdir -p /tmp/fv-deps
    for f in .deps/*.deb; do dpkg -x "$f" /tmp/fv-deps; done
    find /tmp/fv-deps -name '*.pc' -delete
    local z=/tmp/fv-deps/usr/lib/x86_64-linux-gnu
    rm -f "$z/libz.a"
    for sys in /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1; do
      [ -e "$sys" ] && ln -sf "$sys" "$z/libz.so" && break
    done
    export LD_LIBRARY_PATH=$z${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    extra+=(-DCMAKE_PREFIX_PATH=/tmp/fv-deps/usr -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
    echo "using .deps: $(ls .deps | tr '\n' ' ')"
  fi
  command -v ninja >/dev/null && [ ! -f "$build/Makefile" ] && extra+=(-G Ninja)
  if ! timeout 180 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DFV_BUILD_TESTS=OFF "${cmake_cudnn[@]}" "${extra[@]}" >"$out/build.log" 2>&1; then
    grep -E "Error|error|fovea" "$out/build.log" | head -20
    echo "run_edge_bench: configure failed (build.log)" >&2
    return 1
  fi
  grep -E "^-- fovea" "$out/build.log"
  if ! grep -q "backends CPU + CUDA" "$out/build.log"; then
    echo "run_edge_bench: fovea configured without its CUDA backend: stopping" >&2
    return 1
  fi
  if ! timeout 420 cmake --build "$build" -j"$(nproc)" --target fovea-bench >>"$out/build.log" 2>&1
  then
    grep -E "error|Error" "$out/build.log" | head -30
    echo "run_edge_bench: build failed (build.log)" >&2
    return 1
  fi
  echo "built $bench"
  export LD_LIBRARY_PATH=$cudnn_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  ldd "$bench" | grep -E "cudnn|cudart|fovea"

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
