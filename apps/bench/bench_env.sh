# shellcheck shell=bash disable=SC2034,SC2154 # sets and reads the caller's variables
# Set-up shared by run_conv_bench.sh and run_edge_bench.sh, which source it
# (it is not run on its own). It defines functions only; they use the
# caller's $py (the Python with torch) and run from the repository root.

# step TITLE: a section header with the time and the seconds since the start.
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

# bench_torch_cudnn NAME: finds PyTorch's cuDNN and sets the caller's
# cudnn_root and cmake_cudnn (the CMake options that build against it; the
# caller declares both local). Returns 1, with a message prefixed NAME, when
# there is no libcudnn or no cuDNN headers to compile against.
bench_torch_cudnn() {
  local name=$1
  cudnn_root=$(torch_cudnn_root)
  if [ -z "$cudnn_root" ] || ! compgen -G "$cudnn_root/lib/libcudnn.so*" >/dev/null; then
    echo "$name: cannot find PyTorch's libcudnn (got '$cudnn_root'): stopping" >&2
    return 1
  fi
  ls -l "$cudnn_root"/lib/libcudnn.so* "$cudnn_root"/include/cudnn_version.h 2>&1
  if [ -f "$cudnn_root/include/cudnn_version.h" ]; then
    cmake_cudnn=(-DCUDNN_ROOT="$cudnn_root")
  else
    # headers from elsewhere (same major), the library from the wheel
    local inc="" d
    for d in /usr/local/cuda/include /usr/include /usr/include/x86_64-linux-gnu; do
      [ -f "$d/cudnn_version.h" ] && inc=$d && break
    done
    if [ -z "$inc" ]; then
      echo "$name: $cudnn_root has no include/cudnn_version.h and no other cuDNN" \
           "headers were found: stopping" >&2
      return 1
    fi
    local lib
    lib=$(ls "$cudnn_root"/lib/libcudnn.so* | head -1)
    echo "WARNING: the wheel ships no headers: compiling against $inc, linking $lib"
    cmake_cudnn=(-DCUDNN_INCLUDE_DIR="$inc" -DCUDNN_LIBRARY="$lib")
  fi
  grep -E "define CUDNN_(MAJOR|MINOR|PATCHLEVEL) " "$cudnn_root/include/cudnn_version.h" 2>/dev/null
  return 0
}

# bench_deps: the .debs in .deps/ (toolchain/device-deps.sh), their CMake
# options appended to the caller's array extra.
bench_deps() {
  # shellcheck source=toolchain/device-deps.sh
  source "$root/toolchain/device-deps.sh" && fv_device_deps
}

# bench_use_cudnn BENCH: puts the wheel's libcudnn (and the sub-libraries it
# opens) first on LD_LIBRARY_PATH (exported) and shows what BENCH links.
bench_use_cudnn() {
  export LD_LIBRARY_PATH=$cudnn_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  ldd "$1" | grep -E "cudnn|cudart|fovea"
}

# bench_configure: configures the caller's $build (Release, CUDA architecture
# 90, no tests; the caller's cmake_cudnn and extra options), the log in
# $out/build.log, and shows fovea's lines of it. Returns 1, after showing the
# log's errors, when the configure fails.
bench_configure() {
  if ! timeout 180 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DFV_BUILD_TESTS=OFF "${cmake_cudnn[@]}" "${extra[@]}" >"$out/build.log" 2>&1; then
    grep -E "Error|error|fovea" "$out/build.log" | head -20
    return 1
  fi
  grep -E "^-- fovea" "$out/build.log"
  return 0
}

# bench_build NAME: builds $bench (fovea-bench) in the configured $build, the
# log appended to $out/build.log. Returns 1, with a message prefixed NAME,
# when fovea was configured without its CUDA backend or the build fails.
bench_build() {
  local name=$1
  if ! grep -q "backends CPU + CUDA" "$out/build.log"; then
    echo "$name: fovea configured without its CUDA backend: stopping" >&2
    return 1
  fi
  if ! timeout 420 cmake --build "$build" -j"$(nproc)" --target fovea-bench >>"$out/build.log" 2>&1
  then
    grep -E "error|Error" "$out/build.log" | head -30
    echo "$name: build failed (build.log)" >&2
    return 1
  fi
  echo "built $bench"
}
