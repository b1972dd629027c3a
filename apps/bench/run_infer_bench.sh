#!/usr/bin/env bash
# The camera inference app's benchmark (fovea-infer) on a GPU machine, in one
# go: builds fovea-infer (Release, build-infer-bench), exports MobileNetV2
# (tests/models/export_models.py: batch 1, 224x224), then runs
# infer_vs_pytorch.py: fovea-infer against the same loop in PyTorch (CUDA
# graph), 1 vs 4 cameras through the segmentation net, and the latency of a
# paced camera; a table of the targets, JSON.
# Usage (from anywhere): apps/bench/run_infer_bench.sh [OUTDIR]
#   OUTDIR defaults to $OUT, else /tmp/fv-infer-bench; it receives build.log,
#   run.log, infer_vs_pytorch.json and models/.
# Environment: FV_INFER_W / FV_INFER_H (1920 x 1080), FV_INFER_FRAMES (2000),
#   FV_INFER_SECONDS (8, per run), PYTHON (python3, with torch and torchvision).
set -uo pipefail
out=${1:-${OUT:-/tmp/fv-infer-bench}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
build=$root/build-infer-bench
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.total --format=csv 2>&1
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 &&
    cmake --build "$build" -j"$(nproc)" --target fovea-infer
} > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
"$py" "$root/tests/models/export_models.py" "$out/models" mobilenet_v2 > "$out/export.log" 2>&1 ||
  { cat "$out/export.log"; exit 1; }
"$py" "$root/apps/bench/infer_vs_pytorch.py" --infer "$build/apps/fovea-infer/fovea-infer" \
  --classifier "$out/models/mobilenet_v2.onnx" \
  --segmenter "$root/apps/fovea-infer/models/fashion_seg/fashion_seg.onnx" \
  --width "${FV_INFER_W:-1920}" --height "${FV_INFER_H:-1080}" \
  --frames "${FV_INFER_FRAMES:-2000}" --seconds "${FV_INFER_SECONDS:-8}" \
  --json "$out/infer_vs_pytorch.json" 2>&1 | tee "$out/run.log"
exit "${PIPESTATUS[0]}"
