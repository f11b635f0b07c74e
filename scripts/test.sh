#!/usr/bin/env bash
# Fresh Debian 12 machine to the whole test suite: installs what is missing, builds, and runs every
# test twice: a normal build, and one with AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"

scripts/setup.sh build
(cd build && ctest --output-on-failure -j "$jobs")

scripts/setup.sh build-asan -DRDMALAB_SANITIZE=ON -DRDMALAB_BUILD_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=Debug
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j "$jobs")
