# Tests owned by the platform/apps side, included by tests/unit/CMakeLists.txt:
# extra libraries for test_image_io, runs of fovea-laplacian, and the install
# test (an outside project built against `cmake --install` output).

# test_image_io writes PNG variants (16-bit, palette, grey+alpha) with libpng.
if(TARGET test_image_io)
  find_package(PNG REQUIRED)
  target_link_libraries(test_image_io PRIVATE PNG::PNG)
endif()

if(TARGET fovea-laplacian)
  # Cross builds: the test program runs under the emulator and starts the app
  # through a host script that runs it under the emulator too.
  set(_fv_app $<TARGET_FILE:fovea-laplacian>)
  if(CMAKE_CROSSCOMPILING AND CMAKE_CROSSCOMPILING_EMULATOR)
    list(JOIN CMAKE_CROSSCOMPILING_EMULATOR "\" \"" _fv_emu)
    set(_fv_app ${CMAKE_CURRENT_BINARY_DIR}/fovea-laplacian-emu.sh)
    file(GENERATE OUTPUT ${_fv_app}
         CONTENT "#!/bin/sh\nexec \"${_fv_emu}\" \"$<TARGET_FILE:fovea-laplacian>\" \"$@\"\n"
         FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                          WORLD_READ WORLD_EXECUTE)
  endif()
  add_executable(test_laplacian_app test_laplacian_app.c)
  target_link_libraries(test_laplacian_app PRIVATE fv_testutil fovea_platform fovea_warnings m)
  set(_work ${CMAKE_CURRENT_BINARY_DIR}/app-runs)
  add_test(NAME app_laplacian_cpu
           COMMAND test_laplacian_app run ${_fv_app}
                   ${PROJECT_SOURCE_DIR}/data/astronaut.png ${_work})
  add_test(NAME app_laplacian_missing_input
           COMMAND test_laplacian_app missing ${_fv_app}
                   ${PROJECT_SOURCE_DIR}/data/astronaut.png ${_work})
  add_test(NAME app_laplacian_filters
           COMMAND test_laplacian_app filters ${_fv_app}
                   ${PROJECT_SOURCE_DIR}/data/astronaut.png ${_work})
  set_tests_properties(app_laplacian_cpu app_laplacian_missing_input app_laplacian_filters PROPERTIES
                       LABELS "unit;app" TIMEOUT 300)
endif()

# Install the whole build into a scratch prefix, then build and run
# tests/install against it: find_package(fovea) and pkg-config.
set(_fv_extra_lib_dirs "")
if(FV_HAVE_CUDA)
  # The installed libfovea finds CUDA and cuDNN through the system's loader
  # paths or LD_LIBRARY_PATH; give the test the ones this build used.
  get_filename_component(_cudnn_dir "${CUDNN_LIBRARY}" DIRECTORY)
  set(_fv_extra_lib_dirs "${CUDAToolkit_LIBRARY_DIR}:${_cudnn_dir}")
endif()
add_test(NAME install_consumer
         COMMAND ${CMAKE_COMMAND}
                 -DFV_SOURCE_DIR=${PROJECT_SOURCE_DIR}
                 -DFV_BUILD_DIR=${PROJECT_BINARY_DIR}
                 -DFV_WORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/install-test
                 -DFV_LIBDIR=${CMAKE_INSTALL_LIBDIR}
                 -DFV_BINDIR=${CMAKE_INSTALL_BINDIR}
                 -DFV_GENERATOR=${CMAKE_GENERATOR}
                 -DFV_C_COMPILER=${CMAKE_C_COMPILER}
                 -DFV_SANITIZE=${FV_SANITIZE}
                 -DFV_HAVE_APPS=$<TARGET_EXISTS:fovea-laplacian>
                 -DFV_EXTRA_LIB_DIRS=${_fv_extra_lib_dirs}
                 -P ${PROJECT_SOURCE_DIR}/tests/install/run_install_test.cmake)
set_tests_properties(install_consumer PROPERTIES LABELS "unit;install" TIMEOUT 600)

