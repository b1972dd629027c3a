#!/usr/bin/env bash
# The v4l2:// source against a real V4L2 driver: boots Debian's own kernel
# (linux-image-amd64, fetched with apt-get download into a cache and unpacked,
# not installed) under qemu-system-x86_64 (TCG) with a tiny initramfs that
# loads the kernel's vivid test driver and runs tests/v4l2/v4l2_check.c,
# built statically, against /dev/video0. The program prints PASS/FAIL lines
# on the serial console; this script reads them.
# Usage: toolchain/v4l2-vm-test.sh [BUILD_DIR]   (default: build-v4l2vm)
#   Works in BUILD_DIR/v4l2-vm (static build, initramfs, console log).
#   The kernel package is kept in FV_V4L2_KERNEL_CACHE, default
#   ${XDG_CACHE_HOME:-~/.cache}/fovea/v4l2-kernel, so reruns download nothing.
#   FV_V4L2_VM_TIMEOUT: seconds the VM may run (default 120).
# Needs (toolchain/install-deps.sh): qemu-system-x86, busybox-static, kmod,
# cpio, plus the build's own dependencies. Exit: 0 pass, 1 fail, 77 skipped
# (no qemu-system-x86_64, or the kernel package cannot be had: it says why).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-v4l2vm}
mkdir -p "$build"
build=$(cd "$build" && pwd)
work=$build/v4l2-vm
cache=${FV_V4L2_KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fovea/v4l2-kernel}
vm_timeout=${FV_V4L2_VM_TIMEOUT:-120}
t0=$(date +%s)
say() { echo "v4l2-vm-test: $*"; }
skip() { say "SKIPPED: $*" >&2; exit 77; }
die() { say "FAILED: $*" >&2; exit 1; }

command -v qemu-system-x86_64 >/dev/null ||
  skip "qemu-system-x86_64 not found (Debian: qemu-system-x86; toolchain/install-deps.sh installs it)"
busybox=""
for b in /bin/busybox /usr/bin/busybox; do
  if [ -x "$b" ] && ! readelf -l "$b" 2>/dev/null | grep -q INTERP; then busybox=$b; break; fi
done
[ -n "$busybox" ] || die "no statically linked busybox (Debian: busybox-static)"
for t in depmod modprobe cpio gzip cmake readelf; do
  command -v "$t" >/dev/null || die "$t not found (Debian: kmod, cpio, gzip, cmake, binutils)"
done

# ---- the kernel: Debian's linux-image-amd64, cached -----------------------------
mkdir -p "$cache" "$work"
pkg=""
if command -v apt-cache >/dev/null; then
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
        sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -n1 || true)
fi
deb=""
if [ -n "$pkg" ]; then
  deb=$(ls -t "$cache/${pkg}"_*.deb 2>/dev/null | head -n1 || true)
  if [ -z "$deb" ]; then
    command -v apt-get >/dev/null || skip "apt-get not found: cannot fetch $pkg"
    say "downloading $pkg into $cache"
    fetch() { (cd "$cache" && apt-get -q -o APT::Sandbox::User=root download "$pkg"); }
    if ! fetch; then
      if [ "$(id -u)" -eq 0 ]; then { apt-get -q update && fetch; } || true; fi
    fi
    deb=$(ls -t "$cache/${pkg}"_*.deb 2>/dev/null | head -n1 || true)
    if [ -n "$deb" ]; then # keep one kernel in the cache
      find "$cache" -maxdepth 1 -name 'linux-image-*.deb' ! -path "$deb" -delete
    fi
  fi
fi
if [ -z "$deb" ]; then # no apt metadata for it: any kernel cached earlier
  deb=$(ls -t "$cache"/linux-image-[0-9]*.deb 2>/dev/null | head -n1 || true)
fi
[ -n "$deb" ] ||
  skip "Debian's kernel package is not available (linux-image-amd64 has no candidate, apt-get download failed, none cached in $cache)"
kdir=$work/kernel/$(basename "$deb" .deb)
if [ ! -f "$kdir/.unpacked" ]; then
  rm -rf "$work/kernel" && mkdir -p "$kdir"
  dpkg -x "$deb" "$kdir" || die "dpkg -x $deb failed"
  touch "$kdir/.unpacked"
