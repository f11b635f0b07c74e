// star: every node (a host, or with a node model its zone) has one split-duplex link to one
// switch; a route crosses two links.
#include <fmt/format.h>

#include <cstdio>
#include <simgrid/s4u.hpp>

#include "simgrid/topologies/topology.h"

namespace rdmalab::sim {

namespace {

void build_star(Fabric& f) {
  const double bw = f.bw;
  const double node_link_lat = f.node_link_lat;
  const int machines = f.machines;
  const NodeModel& nm = f.model.node;
  NodeBuilder& node = f.node;
  std::vector<RankEndpoints>& eps = f.eps;
  const double nic_lat = f.nic_lat;
  const auto& plain_host = f.plain_host;
  const auto& nic_link = f.nic_link;
  auto* zone = sg4::create_star_zone("fabric");
  // A node with several NICs has as many ports on the switch: its link carries all of them.
  const double node_bw = nm.on ? bw * nm.nics : bw;
  for (int i = 0; i < machines; ++i) {
    auto* link = zone->create_split_duplex_link(fmt::format("link-{}", i), node_bw)->set_latency(node_link_lat)->seal();
    std::vector<sg4::LinkInRoute> route;
    if (nic_lat > 0) route.emplace_back(nic_link(zone, static_cast<unsigned long>(i)), sg4::LinkInRoute::Direction::UP);
    route.emplace_back(link, sg4::LinkInRoute::Direction::UP);
    if (nm.on) {
      auto [np, gw] = node.build(zone, static_cast<unsigned long>(i), eps);
      zone->add_route(np, nullptr, gw, nullptr, route, true);
    } else {
      sg4::Host* h = plain_host(zone, static_cast<unsigned long>(i));
      zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, route, true);
    }
  }
  zone->seal();
}

// One switch; link-<node>_UP|DOWN.
void describe_star(Picture& p) {
  p.add_switch(0, "switch", 1, -1);
  for (TopoLink& tl : p.t.links) {
    long a = -1;
    if (std::sscanf(tl.name.c_str(), "link-%ld_", &a) == 1) tl.ends = link_ends(tl.name, static_cast<int>(a), p.sw(0));
  }
}

std::vector<std::pair<std::string, long>> switches_star(const Scenario&) { return {{"switch", 1}}; }

}  // namespace

// Its entry in the table of kinds (topologies.cc).
extern const TopologyKind kStar = {.name = "star", .build = build_star, .describe = describe_star, .switches = switches_star};

}  // namespace rdmalab::sim
