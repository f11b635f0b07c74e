#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends.h"

// Set only while ctest lists the tests the Soft-RoCE VM runs (tests/backends/verbs/rxe_cases.cmake.in):
// --gtest_list_tests then names the cases of backends this machine cannot run itself, so that
// each has its own ctest entry. Never set for a run.
namespace rdmalab {
inline bool listing_every_backend() { return std::getenv("RDMALAB_TEST_LIST_EVERY_BACKEND") != nullptr; }

// The backends a parametrised suite runs on: the usable ones (each one left out is printed with
// the reason), or every one while ctest lists the Soft-RoCE VM's cases.
inline std::vector<std::string> usable_backend_names(const char* suite) {
  std::vector<std::string> out;
  for (const auto& b : all_backends().all()) {
    auto av = b.make()->availability();
    if (av.usable || listing_every_backend())
      out.push_back(b.name);
    else
      std::printf("[ SKIPPED  ] %s on backend %s: %s\n", suite, b.name.c_str(), av.why.c_str());
  }
  return out;
}
}  // namespace rdmalab
