#!/usr/bin/env bash
# An A/B of compile-time knobs of one kernel file, several variants in one
# job on a GPU machine: builds fovea-bench from this tree once (the plain
# build) while it compiles FILE again for each variant with its -D flags
# (in parallel with the build, from the moment it is configured: FILE's own
# command from compile_commands.json), then links a libfovea of each; runs
# the same fovea-bench command with each
# variant's library, alternating (plain, v1, v2, ..., plain, v1, ...), and
# compares each variant with the plain build case by case
# (apps/bench/ab_compare.py). Cheaper than toolchain/ab-bench.sh's second
# whole build when the knobs live in one file (#ifndef KNOB defaults).
# Usage: toolchain/ab-knobs.sh [-r ROUNDS] [-o OUTDIR] -f FILE -v 'NAME=-DA=1 -DB=2' [-v ...] BENCH ARGS...
#   e.g. toolchain/ab-knobs.sh -f sdk/src/backend/cuda/kernels/filter_direct_strip.cu
#          -v flat=-DFV_FILTER_FLAT_STAGE=1 -v lean=-DFV_FILTER_LEAN_EMIT=1
#          filter --sizes 4k --kinds laplacian --engine direct --batch 30 --runs 3
#   ROUNDS: runs of each build (default 2); OUTDIR: default $OUT/knobs or /tmp/fv-knobs-out.
#   FV_AB_CMAKE_ARGS: extra configure arguments; FV_CUDA_ARCH: default 90.
# Writes OUTDIR/{plain,NAME}R.{json,txt}, OUTDIR/ab-NAME.{txt,json}; the
# tables are printed last. Exit status: 0, 1 (a build or run failed), 2 (usage).
set -uo pipefail
rounds=2
out=${OUT:+$OUT/knobs}
out=${out:-/tmp/fv-knobs-out}
file=
names=()
flags=()
usage() {
  echo "usage: $0 [-r ROUNDS] [-o OUTDIR] -f FILE -v 'NAME=-DA=1 ...' [-v ...] BENCH ARGS..." >&2
  exit 2
}
while getopts "r:o:f:v:" o; do
  case $o in
  r) rounds=$OPTARG ;;
  o) out=$OPTARG ;;
  f) file=$OPTARG ;;
  v)
    n=${OPTARG%%=*}
    case $n in '' | *[!A-Za-z0-9_-]* | plain)
      echo "ab-knobs: a variant is NAME=FLAGS with NAME of letters, digits, _ or - (not 'plain'): '$OPTARG'" >&2
      exit 2
      ;;
    esac
    [ "$n" != "$OPTARG" ] || { echo "ab-knobs: variant '$OPTARG' has no =FLAGS" >&2; exit 2; }
    names+=("$n")
    flags+=("${OPTARG#*=}")
    ;;
  *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] && [ -n "$file" ] && [ ${#names[@]} -ge 1 ] || usage
case $rounds in '' | *[!0-9]* | 0)
  echo "ab-knobs: ROUNDS must be a positive integer, not '$rounds'" >&2
  exit 2
  ;;
esac
out=$(realpath -m "$out")
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
[ -f "$file" ] || { echo "ab-knobs: no file $file" >&2; exit 2; }
src=$(realpath "$file")
mkdir -p "$out"
rm -f "$out"/plain*.json "$out"/ab-*.txt
t0=$(date +%s)
el() { echo $(($(date +%s) - t0)); }
extra=()
# shellcheck source=toolchain/device-deps.sh
source toolchain/device-deps.sh && fv_device_deps >/dev/null
bld=$root/build-knobs
vroot=/tmp/fv-knobs
rm -rf "$vroot" && mkdir -p "$vroot"
# shellcheck disable=SC2086
cmake -S . -B "$bld" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DFV_WERROR=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${FV_CUDA_ARCH:-90}" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  ${CUDNN_ROOT:+-DCUDNN_ROOT=$CUDNN_ROOT} "${extra[@]}" ${FV_AB_CMAKE_ARGS:-} \
  >"$out/configure.log" 2>&1 || { echo "ab-knobs: configure failed: $out/configure.log" >&2; exit 1; }
# keep DIR: the build's fovea-bench and its shared libraries (links kept)
keep() {
  mkdir -p "$1" && cp "$bld/apps/bench/fovea-bench" "$1/" &&
    find "$bld" -name 'lib*.so*' -not -path '*/CMakeFiles/*' -exec cp -P {} "$1/" \;
}
# The variants: FILE's compile command with the flags and another object
# (c_NAME: from the configured tree, before the build); libfovea's link
# command (Makefiles' link.txt and its response files, also written at
# configure time) with that object (l_NAME: after the plain build, which
# makes the other objects).
"${PYTHON:-python3}" - "$bld" "$src" "$vroot" "${names[@]}" -- "${flags[@]}" >"$vroot/cmds.sh" <<'EOF' ||
import json, os, shlex, sys
bld, src, vroot = sys.argv[1:4]
rest = sys.argv[4:]
k = rest.index("--")
names, flags = rest[:k], rest[k + 1:]
cmd = [c for c in json.load(open(os.path.join(bld, "compile_commands.json"))) if os.path.realpath(c["file"]) == src]
if len(cmd) != 1:
    sys.exit("ab-knobs: %s is not compiled once in the build (%d commands)" % (src, len(cmd)))
cc = cmd[0]
args = cc.get("arguments") or shlex.split(cc["command"])
obj = args[args.index("-o") + 1]
obj_abs = os.path.normpath(os.path.join(cc["directory"], obj))
sdk = None
for dirpath, _, files in os.walk(bld):
    if "link.txt" in files and dirpath.endswith(os.path.join("CMakeFiles", "fovea.dir")):
        sdk = dirpath
if sdk is None:
    sys.exit("ab-knobs: no link.txt for libfovea under " + bld)
link_dir = os.path.dirname(os.path.dirname(sdk))
link = []
for t in shlex.split(open(os.path.join(sdk, "link.txt")).read().splitlines()[0]):
    # the objects may come in a response file (@CMakeFiles/fovea.dir/objects1.rsp)
    rsp = os.path.join(link_dir, t[1:]) if t.startswith("@") else None
    link += shlex.split(open(rsp).read()) if rsp and os.path.isfile(rsp) else [t]
lib = link[link.index("-o") + 1]
for n, f in zip(names, flags):
    d = os.path.join(vroot, n)
    a = list(args)
    a[a.index("-o") + 1] = os.path.join(d, "knob.o")
    if "-MF" in a:
        a[a.index("-MF") + 1] = os.path.join(d, "knob.o.d")
    a[1:1] = shlex.split(f)
    la = [os.path.join(d, "knob.o") if os.path.normpath(os.path.join(link_dir, x)) == obj_abs else x for x in link]
    if la == link:
        sys.exit("ab-knobs: the object of %s is not in libfovea's link command" % src)
    la[la.index("-o") + 1] = os.path.join(d, os.path.basename(lib))
    print("c_%s() { mkdir -p %s && (cd %s && %s); }" % (
        n.replace("-", "_"), shlex.quote(d), shlex.quote(cc["directory"]), shlex.join(a)))
    print("l_%s() { (cd %s && %s); }" % (n.replace("-", "_"), shlex.quote(link_dir), shlex.join(la)))
EOF
  { echo "ab-knobs: could not derive the variants' commands" >&2; exit 1; }
# shellcheck source=/dev/null
source "$vroot/cmds.sh"
pids=()
for i in "${!names[@]}"; do
  n=${names[$i]}
  ("c_${n//-/_}" >"$out/build-$n.log" 2>&1) &
  pids+=($!)
done
cmake --build "$bld" -j"$(nproc)" --target fovea-bench >"$out/build-plain.log" 2>&1 ||
  { echo "ab-knobs: the plain build failed: $out/build-plain.log" >&2; kill "${pids[@]}" 2>/dev/null; exit 1; }
echo "ab-knobs: plain build at $(el) s"
keep "$vroot/plain" || exit 1
fail=0
for i in "${!names[@]}"; do
  n=${names[$i]}
  if ! wait "${pids[$i]}"; then
    echo "ab-knobs: variant $n failed to compile: $out/build-$n.log" >&2
    fail=1
  elif ! "l_${n//-/_}" >>"$out/build-$n.log" 2>&1; then
    echo "ab-knobs: variant $n failed to link: $out/build-$n.log" >&2
    fail=1
  fi
done
[ $fail = 0 ] || exit 1
for n in "${names[@]}"; do
  # the plain build's other files, then this variant's libfovea (its real file)
  real=$(find "$vroot/$n" -maxdepth 1 -name 'libfovea.so*' -type f | head -1)
  mv "$real" "$vroot/$n.lib" && keep "$vroot/$n" && mv "$vroot/$n.lib" "$vroot/$n/$(basename "$real")" || exit 1
done
echo "ab-knobs: variants (${names[*]}) built at $(el) s"
# each run must load its own libfovea (the build's RUNPATH yields to LD_LIBRARY_PATH)
for v in plain "${names[@]}"; do
  got=$(LD_LIBRARY_PATH=$vroot/$v${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$vroot/$v/fovea-bench" | grep 'libfovea\.so')
  case $got in *"$vroot/$v/"*) ;; *)
    echo "ab-knobs: $v's fovea-bench loads another libfovea ($got): an RPATH over LD_LIBRARY_PATH?" >&2
    exit 1
    ;;
  esac
done
echo "ab-knobs: $rounds rounds of: fovea-bench $*"
for r in $(seq 1 "$rounds"); do
  for v in plain "${names[@]}"; do
    if ! LD_LIBRARY_PATH=$vroot/$v${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$vroot/$v/fovea-bench" "$@" \
      --json "$out/$v$r.json" >"$out/$v$r.txt" 2>&1; then
      echo "ab-knobs: $v's run $r failed: $out/$v$r.txt" >&2
      tail -5 "$out/$v$r.txt" >&2
      exit 1
    fi
  done
  echo "ab-knobs: round $r done at $(el) s"
done
for i in "${!names[@]}"; do
  n=${names[$i]}
  echo "== $n (${flags[$i]}) against plain"
  "${PYTHON:-python3}" apps/bench/ab_compare.py --base "$out"/plain*.json --new "$out/$n"[0-9]*.json \
    --json "$out/ab-$n.json" | tee "$out/ab-$n.txt"
done
