#!/usr/bin/env bash
# Makes a sysroot for toolchain/jetson.toolchain.cmake: the parts of a Jetson's
# root filesystem that a cross build reads (headers, libraries, CUDA, cuDNN),
# with absolute symbolic links made relative so that they resolve inside the
# copy instead of on the build host.
# Usage:
#   toolchain/jetson-sysroot.sh USER@BOARD DEST   copy from a running board (rsync over ssh)
#   toolchain/jetson-sysroot.sh --fix-links DEST  only fix the links of an existing copy
#                                                 (e.g. of Linux_for_Tegra/rootfs)
# The board needs the -dev packages the build uses (JetPack's CUDA and cuDNN,
# libpng-dev, libjpeg-dev, zlib1g-dev; libcmocka-dev for the tests).
set -euo pipefail

usage() { sed -n '2,11p' "$0" >&2; exit 2; }

fix_links() {
  local dest=$1 n=0 l t
  while IFS= read -r -d '' l; do
    t=$(readlink "$l")
    # Lexical (-s): never follow a link out of the copy.
    ln -sfn "$(realpath -s -m --relative-to="$(dirname "$l")" "$dest$t")" "$l"
    n=$((n + 1))
  done < <(find "$dest" -type l -lname '/*' -print0)
  echo "jetson-sysroot: $n absolute links made relative in $dest"
}

[ $# -eq 2 ] || usage
if [ "$1" = --fix-links ]; then
  dest=$(realpath -s -m "$2")
  [ -d "$dest/usr/lib/aarch64-linux-gnu" ] || { echo "jetson-sysroot: $dest: no usr/lib/aarch64-linux-gnu" >&2; exit 1; }
  fix_links "$dest"
  exit 0
fi
board=$1
dest=$(realpath -s -m "$2")
command -v rsync >/dev/null || { echo "jetson-sysroot: needs rsync (here and on the board)" >&2; exit 1; }
mkdir -p "$dest"
# -R keeps the paths; /lib is a link to usr/lib on L4T (Ubuntu), copied as such.
# /usr/local/cuda* and /etc/alternatives: CUDA and cuDNN's headers and links.
rsync -aR --delete --info=progress2 \
  "$board:/lib" "$board:/usr/include" "$board:/usr/lib/aarch64-linux-gnu" \
  "$board:/usr/local/cuda*" "$board:/etc/alternatives" "$board:/usr/share/pkgconfig" "$dest/"
fix_links "$dest"
echo "jetson-sysroot: sysroot in $dest: export FV_JETSON_SYSROOT=$dest"
