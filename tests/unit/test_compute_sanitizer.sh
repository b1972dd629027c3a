#!/bin/sh
# toolchain/compute-sanitizer.sh without a GPU: a stand-in compute-sanitizer
# on PATH answers for three gpu-labelled programs of a stand-in build (its
# own CTestTestfile.cmake: the real build's ctest logs stay untouched):
# clean; one racecheck error; a hang past the time limit. The script must
# count the errors, name the timeout, pass FV_SANITIZER_ARGS and NVIDIA's
# kernels' exclusions (racecheck only), run a fixture set-up once without a
# tool, leave other labels out, exit 1, stop starting programs at its
# deadline, and exit 0 when every program is clean.
# Usage: test_compute_sanitizer.sh SANITIZER_SH
set -u
script=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/fv-cs.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin" "$work/build"
build=$work/build
cat >"$build/CTestTestfile.cmake" <<CT
add_test(fixture_setup "$work/bin/setup")
set_tests_properties(fixture_setup PROPERTIES LABELS "gpu" FIXTURES_SETUP "models")
add_test(test_gpu_base "$work/build/tests/gpu/test_gpu_base")
set_tests_properties(test_gpu_base PROPERTIES LABELS "gpu")
add_test(test_gpu_pack "$work/build/tests/gpu/test_gpu_pack")
set_tests_properties(test_gpu_pack PROPERTIES LABELS "gpu")
add_test(test_gpu_ops "$work/build/tests/gpu/test_gpu_ops")
set_tests_properties(test_gpu_ops PROPERTIES LABELS "gpu" FIXTURES_REQUIRED "models")
add_test(test_unit_other "$work/build/tests/unit/test_unit_other")
set_tests_properties(test_unit_other PROPERTIES LABELS "unit")
CT
printf '#!/bin/sh\necho setup >>"$FAKE_CS_LOG"\n' >"$work/bin/setup"
mkdir -p "$build/tests/gpu" "$build/tests/unit"
for p in gpu/test_gpu_base gpu/test_gpu_pack gpu/test_gpu_ops unit/test_unit_other; do
  printf '#!/bin/sh\nexit 0\n' >"$build/tests/$p" # ctest lists a command only where it exists
done
chmod +x "$work/bin/setup" "$build"/tests/*/*
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
run '^(fixture_setup|test_gpu_(base|pack|ops)|test_unit_other)$' \
  FV_SANITIZER_ARGS="--racecheck-memcpy-async no"
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
[ "$(grep -c "^setup$" "$work/calls")" -eq 1 ] || fail "the fixture set-up not run once, plain"
grep -Eq "fixture set-up, exit 0" "$s" || fail "the fixture set-up not in the summary"
grep -q "test_unit_other" "$work/calls" "$s" && fail "a test of another label ran"
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
