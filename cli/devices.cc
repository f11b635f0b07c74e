// rdmalab devices: RDMA devices, ports and GIDs (what ibv_devinfo would, at a glance).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backends.h"
#include "commands.h"

namespace rdmalab {
namespace {

int cmd_devices(const std::string& backend_name, bool json) {
  auto backend = all_backends().make(backend_name);
  if (!backend) {
    fmt::print(stderr, "rdmalab: {}\n", backend.status().message());
    return kExitUsage;
  }
  auto devs = (*backend)->devices();
  if (!devs) {
    fmt::print(stderr, "rdmalab devices: {}\n", devs.status().message());
    return kExitRunFailed;
  }
  if (json) {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const auto& d : *devs) {
      nlohmann::ordered_json g = nlohmann::ordered_json::array();
      for (const auto& x : d.gids) g.push_back({{"index", x.index}, {"gid", x.gid}, {"type", x.type}, {"netdev", x.netdev}});
      arr.push_back({{"device", d.device}, {"port", d.port}, {"state", d.state}, {"link_layer", d.link_layer}, {"active_mtu", d.active_mtu},
                     {"speed_gbps", d.speed_gbps}, {"lid", d.lid}, {"gids", g}});
    }
    fmt::print("{}\n", arr.dump(2));
    return kExitOk;
  }
  if (devs->empty()) fmt::print("no devices\n");
  for (const auto& d : *devs) {
    fmt::print("{} port {}: {}, {}, MTU {}, {} Gb/s{}\n", d.device, d.port, d.state, d.link_layer, d.active_mtu, d.speed_gbps,
               d.link_layer == "InfiniBand" ? fmt::format(", LID {}", d.lid) : "");
    for (const auto& g : d.gids) fmt::print("  GID[{:>3}] {:<39} {:<8} {}\n", g.index, g.gid, g.type, g.netdev);
  }
  return kExitOk;
}

}  // namespace

Command add_devices(CLI::App& app) {
  auto backend = std::make_shared<std::string>("verbs");
  auto json = std::make_shared<bool>(false);
  auto* devices = app.add_subcommand("devices", "show RDMA devices, ports and GIDs (what ibv_devinfo would, at a glance)");
  devices->add_flag("--json", *json, "print JSON");
  devices->add_option("--backend", *backend, "backend whose devices to list (default verbs)");
  return {devices, [=] { return cmd_devices(*backend, *json); }};
}

}  // namespace rdmalab
