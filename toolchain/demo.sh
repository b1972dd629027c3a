#!/usr/bin/env bash
# The main job: install the dependencies, build fovea in ./build and run the
# camera edge-detection demo, fovea-edge, on the bundled test:// source (a
# moving view over data/astronaut.png): on the GPU when there is one, else on
# the CPU backend; to a window where there is a display, else to ./edges.mp4
# (or ./edges_NNNN.png without an H.264 encoder); it says where.
# Arguments go to fovea-edge, e.g.
#   toolchain/demo.sh v4l2:///dev/video0 display://0
#   toolchain/demo.sh --filter sobel --overlay file://clip.mp4 file://edges.mkv
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/toolchain/install-deps.sh"
cmake -S "$root" -B "$root/build"
cmake --build "$root/build" -j"$(nproc)"
"$root/build/apps/fovea-edge/fovea-edge" "$@"
