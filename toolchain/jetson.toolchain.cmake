# CMake toolchain file: cross-compile fovea for Jetson (aarch64 Linux, L4T)
# from an x86_64 Linux host. CMakePresets.json uses it (jetson-orin,
# jetson-thor, jetson-xavier, aarch64-cpu); README.md "Cross-compiling for
# Jetson" walks through it.
#
#   cmake -S . -B build-orin -DCMAKE_TOOLCHAIN_FILE=toolchain/jetson.toolchain.cmake \
#         -DFV_JETSON_SYSROOT=$HOME/jetson/rootfs
#
# Settings (cache variables, or environment variables of the same name):
#   FV_JETSON_SYSROOT        a copy of the board's root filesystem (e.g.
#                            Linux_for_Tegra/rootfs, or rsync'd from the board).
#                            Unset: Debian/Ubuntu multiarch, i.e. arm64 -dev
#                            packages in /usr/lib/aarch64-linux-gnu (CPU-only).
#   FV_JETSON_CROSS_PREFIX   compiler prefix (default aarch64-linux-gnu-)
#   FV_JETSON_CUDA_ROOT      the host's CUDA toolkit, of the board's CUDA
#                            version (default /usr/local/cuda): its x86_64
#                            nvcc compiles; its targets/<FV_JETSON_CUDA_TARGET>
#                            (NVIDIA's cuda-cross-aarch64 / cuda-cross-sbsa
#                            packages) provides the aarch64 headers and libraries.
#   FV_JETSON_CUDA_TARGET    aarch64-linux (Orin, Xavier) or sbsa-linux (Thor, CUDA 13)
#   FV_JETSON_CUDA_HOST_COMPILER  nvcc's host compiler (-ccbin), default
#                            <prefix>g++; it must be one that nvcc version accepts.
# Without an nvcc and that target directory the build is CPU-only (as with
# -DFV_WITH_CUDA=OFF). Where qemu-aarch64 is found it becomes
# CMAKE_CROSSCOMPILING_EMULATOR, so ctest runs the aarch64 tests unchanged.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

# This file is read again in every try_compile project: pass the settings on.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES FV_JETSON_SYSROOT FV_JETSON_CROSS_PREFIX
     FV_JETSON_CUDA_ROOT FV_JETSON_CUDA_TARGET FV_JETSON_CUDA_HOST_COMPILER)
foreach(_fv_v FV_JETSON_SYSROOT FV_JETSON_CROSS_PREFIX FV_JETSON_CUDA_ROOT
              FV_JETSON_CUDA_TARGET FV_JETSON_CUDA_HOST_COMPILER)
  if(NOT ${_fv_v} AND DEFINED ENV{${_fv_v}} AND NOT "$ENV{${_fv_v}}" STREQUAL "")
    set(${_fv_v} "$ENV{${_fv_v}}")
  endif()
endforeach()
if(NOT FV_JETSON_CROSS_PREFIX)
  set(FV_JETSON_CROSS_PREFIX aarch64-linux-gnu-)
endif()
if(NOT FV_JETSON_CUDA_ROOT)
  set(FV_JETSON_CUDA_ROOT /usr/local/cuda)
endif()
if(NOT FV_JETSON_CUDA_TARGET)
  set(FV_JETSON_CUDA_TARGET aarch64-linux)
endif()

# ---- compilers -----------------------------------------------------------------
find_program(FV_JETSON_CC ${FV_JETSON_CROSS_PREFIX}gcc)
if(NOT FV_JETSON_CC)
  message(FATAL_ERROR "jetson toolchain: ${FV_JETSON_CROSS_PREFIX}gcc not found "
                      "(Debian/Ubuntu: toolchain/install-deps.sh --cross, or gcc-aarch64-linux-gnu)")
endif()
set(CMAKE_C_COMPILER ${FV_JETSON_CC})
find_program(FV_JETSON_CXX ${FV_JETSON_CROSS_PREFIX}g++)
if(FV_JETSON_CXX)
  set(CMAKE_CXX_COMPILER ${FV_JETSON_CXX})
endif()
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# ---- sysroot: headers and libraries of the target only ----------------------
if(FV_JETSON_SYSROOT)
  get_filename_component(FV_JETSON_SYSROOT "${FV_JETSON_SYSROOT}" ABSOLUTE)
  if(NOT EXISTS "${FV_JETSON_SYSROOT}/usr/lib/aarch64-linux-gnu")
    message(FATAL_ERROR "jetson toolchain: FV_JETSON_SYSROOT=${FV_JETSON_SYSROOT} has no "
                        "usr/lib/aarch64-linux-gnu: not an aarch64 root filesystem")
  endif()
  set(CMAKE_SYSROOT "${FV_JETSON_SYSROOT}")
  set(CMAKE_FIND_ROOT_PATH "${FV_JETSON_SYSROOT}")
  # pkg-config (cmocka): the sysroot's .pc files, paths prefixed with the sysroot.
  set(ENV{PKG_CONFIG_SYSROOT_DIR} "${FV_JETSON_SYSROOT}")
  set(ENV{PKG_CONFIG_LIBDIR}
      "${FV_JETSON_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${FV_JETSON_SYSROOT}/usr/lib/pkgconfig:${FV_JETSON_SYSROOT}/usr/share/pkgconfig")
  set(_fv_target_root "${FV_JETSON_SYSROOT}")
