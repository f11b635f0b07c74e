#!/usr/bin/env bash
# Fresh Debian 12 machine to the whole test suite: installs what is missing, builds, and runs every
# test twice: a normal build, and one with AddressSanitizer and UndefinedBehaviorSanitizer. The
# sanitized build uses clang-19, whose ASan runtime locks its allocator around fork (the backends
# fork from multi-threaded processes; GCC 12's runtime can hang such a child).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"

scripts/setup.sh build
(cd build && ctest --output-on-failure -j "$jobs")

# A sanitized build configured earlier with another compiler starts again (CMake keeps the first).
if [ -f build-asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++-19' build-asan/CMakeCache.txt; then rm -rf build-asan; fi
scripts/setup.sh build-asan -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 -DRDMALAB_SANITIZE=ON -DRDMALAB_BUILD_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=Debug
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j "$jobs")
