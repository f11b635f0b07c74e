# Shared compile flags, and a summary of which optional parts were built and why not.

add_library(rdmalab_warnings INTERFACE)
target_compile_options(rdmalab_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)

if(RDMALAB_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

set_property(GLOBAL PROPERTY RDMALAB_PARTS "")

# rdmalab_part(NAME ON|OFF WHY): record whether an optional part is built, and why not.
function(rdmalab_part name built why)
  if(built)
    set_property(GLOBAL APPEND PROPERTY RDMALAB_PARTS "  ${name}: built")
  else()
    set_property(GLOBAL APPEND PROPERTY RDMALAB_PARTS "  ${name}: left out — ${why}")
  endif()
endfunction()

function(rdmalab_print_parts)
  get_property(parts GLOBAL PROPERTY RDMALAB_PARTS)
  message(STATUS "rdmalab optional parts:")
  foreach(line IN LISTS parts)
    message(STATUS "${line}")
  endforeach()
endfunction()
