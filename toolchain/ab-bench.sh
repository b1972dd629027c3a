#!/usr/bin/env bash
# An A/B on a GPU machine in one job: builds fovea-bench from the base
# revision that toolchain/ab-prepare.sh wrote into .ab (a copy of this tree
# with the base's files) beside this tree's, runs the same fovea-bench
# command from each, alternating (base, new, base, new, ...), and compares
# them case by case (apps/bench/ab_compare.py).
# Usage: toolchain/ab-bench.sh [-r ROUNDS] [-o OUTDIR] BENCH ARGS...
#   e.g. toolchain/ab-bench.sh -r 2 filter --sizes 4k --kinds sobel --batch 30 --runs 3
#   ROUNDS: runs of each build (default 2); OUTDIR: default $OUT/ab or /tmp/fv-ab.
#   FV_AB_BASE_CMAKE_ARGS / FV_AB_NEW_CMAKE_ARGS: extra configure arguments of
#   one build (an A/B of compile flags: prepare with BASE=HEAD).
#   FV_AB_BASE_CUDA_FLAGS / FV_AB_NEW_CUDA_FLAGS: one build's CMAKE_CUDA_FLAGS,
#   passed whole (several -D knobs at once: "-DA=1 -DB=2").
#   FV_AB_DIR: the prepared folder (default .ab); FV_CUDA_ARCH: default 90 (H100, H200).
#   FV_AB_REUSE=1: where both builds of an earlier ab-bench on this machine
#   are there, run them again without building (a second benchmark of the
#   same pair of builds in the same job).
# Writes OUTDIR/{base,new}N.{json,txt}, OUTDIR/ab.txt and OUTDIR/ab.json; the
# table is printed last. Exit status: 0, 1 (a build or run failed), 2 (usage).
set -uo pipefail
rounds=2
out=${OUT:+$OUT/ab}
out=${out:-/tmp/fv-ab}
while getopts "r:o:" o; do
  case $o in
  r) rounds=$OPTARG ;;
  o) out=$OPTARG ;;
  *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -lt 1 ]; then
  echo "usage: $0 [-r ROUNDS] [-o OUTDIR] BENCH ARGS...   (after toolchain/ab-prepare.sh BASE)" >&2
  exit 2
fi
case $rounds in '' | *[!0-9]* | 0)
  echo "ab-bench: ROUNDS must be a positive integer, not '$rounds'" >&2
  exit 2
  ;;
esac
out=$(realpath -m "$out") # relative to the caller's folder, before the cd below
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
ab=${FV_AB_DIR:-.ab}
if [ ! -f "$ab/REV" ]; then
  echo "ab-bench: no $ab/REV: run toolchain/ab-prepare.sh BASE here first (and carry $ab)" >&2
  exit 2
fi
mkdir -p "$out"
rm -f "$out"/base*.json "$out"/new*.json
t0=$(date +%s)
extra=()
# shellcheck source=toolchain/device-deps.sh
source toolchain/device-deps.sh && fv_device_deps >/dev/null
base=/tmp/fv-ab-base
reuse=0
if [ "${FV_AB_REUSE:-0}" = 1 ] && [ -x "$base/build/apps/bench/fovea-bench" ] &&
  [ -x build-ab/apps/bench/fovea-bench ]; then
  reuse=1
else
  rm -rf "$base" && mkdir -p "$base"
  tar --exclude="./build*" --exclude="./$ab" --exclude=./.deps --exclude=./.scratch -cf - . |
    tar -xf - -C "$base"
  cp -r "$ab/base/." "$base/"
  while IFS= read -r f; do [ -n "$f" ] && rm -f "$base/$f"; done <"$ab/absent"
fi
echo "ab-bench: base $(cut -c1-12 "$ab/REV") in $base, new: this tree; $rounds rounds of: fovea-bench $*"
configure() { # SRC BUILD EXTRA...
  local src=$1 bld=$2
  shift 2
  cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=Release -DFV_WERROR=ON \
    -DCMAKE_CUDA_ARCHITECTURES="${FV_CUDA_ARCH:-90}" \
    ${CUDNN_ROOT:+-DCUDNN_ROOT=$CUDNN_ROOT} "${extra[@]}" "$@" >"$out/configure-$(basename "$bld").log" 2>&1
}
jobs=$(($(nproc) / 2 > 0 ? $(nproc) / 2 : 1))
if [ $reuse = 1 ]; then
  echo "ab-bench: FV_AB_REUSE=1: the builds already there, not rebuilt"
else
  # shellcheck disable=SC2086
  (configure "$base" "$base/build" ${FV_AB_BASE_CMAKE_ARGS:-} \
    ${FV_AB_BASE_CUDA_FLAGS:+"-DCMAKE_CUDA_FLAGS=$FV_AB_BASE_CUDA_FLAGS"} &&
    cmake --build "$base/build" -j"$jobs" --target fovea-bench >"$out/build-base.log" 2>&1) &
  pb=$!
  # shellcheck disable=SC2086
  (configure . build-ab ${FV_AB_NEW_CMAKE_ARGS:-} \
    ${FV_AB_NEW_CUDA_FLAGS:+"-DCMAKE_CUDA_FLAGS=$FV_AB_NEW_CUDA_FLAGS"} &&
    cmake --build build-ab -j"$jobs" --target fovea-bench >"$out/build-new.log" 2>&1) &
  pn=$!
  fail=0
  wait $pb || { echo "ab-bench: the base build failed: $out/build-base.log" >&2; fail=1; }
  wait $pn || { echo "ab-bench: the new build failed: $out/build-new.log" >&2; fail=1; }
  [ $fail = 0 ] || exit 1
  echo "ab-bench: built in $(($(date +%s) - t0)) s"
fi
for r in $(seq 1 "$rounds"); do
  for v in base new; do
    b=build-ab/apps/bench/fovea-bench
    [ $v = base ] && b=$base/build/apps/bench/fovea-bench
    if ! "$b" "$@" --json "$out/$v$r.json" >"$out/$v$r.txt" 2>&1; then
      echo "ab-bench: the $v build's run $r failed: $out/$v$r.txt" >&2
      tail -5 "$out/$v$r.txt" >&2
      exit 1
    fi
    echo "ab-bench: $v run $r done at $(($(date +%s) - t0)) s"
  done
done
"${PYTHON:-python3}" apps/bench/ab_compare.py --base "$out"/base*.json --new "$out"/new*.json \
  --json "$out/ab.json" | tee "$out/ab.txt"
