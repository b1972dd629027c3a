#!/bin/sh
# toolchain/compute-sanitizer.sh without a GPU: a stand-in compute-sanitizer
# on PATH answers for three of the build's gpu-labelled programs (clean; one
# racecheck error; a hang past the time limit). The script must count the
# errors, name the timeout, pass FV_SANITIZER_ARGS and NVIDIA's kernels'
# exclusions (racecheck only), exit 1, stop starting programs at its
# deadline, and exit 0 when every program is clean.
# Usage: test_compute_sanitizer.sh SANITIZER_SH BUILD_DIR
set -u
script=$1 build=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/fv-cs.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
cat >"$work/bin/compute-sanitizer" <<'CS'
#!/bin/sh
echo "$*" >>"$FAKE_CS_LOG"
tool= prog=
prev=
for a in "$@"; do
  [ "$prev" = --tool ] && tool=$a
  case $a in */tests/gpu/*) prog=$(basename "$a") ;; esac
  prev=$a
done
case $prog in
  test_gpu_pack)
    if [ "$tool" = racecheck ]; then
      echo "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"
      exit 99
    fi ;;
  test_gpu_ops) sleep 5 ;;
esac
echo "========= ERROR SUMMARY: 0 errors"
exit 0
CS
chmod +x "$work/bin/compute-sanitizer"
fail() {
  echo "FAILED: $1"
  echo "--- summary:"; cat "$work/out/summary.txt" 2>/dev/null
  echo "--- output:"; cat "$work/log"
  exit 1
}
run() { # TESTS_REGEX [ENV...]: the script's exit status
  rm -rf "$work/out" "$work/calls"
  regex=$1; shift
  env PATH="$work/bin:$PATH" FAKE_CS_LOG="$work/calls" FV_SANITIZER_TESTS="$regex" \
    FV_SANITIZER_TOOLS="memcheck racecheck" FV_SANITIZER_TIMEOUT=2 "$@" \
    "$script" "$build" "$work/out" >"$work/log" 2>&1
}
run '^test_gpu_(base|pack|ops)$' FV_SANITIZER_ARGS="--racecheck-memcpy-async no"
rc=$?
[ $rc -eq 1 ] || fail "one error and one timeout: exit $rc, expected 1"
s="$work/out/summary.txt"
grep -Eq "^memcheck +test_gpu_base +errors 0 .* ok$" "$s" || fail "memcheck test_gpu_base not ok"
grep -Eq "^racecheck +test_gpu_pack +errors 1 .*sanitizer errors$" "$s" ||
  fail "racecheck's one error on test_gpu_pack not counted"
grep -Eq "^memcheck +test_gpu_ops .*timeout \(2 s\)$" "$s" || fail "the hang not named a timeout"
[ "$(grep -c "kns=nvjet" "$work/calls")" -eq 3 ] ||
  fail "NVIDIA's kernels not left out of exactly the 3 racecheck runs"
grep "tool memcheck" "$work/calls" | grep -q "kns=" && fail "memcheck left kernels out"
[ "$(grep -c -- "--racecheck-memcpy-async no" "$work/calls")" -eq 6 ] ||
  fail "FV_SANITIZER_ARGS not passed to every run"
run '^test_gpu_(base|pack|ops)$' FV_SANITIZER_DEADLINE=1
rc=$?
[ $rc -eq 1 ] || fail "deadline: exit $rc, expected 1"
grep -Eq "^racecheck +test_gpu_base +not run \(deadline 1 s\)" "$s" ||
  fail "programs past the deadline not listed as not run"
grep -q "tool racecheck" "$work/calls" && fail "a program started past the deadline"
run '^test_gpu_base$'
rc=$?
[ $rc -eq 0 ] || fail "every program clean: exit $rc, expected 0"
echo "ok: errors counted, timeouts named, options passed, deadline kept, clean runs pass"
