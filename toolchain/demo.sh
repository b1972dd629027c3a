#!/usr/bin/env bash
# The main job: install the dependencies, build fovea in ./build and run the
# Laplacian edge filter on the bundled image (writes ./laplacian.png; on the
# GPU when there is one, else on the CPU). Arguments go to fovea-laplacian,
# e.g. toolchain/demo.sh --input photo.jpg --output edges.png
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/toolchain/install-deps.sh"
cmake -S "$root" -B "$root/build"
cmake --build "$root/build" -j"$(nproc)"
"$root/build/apps/fovea-laplacian/fovea-laplacian" "$@"
