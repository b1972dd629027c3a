#!/bin/sh
# fovea-bench devices' harness on the CPU backend (no GPU needed): two
# contexts of device 0 at once, the edge pipeline, its copies alone and the
# UNet of net_models.py's default cases (the net_models fixture), each
# context's last output byte-identical to the lone run's (but the copies',
# which nothing writes: null) and the net within tolerance of PyTorch (exit
# 0, "ok": true, twelve rows: a row of the two together for each work);
# then the refusals of bad options.
# Usage: test_bench_devices.sh FOVEA_BENCH NET_MODELS_DIR
set -eu
bench=$1
models=$2
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bench" devices --backend cpu --devices 0,0 --work edge,copy,net --model unet \
    --weights "$models/unet.fvw" --io "$models/unet_n2_s64.io.fvw" --batch 2 --size 64 \
    --width 96 --height 64 --frames 20 --iters 1 --warmup 0 --json "$w/d.json" >"$w/out" 2>&1 ||
    { cat "$w/out"; fail "the run exited $?"; }
cat "$w/out"
grep -q '"ok": true' "$w/d.json" || fail "JSON: not ok"
[ "$(grep -c '"work": ' "$w/d.json")" = 12 ] ||
    fail "JSON: not 12 rows (edge, copy, net: 1 + 2 + the two together each)"
[ "$(grep -c '"aggregate": true' "$w/d.json")" = 3 ] || fail "JSON: not 3 rows of the two together"
grep -q "^edge .* all .*(together" "$w/out" || fail "table: no row of the two together"
! grep -q '"same_bytes": false' "$w/d.json" || fail "an output differs from the lone run's"
[ "$(grep -c '"work": "edge".*"same_bytes": true' "$w/d.json")" = 3 ] || fail "edge: not compared"
[ "$(grep -c '"work": "copy".*"same_bytes": null' "$w/d.json")" = 3 ] || fail "copy: no null rows"
[ "$(grep -c '"rel_l2": ' "$w/d.json")" = 3 ] || fail "JSON: the net's rows lack rel_l2"
grep -q "^net .*yes (rel L2 vs PyTorch" "$w/out" || fail "table: no checked net row"

# refusals: exit 2 and a message naming what was wrong
refused() { # want-text args...
    want=$1; shift
    rc=0
    "$bench" devices "$@" >"$w/r" 2>&1 || rc=$?
    [ $rc = 2 ] || { cat "$w/r"; fail "exit $rc, not 2: $*"; }
    grep -q -- "$want" "$w/r" || { cat "$w/r"; fail "no '$want' for: $*"; }
}
refused "'x' is not a CUDA device index" --devices 0,x --work edge
refused "give indices separated by commas" --devices 0, --work edge
refused "device 0 only" --backend cpu --devices 0,1 --work edge
refused "needs --weights" --backend cpu --work net
refused "give edge, copy and net, each once" --backend cpu --work edges
refused "give edge, copy and net, each once" --backend cpu --work edge,edge
refused "give edge, copy and net, each once" --backend cpu --work copy,
refused "give edge, copy and net, each once" --backend cpu --work ,edge
refused "give a whole number from 1" --backend cpu --work edge --frames 0
refused "unknown option" --backend cpu --work edge --bogus
refused "cannot" --backend cpu --work net --weights "$w/missing.fvw"
echo "fovea-bench devices: CPU harness and refusals as expected"
