// dragonfly: SimGrid's dragonfly zone (fabric.dragonfly.*).
#include <fmt/format.h>

#include <cstdio>
#include <simgrid/s4u.hpp>

#include "simgrid/topologies/topology.h"

namespace rdmalab::sim {

Status check_dragonfly(const Scenario& sc) {
  for (const char* k : {"fabric.dragonfly.groups", "fabric.dragonfly.chassis", "fabric.dragonfly.routers"}) {
    if (!sc.has(k)) return sc.error("fabric.topology", fmt::format("a dragonfly needs {} as [count, links]", k));
    if (sc.get_ints(k).size() != 2) return sc.error(k, "needs two numbers: [count, links]");
  }
  // SimGrid 3.32 wires the links between groups from router k of a chassis to group k, and
  // crashes (segmentation fault) when a chassis has fewer routers than there are groups.
  if (sc.get_ints("fabric.dragonfly.groups")[0] > sc.get_ints("fabric.dragonfly.routers")[0])
    return sc.error("fabric.dragonfly.groups",
                    fmt::format("{} groups need at least {} routers per chassis (fabric.dragonfly.routers is [{}, …]): SimGrid "
                                "3.32 links router k of each chassis to group k",
                                sc.get_ints("fabric.dragonfly.groups")[0], sc.get_ints("fabric.dragonfly.groups")[0],
                                sc.get_ints("fabric.dragonfly.routers")[0]));
  return Status::ok();
}

void build_dragonfly(Fabric& f) {
  const Scenario& sc = f.sc;
  const double bw = f.bw;
  const double lat = f.lat;
  const sg4::ClusterCallbacks& callbacks = f.callbacks;
  const auto policy = f.policy;
  auto g = sc.get_ints("fabric.dragonfly.groups"), c = sc.get_ints("fabric.dragonfly.chassis"),
       r = sc.get_ints("fabric.dragonfly.routers");
  auto pr = [](const std::vector<std::int64_t>& v) {
    return std::make_pair(static_cast<unsigned>(v[0]), static_cast<unsigned>(v[1]));
  };
  auto* zone = sg4::create_dragonfly_zone(
      "fabric", nullptr,
      sg4::DragonflyParams(pr(g), pr(c), pr(r), static_cast<unsigned>(sc.get_int("fabric.dragonfly.blades"))), callbacks, bw,
      lat, policy);
  zone->seal();
}

}  // namespace rdmalab::sim
