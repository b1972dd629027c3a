#!/usr/bin/env bash
# Downloads into .deps/ the Debian packages that the GPU machine lacks and
# has no registry to fetch (toolchain/device-deps.sh unpacks them there):
# the test framework, the image libraries, the ONNX importer's protobuf-c and
# onnx.proto, ONNX's node tests and Fashion-MNIST (the model tests' data).
# Run here, on a Debian 12 machine with a package registry; then name .deps
# in the device tool's `carry`. About 41 MB; .deps/ is ignored by git.
# Usage: toolchain/fetch-device-debs.sh [--no-data]   (--no-data: leave out
#   libonnx-testdata and dataset-fashion-mnist, 37 MB: their tests skip)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkgs=(libcmocka0 libcmocka-dev libpng16-16 libpng-dev zlib1g-dev libjpeg62-turbo
      libjpeg62-turbo-dev libprotobuf-c1 libprotobuf-c-dev protobuf-c-compiler libprotoc32
      libprotobuf32 libonnx-dev)
case ${1:-} in
  "") pkgs+=(libonnx-testdata dataset-fashion-mnist) ;;
  --no-data) ;;
  *) echo "fetch-device-debs: unknown argument '$1' (usage: fetch-device-debs.sh [--no-data])" >&2; exit 2 ;;
esac
command -v apt-get >/dev/null || { echo "fetch-device-debs: needs apt-get (Debian or Ubuntu)" >&2; exit 1; }
mkdir -p "$root/.deps"
cd "$root/.deps"
# apt's sandbox user cannot write into most checkouts: download as the caller
apt-get -o APT::Sandbox::User=root download "${pkgs[@]}"
du -sh "$root/.deps"
