# cmake -DCMD=athanor -DDIR=dir "-DFIT_ARGS=a;b" "-DEXPORT_ARGS=c;d" -P export_roundtrip.cmake
# `athanor fit` a few steps into DIR, then `athanor export` its last checkpoint (which loads the
# .onnx file with InferenceSession and compares it with the model); fails unless both exit 0
# and the comparison says ok.
file(REMOVE_RECURSE ${DIR})
execute_process(COMMAND ${CMD} fit ${FIT_ARGS} --trainer.default_root_dir=${DIR}
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "fit: exit status ${status}\n${out}${err}")
endif()
if(NOT out MATCHES "last checkpoint: ([^\n]+)")
  message(FATAL_ERROR "fit printed no last checkpoint:\n${out}")
endif()
set(ckpt "${CMAKE_MATCH_1}")
execute_process(COMMAND ${CMD} export --ckpt_path ${ckpt} --output ${DIR}/model.onnx
                        ${EXPORT_ARGS}
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0 OR NOT out MATCHES "InferenceSession on the example [^\n]*\\(ok\\)")
  message(FATAL_ERROR "export: exit status ${status}\n${out}${err}")
endif()
message(STATUS "${out}")
