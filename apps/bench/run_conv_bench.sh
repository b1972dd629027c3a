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
#   (1; 0 skips conv-tables), FV_CONV_TIMEOUT (480: seconds for conv_vs_pytorch.py),
#   PYTHON (python3). Debian .debs in .deps/
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

# step, torch_cudnn_root, bench_torch_cudnn, bench_deps, bench_configure,
# bench_build, bench_use_cudnn
# shellcheck source=apps/bench/bench_env.sh
source "$root/apps/bench/bench_env.sh" || exit 1

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
  local cudnn_root cmake_cudnn=() # set by bench_torch_cudnn
  bench_torch_cudnn run_conv_bench || return 1

  step "configure and build (build-torchcudnn, CUDA architecture 90)"
  local extra=()
  bench_deps
  command -v ninja >/dev/null && extra+=(-G Ninja)
  rm -rf "$build"
  if ! bench_configure; then
    if grep -q "fovea_platform needs libpng" "$out/build.log"; then
      echo "run_conv_bench: configure failed: the platform library needs libpng and libjpeg" \
           "headers, which this machine lacks; carry their .debs in .deps/ (see" \
           "toolchain/device-check.sh) or give the build an option to skip platform/" >&2
    fi
    return 1
  fi
  grep -E "^CUDNN_(LIBRARY|INCLUDE_DIR):" "$build/CMakeCache.txt"
  bench_build run_conv_bench || return 1

  bench_use_cudnn "$bench"

  step "fovea vs PyTorch (conv_vs_pytorch.py; the warm profile also in a fresh process)"
  rm -f "$out/fovea_profile.txt"
  timeout "${FV_CONV_TIMEOUT:-480}" "$py" apps/bench/conv_vs_pytorch.py --bench "$bench" --iters "$iters" \
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