# Cross builds (toolchain/jetson.toolchain.cmake; ctest runs test programs
# through CMAKE_CROSSCOMPILING_EMULATOR, qemu-aarch64): these tests start
# target programs from a running program (posix_spawn inside qemu, or cmake on
# the host), which qemu's user mode cannot do without binfmt_misc, and the
# install test builds a consumer on the host. Reported as "Not Run (Disabled)";
# the native build runs them.
if(CMAKE_CROSSCOMPILING)
  foreach(_t install_consumer)
    if(TEST ${_t})
      set_tests_properties(${_t} PROPERTIES DISABLED TRUE)
    endif()
  endforeach()
endif()

# fovea-edge, the camera demo, end to end on the CPU backend (test:// source).
if(TARGET fovea-edge AND NOT CMAKE_CROSSCOMPILING)
  add_executable(test_edge_app test_edge_app.c)
  if(FV_SANITIZE MATCHES "address") # it loads GStreamer itself to check the files
    target_sources(test_edge_app PRIVATE ${PROJECT_SOURCE_DIR}/apps/common/fv_sanitizer_defaults.c)
  endif()
  target_link_libraries(test_edge_app PRIVATE fv_testutil fovea_platform fovea_warnings m)
  set(_work ${CMAKE_CURRENT_BINARY_DIR}/app-runs)
  foreach(_mode run errors default options interrupt)
    add_test(NAME app_edge_${_mode}
             COMMAND test_edge_app ${_mode} $<TARGET_FILE:fovea-edge> ${_work})
    # Sanitizer builds: no LSAN_OPTIONS here. The program carries its own
    # suppressions (apps/common/fv_sanitizer_defaults.c), so these runs check
    # that the demo is leak-clean as a user runs it.
    set_tests_properties(app_edge_${_mode} PROPERTIES LABELS "unit;app" TIMEOUT 300)
  endforeach()
endif()

# toolchain/soak.sh at CI size: fovea-edge for 200000 frames and fovea-infer
# for 20000 batches (CPU backend, test:// at 64x48, null://), each program's
# RSS flat within 2 MB after a 3 s warm-up and no pool carve-outs while
# running; about 30 s on 2 cores. Not in sanitizer builds (ASan's quarantine
# and shadow memory make RSS say nothing about leaks) nor cross builds.
if(TARGET fovea-edge AND TARGET fovea-infer AND NOT FV_SANITIZE AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME soak_short
           COMMAND ${PROJECT_SOURCE_DIR}/toolchain/soak.sh ${PROJECT_BINARY_DIR} 200000 20000)
  set_tests_properties(soak_short PROPERTIES LABELS "unit;app" TIMEOUT 300)
  # the GPU soak's memory bound, with a stand-in nvidia-smi (no GPU needed)
  add_test(NAME soak_gpu_memory_bound
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_soak_gpu_memory.sh
                   ${PROJECT_SOURCE_DIR}/toolchain/soak.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(soak_gpu_memory_bound PROPERTIES LABELS "unit;app" TIMEOUT 120)
endif()

# fovea-bench conv --shapes takes shapes of the caller's
# (HxWxC-K-RxS-sSTRIDE-pPAD); a malformed one is refused, saying the form it
# wants, before any GPU work (so on CI's machines too).
if(TARGET fovea-bench)
  add_test(NAME app_bench_conv_shape_malformed
           COMMAND fovea-bench conv --shapes 3,224x224x3-64-7x7-s2)
  add_test(NAME app_bench_conv_shape_pad
           COMMAND fovea-bench conv --shapes 224x224x3-64-7x7-s2-p7)
  set_tests_properties(app_bench_conv_shape_malformed app_bench_conv_shape_pad PROPERTIES
                       LABELS "unit;app" TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "want HxWxC-K-RxS-sSTRIDE-pPAD")
  # --sms-tune: only with --sms, and only autotune or heuristic
  add_test(NAME app_bench_conv_sms_tune_alone COMMAND fovea-bench conv --sms-tune heuristic)
  add_test(NAME app_bench_conv_sms_tune_bad COMMAND fovea-bench conv --sms 8 --sms-tune fast)
  set_tests_properties(app_bench_conv_sms_tune_alone PROPERTIES LABELS "unit;app" TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "--sms-tune needs --sms")
  set_tests_properties(app_bench_conv_sms_tune_bad PROPERTIES LABELS "unit;app" TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "unknown or incomplete option '--sms-tune'")
endif()
