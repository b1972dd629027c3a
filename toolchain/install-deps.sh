#!/usr/bin/env bash
# Installs what fovea's build, tests and benchmark scripts need, with apt
# (Debian 12, Ubuntu 22.04+). Idempotent: when every package is already
# installed it changes nothing and needs no network. CUDA and cuDNN are not
# installed here (see README.md: the build uses them when it finds them).
set -euo pipefail

pkgs=(build-essential cmake pkg-config libcmocka-dev libpng-dev zlib1g-dev
      python3 python3-numpy python3-opencv)
# libjpeg-turbo's headers: Debian's name, else the generic one (Ubuntu).
jpeg_alternatives=(libjpeg62-turbo-dev libjpeg-turbo8-dev libjpeg-dev)

installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: not a Debian/Ubuntu system; install these yourself:" \
       "a C11 compiler, CMake >= 3.22, pkg-config, cmocka, libpng, libjpeg(-turbo), zlib," \
       "python3 with numpy and OpenCV" >&2
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
