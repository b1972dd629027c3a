#!/usr/bin/env bash
# CI's aarch64 job: cross-compile fovea CPU-only for aarch64 (preset
# aarch64-cpu: toolchain/jetson.toolchain.cmake with Debian's cross compiler
# and arm64 multiarch libraries) into build-aarch64, check that the binaries
# are aarch64, and run the unit tests under qemu-aarch64 (the toolchain sets
# CMAKE_CROSSCOMPILING_EMULATOR, so ctest runs them unchanged).
# Not run under emulation (see CMakePresets.json and tests/unit/apps_tests.cmake):
# calibrate_*, app_laplacian_*, install_consumer: they start target programs
# from a host script or from a running program, which qemu's user mode cannot
# do without binfmt_misc. No CUDA: CI has no aarch64 CUDA libraries.
# Usage: toolchain/cross-test.sh    (Debian 12 / Ubuntu 22.04+ x86_64 host)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
toolchain/install-deps.sh --cross
for t in aarch64-linux-gnu-gcc file; do
  command -v "$t" >/dev/null || { echo "cross-test: $t not found" >&2; exit 1; }
done
if ! command -v qemu-aarch64 >/dev/null && ! command -v qemu-aarch64-static >/dev/null; then
  echo "cross-test: qemu-aarch64 not found (qemu-user)" >&2
  exit 1
fi

cmake --preset aarch64-cpu
cmake --build --preset aarch64-cpu -j"$(nproc)"

# Every ELF file the build made must be aarch64: a host compiler that slipped
# in (or a host library linked) shows here or at link time.
n=0
while IFS= read -r f; do
  desc=$(file -b "$f")
  case $desc in
    ELF*"ARM aarch64"*) n=$((n + 1)) ;;
    ELF*) echo "cross-test: not aarch64: $f: $desc" >&2; exit 1 ;;
  esac
done < <(find build-aarch64 -type f \( -perm -u+x -o -name '*.so*' \) ! -path '*/CMakeFiles/*')
[ "$n" -gt 0 ] || { echo "cross-test: no aarch64 binaries in build-aarch64" >&2; exit 1; }
echo "cross-test: $n ELF files, all aarch64 (libfovea.so: $(file -bL build-aarch64/sdk/libfovea.so | cut -d, -f1-2))"
grep -q 'qemu-aarch64' build-aarch64/CMakeCache.txt ||
  { echo "cross-test: CMAKE_CROSSCOMPILING_EMULATOR not set" >&2; exit 1; }

ctest --preset aarch64-cpu -j"$(nproc)"
