# Runs Doxygen with DOXYFILE (output in OUT) and fails on any warning: an
# undocumented public symbol, a documentation error. Used by the docs target
# and the api_docs test.
#   cmake -DDOXYGEN=<doxygen or empty> -DDOXYFILE=<file> -DOUT=<dir> -P run_doxygen.cmake
if(NOT DOXYGEN)
  message(FATAL_ERROR "doxygen (and python3, for the header filter) not found when configuring: "
                      "run toolchain/install-deps.sh (Debian: doxygen), then configure again")
endif()
file(MAKE_DIRECTORY ${OUT})
file(REMOVE ${OUT}/warnings.log)
execute_process(COMMAND ${DOXYGEN} ${DOXYFILE} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "doxygen failed (${rc}):\n${out}${err}")
endif()
set(log "")
if(EXISTS ${OUT}/warnings.log)
  file(READ ${OUT}/warnings.log log)
endif()
string(STRIP "${log}${err}" log)
if(NOT log STREQUAL "")
  message(FATAL_ERROR "Doxygen warnings (document every public symbol in its header, "
                      "as the neighbouring declarations are):\n${log}")
endif()
message(STATUS "API reference: no warnings (${OUT})")
