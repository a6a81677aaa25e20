# Flags for athanor's own targets (never for third-party code).
add_library(athanor_flags INTERFACE)
target_compile_options(athanor_flags INTERFACE -Wall -Wextra -Wno-missing-field-initializers)
if(ATH_WERROR)
  target_compile_options(athanor_flags INTERFACE -Werror)
endif()
if(ATH_SANITIZE)
  target_compile_options(athanor_flags INTERFACE -fsanitize=address,undefined
                         -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(athanor_flags INTERFACE -fsanitize=address,undefined)
endif()
