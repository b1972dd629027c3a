#!/usr/bin/env bash
# The convolution benchmark on a GPU machine, in one go: builds fovea against
# PyTorch's own cuDNN (the nvidia-cudnn wheel PyTorch loads), then runs
#   conv_vs_pytorch.py   fovea heuristic / autotuned / cuDNN-only autotuned /
#                        fused, legacy cuDNN Find and PyTorch on the 15 best-practices shapes; writes a
#                        warm profile and times ops made from it (in the same
#                        process, then in a fresh one; each op created
#                        FV_CONV_PROFILE_REPEATS times, medians)
#   fovea-bench conv-tables   the talk's other tables
# Usage (from anywhere): apps/bench/run_conv_bench.sh [OUTDIR]
#   OUTDIR defaults to $OUT, else /tmp/fv-conv-bench. It receives 8 files:
#   run.log (everything printed), build.log, conv_vs_pytorch.json (the combined
#   results and targets), fovea_conv.json (fovea-bench conv's own),
#   conv_ratios.png, fovea_profile.txt, conv_profile_fresh.json, conv_tables.json
# Environment: FV_CONV_ITERS (100), FV_CONV_WARMUP (10), FV_CONV_SHAPES (all),
#   FV_CONV_CACHE (flush|rotate), FV_CONV_PROFILE_REPEATS (5), FV_CONV_TABLES
#   (1; 0 skips conv-tables), PYTHON (python3). Debian .debs in .deps/
#   (libpng, libjpeg headers for the platform library) are unpacked and used,
#   as toolchain/device-check.sh does.
set -uo pipefail
out=${1:-${OUT:-/tmp/fv-conv-bench}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
build=$root/build-torchcudnn
bench=$build/apps/bench/fovea-bench
iters=${FV_CONV_ITERS:-100}
warmup=${FV_CONV_WARMUP:-10}
shapes=${FV_CONV_SHAPES:-all}
cache=${FV_CONV_CACHE:-flush}
profile_repeats=${FV_CONV_PROFILE_REPEATS:-5}
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
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,memory.total \
    --format=csv 2>&1
  command -v nvcc >/dev/null && nvcc --version | tail -1
  ls -l /usr/local/cuda/bin/nvcc 2>&1 | head -1
  cmake --version | head -1
  "$py" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__,
"cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'

  step "PyTorch's cuDNN"
  local cudnn_root cmake_cudnn=()
  cudnn_root=$(torch_cudnn_root)
  if [ -z "$cudnn_root" ] || ! compgen -G "$cudnn_root/lib/libcudnn.so*" >/dev/null; then
    echo "run_conv_bench: cannot find PyTorch's libcudnn (got '$cudnn_root'): stopping" >&2
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
      echo "run_conv_bench: $cudnn_root has no include/cudnn_version.h and no other cuDNN" \
           "headers were found: stopping" >&2
      return 1
    fi
    local lib
    lib=$(ls "$cudnn_root"/lib/libcudnn.so* | head -1)
    echo "WARNING: the wheel ships no headers: compiling against $inc, linking $lib"
    cmake_cudnn=(-DCUDNN_INCLUDE_DIR="$inc" -DCUDNN_LIBRARY="$lib")
  fi
  grep -E "define CUDNN_(MAJOR|MINOR|PATCHLEVEL) " "$cudnn_root/include/cudnn_version.h" 2>/dev/null

  step "configure and build (build-torchcudnn, CUDA architecture 90)"
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
  command -v ninja >/dev/null && extra+=(-G Ninja)
  rm -rf "$build"
  if ! timeout 180 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DFV_BUILD_TESTS=OFF "${cmake_cudnn[@]}" "${extra[@]}" >"$out/build.log" 2>&1; then
    grep -E "Error|error|fovea" "$out/build.log" | head -20
    if grep -q "fovea_platform needs libpng" "$out/build.log"; then
      echo "run_conv_bench: configure failed: the platform library needs libpng and libjpeg" \
           "headers, which this machine lacks; carry their .debs in .deps/ (see" \
           "toolchain/device-check.sh) or give the build an option to skip platform/" >&2
    fi
    return 1
  fi
  grep -E "^-- fovea" "$out/build.log"
  grep -E "^CUDNN_(LIBRARY|INCLUDE_DIR):" "$build/CMakeCache.txt"
  if ! grep -q "backends CPU + CUDA" "$out/build.log"; then
    echo "run_conv_bench: fovea configured without its CUDA backend: stopping" >&2
    return 1
  fi
  if ! timeout 420 cmake --build "$build" -j"$(nproc)" --target fovea-bench >>"$out/build.log" 2>&1
  then
    grep -E "error|Error" "$out/build.log" | head -30
    echo "run_conv_bench: build failed (build.log)" >&2
    return 1
  fi
  echo "built $bench"

  # the wheel's libcudnn (and the sub-libraries it opens) first
  export LD_LIBRARY_PATH=$cudnn_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  ldd "$bench" | grep -E "cudnn|cudart|fovea"

  step "fovea vs PyTorch (conv_vs_pytorch.py; the warm profile also in a fresh process)"
  rm -f "$out/fovea_profile.txt"
  timeout 420 "$py" apps/bench/conv_vs_pytorch.py --bench "$bench" --iters "$iters" \
    --warmup "$warmup" --shapes "$shapes" --cache "$cache" --profile "$out/fovea_profile.txt" \
    --profile-repeats "$profile_repeats" \
    --fresh-json "$out/conv_profile_fresh.json" --fovea-json "$out/fovea_conv.json" \
    --json "$out/conv_vs_pytorch.json" \
    --png "$out/conv_ratios.png"
  echo "conv_vs_pytorch.py: exit $?"

  if [ "${FV_CONV_TABLES:-1}" != 0 ]; then
    step "conv-tables"
    timeout 240 "$bench" conv-tables --cache "$cache" --json "$out/conv_tables.json"
    echo "conv-tables: exit $?"
  fi

  step "done"
  ls -l "$out"
}

main 2>&1 | tee "$out/run.log"
exit "${PIPESTATUS[0]}"
