# Flags for athanor's own targets (never for third-party code).
add_library(athanor_flags INTERFACE)
target_compile_options(athanor_flags INTERFACE -Wall -Wextra -Wno-missing-field-initializers)
if(ATH_WERROR)
  target_compile_options(athanor_flags INTERFACE -Werror)
endif()
if(ATH_SANITIZE)
  # GCC's flow-based warnings misfire on sanitizer-instrumented code (e.g. inside <regex> and
  # std::fill of the standard library): they stay warnings there, errors in the release build.
  target_compile_options(athanor_flags INTERFACE -fsanitize=address,undefined
                         -fno-sanitize-recover=undefined -fno-omit-frame-pointer
                         -Wno-error=maybe-uninitialized -Wno-error=stringop-overflow)
  target_link_options(athanor_flags INTERFACE -fsanitize=address,undefined)
endif()
