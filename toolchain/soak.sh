#!/usr/bin/env bash
# Long-run soak: memory stays flat over many frames.
#
# Runs fovea-edge (CPU backend, test:// at 64x48 unpaced, to null://) for
# EDGE_FRAMES frames, then fovea-infer (CPU backend, the default
# Fashion-MNIST model, test:// at 64x48 unpaced, to null://) for
# INFER_FRAMES batches, each with --json. Every second it reads the
# process's VmRSS, VmHWM and RssAnon from /proc/PID/status. The samples of the first
# FV_SOAK_WARMUP_S seconds (default 3) are the warm-up (pools, caches, the
# latency reservoir filling); the first sample after it is the baseline.
# A program fails the soak when
#   - its anonymous RSS (RssAnon: heap and private mappings, where a leak
#     grows; VmRSS where the kernel has no RssAnon) at the end (the larger
#     of the last two samples: the last may catch the program's teardown
#     freeing its pools, which would hide a leak as large as them) is
#     more than FV_SOAK_BOUND_KB (default 2048) above the baseline: an
#     absolute bound, as most of the RSS is the libraries mapped (CUDA's
#     among them: ~160 MB), which a percentage would hide a leak behind. The
#     libraries' file-backed pages are left out: their exit handlers
#     (cuBLASLt's) page in 45-58 MB of code, which a sample taken as the
#     process ended saw (soak_short failed on it now and then);
#   - fewer than 3 samples follow the warm-up (the run is too short to say);
#   - it exits non-zero, its JSON summary is missing, not ok, has another
#     frame count, or reports pool carve-outs while running (both programs
#     report pool_carve_outs_while_running).
# It prints each program's samples (at most 30 rows, evenly spaced, and the
# last) and a line of figures: frames, seconds, RSS baseline/end/peak.
#
# On a GPU (FV_SOAK_BACKEND=cuda, or FV_SOAK_GPU_MEM=1) the GPU's memory in
# use (nvidia-smi) is sampled beside the RSS and must stay within FV_SOAK_GPU_BOUND_MB (default 2)
# of its baseline; FV_SOAK_SIZE (WxH, default 64x48; 1920x1080 for the
# issue's GPU soak) sets the frames, and FV_SOAK_ENGINES (default "auto")
# the fovea-edge filter engines to soak one after the other (auto, fused,
# direct, conv), each for EDGE_FRAMES frames.
#
# Usage: toolchain/soak.sh [BUILD_DIR [EDGE_FRAMES [INFER_FRAMES]]]
#   BUILD_DIR: build (with the apps built); EDGE_FRAMES: 1000000;
#   INFER_FRAMES: EDGE_FRAMES / 10. 0 skips that program.
# Exit status: 0 flat, 1 a program failed the soak, 2 bad arguments or
# programs not built. ctest's soak_short (label unit) runs 200000 and 5000
# frames (docs/building.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
edge_frames=${2:-1000000}
infer_frames=${3:-$((edge_frames / 10))}
warmup=${FV_SOAK_WARMUP_S:-3}
bound_kb=${FV_SOAK_BOUND_KB:-2048}
backend=${FV_SOAK_BACKEND:-cpu}
size=${FV_SOAK_SIZE:-64x48}
engines=${FV_SOAK_ENGINES:-auto}
gpu_bound_mb=${FV_SOAK_GPU_BOUND_MB:-2}
case $backend in cpu | cuda) ;; *) echo "soak: FV_SOAK_BACKEND=$backend: use cpu or cuda" >&2; exit 2 ;; esac
case $size in [1-9]*x[1-9]*) ;; *) echo "soak: FV_SOAK_SIZE=$size: use WxH" >&2; exit 2 ;; esac
width=${size%x*} height=${size#*x}
# FV_SOAK_GPU_MEM (default: 1 on cuda, else 0) samples the GPU's memory
gpu_sample=${FV_SOAK_GPU_MEM:-$([ "$backend" = cuda ] && echo 1 || echo 0)}
gpu_mem() { # MiB in use on GPU 0, or nothing where nvidia-smi cannot tell
  [ "$gpu_sample" = 1 ] || return 0
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null | head -1 | tr -d ' '
}
case $build in /*) ;; *) build=$PWD/$build ;; esac
for v in "$edge_frames" "$infer_frames" "$warmup" "$bound_kb"; do
  case $v in '' | *[!0-9]*)
    echo "soak: '$v' is not a whole number (usage: soak.sh [BUILD_DIR [EDGE_FRAMES [INFER_FRAMES]]])" >&2
    exit 2
    ;;
  esac
done

work=$(mktemp -d "${TMPDIR:-/tmp}/fv-soak.XXXXXX")
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# soak NAME FRAMES FRAMES_KEY EXE ARGS...: runs EXE ARGS, sampling its memory.
fail=0
soak() {
  local name=$1 frames=$2 key=$3 exe=$4
  shift 4
  if [ ! -x "$exe" ]; then
    echo "soak: $exe is not built (cmake --build $build --target $(basename "$exe"))" >&2
    exit 2
  fi
  local out=$work/$name.json err=$work/$name.err samples=$work/$name.samples
  : >"$samples"
  local t0 rc=0
  t0=$(date +%s.%N)
  "$exe" "$@" >"$out" 2>"$err" &
  pid=$!
  while [ -r "/proc/$pid/status" ]; do
    # VmRSS, VmHWM and RssAnon (VmRSS where there is none) in kB; nothing
    # once the process has exited (a zombie has no Vm lines).
    local line
    line=$(awk '/^VmRSS:/ {r = $2} /^VmHWM:/ {h = $2} /^RssAnon:/ {a = $2}
                END {if (r != "") print r, h, (a != "" ? a : r)}' \
      "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$line" ] || break
    echo "$(date +%s.%N) $line $(gpu_mem)" >>"$samples"
    sleep 1
  done
  wait "$pid" || rc=$?
  pid=
  local t1
  t1=$(date +%s.%N)

  local why=()
  [ $rc -eq 0 ] || why+=("exit status $rc: $(tail -3 "$err" | tr '\n' ' ')")
  local summary
  summary=$(grep '"type":"summary"' "$out" | tail -1 || true)
  if [ -z "$summary" ]; then
    why+=("no JSON summary")
  else
    case $summary in *'"ok":true'*) ;; *) why+=("summary not ok") ;; esac
    case $summary in *"\"$key\":$frames,"*) ;; *) why+=("summary does not say $key $frames") ;; esac
    case $summary in
      *'"pool_carve_outs_while_running":0,'*) ;;
      *'"pool_carve_outs_while_running":'*) why+=("pool carve-outs while running") ;;
    esac
  fi

  # The table and the verdict on memory, from the samples.
  local verdict
  verdict=$(awk -v t0="$t0" -v t1="$t1" -v warm="$warmup" -v bound="$bound_kb" \
    -v name="$name" -v frames="$frames" -v gbound="$gpu_bound_mb" '
    { t[NR] = $1 - t0; vm[NR] = $2; hwm[NR] = $3; rss[NR] = $4; g[NR] = $5 }
    END {
      n = NR; base = 0
      for (i = 1; i <= n; i++) if (t[i] >= warm) { base = i; break }
      step = n > 30 ? int((n + 29) / 30) : 1
      printf "  %8s %12s %12s %12s %12s\n", "t (s)", "RssAnon (kB)", "VmRSS (kB)", "VmHWM (kB)", "GPU (MiB)" > "/dev/stderr"
      for (i = 1; i <= n; i++)
        if ((i - 1) % step == 0 || i == n || i == base)
          printf "  %8.1f %12d %12d %12d %12s%s\n", t[i], rss[i], vm[i], hwm[i], (g[i] == "" ? "-" : g[i]), (i == base ? "  <- baseline" : "") > "/dev/stderr"
      if (base == 0 || n - base + 1 < 3) {
        printf "FAIL %d samples after the %d s warm-up (fewer than 3): run more frames\n", base ? n - base + 1 : 0, warm
        exit
      }
      peak = 0
      for (i = base; i <= n; i++) if (rss[i] > peak) peak = rss[i]
      # The end is the larger of the last two samples after the baseline:
      # the last one may catch the program tearing down (its pools freed,
      # which would hide a leak as large as them).
      end = rss[n]
      if (n - 1 > base && rss[n - 1] > end) end = rss[n - 1]
      grew = end - rss[base]
      gtxt = ""; gbad = 0
      if (g[base] != "" && g[n] != "") {
        gmax = 0
        for (i = base; i <= n; i++) if (g[i] - g[base] > gmax) gmax = g[i] - g[base]
        gbad = gmax > gbound
        gtxt = sprintf("; GPU memory after warm-up %d MiB, at most %+d MiB above it (bound %d MiB)", g[base], gmax, gbound)
      }
      printf "%s %s: %d frames in %.1f s (%.0f/s); anonymous RSS after warm-up %d kB, at the end %d kB (%+d kB, bound %d kB), peak after warm-up %d kB; VmRSS at the end %d kB, VmHWM %d kB%s\n", \
        (grew > bound || gbad ? "FAIL" : "ok"), name, frames, t1 - t0, frames / (t1 - t0), rss[base], end, grew, bound, peak, vm[n], hwm[n], gtxt
    }' "$samples")
  case $verdict in
    FAIL*' samples after'*) why+=("${verdict#FAIL }") ;;
    FAIL*) why+=("memory grew past a bound") && echo "soak: ${verdict#* }" ;;
    *) echo "soak: ${verdict#* }" ;;
  esac
  if [ ${#why[@]} -gt 0 ]; then
    fail=1
    for w in "${why[@]}"; do echo "soak: $name: FAILED: $w" >&2; done
  fi
}

frames_src="test://?fps=0"
if [ "$edge_frames" -gt 0 ]; then
  for engine in $engines; do
    name=fovea-edge
    [ "$engines" = auto ] || name=fovea-edge-$engine
    soak "$name" "$edge_frames" frames_out "$build/apps/fovea-edge/fovea-edge" \
      --backend "$backend" --engine "$engine" --frames "$edge_frames" --input-width "$width" \
      --input-height "$height" --json --quiet "$frames_src" null://
  done
fi
if [ "$infer_frames" -gt 0 ]; then
  soak fovea-infer "$infer_frames" batches "$build/apps/fovea-infer/fovea-infer" \
    --backend "$backend" --frames "$infer_frames" --input "$frames_src" --input-width "$width" \
    --input-height "$height" --model "$root/tests/models/fashion_mnist/fashion_mnist.onnx" --json \
    --quiet null://
fi
if [ $fail -ne 0 ]; then
  echo "soak: FAILED" >&2
  exit 1
fi
echo "soak: memory flat (at most ${bound_kb} kB of growth after a ${warmup} s warm-up)"
