# cmake -DCMD=prog -DARGS=a;b -DKEYS=k1;k2 -P expect_json.cmake
# Runs CMD ARGS and fails unless it exits with 0 and its stdout is one JSON object holding every
# key in KEYS (string(JSON) parses it: a malformed document is an error).
execute_process(COMMAND ${CMD} ${ARGS} RESULT_VARIABLE status OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT status STREQUAL 0)
  message(FATAL_ERROR "${CMD} ${ARGS}: exit status '${status}'\n${out}${err}")
endif()
string(JSON type ERROR_VARIABLE parse_error TYPE "${out}")
if(parse_error OR NOT type STREQUAL "OBJECT")
  message(FATAL_ERROR "${CMD} ${ARGS}: stdout is not one JSON object (${parse_error}):\n${out}")
endif()
foreach(key IN LISTS KEYS)
  string(JSON value ERROR_VARIABLE missing GET "${out}" ${key})
  if(missing)
    message(FATAL_ERROR "${CMD} ${ARGS}: no '${key}' in\n${out}")
  endif()
  message(STATUS "${key}: ${value}")
endforeach()
