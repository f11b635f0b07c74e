// dragonfly: SimGrid's dragonfly zone (fabric.dragonfly.*).
#include <fmt/format.h>

#include <cstdio>
#include <simgrid/s4u.hpp>

#include "simgrid/topologies/topology.h"

namespace rdmalab::sim {

namespace {

Status nodes_dragonfly(const Scenario& sc) {
  std::vector<std::int64_t> counts;
  for (const char* k : {"fabric.dragonfly.groups", "fabric.dragonfly.chassis", "fabric.dragonfly.routers"}) {
    if (!sc.has(k) || sc.get_ints(k).size() != 2) return Status::ok();  // check_dragonfly says what is missing
    counts.push_back(sc.get_ints(k)[0]);
  }
  counts.push_back(sc.get_int("fabric.dragonfly.blades"));
  return nodes_agree(sc, "fabric.dragonfly.blades", counts, "groups × chassis × routers × blades = ");
}

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

// SimGrid's dragonfly zone (SimGrid 3.32) names its links local_link_from_router_<r>_to_node_<k>_<n>,
// black_link_in_group_<g>_between_chassis_<a>_and_<b>_blade_<r>_<n>, blue_link_between_group_<g>_
// and_<h>_routers_<a>_and_<b>_<n>, and green_link_in_chassis_<c>_between_routers_<a>_and_<b>_<n>,
// whose group only the creation number n tells; routers are numbered group by group.
void describe_dragonfly(Picture& p) {
  const long chassis = p.sc.get_ints("fabric.dragonfly.chassis")[0], routers = p.sc.get_ints("fabric.dragonfly.routers")[0],
             parallel_green = p.sc.get_ints("fabric.dragonfly.routers")[1], blades = p.sc.get_int("fabric.dragonfly.blades");
  const long all = p.sc.get_ints("fabric.dragonfly.groups")[0] * chassis * routers;
  for (long r = 0; r < all; ++r) p.add_switch(r, fmt::format("router-{}", r), 1, static_cast<int>(r / (chassis * routers)));
  std::vector<std::pair<long, std::size_t>> green;  // (creation number, link index)
  for (std::size_t i = 0; i < p.t.links.size(); ++i) {
    TopoLink& tl = p.t.links[i];
    long a = -1, b = -1, c = -1, g = -1, h = -1, k = -1;
    if (std::sscanf(tl.name.c_str(), "local_link_from_router_%ld_to_node_%ld_", &a, &b) == 2) {
      tl.ends = link_ends(tl.name, static_cast<int>(a * blades + b), p.sw(a));
    } else if (std::sscanf(tl.name.c_str(), "black_link_in_group_%ld_between_chassis_%ld_and_%ld_blade_%ld_", &g, &a, &b, &c) == 4) {
      const long base = g * chassis * routers;
      tl.ends = link_ends(tl.name, p.sw(base + a * routers + c), p.sw(base + b * routers + c));
    } else if (std::sscanf(tl.name.c_str(), "blue_link_between_group_%ld_and_%ld_routers_%ld_and_%ld_", &g, &h, &a, &b) == 4) {
      tl.ends = link_ends(tl.name, p.sw(a), p.sw(b));
    } else if (std::sscanf(tl.name.c_str(), "green_link_in_chassis_%ld_between_routers_%ld_and_%ld_%ld_", &c, &a, &b, &k) == 4) {
      green.emplace_back(k, i);
    }
  }
  std::sort(green.begin(), green.end());
  // Created group by group: per group, chassis × router pairs × parallel links, twice (UP and
  // DOWN share a creation number).
  const long per_group = chassis * (routers * (routers - 1) / 2) * parallel_green;
  long idx = 0;
  for (std::size_t i = 0; i < green.size(); i += 2, ++idx) {
    for (std::size_t j = i; j < std::min(i + 2, green.size()); ++j) {
      TopoLink& tl = p.t.links[green[j].second];
      long c = 0, a = 0, b = 0, k = 0;
      std::sscanf(tl.name.c_str(), "green_link_in_chassis_%ld_between_routers_%ld_and_%ld_%ld_", &c, &a, &b, &k);
      const long base = (idx / per_group) * chassis * routers + c * routers;
      tl.ends = link_ends(tl.name, p.sw(base + a), p.sw(base + b));
    }
  }
}

void keys_dragonfly(Schema& s) {
  using T = ValueType;
  s.add("fabric.dragonfly.groups", T::int_list, "", "[groups, links between two groups]", 1, 1e6);
  s.add("fabric.dragonfly.chassis", T::int_list, "", "[chassis per group, links between two chassis]", 1, 1e6);
  s.add("fabric.dragonfly.routers", T::int_list, "", "[routers per chassis, links between two routers]", 1, 1e6);
  s.add("fabric.dragonfly.blades", T::integer, "1", "nodes per router", 1, 1e6);
}

std::vector<std::pair<std::string, long>> switches_dragonfly(const Scenario& sc) {
  const auto g = sc.get_ints("fabric.dragonfly.groups"), c = sc.get_ints("fabric.dragonfly.chassis"), r = sc.get_ints("fabric.dragonfly.routers");
  if (g.empty() || c.empty() || r.empty()) return {};
  return {{"router-", static_cast<long>(g[0] * c[0] * r[0])}};
}

}  // namespace

// Its entry in the table of kinds (topologies.cc).
extern const TopologyKind kDragonfly = {.name = "dragonfly",
                                  .check = check_dragonfly,
                                  .build = build_dragonfly,
                                  .check_nodes = nodes_dragonfly,
                                  .describe = describe_dragonfly,
                                  .keys = keys_dragonfly,
                                  .switches = switches_dragonfly};

}  // namespace rdmalab::sim
