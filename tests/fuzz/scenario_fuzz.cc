// libFuzzer target: the scenario reader. Any bytes give a Scenario or a Status with a message,
// never a crash, a hang or an exception (AddressSanitizer and UndefinedBehaviorSanitizer on).
// Built and run for a fixed time by tests/fuzz/run.sh (ctest fuzz.scenario).
#include <cstddef>
#include <cstdint>
#include <string>

#include "rdmalab/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const rdmalab::Schema schema = rdmalab::core_schema();
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The first line, when it starts with "--set ", is an override: the command line is fuzzed too.
  std::vector<std::string> sets;
  std::string body = text;
  if (body.rfind("--set ", 0) == 0) {
    const auto nl = body.find('\n');
    sets.push_back(body.substr(6, nl == std::string::npos ? std::string::npos : nl - 6));
    body = nl == std::string::npos ? std::string() : body.substr(nl + 1);
  }
  auto sc = rdmalab::parse_scenario(body, "fuzz.yaml", sets, schema);
  if (!sc.is_ok() && sc.status().message().empty()) __builtin_trap();  // every refusal says why
  return 0;
}
