#pragma once
#include <cstdlib>

// Set only while ctest lists the tests the Soft-RoCE VM runs (tests/backends/verbs/rxe_cases.cmake.in):
// --gtest_list_tests then names the cases of backends this machine cannot run itself, so that
// each has its own ctest entry. Never set for a run.
namespace rdmalab {
inline bool listing_every_backend() { return std::getenv("RDMALAB_TEST_LIST_EVERY_BACKEND") != nullptr; }
}  // namespace rdmalab
