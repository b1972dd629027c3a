# Warning and sanitizer settings shared by every fovea target.
add_library(fovea_warnings INTERFACE)
# POSIX 2008 and the BSD/glibc extras (posix_memalign, sysconf pages) under strict C11.
target_compile_definitions(fovea_warnings INTERFACE $<$<COMPILE_LANGUAGE:C>:_DEFAULT_SOURCE>)
target_compile_options(fovea_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wstrict-prototypes -Wshadow -Wno-unused-parameter>
  $<$<AND:$<COMPILE_LANGUAGE:C>,$<BOOL:${FV_WERROR}>>:-Werror>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall>
  $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${FV_WERROR}>>:-Werror=all-warnings>)
if(FV_SANITIZE)
  target_compile_options(fovea_warnings INTERFACE
    $<$<COMPILE_LANGUAGE:C>:-fsanitize=${FV_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all>)
  target_link_options(fovea_warnings INTERFACE -fsanitize=${FV_SANITIZE})
endif()
