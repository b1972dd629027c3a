# Sourced by the GPU-machine scripts (device-check.sh, net-device-check.sh,
# apps/bench/bench_env.sh): where no package registry can be reached, the
# Debian .debs in .deps/ (cmocka, libpng, libjpeg, protobuf-c, onnx...) are
# unpacked under /tmp/fv-deps and used from there.
# fv_device_deps: run from the repository root; when .deps/ holds .debs,
# unpacks them, puts their libraries on LD_LIBRARY_PATH and their programs
# (protoc-c) on PATH (both exported) and appends the CMake options that find
# them to the caller's array `extra`. Returns 0 either way.
fv_device_deps() {
  compgen -G ".deps/*.deb" >/dev/null || return 0
  rm -rf /tmp/fv-deps && mkdir -p /tmp/fv-deps
  local f sys z=/tmp/fv-deps/usr/lib/x86_64-linux-gnu
  for f in .deps/*.deb; do dpkg -x "$f" /tmp/fv-deps; done
  find /tmp/fv-deps -name '*.pc' -delete # they name /usr, not where they were unpacked
  # link against the machine's own zlib runtime, never the static archive
  rm -f "$z/libz.a"
  for sys in /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1; do
    [ -e "$sys" ] && ln -sf "$sys" "$z/libz.so" && break
  done
  export LD_LIBRARY_PATH=$z${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=/tmp/fv-deps/usr/bin:$PATH
  extra+=(-DCMAKE_PREFIX_PATH=/tmp/fv-deps/usr -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
  # Debian's multiarch headers (libjpeg62-turbo's jconfig.h) sit in
  # usr/include/x86_64-linux-gnu, which find_package does not search: without
  # this the machine's own jconfig.h (JPEG_LIB_VERSION 80) is compiled
  # against the unpacked libjpeg 62 ("Wrong JPEG library version").
  local multiarch=/tmp/fv-deps/usr/include/x86_64-linux-gnu
  [ -d "$multiarch" ] && extra+=("-DCMAKE_C_FLAGS=-I$multiarch")
  # the tests' data (ONNX's node tests, Fashion-MNIST) is looked for under
  # /usr/share: link the unpacked copies there where nothing is and we may
  local d
  for d in libonnx-testdata datasets/fashion-mnist; do
    if [ -d "/tmp/fv-deps/usr/share/$d" ] && [ ! -e "/usr/share/$d" ] &&
       mkdir -p "$(dirname "/usr/share/$d")" 2>/dev/null &&
       ln -s "/tmp/fv-deps/usr/share/$d" "/usr/share/$d" 2>/dev/null; then
      echo "linked /usr/share/$d to the unpacked copy"
    fi
  done
  echo "using .deps: $(ls .deps | tr '\n' ' ')"
  return 0
}
