// rdmalab validate: checks a scenario file without running it.
#include <fmt/format.h>

#include "backends.h"
#include "commands.h"
#include "rdmalab/run.h"

namespace rdmalab {
namespace {

int cmd_validate(const std::string& path, const std::vector<std::string>& sets, const std::string& backend_override) {
  auto sc = load(path, sets);
  if (!sc) {
    print_problems(sc.status().message());
    return kExitUsage;
  }
  std::string backend_name = backend_override.empty() ? sc->get_string("backend") : backend_override;
  auto backend = all_backends().make(backend_name);
  if (!backend) {
    fmt::print(stderr, "rdmalab: {}\n", backend.status().message());
    return kExitUsage;
  }
  Status st = check_run(*sc, **backend);
  if (!st) {
    print_problems(st.message());
    return kExitUsage;
  }
  note_other_backend_keys(*sc, backend_name);
  note_unread_workload_keys(*sc);
  fmt::print("{}: ok ({} on {}, {} ranks)\n", path, sc->get_string("workload.type"), backend_name, scenario_ranks(*sc));
  return kExitOk;
}

}  // namespace

Command add_validate(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto backend = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  auto* validate = app.add_subcommand("validate", "check a scenario file without running it");
  validate->add_option("scenario", *path, "scenario file (YAML)")->required();
  validate->add_option("--set", *sets, "override a scenario key (repeatable)");
  validate->add_option("--backend", *backend, "check against this backend instead of the scenario's");
  return {validate, [=] { return cmd_validate(*path, *sets, *backend); }};
}

}  // namespace rdmalab