else()
  # Multiarch: arm64 packages beside the host's, found through
  # CMAKE_LIBRARY_ARCHITECTURE; with no root path the ONLY modes below keep
  # the host's prefixes, where lib/aarch64-linux-gnu holds the target's libraries.
  set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
  set(_fv_target_root "")
endif()
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Libraries that libcudart, libcudnn, libpng... need at link time but that the
# link line does not name: let ld find them in the target's folders.
set(_fv_link "")
foreach(_fv_d /lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu/tegra
              /usr/local/cuda/targets/${FV_JETSON_CUDA_TARGET}/lib /usr/local/cuda/lib64)
  if(EXISTS "${_fv_target_root}${_fv_d}")
    string(APPEND _fv_link " -Wl,-rpath-link,${_fv_target_root}${_fv_d}")
  endif()
endforeach()
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_fv_link}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${_fv_link}")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "${_fv_link}")

# ---- CUDA: the host's nvcc, aarch64 host compiler and target directory -------
set(_fv_cuda_ok OFF)
set(_fv_nvcc "${FV_JETSON_CUDA_ROOT}/bin/nvcc")
set(_fv_cuda_target_dir "${FV_JETSON_CUDA_ROOT}/targets/${FV_JETSON_CUDA_TARGET}")
if(NOT FV_JETSON_CUDA_HOST_COMPILER)
  set(FV_JETSON_CUDA_HOST_COMPILER "${FV_JETSON_CXX}")
endif()
if(DEFINED FV_WITH_CUDA AND NOT FV_WITH_CUDA)
  set(_fv_why "FV_WITH_CUDA=OFF")
elseif(NOT EXISTS "${_fv_nvcc}")
  set(_fv_why "no nvcc at ${_fv_nvcc} (set FV_JETSON_CUDA_ROOT)")
elseif(NOT EXISTS "${_fv_cuda_target_dir}/include/cuda_runtime.h")
  set(_fv_why "no ${_fv_cuda_target_dir}/include/cuda_runtime.h (install NVIDIA's cross \
package for ${FV_JETSON_CUDA_TARGET} of the board's CUDA version, or see README.md)")
elseif(NOT FV_JETSON_CUDA_HOST_COMPILER)
  set(_fv_why "no ${FV_JETSON_CROSS_PREFIX}g++ for nvcc -ccbin (g++-aarch64-linux-gnu)")
else()
  set(_fv_cuda_ok ON)
endif()
if(_fv_cuda_ok)
  set(CMAKE_CUDA_COMPILER "${_fv_nvcc}")
  set(CMAKE_CUDA_HOST_COMPILER "${FV_JETSON_CUDA_HOST_COMPILER}")
  set(CUDAToolkit_ROOT "${FV_JETSON_CUDA_ROOT}")
  if(FV_JETSON_CUDA_TARGET STREQUAL "sbsa-linux"
     AND NOT EXISTS "${FV_JETSON_CUDA_ROOT}/targets/aarch64-linux")
    # CMake 3.25 (and others before CMake issue 24192 was fixed) maps aarch64
    # to targets/aarch64-linux only.
    message(WARNING "jetson toolchain: this CMake may look for the aarch64 CUDA libraries in "
                    "${FV_JETSON_CUDA_ROOT}/targets/aarch64-linux only; if the configure picks "
                    "x86_64 ones, link that folder to targets/sbsa-linux or use a newer CMake")
  endif()
else()
  # Empty and defined: check_language(CUDA) finds nothing, the build is CPU-only
  # (never the host's x86_64 CUDA libraries).
  set(CMAKE_CUDA_COMPILER "")
  if(NOT _fv_jetson_told)
    set(_fv_jetson_told ON)
    message(STATUS "jetson toolchain: CPU-only: ${_fv_why}")
  endif()
endif()

# ---- running aarch64 programs on the host: qemu user mode ----------------------
find_program(FV_JETSON_QEMU NAMES qemu-aarch64 qemu-aarch64-static NO_CMAKE_FIND_ROOT_PATH)
if(FV_JETSON_QEMU)
  if(FV_JETSON_SYSROOT)
    set(CMAKE_CROSSCOMPILING_EMULATOR "${FV_JETSON_QEMU};-L;${FV_JETSON_SYSROOT}")
  elseif(EXISTS /lib/ld-linux-aarch64.so.1)
    # Multiarch: libc6:arm64 is installed (the arm64 -dev packages pull it in).
    # Its loader must be the one that runs: with -L /usr/aarch64-linux-gnu the
    # cross package's ld.so would load the multiarch libc.so.6 of another
    # build, and threaded programs hang in pthread_create.
    set(CMAKE_CROSSCOMPILING_EMULATOR "${FV_JETSON_QEMU};-L;/")
  else()
    set(CMAKE_CROSSCOMPILING_EMULATOR "${FV_JETSON_QEMU};-L;/usr/aarch64-linux-gnu")
  endif()
endif()
