#!/bin/sh
# toolchain/ab-prepare.sh on a scratch git repository (the base's versions of
# changed files, committed or not; files the base lacks listed as absent),
# and apps/bench/ab_compare.py on made-up runs (ratios, noise marks, the
# geometric mean, refusal of files it cannot compare).
# Usage: test_ab_tools.sh AB_PREPARE AB_COMPARE PYTHON
set -eu
prepare=$1
compare=$2
py=$3
command -v git >/dev/null || { echo "skip: no git"; exit 77; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# --- ab-prepare.sh
mkdir "$w/r" && cd "$w/r"
git init -q . && git config user.email t@example.com && git config user.name t
mkdir src && echo one >src/a.c && echo keep >b.c && git add . && git commit -qm base
echo two >src/a.c && echo new >src/new.c && git add src/new.c && git commit -qm next
echo three >b.c    # not committed
echo loose >u.c    # untracked
bash "$prepare" HEAD~1 .ab >/dev/null
[ "$(cat .ab/base/src/a.c)" = one ] || fail "committed change: base version not written"
[ "$(cat .ab/base/b.c)" = keep ] || fail "uncommitted change: base version not written"
[ ! -e .ab/base/src/new.c ] || fail "a file the base lacks was written"
grep -qx src/new.c .ab/absent || fail "added file not listed as absent"
grep -qx u.c .ab/absent || fail "untracked file not listed as absent"
! grep -q "^\.ab/" .ab/absent || fail "the prepared folder listed itself"
[ "$(cat .ab/REV)" = "$(git rev-parse HEAD~1)" ] || fail "REV is not the base commit"
if bash "$prepare" no-such-rev .ab2 2>/dev/null; then fail "accepted a revision that does not exist"; fi

# --- ab_compare.py
cd "$w"
row() { printf '{"size": "4k", "kind": "%s", "input": "gray", "output": "gray", "ms": %s}' "$1" "$2"; }
filt() { printf '{"bench": "filter", "rows": [%s, %s]}\n' "$(row sobel "$1")" "$(row laplacian "$2")"; }
filt 1.00 1.00 >b1.json
filt 1.02 1.10 >b2.json
filt 0.50 1.05 >n1.json
filt 0.51 1.05 >n2.json
"$py" "$compare" --base b1.json b2.json --new n1.json n2.json --json ab.json >out.txt ||
  fail "ab_compare refused filter runs: $(cat out.txt)"
grep -E "^4k sobel gray gray +1.0000 +0.5000 +0.500 " out.txt >/dev/null || fail "sobel row: $(cat out.txt)"
grep -E "^4k laplacian gray gray .* 1.050 +1.100  ~$" out.txt >/dev/null || fail "noise mark: $(cat out.txt)"
grep -q "geometric mean new/base 0.725" out.txt || fail "geometric mean: $(cat out.txt)"
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["bench"] == "filter" and len(d["cases"]) == 2 and abs(d["geomean"] - 0.7246) < 1e-3' ab.json ||
  fail "ab.json"
printf '{"shapes": [{"name": "1080p 3x3", "autotuned": {"ran": true, "ok": true, "median_ms": 0.04}, "cudnn": {"ran": false}}]}\n' >c1.json
printf '{"shapes": [{"name": "1080p 3x3", "autotuned": {"ran": true, "ok": true, "median_ms": 0.03}, "cudnn": {"ran": false}}]}\n' >c2.json
"$py" "$compare" --base c1.json --new c2.json >out.txt || fail "ab_compare refused conv runs"
grep -E "^1080p 3x3 autotuned +0.0400 +0.0300 +0.750" out.txt >/dev/null || fail "conv row: $(cat out.txt)"
! grep -q cudnn out.txt || fail "an engine that did not run was compared"
printf '{"bench": "cpu-conv", "results": [{"name": "conv3x3 C1->K1", "median_ms": 2.0}]}\n' >p1.json
printf '{"bench": "cpu-conv", "results": [{"name": "conv3x3 C1->K1", "median_ms": 3.0}]}\n' >p2.json
"$py" "$compare" --base p1.json --new p2.json >out.txt || fail "ab_compare refused cpu-conv runs"
grep -E "^conv3x3 C1->K1 +2.0000 +3.0000 +1.500" out.txt >/dev/null || fail "cpu-conv row: $(cat out.txt)"
st=0
"$py" "$compare" --base b1.json --new c1.json >/dev/null 2>&1 || st=$?
[ $st = 2 ] || fail "a filter bench against a conv bench: exit $st, not 2"
echo '{"rows": []}' >e.json
st=0
"$py" "$compare" --base e.json --new e.json >/dev/null 2>&1 || st=$?
[ $st = 2 ] || fail "files without timings: exit $st, not 2"
echo "ab tools: ok"
