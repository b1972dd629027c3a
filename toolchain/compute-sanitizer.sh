#!/usr/bin/env bash
# The GPU test programs (ctest label gpu) under NVIDIA compute-sanitizer:
# memcheck, racecheck, initcheck and synccheck, one summary line per tool and
# program, exit 1 when any tool found an error.
# Usage: toolchain/compute-sanitizer.sh [BUILD_DIR [OUTDIR]]
#   FV_SANITIZER_TOOLS  tools to run (default: memcheck racecheck initcheck synccheck)
#   FV_SANITIZER_TIMEOUT  seconds per program and tool (default 300)
#   FV_SANITIZER_TESTS    ctest -R regex of the gpu tests to run (default: all)
#   FV_SANITIZER_EXCLUDE  ctest -E regex of gpu tests to leave out (default: none)
#   FV_SANITIZER_ARGS     extra compute-sanitizer options for every run, e.g.
#                         "--racecheck-memcpy-async no" (racecheck's cp.async
#                         tracking fails with an internal error on
#                         test_gpu_net's concat views: docs/building.md)
#   FV_SANITIZER_NO_FIXTURES=1  run no fixture set-up (model exports): for
#                         parallel invocations, after the set-ups ran once
#   FV_SANITIZER_DEADLINE seconds after which no further program is started;
#                         those left are listed as "not run" (default: none), so
#                         that a device call ends inside its limit
# FV_TEST_QUICK=1 is exported: GPU tests that read it run less (test_gpu_conv: no
# autotuning), so that every tool finishes inside one 10-minute device call.
# racecheck and synccheck leave out the kernels of NVIDIA's libraries
# (FV_SANITIZER_FOREIGN, kernel-name substrings: cuBLASLt's nvjet, cuDNN's
# xmma/cutlass): their Hopper kernels synchronise through TMA and mbarriers
# that the tools do not model (racecheck reported hazards inside cuBLASLt's
# nvjet kernel; synccheck ran out of barrier tracking), and fovea cannot change
# them. memcheck and initcheck check every kernel.
# memcheck: the intentional out-of-memory test's cudaMalloc failure is an API
# error by design; --report-api-errors no keeps it from counting (the tests
# themselves check every CUDA status).
set -uo pipefail
build=${1:-build-gpu}
out=${2:-${OUT:-/tmp/fv-out}/sanitizer}
tools=${FV_SANITIZER_TOOLS:-memcheck racecheck initcheck synccheck}
limit=${FV_SANITIZER_TIMEOUT:-300}
mkdir -p "$out"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$cs" ] || { echo "compute-sanitizer not found (CUDA toolkit's bin/)"; exit 2; }
export FV_TEST_QUICK=1
# name<TAB>command... of every gpu-labelled test, from ctest's own list
sel=(-L gpu)
[ -n "${FV_SANITIZER_TESTS:-}" ] && sel+=(-R "$FV_SANITIZER_TESTS")
[ -n "${FV_SANITIZER_EXCLUDE:-}" ] && sel+=(-E "$FV_SANITIZER_EXCLUDE")
[ "${FV_SANITIZER_NO_FIXTURES:-0}" = 1 ] && sel+=(-FA ".*")
mapfile -t tests < <(cd "$build" && ctest "${sel[@]}" --show-only=json-v1 | python3 -c '
import json, shlex, sys
for t in json.load(sys.stdin)["tests"]:
    if "command" in t:
        setup = any(p["name"] == "FIXTURES_SETUP" for p in t.get("properties", []))
        print(t["name"] + "\t" + ("1" if setup else "0") + "\t" +
              " ".join(shlex.quote(c) for c in t["command"]))')
fail=0
t0=$(date +%s)
deadline=${FV_SANITIZER_DEADLINE:-0}
for tool in $tools; do
  extra=()
  [ "$tool" = memcheck ] && extra=(--report-api-errors no --leak-check full)
  if [ "$tool" = racecheck ] || [ "$tool" = synccheck ]; then
    for k in ${FV_SANITIZER_FOREIGN:-nvjet xmma cutlass cudnn}; do
      extra+=(--kernel-name-exclude "kns=$k")
    done
  fi
  for line in "${tests[@]}"; do
    name=${line%%$'\t'*}
    rest=${line#*$'\t'}
    setup=${rest%%$'\t'*}
    cmd=${rest#*$'\t'}
    log="$out/$tool-$name.log"
    start=$(date +%s)
    if [ "$deadline" -gt 0 ] && [ $((start - t0)) -ge "$deadline" ]; then
      printf '%-10s %-28s not run (deadline %d s)\n' "$tool" "$name" "$deadline" |
        tee -a "$out/summary.txt"
      fail=1
      continue
    fi
    # fixture set-ups (models exported by Python, no CUDA: the tools refuse
    # a program that makes no CUDA call) run once, before the first tool, plain
    if [ "$setup" = 1 ]; then
      if [ "$tool" = "${tools%% *}" ]; then
        (cd "$build" && eval timeout "$limit" $cmd) >"$log" 2>&1
        printf '%-10s %-28s fixture set-up, exit %d, %4d s\n' "$tool" "$name" $? \
          $(($(date +%s) - start)) | tee -a "$out/summary.txt"
      fi
      continue
    fi
    # shellcheck disable=SC2086
    (cd "$build" && eval timeout "$limit" "$cs" --tool "$tool" --error-exitcode 99 \
      "${extra[@]}" ${FV_SANITIZER_ARGS:-} $cmd) >"$log" 2>&1
    rc=$?
    # "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)"
    errors=$(grep -Eo "ERROR SUMMARY: [0-9]+|\([0-9]+ errors?" "$log" | tail -1 | grep -Eo "[0-9]+" || echo "?")
    verdict=ok
    case $rc in
      0 | 77) ;;                          # clean (77: the test skipped: no GPU)
      124) verdict="timeout (${limit} s)"; fail=1 ;;
      99) verdict="sanitizer errors"; fail=1 ;;
      *) verdict="test failed (exit $rc)"; fail=1 ;;
    esac
    printf '%-10s %-28s errors %-4s %4d s  %s\n' "$tool" "$name" "$errors" \
      $(($(date +%s) - start)) "$verdict" | tee -a "$out/summary.txt"
  done
done
exit $fail
