# ctest driver (cmake -P), see tests/unit/apps_tests.cmake: installs the build
# into a scratch prefix, then
#   1. configures, builds and runs this folder's project with
#      find_package(fovea) through CMAKE_PREFIX_PATH,
#   2. compiles main.c again with `pkg-config --cflags --libs fovea`, runs it,
#   3. runs the installed fovea-laplacian (its RPATH and its bundled image),
#   4. checks that README.md's C example is main.c.
# Inputs: FV_SOURCE_DIR FV_BUILD_DIR FV_WORK_DIR FV_LIBDIR FV_BINDIR
# FV_GENERATOR FV_C_COMPILER FV_SANITIZE FV_HAVE_APPS FV_EXTRA_LIB_DIRS.
cmake_minimum_required(VERSION 3.22)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  set(run_out "${out}${err}" PARENT_SCOPE)
endfunction()

set(prefix ${FV_WORK_DIR}/prefix)
set(build ${FV_WORK_DIR}/build)
file(REMOVE_RECURSE ${FV_WORK_DIR})
file(MAKE_DIRECTORY ${FV_WORK_DIR})

run("cmake --install" ${CMAKE_COMMAND} --install ${FV_BUILD_DIR} --prefix ${prefix})
foreach(f include/fovea/fovea.h include/fovea/version.h include/fovea/platform/image_io.h
          ${FV_LIBDIR}/cmake/fovea/foveaConfig.cmake ${FV_LIBDIR}/pkgconfig/fovea.pc)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${prefix}/${f}")
  endif()
endforeach()

# Sanitized libraries need sanitized programs (the runtime must come first).
set(san_flags "")
if(FV_SANITIZE)
  set(san_flags -fsanitize=${FV_SANITIZE})
endif()
string(REPLACE ";" " " san_flags_str "${san_flags}")
set(env_cmd ${CMAKE_COMMAND} -E env)
if(FV_EXTRA_LIB_DIRS)
  list(APPEND env_cmd "LD_LIBRARY_PATH=${FV_EXTRA_LIB_DIRS}:$ENV{LD_LIBRARY_PATH}")
endif()

# 1. find_package(fovea); the build tree's RPATH finds the installed library.
run("configuring tests/install" ${CMAKE_COMMAND} -S ${FV_SOURCE_DIR}/tests/install -B ${build}
    -G ${FV_GENERATOR} -DCMAKE_C_COMPILER=${FV_C_COMPILER} -DCMAKE_BUILD_TYPE=Release
    "-DCMAKE_C_FLAGS=${san_flags_str}" "-DCMAKE_EXE_LINKER_FLAGS=${san_flags_str}"
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run("building tests/install" ${CMAKE_COMMAND} --build ${build})
run("running the find_package example" ${env_cmd} ${build}/fovea_example)
if(NOT run_out MATCHES "sum around \\(1,1\\): 45 ")
  message(FATAL_ERROR "unexpected output from the find_package example:\n${run_out}")
endif()
message(STATUS "find_package example: ${run_out}")

# 2. pkg-config. The .pc file holds the configured prefix; point it at ours.
find_program(PKG_CONFIG NAMES pkg-config pkgconf REQUIRED)
run("pkg-config" ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/${FV_LIBDIR}/pkgconfig
    ${PKG_CONFIG} --define-variable=prefix=${prefix} --cflags --libs fovea)
string(STRIP "${run_out}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
if(NOT "-I${prefix}/include" IN_LIST pc_flags OR NOT "-lfovea" IN_LIST pc_flags)
  message(FATAL_ERROR "pkg-config --cflags --libs fovea gave: ${pc_flags}")
endif()
run("compiling with pkg-config flags" ${FV_C_COMPILER} -std=c11 -Wall -Werror ${san_flags}
    ${FV_SOURCE_DIR}/tests/install/main.c ${pc_flags} -Wl,-rpath,${prefix}/${FV_LIBDIR}
    -o ${FV_WORK_DIR}/fovea_example_pc)
run("running the pkg-config example" ${env_cmd} ${FV_WORK_DIR}/fovea_example_pc)
if(NOT run_out MATCHES "sum around \\(1,1\\): 45 ")
  message(FATAL_ERROR "unexpected output from the pkg-config example:\n${run_out}")
endif()

# 3. The installed demo: no LD_LIBRARY_PATH for fovea (its RPATH), and the
# bundled image found relative to the executable.
if(FV_HAVE_APPS)
  set(app ${prefix}/${FV_BINDIR}/fovea-laplacian)
  file(REAL_PATH ${prefix} real_prefix)
  run("running the installed fovea-laplacian" ${env_cmd} ${app} --backend cpu
      --output ${FV_WORK_DIR}/laplacian.png)
  string(FIND "${run_out}" "${real_prefix}/${FV_BINDIR}/" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the installed fovea-laplacian did not use its installed image:\n"
                        "${run_out}")
  endif()
  if(NOT EXISTS ${FV_WORK_DIR}/laplacian.png)
    message(FATAL_ERROR "the installed fovea-laplacian wrote no ${FV_WORK_DIR}/laplacian.png")
  endif()
endif()

# 4. README.md shows main.c: the first ```c block must be that file.
file(READ ${FV_SOURCE_DIR}/README.md readme)
file(READ ${FV_SOURCE_DIR}/tests/install/main.c main_c)
string(FIND "${readme}" "```c\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "README.md has no ```c block")
endif()
math(EXPR start "${start} + 5")
string(SUBSTRING "${readme}" ${start} -1 rest)
string(FIND "${rest}" "```" end)
string(SUBSTRING "${rest}" 0 ${end} example)
if(NOT example STREQUAL main_c)
  message(FATAL_ERROR "README.md's C example differs from tests/install/main.c: keep them equal")
endif()
message(STATUS "install test passed (prefix ${prefix})")
