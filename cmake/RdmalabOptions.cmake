# Shared compile flags, and a summary of which optional parts were built and why not.

add_library(rdmalab_warnings INTERFACE)
target_compile_options(rdmalab_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)

if(RDMALAB_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
  # The SimGrid and verbs backends fork while other threads run (the dashboard's worker, a stopper).
  # A sanitizer runtime without fork handlers can fork while another thread holds its allocator's
  # lock, and the child then waits for that lock forever (GCC 12's libsanitizer: 2 hung children in
  # 400 forks in a small test; Clang 19's runtime locks its allocator around fork: 0 in 1000).
  # scripts/test.sh builds the sanitized suite with clang-19 (a Debian 12 package). With an older
  # runtime the tests that fork from a second thread skip and say why.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 19)
    set(RDMALAB_SANITIZER_FORK_SAFE ON)
  else()
    set(RDMALAB_SANITIZER_FORK_SAFE OFF)
    message(WARNING "RDMALAB_SANITIZE with ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}: its sanitizer runtime can hang "
                    "a child forked while another thread allocates, so the tests that do so skip. Configure with "
                    "-DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_C_COMPILER=clang-19 (as scripts/test.sh does) to run them.")
  endif()
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
