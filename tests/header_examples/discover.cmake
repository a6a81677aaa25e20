# Writes a CTest file with one test per header the header_examples binary has an example for;
# each runs in a directory of its own under WORKDIR, where its files go: examples save files by
# short names ("x.npy" in both io/npy.h and cli/onnx_run.h), and CTest runs them in parallel, so
# in one shared directory one example could read what another had just written over its file.
execute_process(COMMAND ${EXE} --list OUTPUT_VARIABLE headers RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --list failed (${rc})")
endif()
string(REPLACE "\n" ";" headers "${headers}")
set(text "")
foreach(header ${headers})
  if(header)
    string(REPLACE "/" "_" dir_name "${header}")
    file(MAKE_DIRECTORY ${WORKDIR}/${dir_name})
    string(APPEND text "add_test([=[header_examples.${header}]=] [==[${EXE}]==] [=[${header}]=])\n")
    string(APPEND text "set_tests_properties([=[header_examples.${header}]=] PROPERTIES TIMEOUT 120 WORKING_DIRECTORY [==[${WORKDIR}/${dir_name}]==])\n")
  endif()
endforeach()
file(MAKE_DIRECTORY ${WORKDIR})
file(WRITE ${OUT} "${text}")
