#!/bin/sh
# toolchain/soak.sh's memory verdict, with a stand-in fovea-edge (Python) in
# a build folder of its own: a program whose heap grows (a leak) must fail
# the soak, even where its last sample catches a teardown that frees it; one that pages in a file it maps (as cuBLASLt's exit handlers
# page in its code: file-backed, no leak) and one that stays flat must pass.
# Usage: test_soak_rss.sh SOAK_SH PYTHON
set -u
soak=$1 py=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/fv-soak-rss.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/apps/fovea-edge"
exe=$work/build/apps/fovea-edge/fovea-edge
cat >"$exe" <<PY
#!$py
import mmap, os, sys, time
frames = int(sys.argv[sys.argv.index("--frames") + 1])
mode, keep, t0 = os.environ["FAKE_SOAK_MODE"], [], time.time()
if mode == "file":
    path = os.environ["FAKE_SOAK_FILE"]
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    pages = len(m) // 4096
while time.time() - t0 < 6.0:
    step = int((time.time() - t0) / 6.0 * 100)
    if mode == "leak":
        keep.append(bytearray(os.urandom(256 * 1024)))  # 256 kB every 50 ms
    elif mode == "file":
        for p in range(pages * step // 100):
            m[p * 4096]
    time.sleep(0.05)
if mode == "leak":
    # A teardown that frees the heap and takes under a second: the soak's
    # last sample may fall in it (at most one does, as they are 1 s apart).
    keep.clear()
    time.sleep(0.9)
print('{"type":"summary","frames_out":%d,"pool_carve_outs_while_running":0,"ok":true}' % frames)
PY
chmod +x "$exe"
head -c 67108864 /dev/urandom >"$work/file" 2>/dev/null
run() { # MODE: the soak's exit status, output in $work/out
  FAKE_SOAK_MODE=$1 FAKE_SOAK_FILE="$work/file" FV_SOAK_WARMUP_S=1 \
    "$soak" "$work/build" 1000 0 >"$work/out" 2>&1
}
fail() { echo "FAILED: $1"; cat "$work/out"; exit 1; }
run leak
[ $? -eq 1 ] && grep -q "memory grew past a bound" "$work/out" || fail "a growing heap passed the soak"
run file
[ $? -eq 0 ] || fail "file-backed pages (no leak) failed the soak"
run flat
[ $? -eq 0 ] || fail "flat memory failed the soak"
echo "ok: a growing heap fails the soak; mapped file pages and flat memory pass"
