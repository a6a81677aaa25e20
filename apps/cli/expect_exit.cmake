# cmake -DCMD=prog -DARGS=a;b -DEXPECT=status [-DMATCH=regex] -P expect_exit.cmake
# Runs CMD ARGS and fails unless it exits with EXPECT and (when given) stderr matches MATCH.
execute_process(COMMAND ${CMD} ${ARGS} RESULT_VARIABLE status OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT status STREQUAL EXPECT)
  message(FATAL_ERROR "${CMD} ${ARGS}: exit status '${status}', expected ${EXPECT}\n${out}${err}")
endif()
if(DEFINED MATCH AND NOT err MATCHES "${MATCH}")
  message(FATAL_ERROR "${CMD} ${ARGS}: stderr does not match '${MATCH}':\n${err}")
endif()
message(STATUS "exit ${status}: ${err}")