fi
kver=$(ls "$kdir/lib/modules" | head -n1)
vmlinuz=$kdir/boot/vmlinuz-$kver
[ -f "$vmlinuz" ] || die "no kernel image in $deb"
depmod -b "$kdir" "$kver" # the .deb ships no modules.dep
mapfile -t mods < <(modprobe -d "$kdir" -S "$kver" --show-depends vivid | awk '$1 == "insmod" {print $2}')
[ ${#mods[@]} -gt 0 ] || die "modprobe --show-depends vivid gave no modules ($kver)"
say "kernel $kver ($(basename "$deb")), ${#mods[@]} modules for vivid"

# ---- the check program, static ------------------------------------------------
# PNG/JPEG/zlib as archives (-static cannot link the .so files find_package
# would pick); V4L2 on: the program runs on Linux anyway.
sbuild=$work/static
static_lib() { local f; f=$(cc -print-file-name="$1"); [ -f "$f" ] && echo "$f"; }
png_a=$(static_lib libpng16.a || static_lib libpng.a) || die "no libpng.a (libpng-dev)"
jpeg_a=$(static_lib libjpeg.a) || die "no libjpeg.a (libjpeg62-turbo-dev)"
z_a=$(static_lib libz.a) || die "no libz.a (zlib1g-dev)"
cmake -S "$root" -B "$sbuild" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DFV_WITH_CUDA=OFF -DFV_WITH_GSTREAMER=OFF -DFV_WITH_PANGO=OFF -DFV_BUILD_APPS=OFF \
  -DFV_BUILD_TESTS=ON \
  -DFV_HAVE_V4L2_HEADER=1 -DPNG_LIBRARY_RELEASE="$png_a" -DJPEG_LIBRARY_RELEASE="$jpeg_a" \
  -DZLIB_LIBRARY_RELEASE="$z_a" >"$work/cmake.log" 2>&1 ||
  { tail -n 30 "$work/cmake.log" >&2; die "configuring the static build failed ($work/cmake.log)"; }
cmake --build "$sbuild" --target fv_v4l2_check -j"$(nproc)" >"$work/build.log" 2>&1 ||
  { tail -n 40 "$work/build.log" >&2; die "building fv_v4l2_check failed ($work/build.log)"; }
check=$(find "$sbuild" -name fv_v4l2_check -type f -perm -u+x | head -n1)
[ -n "$check" ] || die "fv_v4l2_check not built"
readelf -l "$check" | grep -q INTERP && die "$check is not static"

# ---- initramfs ---------------------------------------------------------------
ird=$work/initramfs
rm -rf "$ird" && mkdir -p "$ird"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,modules}
cp "$busybox" "$ird/bin/busybox"
cp "$check" "$ird/fv_v4l2_check"
: >"$ird/modules.order"
for m in "${mods[@]}"; do
  b=$(basename "$m")
  case $b in
    *.ko.xz) xz -dc "$m" >"$ird/modules/${b%.xz}"; b=${b%.xz} ;;
    *.ko.zst) zstd -qdc "$m" >"$ird/modules/${b%.zst}"; b=${b%.zst} ;;
    *.ko.gz) gzip -dc "$m" >"$ird/modules/${b%.gz}"; b=${b%.gz} ;;
    *) cp "$m" "$ird/modules/$b" ;;
  esac
  echo "$b" >>"$ird/modules.order"
done
cat >"$ird/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s
for m in $(cat /modules.order); do
  insmod /modules/$m || echo "V4L2-VM insmod $m failed"
done
i=0
while [ ! -e /dev/video0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
echo "V4L2-VM devices: $(ls /dev | grep video | tr '\n' ' ')"
/fv_v4l2_check
echo "V4L2-VM EXIT $?"
poweroff -f
echo o >/proc/sysrq-trigger
EOF
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.cpio.gz"

# ---- boot ------------------------------------------------------------------------
log=$work/console.log
rm -f "$log"
say "booting (qemu TCG, at most ${vm_timeout} s); console: $log"
tb=$(date +%s)
set +e
timeout "$vm_timeout" qemu-system-x86_64 -accel tcg -m 512 -smp 1 -display none -monitor none \
  -no-reboot -serial "file:$log" -kernel "$vmlinuz" -initrd "$work/initramfs.cpio.gz" \
  -append "console=ttyS0 loglevel=1 panic=-1 rdinit=/init" </dev/null >"$work/qemu.log" 2>&1
qrc=$?
set -e
te=$(date +%s)
tr -d '\r' <"$log" 2>/dev/null | grep -E '^V4L2-(CHECK|VM)' || true
npass=$(tr -d '\r' <"$log" 2>/dev/null | grep -c '^V4L2-CHECK PASS' || true)
nfail=$(tr -d '\r' <"$log" 2>/dev/null | grep -c 'V4L2-CHECK FAIL' || true)
done_line=$(tr -d '\r' <"$log" 2>/dev/null | grep '^V4L2-CHECK DONE' || true)
problem=""
if [ "$qrc" -eq 124 ]; then
  problem="the VM ran past ${vm_timeout} s"
elif [ -z "$done_line" ]; then
  problem="the check program did not finish (qemu exit $qrc)"
elif [ "$nfail" -gt 0 ] || [ "$npass" -eq 0 ]; then
  problem="$nfail checks failed, $npass passed"
fi
if [ -n "$problem" ]; then
  echo "---- console tail ($log) ----" >&2
  tr -d '\r' <"$log" 2>/dev/null | tail -n 60 >&2 || true
  echo "---- qemu ----" >&2
  tail -n 20 "$work/qemu.log" >&2 || true
  die "$problem (VM $((te - tb)) s, total $((te - t0)) s)"
fi
say "PASSED: $npass checks (VM $((te - tb)) s, total $((te - t0)) s)"
