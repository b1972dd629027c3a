#!/usr/bin/env bash
# Several GPUs in one process, on a GPU machine, in one go: builds fovea
# (system cuDNN; .deps/ unpacked where no registry can be reached), runs
# test_gpu_threads (contexts on every device at once: device 0's bytes on
# each), writes ResNet-18's weights, input and FP32 reference
# (apps/common/net_models.py, on the CPU), then
#   fovea-bench devices   the edge pipeline (1080p RGB24 -> Laplacian ->
#                         GRAY8), its copies alone (no GPU work: what the
#                         host lets the copies scale to) and ResNet-18 b1
#                         replays on the first
#                         device alone, then on 2, 4, ... and all at once, a
#                         context and a thread each; each device's rate over
#                         the lone rate (goal >= 0.9), outputs byte-identical
#                         to the lone run's, the net checked against PyTorch
#   fovea-infer           four unpaced 1080p test:// cameras on device 0, then
#                         spread over FV_DEVICES_INFER (default 0,1): each
#                         worker's batches a second
# Usage (from anywhere): apps/bench/run_devices_bench.sh [OUTDIR]
#   OUTDIR defaults to $OUT, else /tmp/fv-devices-bench. It receives run.log,
#   devices.json and the test's log. (8 files at most come back from a
#   device call's $OUT: this writes 3.)
# Environment:
#   FV_DEVICES   the list for --devices (default all)
#   FV_FRAMES (3000), FV_ITERS (2000), FV_WARMUP (200)
#   FV_DEVICES_REUSE_BUILD 1: keep an existing build-devices
#   PYTHON       the Python with torch (python3)
set -uo pipefail
out=${1:-${OUT:-/tmp/fv-devices-bench}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
build=$root/build-devices
export PYTHONUNBUFFERED=1
step() { printf '\n==== %s (%s, %d s in)\n' "$1" "$(date +%T)" "$SECONDS"; }

main() {
  cd "$root" || return 1
  step "machine"
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,clocks.sm,memory.used,memory.total \
    --format=csv 2>&1
  nvidia-smi topo -m 2>&1 | head -12

  step "configure and build (build-devices, CUDA architecture 90)"
  local extra=()
  # shellcheck source=toolchain/device-deps.sh
  source toolchain/device-deps.sh && fv_device_deps
  [ "${FV_DEVICES_REUSE_BUILD:-0}" = 1 ] || rm -rf "$build"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DFV_TEST_PYTHON="$(command -v "$py")" "${extra[@]}" >"$out/build.log" 2>&1 &&
    cmake --build "$build" -j"$(nproc)" --target fovea-bench test_gpu_threads fovea-infer \
      test_infer_app >>"$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log"; return 1; }

  step "test_gpu_threads (contexts in threads; on every device at once)"
  timeout 300 "$build/tests/gpu/test_gpu_threads" 2>&1 | tail -20
  local trc=${PIPESTATUS[0]}
  echo "test_gpu_threads: exit $trc"

  step "weights (net_models.py, resnet18:1:224)"
  "$py" apps/common/net_models.py --out "$build/nets" --case resnet18:1:224 || return 1

  step "fovea-bench devices"
  timeout 420 "$build/apps/bench/fovea-bench" devices --devices "${FV_DEVICES:-all}" \
    --work edge,copy,net --frames "${FV_FRAMES:-3000}" --iters "${FV_ITERS:-2000}" \
    --warmup "${FV_WARMUP:-200}" --model resnet18 --weights "$build/nets/resnet18.fvw" \
    --io "$build/nets/resnet18_n1_s224.io.fvw" --json "$out/devices.json"
  local rc=$?
  echo "fovea-bench devices: exit $rc"

  step "fovea-infer: four unpaced 1080p test:// cameras on device 0, then spread (--device ${FV_DEVICES_INFER:-0,1})"
  local cams=() i irc=0
  for i in 1 2 3 4; do cams+=(--input "test://?fps=0"); done
  for d in 0 "${FV_DEVICES_INFER:-0,1}"; do
    timeout 120 "$build/apps/fovea-infer/fovea-infer" --backend cuda --device "$d" --cuda-graph \
      --json --quiet --frames 2000 --input-width 1920 --input-height 1080 "${cams[@]}" \
      null:// null:// null:// null:// >"$build/infer_$d.json"
    local r=$?
    [ $r = 0 ] || irc=1
    echo "--device $d: exit $r$([ $r = 124 ] && echo ' (killed after 120 s)')"
    grep '"type":"summary"' "$build/infer_$d.json" | python3 -c '
import json, sys
for line in sys.stdin:
    s = json.loads(line)
    print("  device %d: %d batches of %d at %.1f batches/s (%d cameras), ok %s" % (
        s["device_index"], s["batches"], s["batch"], s["fps"], len(s["cameras"]), s["ok"]))'
  done
  [ $irc = 0 ] || rc=1

  step "fovea-infer's tests on CUDA (--device 0,0 among them)"
  (cd "$build" && timeout 200 ctest -R 'app_infer_.*_gpu' --output-on-failure 2>&1 | tail -15)
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
  step "done"
  [ "$trc" = 0 ] || return "$trc"
  return $rc
}

main 2>&1 | tee "$out/run.log"
exit "${PIPESTATUS[0]}"
