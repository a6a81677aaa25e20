# Flags for athanor's own targets (never for third-party code).
add_library(athanor_flags INTERFACE)
target_compile_options(athanor_flags INTERFACE -Wall -Wextra -Wno-missing-field-initializers)
if(ATH_WERROR)
  target_compile_options(athanor_flags INTERFACE -Werror)
endif()
if(ATH_SANITIZE)
  # The sanitizer build checks memory and behaviour, not speed (the release build measures that):
  # -O1 compiles the kernels about 45% faster than -O3 and the suite still runs in seconds. It
  # comes after each layer's own -O3, so it wins.
  target_compile_options(athanor_flags INTERFACE -O1 -fsanitize=address,undefined
                         -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(athanor_flags INTERFACE -fsanitize=address,undefined)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # libFuzzer's coverage as well: the fuzz targets (fuzz/) link this same instrumented library,
    # so one sanitizer build serves the test suite and the fuzzers. Only the readers carry coverage
    # (fuzz/coverage_allowlist.txt says why).
    target_compile_options(
      athanor_flags INTERFACE -fsanitize=fuzzer-no-link
      -fsanitize-coverage-allowlist=${PROJECT_SOURCE_DIR}/fuzz/coverage_allowlist.txt)
  else()
    # GCC's flow-based warnings misfire on sanitizer-instrumented code (e.g. inside <regex> and
    # std::fill of the standard library): they stay warnings there, errors in the release build.
    target_compile_options(athanor_flags INTERFACE -Wno-error=maybe-uninitialized
                           -Wno-error=stringop-overflow)
  endif()
endif()
