# Third-party dependencies: Debian packages only (scripts/install-deps.sh installs them).
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(ZLIB REQUIRED)  # gzip-compressed IDX files (MNIST)
find_package(simdjson REQUIRED)  # safetensors headers, validated in one linear pass
find_package(yaml-cpp REQUIRED)  # run configs and hparams.yaml
find_package(CLI11 REQUIRED)  # the athanor command line
# The onnx layer: Debian's libonnx-dev ships a CMake package (targets onnx, onnx_proto) whose
# onnx_proto links protobuf::libprotobuf without finding it, so Protobuf comes first.
find_package(Protobuf REQUIRED)
find_package(ONNX CONFIG REQUIRED)
# The dist layer's collectives: MPI's C API (MPI::MPI_C). FindMPI checks the C component with
# a C compiler; the CXX component would also link the deprecated MPI-2 C++ bindings.
enable_language(C)
find_package(MPI REQUIRED COMPONENTS C)

# Debian's libdnnl-dev ships no CMake package: locate the header and library directly.
find_path(DNNL_INCLUDE_DIR NAMES oneapi/dnnl/dnnl.hpp REQUIRED)
find_library(DNNL_LIBRARY NAMES dnnl REQUIRED)
if(NOT TARGET athanor_dnnl)
  add_library(athanor_dnnl INTERFACE IMPORTED)
  set_target_properties(athanor_dnnl PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${DNNL_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${DNNL_LIBRARY}")
endif()

if(ATH_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(ATH_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
