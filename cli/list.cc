// rdmalab list and rdmalab keys: what this build offers (backends, in-network reductions, memory,
// workloads) and every scenario key.
#include <fmt/format.h>

#include "backends.h"
#include "commands.h"
#include "rdmalab/memory.h"
#include "rdmalab/run.h"
#include "rdmalab/workload.h"

namespace rdmalab {
namespace {

int cmd_list() {
  fmt::print("backends:\n");
  for (const auto& b : all_backends().all()) {
    auto be = b.make();
    Availability av = be->availability();
    fmt::print("  {:<10} {:<11} {}\n", b.name, av.usable ? "usable" : "not usable", av.usable ? be->description() : av.why);
  }
  // In-network reductions are modelled, not run: which backends have them (docs/collectives.md).
  std::string nvls;
  for (const auto& b : all_backends().all())
    if (b.make()->capabilities().switch_reduction) nvls += (nvls.empty() ? "" : ", ") + b.name;
  fmt::print("in-network reductions:\n");
  fmt::print("  {:<10} {}\n", "nvls", nvls.empty() ? std::string("no backend models it")
                                                   : fmt::format("NVLink SHARP on a node whose NVSwitch reduces (fabric.node.nvswitch.reduce): {} only", nvls));
  fmt::print("  {:<10} {}\n", "nvls_tree", nvls.empty() ? std::string("no backend models it")
                                                        : fmt::format("NVLink SHARP in each node, NCCL's tree between the nodes: {} only", nvls));
  std::string sharp;
  for (const auto& b : all_backends().all())
    if (b.make()->capabilities().in_network_reduction) sharp += (sharp.empty() ? "" : ", ") + b.name;
  fmt::print("  {:<10} {}\n", "collnet", sharp.empty() ? std::string("no backend models it")
                                                      : fmt::format("InfiniBand SHARP, the rails' switches reduce (fabric.sharp.tiers on "
                                                                    "rail_optimized): algorithm collnet (CollNet Direct) and nvls across "
                                                                    "nodes (NVLS with CollNet): {} only; CollNet Chain is not modelled", sharp));
  fmt::print("memory:\n");
  for (MemoryKind k : {MemoryKind::host, MemoryKind::cuda, MemoryKind::phantom})
    fmt::print("  {:<10} {}\n", memory_kind_name(k), memory_provider(k) ? "usable" : "not usable: " + memory_unavailable_reason(k));
  fmt::print("workloads:\n");
  for (const auto& w : builtin_workloads().all()) {
    const char* kind = w.kind == WorkloadKind::bandwidth ? "bandwidth" : w.kind == WorkloadKind::latency ? "latency"
                       : w.kind == WorkloadKind::collective                                 ? "collective"
                       : w.kind == WorkloadKind::error                                      ? "error"
                                                                                            : "training";
    fmt::print("  {:<12} {:<10} {}\n", w.name, kind, w.description);
  }
  return kExitOk;
}

int cmd_keys() {
  Schema s = full_schema(all_backends());
  for (const auto& [key, spec] : s.all()) {
    std::string allowed;
    for (const auto& a : spec.allowed) allowed += (allowed.empty() ? "" : "|") + a;
    fmt::print("{:<28} {:<42} default {:<10} {}{}\n", key, allowed.empty() ? value_type_name(spec.type) : allowed,
               spec.default_value.empty() ? "-" : spec.default_value, spec.help, "");
  }
  return kExitOk;
}

}  // namespace

Command add_list(CLI::App& app) {
  return {app.add_subcommand("list", "list backends (usable here or why not) and workloads"), [] { return cmd_list(); }};
}

Command add_keys(CLI::App& app) {
  return {app.add_subcommand("keys", "list every scenario key with its type, default and meaning"), [] { return cmd_keys(); }};
}

}  // namespace rdmalab
