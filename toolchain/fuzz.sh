#!/usr/bin/env bash
# Builds every libFuzzer target (clang, CPU-only, -DFV_BUILD_FUZZERS=ON) and
# runs each for a bounded time on a copy of its seed corpus
# (tests/fuzz/corpus/<target>/), then prints target / execs / corpus /
# result. Exits 1 on any crash, leak, timeout or OOM; the input that caused
# it is kept under tests/fuzz/crashes/<target>/ (its path is printed; add it
# to the target's corpus as a regression seed once fixed).
# Usage: toolchain/fuzz.sh [BUILD_DIR [SECONDS_PER_TARGET]]
#   BUILD_DIR: build-fuzz; SECONDS_PER_TARGET: 45.
#   FV_FUZZ_TARGETS="fuzz_image fuzz_uri": only these.
#   FV_FUZZ_ONNX_MODELS=DIR: exported models (tests/models/export_models.py)
#   added to fuzz_onnx's seeds, those up to 1 MB (default: build/tests/models/
#   exported, which toolchain/test.sh's run makes); ONNX's node tests
#   (Debian libonnx-testdata) are added where installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-fuzz}
secs=${2:-45}
case $build in /*) ;; *) build=$root/$build ;; esac
case $secs in '' | *[!0-9]*) echo "fuzz: SECONDS_PER_TARGET '$secs' is not a number" >&2; exit 2 ;; esac
all=(fuzz_profile fuzz_image fuzz_mjpeg fuzz_uri fuzz_cli fuzz_onnx)
read -r -a targets <<<"${FV_FUZZ_TARGETS:-${all[*]}}"
"$root/toolchain/install-deps.sh"
cc=${FV_FUZZ_CC:-clang}
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "fuzz: $cc not found (toolchain/install-deps.sh installs clang)" >&2
  exit 1
fi

# Only what the fuzzers need: no apps, no CUDA.
mkdir -p "$build"
CC=$cc cmake -S "$root" -B "$build" -DFV_BUILD_FUZZERS=ON -DFV_WITH_CUDA=OFF -DFV_BUILD_APPS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFV_WERROR=ON >"$build/fuzz-configure.log" 2>&1 || {
  cat "$build/fuzz-configure.log" >&2
  exit 1
}
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >"$build/fuzz-build.log" 2>&1 || {
  tail -50 "$build/fuzz-build.log" >&2
  exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/fv-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
crashes=$root/tests/fuzz/crashes
onnx_models=${FV_FUZZ_ONNX_MODELS:-$root/build/tests/models/exported}
fail=0
rows=()
for t in "${targets[@]}"; do
  exe=$build/tests/fuzz/$t
  if [ ! -x "$exe" ]; then
    echo "fuzz: $exe was not built" >&2
    rows+=("$t|-|-|not built")
    fail=1
    continue
  fi
  corpus=$work/$t/corpus
  mkdir -p "$corpus" "$work/$t/artifacts"
  cp "$root/tests/fuzz/corpus/$t"/* "$corpus"/ 2>/dev/null || true
  opts=(-max_len=65536)
  if [ "$t" = fuzz_onnx ]; then
    if [ -d "$onnx_models" ]; then
      find "$onnx_models" -maxdepth 1 -name '*.onnx' -size -1024k -exec cp {} "$corpus"/ \;
    fi
    for d in /usr/share/libonnx-testdata/data/node/test_*; do
      [ -f "$d/model.onnx" ] && cp "$d/model.onnx" "$corpus/$(basename "$d").onnx"
    done
    opts=(-max_len=1048576)
  fi
  seeds=$(find "$corpus" -type f | wc -l)
  log=$work/$t/log
  # close_fd_mask=2: the parsers under test may print usage errors;
  # libFuzzer and the sanitizers still report on their own copy of stderr.
  rc=0
  (cd "$work/$t" && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$exe" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -close_fd_mask=2 \
    -print_final_stats=1 -artifact_prefix="$work/$t/artifacts/" "${opts[@]}" "$corpus") \
    >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  size=$(find "$corpus" -type f | wc -l)
  result=ok
  if [ $rc -ne 0 ]; then
    fail=1
    result=$(grep -oE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer): [a-z-]+|SUMMARY: [A-Za-z]+: [a-z-]+' "$log" | head -1 || true)
    [ -n "$result" ] || result="exit $rc"
    mkdir -p "$crashes/$t"
    for a in "$work/$t/artifacts"/*; do
      [ -f "$a" ] || continue
      cp "$a" "$crashes/$t/"
      echo "fuzz: $t: $result: input kept in $crashes/$t/$(basename "$a")" >&2
    done
    cp "$log" "$crashes/$t/last.log"
    echo "fuzz: $t: log in $crashes/$t/last.log; its last lines:" >&2
    tail -30 "$log" >&2
  fi
  rows+=("$t|${execs:-?}|$seeds -> $size|$result")
done

printf '%-14s %12s %16s  %s\n' target execs corpus result
for r in "${rows[@]}"; do
  IFS='|' read -r t e c res <<<"$r"
  printf '%-14s %12s %16s  %s\n' "$t" "$e" "$c" "$res"
done
if [ $fail -ne 0 ]; then
  echo "fuzz: FAILED (inputs under $crashes)" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${secs} s each: no crash, leak, timeout or OOM"
