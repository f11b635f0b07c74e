// full: a link per pair of nodes.
#include <fmt/format.h>

#include <cstdio>
#include <simgrid/s4u.hpp>

#include "simgrid/topologies/topology.h"

namespace rdmalab::sim {

namespace {

Status check_full(const Scenario& sc) {
  const std::int64_t nodes = sc.get_int("fabric.nodes");
  if (nodes > 256)
    return sc.error("fabric.nodes",
                    fmt::format("a full mesh has a link per pair: at most 256 nodes (asked {}); use fat_tree", nodes));
  return Status::ok();
}

void build_full(Fabric& f) {
  const double bw = f.bw;
  const double lat = f.lat;
  const int machines = f.machines;
  const NodeModel& nm = f.model.node;
  NodeBuilder& node = f.node;
  std::vector<RankEndpoints>& eps = f.eps;
  const double nic_lat = f.nic_lat;
  const auto& plain_host = f.plain_host;
  const auto& nic_link = f.nic_link;
  // A node (a host, or with a node model its zone and gateway) per machine, a link per pair;
  // a node with several NICs has as many ports on each of its links, as on a star.
  auto* zone = sg4::create_full_zone("fabric");
  std::vector<simgrid::kernel::routing::NetPoint*> points, gateways;
  std::vector<sg4::Link*> nics;
  for (int i = 0; i < machines; ++i) {
    const auto id = static_cast<unsigned long>(i);
    if (nm.on) {
      auto [np, gw] = node.build(zone, id, eps);
      points.push_back(np);
      gateways.push_back(gw);
    } else {
      points.push_back(plain_host(zone, id)->get_netpoint());
      gateways.push_back(nullptr);
    }
    if (nic_lat > 0) nics.push_back(nic_link(zone, id));
  }
  const double node_bw = nm.on ? bw * nm.nics : bw;
  for (std::size_t i = 0; i < points.size(); ++i)
    for (std::size_t j = i + 1; j < points.size(); ++j) {
      auto* link = zone->create_split_duplex_link(fmt::format("link-{}-{}", i, j), node_bw)->set_latency(lat)->seal();
      std::vector<sg4::LinkInRoute> route;
      if (nic_lat > 0) route.emplace_back(nics[i], sg4::LinkInRoute::Direction::UP);
      route.emplace_back(link, sg4::LinkInRoute::Direction::UP);
      if (nic_lat > 0) route.emplace_back(nics[j], sg4::LinkInRoute::Direction::DOWN);
      zone->add_route(points[i], points[j], gateways[i], gateways[j], route, true);
    }
  zone->seal();
}

// link-<a>-<b>_UP|DOWN between two nodes.
void describe_full(Picture& p) {
  for (TopoLink& tl : p.t.links) {
    long a = -1, b = -1;
    if (std::sscanf(tl.name.c_str(), "link-%ld-%ld_", &a, &b) == 2) tl.ends = link_ends(tl.name, static_cast<int>(a), static_cast<int>(b));
  }
}

}  // namespace

// Its entry in the table of kinds (topologies.cc).
extern const TopologyKind kFull = {.name = "full", .check = check_full, .build = build_full, .describe = describe_full};

}  // namespace rdmalab::sim
