# Runs fovea-regress and checks its exit status, output and JSON report.
#   cmake -DTOOL=<fovea-regress> -DMODE=cpu_json|bad_args|corrupt_profile -DWORK=<dir>
#         -P test_regress.cmake
cmake_minimum_required(VERSION 3.22)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# run(<expected exit> <needle in stdout+stderr> args...); sets OUT.
function(run want needle)
  execute_process(COMMAND ${EMULATOR} ${TOOL} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  string(JOIN " " cmd ${ARGN})
  if(NOT rc STREQUAL "${want}")
    message(FATAL_ERROR "fovea-regress ${cmd}: exit ${rc}, expected ${want}\n${out}${err}")
  endif()
  string(FIND "${out}${err}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "fovea-regress ${cmd}: output lacks '${needle}':\n${out}${err}")
  endif()
  message(STATUS "ok: exit ${rc}: ${cmd}")
  set(OUT "${out}${err}" PARENT_SCOPE)
endfunction()

# check_json(<file> <status of the summary: exit code>): parses it (CMake's
# string(JSON) fails on malformed JSON) and checks the summary and checks.
function(check_json file want_exit)
  if(NOT EXISTS ${file})
    message(FATAL_ERROR "${file} was not written")
  endif()
  file(READ ${file} j)
  string(JSON tool ERROR_VARIABLE e GET "${j}" tool)
  if(e)
    message(FATAL_ERROR "${file} is not valid JSON: ${e}\n${j}")
  endif()
  string(JSON code GET "${j}" summary exit_code)
  string(JSON failed GET "${j}" summary failed)
  string(JSON passed GET "${j}" summary passed)
  string(JSON n LENGTH "${j}" checks)
  if(NOT tool STREQUAL "fovea-regress" OR NOT code EQUAL want_exit OR n LESS 10)
    message(FATAL_ERROR "${file}: tool ${tool}, exit_code ${code} (want ${want_exit}), "
                        "${n} checks, ${passed} passed, ${failed} failed")
  endif()
  message(STATUS "ok: ${file}: ${n} checks, ${passed} passed, ${failed} failed")
  set(JSON "${j}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "cpu_json")
  run(0 "fovea-regress: " --backend cpu --quick --json ${WORK}/r.json)
  foreach(needle "GPU NOT TESTED" "no profile: performance not checked" " 0 failed")
    string(FIND "${OUT}" "${needle}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "the report lacks '${needle}':\n${OUT}")
    endif()
  endforeach()
  check_json(${WORK}/r.json 0)
  # the full run (every op and golden case) must pass too
  run(0 " 0 failed" --backend cpu --json ${WORK}/full.json)
  check_json(${WORK}/full.json 0)
elseif(MODE STREQUAL "bad_args")
  run(2 "unknown argument '--frobnicate'" --frobnicate)
  run(2 "--margin 'abc'" --margin abc)
  run(2 "--margin '-1'" --margin -1)
  run(2 "--backend 'gpu'" --backend gpu)
  run(2 "--json needs a value" --json)
  run(0 "--profile PATH" --help)
  run(2 "--device x: give a CUDA device index" --device x)
  run(2 "--device 999: give a CUDA device index" --device 999)
  run(2 "the CPU backend has no devices" --backend cpu --device 1)
  # Device 7: missing here, the context check fails naming it (exit 1). A host
  # with 8 GPUs or more runs on it (exit 0) and the context line names it.
  execute_process(COMMAND ${EMULATOR} ${TOOL} --backend cuda --device 7 --quick
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(FIND "${out}${err}" "CUDA device 7" at)
  if(NOT (rc STREQUAL "0" OR rc STREQUAL "1") OR at EQUAL -1)
    message(FATAL_ERROR "fovea-regress --backend cuda --device 7: exit ${rc}\n${out}${err}")
  endif()
  message(STATUS "ok: exit ${rc}: --backend cuda --device 7")
elseif(MODE STREQUAL "corrupt_profile")
  file(WRITE ${WORK}/bad.profile "fovea-profile 1\ndevice X\nsm 90\ncudnn 1\nconv garbage\n")
  run(1 "malformed conv line" --backend cpu --quick --profile ${WORK}/bad.profile
      --json ${WORK}/r.json)
  check_json(${WORK}/r.json 1)
  run(1 "cannot open" --backend cpu --quick --profile ${WORK}/missing.profile)
  file(WRITE ${WORK}/trunc.profile "fovea-profile 1\ndevice X\nsm 90\ncudnn 1\n")
  run(1 "no end line" --backend cpu --quick --profile ${WORK}/trunc.profile)
  file(WRITE ${WORK}/key.profile "fovea-profile 1\ndevice X\nsm 90\ncudnn 1\nconv "
       "conv2d:n1:h64:w64:c3:k8:r3:s3:u1:v1:p1:q1:d1:e1:g5:a1:al0:b1:f16 path=graph cdecl=8 "
       "engine=1 ws=0 ms=0.01 how=autotune knobs=-\nend 1\n")
  run(1 "bad key: groups g5" --backend cpu --quick --profile ${WORK}/key.profile)
  string(ASCII 1 2 200 255 binary)
  file(WRITE ${WORK}/binary.profile "${binary}garbage")
  run(1 "not printable" --backend cpu --quick --profile ${WORK}/binary.profile)
  # a well-formed profile on the CPU backend: read, not timed (GPU timings)
  file(WRITE ${WORK}/ok.profile "fovea-profile 1\ndevice X\nsm 90\ncudnn 1\nconv "
       "conv2d:n1:h64:w64:c3:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a1:al0:b1:f16 path=graph cdecl=8 "
       "engine=1 ws=0 ms=0.01 how=autotune knobs=-\nend 1\n")
  run(0 "not checked on the CPU backend" --backend cpu --quick --profile ${WORK}/ok.profile)
  # a net's layers (a fused residual, a concat slice) are not refused as bad keys
  file(WRITE ${WORK}/net.profile "fovea-profile 1\ndevice X\nsm 90\ncudnn 1\nconv "
       "conv2d:n1:h64:w64:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a1:al0:b1:f16:z1 path=graph cdecl=8 "
       "engine=1 ws=0 ms=0.01 how=heuristics knobs=-\nconv "
       "conv2d:n1:h64:w64:c8:k8:r3:s3:u1:v1:p1:q1:d1:e1:g1:a1:al0:b1:f16:y24 path=graph cdecl=8 "
       "engine=1 ws=0 ms=0.01 how=heuristics knobs=-\nend 2\n")
  run(0 "2 entries" --backend cpu --quick --profile ${WORK}/net.profile)
else()
  message(FATAL_ERROR "unknown MODE ${MODE}")
endif()
