# fovea-run's --device option: a bad index and a device on the CPU backend
# are usage errors (exit 2, the reason given); a CUDA device that is missing
# fails (exit 1) naming it.
#   cmake -DTOOL=<fovea-run> -DMODEL=<model.onnx> -P fovea_run_device.cmake
cmake_minimum_required(VERSION 3.22)

# run(<wanted exits> <needle> args...): the exit is one of the wanted ones
# (a ;-list) and the output has needle.
function(run want needle)
  execute_process(COMMAND ${EMULATOR} ${TOOL} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  string(JOIN " " cmd ${ARGN})
  if(NOT rc IN_LIST want)
    message(FATAL_ERROR "fovea-run ${cmd}: exit ${rc}, expected ${want}\n${out}${err}")
  endif()
  string(FIND "${out}${err}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "fovea-run ${cmd}: output lacks '${needle}':\n${out}${err}")
  endif()
  message(STATUS "ok: exit ${rc}: ${cmd}")
endfunction()

run(2 "--device x: give a CUDA device index" ${MODEL} --device x)
run(2 "--device -1: give a CUDA device index" ${MODEL} --device=-1)
run(2 "--device 999: give a CUDA device index" ${MODEL} --device 999)
run(2 "the CPU backend has no devices" ${MODEL} --backend cpu --device 1)
run(0 "--device N" --help)
run(0 "forward: median" ${MODEL} --backend cpu --device 0 --runs 1 --quiet)
# Device 7: missing here (exit 1). A host with 8 GPUs or more runs on it
# (exit 0); either way the output names it.
run("0;1" "CUDA device 7" ${MODEL} --backend cuda --device 7 --runs 1 --quiet)
