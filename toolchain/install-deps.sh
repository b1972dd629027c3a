#!/usr/bin/env bash
# Installs what fovea's build, tests and benchmark scripts need, with apt
# (Debian 12, Ubuntu 22.04+). Idempotent: when every package is already
# installed it changes nothing and needs no network. CUDA and cuDNN are not
# installed here (see README.md: the build uses them when it finds them).
# Usage: toolchain/install-deps.sh [--cross]
#   --cross (or FV_DEPS_CROSS=1): also the aarch64 cross build's tools and
#   libraries (toolchain/cross-test.sh): Debian's aarch64 cross compiler,
#   qemu-user, and cmocka, libpng, libjpeg and zlib for arm64 through dpkg's
#   multiarch (adds the arm64 architecture). Debian only.
set -euo pipefail

cross=${FV_DEPS_CROSS:-0}
for a in "$@"; do
  case $a in
    --cross) cross=1 ;;
    *) echo "install-deps: unknown argument '$a' (usage: install-deps.sh [--cross])" >&2; exit 2 ;;
  esac
done

# openssh-server, openssh-client, rsync: toolchain/deploy.sh and its test
# (tests/deploy), which start an unprivileged sshd on 127.0.0.1 as a "board".
pkgs=(build-essential cmake pkg-config libcmocka-dev libpng-dev zlib1g-dev
      python3 python3-numpy python3-opencv openssh-server openssh-client rsync)
# GStreamer: gst://, csi://, video files, display://, video and RTP sinks,
# and their round-trip test; gstreamer1.0-x: textoverlay (the sinks' captions,
# fovea-infer's labels).
pkgs+=(libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav gstreamer1.0-x)
# Pango and Cairo: the captions fovea draws itself on image files (and on
# GStreamer sinks without textoverlay), fovea-infer's labels there.
pkgs+=(libpango1.0-dev fonts-dejavu-core)
# Networks: the ONNX importer (protobuf-c on ONNX's onnx.proto), ONNX's node
# conformance tests, and the models tests export and check with PyTorch
# (CPU) and onnx; Fashion-MNIST for the trained model.
pkgs+=(libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata python3-torch
       python3-torchvision python3-onnx dataset-fashion-mnist)
# V4L2 against the kernel's vivid driver under qemu (tests/v4l2).
pkgs+=(qemu-system-x86 busybox-static kmod cpio)
# The fuzzers (toolchain/fuzz.sh): clang with its libFuzzer and sanitizer
# runtimes (libclang_rt.fuzzer), which Debian packages apart from clang.
pkgs+=(clang libclang-rt-dev)
# The API reference (cmake --build build --target docs) and its test, which
# fails on any Doxygen warning (ctest api_docs).
pkgs+=(doxygen)
# libjpeg-turbo's headers: Debian's name, else the generic one (Ubuntu).
jpeg_alternatives=(libjpeg62-turbo-dev libjpeg-turbo8-dev libjpeg-dev)

# installed NAME[:ARCH]: without an architecture, the native one (or "all"):
# once arm64 copies are installed (--cross), a bare name matches both.
native_arch=$(dpkg --print-architecture 2>/dev/null || true)
installed() {
  local want=$native_arch
  case $1 in *:*) want=${1##*:} ;; esac
  dpkg-query -W -f='${Status} ${Architecture}\n' "$1" 2>/dev/null |
    grep -E "^install ok installed ($want|all)\$" >/dev/null
}

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: not a Debian/Ubuntu system; install these yourself:" \
       "a C11 compiler, CMake >= 3.22, pkg-config, cmocka, libpng, libjpeg(-turbo), zlib," \
       "python3 with numpy and OpenCV, OpenSSH (client and server), rsync, doxygen," \
       "clang with its libFuzzer runtime (the fuzzers)" >&2
  exit 0
fi

missing=()
for p in "${pkgs[@]}"; do
  installed "$p" || missing+=("$p")
done
have_jpeg=0
for p in "${jpeg_alternatives[@]}"; do
  if installed "$p"; then have_jpeg=1; break; fi
done
need_arm64=0
if [ "$cross" = 1 ]; then
  # qemu-user gives qemu-aarch64; qemu-user-static (qemu-aarch64-static) does too.
  cross_pkgs=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross file
              libcmocka-dev:arm64 libpng-dev:arm64 libjpeg62-turbo-dev:arm64 zlib1g-dev:arm64)
  for p in "${cross_pkgs[@]}"; do
    installed "$p" || missing+=("$p")
  done
  installed qemu-user || installed qemu-user-static || missing+=(qemu-user)
  dpkg --print-foreign-architectures | grep -qx arm64 || need_arm64=1
fi

if [ ${#missing[@]} -eq 0 ] && [ $have_jpeg -eq 1 ]; then
  echo "install-deps: all dependencies are installed"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
if [ $need_arm64 -eq 1 ]; then
  echo "install-deps: adding the arm64 architecture (dpkg multiarch)"
  "${sudo[@]}" dpkg --add-architecture arm64
fi
"${sudo[@]}" apt-get update
if [ $have_jpeg -eq 0 ]; then
  if apt-cache show libjpeg62-turbo-dev >/dev/null 2>&1; then
    missing+=(libjpeg62-turbo-dev)
  else
    missing+=(libjpeg-dev)
  fi
fi
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
