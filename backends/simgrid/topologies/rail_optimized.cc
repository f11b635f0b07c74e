// rail_optimized: GPUs on rails (fabric.rail.*), NVLink inside a node, PXN between rails.
#include <fmt/format.h>

#include <cstdio>
#include <simgrid/s4u.hpp>

#include "simgrid/topologies/topology.h"

namespace rdmalab::sim {

namespace {

Status check_rail_optimized(const Scenario& sc) {
  if (sc.get_int("fabric.gpus_per_node") < 2)
    return sc.error("fabric.gpus_per_node", "rail_optimized needs several GPUs (rails) per node: GPU g of every node uses NIC g on rail g");
  if (!sc.has("fabric.node.nvlink.bandwidth"))
    return sc.error("fabric.topology", "rail_optimized needs fabric.node.nvlink.bandwidth (GPUs of a node reach other rails through NVLink)");
  if (sc.get_string("fabric.node.model") != "none" && !sc.is_set("fabric.preset"))
    return sc.error("fabric.node.model", "rail_optimized models the node itself (GPU, NIC, NVLink): leave fabric.node.model at none");
  return Status::ok();
}

void build_rail_optimized(Fabric& f) {
  const FabricModel& model = f.model;
  const double bw = f.bw;
  const double node_link_lat = f.node_link_lat;
  const double upper_link_lat = f.upper_link_lat;
  const int n = f.n;
  const double kSpeed = f.speed;
  std::vector<RankEndpoints>& eps = f.eps;
  // A graph with shortest-path routes (Dijkstra, cached): the same rail is GPU → NIC → rail
  // leaf → NIC → GPU; another rail goes over NVLink to the GPU on that rail first (PXN: one hop
  // fewer than through a spine); GPUs of one node talk over NVLink.
  const RailModel& rm = model.rail;
  const int G = rm.gpus, N = n / G;
  auto* zone = sg4::create_dijkstra_zone("fabric", true);
  auto split = [&](const std::string& name, double b, double l) { return zone->create_split_duplex_link(name, b)->set_latency(l)->seal(); };
  const auto UP = sg4::LinkInRoute::Direction::UP, DOWN = sg4::LinkInRoute::Direction::DOWN;
  auto edge = [&](simgrid::kernel::routing::NetPoint* a, simgrid::kernel::routing::NetPoint* b, std::vector<sg4::LinkInRoute> links) {
    zone->add_route(a, b, nullptr, nullptr, links, false);
  };
  std::vector<simgrid::kernel::routing::NetPoint*> leaf, spine;
  // Links that cost nothing and only steer Dijkstra (below) are one per place, never shared by
  // all routes: a link every flow crosses joins all flows into one max-min system, which SimGrid
  // then solves whole at every start and end of a transfer (the cost grew as flows squared).
  auto free_link = [&](const std::string& name) {
    return zone->create_link(name, 1e15)->set_latency(0)->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)->seal();
  };
  for (int g = 0; g < G; ++g) leaf.push_back(zone->create_router(fmt::format("rail-{}", g)));
  for (int k = 0; k < rm.spines; ++k) spine.push_back(zone->create_router(fmt::format("spine-{}", k)));
  for (int g = 0; g < G; ++g)
    for (int k = 0; k < rm.spines; ++k) {
      auto* l = split(fmt::format("rail-{}-spine-{}", g, k), bw, upper_link_lat);
      edge(leaf[static_cast<std::size_t>(g)], spine[static_cast<std::size_t>(k)],
           {sg4::LinkInRoute(l, UP), sg4::LinkInRoute(free_link(fmt::format("rail-{}-spine-{}-hop-up", g, k)))});
      edge(spine[static_cast<std::size_t>(k)], leaf[static_cast<std::size_t>(g)],
           {sg4::LinkInRoute(l, DOWN), sg4::LinkInRoute(free_link(fmt::format("rail-{}-spine-{}-hop-down", g, k)))});
    }
  // SimGrid's Dijkstra counts the links of an edge. A link that costs nothing else steers it:
  // on NVLink into a GPU, so a route never passes through another GPU of the receiving node,
  // and on the spines, so the sender's NVLink (PXN) is preferred to crossing the spine.
  for (int i = 0; i < N; ++i) {
    auto* nvsw = zone->create_router(fmt::format("node-{}-nvswitch", i));
    std::vector<sg4::Link*> pcie, nvl;
    std::vector<simgrid::kernel::routing::NetPoint*> nic;
    for (int g = 0; g < G; ++g) {
      const std::size_t r = static_cast<std::size_t>(i) * static_cast<std::size_t>(G) + static_cast<std::size_t>(g);
      sg4::Host* h = zone->create_host(fmt::format("node-{}-gpu{}", i, g), kSpeed)->seal();
      eps[r] = {h, h, h};
      nic.push_back(zone->create_router(fmt::format("node-{}-nic{}", i, g)));
      pcie.push_back(split(fmt::format("node-{}-pcie{}", i, g), rm.pcie_bw, rm.pcie_lat));
      nvl.push_back(split(fmt::format("node-{}-nvlink{}", i, g), rm.nvlink_bw, 0));
      auto* cable = split(fmt::format("rail-{}-{}", i, g), bw, node_link_lat);  // NIC g of node i to rail leaf g
      auto* np = h->get_netpoint();
      edge(np, np, {sg4::LinkInRoute(free_link(fmt::format("node-{}-gpu{}-loopback", i, g)))});
      edge(np, nic.back(), {sg4::LinkInRoute(pcie.back(), UP)});
      edge(nic.back(), np, {sg4::LinkInRoute(pcie.back(), DOWN)});
      edge(nic.back(), leaf[static_cast<std::size_t>(g)], {sg4::LinkInRoute(cable, UP)});
      edge(leaf[static_cast<std::size_t>(g)], nic.back(), {sg4::LinkInRoute(cable, DOWN)});
      edge(np, nvsw, {sg4::LinkInRoute(nvl.back(), UP)});
      edge(nvsw, np, {sg4::LinkInRoute(nvl.back(), DOWN), sg4::LinkInRoute(free_link(fmt::format("node-{}-hop{}", i, g)))});
      // Into GPU g over NVLink and out through its NIC: the sender changes rail (PXN). There is
      // no way back from a NIC into NVLink, so the receiver never does (as in NCCL).
      edge(nvsw, nic.back(), {sg4::LinkInRoute(nvl.back(), DOWN), sg4::LinkInRoute(pcie.back(), UP)});
    }
  }
  zone->seal();
}

// A leaf per rail, then the spines; rail-<node>-<gpu>_UP|DOWN from a GPU's NIC to its rail's
// leaf, rail-<g>-spine-<k>_UP|DOWN from a leaf to a spine.
void describe_rail_optimized(Picture& p) {
  for (int g = 0; g < p.model.rail.gpus; ++g) p.add_switch(g, fmt::format("rail-{}", g), 1, -1);
  for (int k = 0; k < p.model.rail.spines; ++k) p.add_switch(1000000 + k, fmt::format("spine-{}", k), 2, -1);
  for (TopoLink& tl : p.t.links) {
    long a = -1, b = -1;
    if (std::sscanf(tl.name.c_str(), "rail-%ld-spine-%ld_", &a, &b) == 2)
      tl.ends = link_ends(tl.name, p.sw(a), p.sw(1000000 + b));
    else if (std::sscanf(tl.name.c_str(), "rail-%ld-%ld_", &a, &b) == 2)
      tl.ends = link_ends(tl.name, static_cast<int>(a * p.model.rail.gpus + b), p.sw(b));
  }
}

void keys_rail_optimized(Schema& s) {
  using T = ValueType;
  s.add("fabric.rail.spines", T::integer, "1",
        "rail_optimized: spine switches joining the rail leaves (0: rails are joined only through the nodes' NVLink)", 0, 1024);
}

std::vector<std::pair<std::string, long>> switches_rail_optimized(const Scenario& sc) {
  return {{"rail-", sc.get_int("fabric.gpus_per_node")}, {"spine-", sc.get_int("fabric.rail.spines")}};
}

}  // namespace

// Its entry in the table of kinds (topologies.cc).
extern const TopologyKind kRailOptimized = {.name = "rail_optimized",
                                       .check = check_rail_optimized,
                                       .build = build_rail_optimized,
                                       .own_node = true,
                                       .describe = describe_rail_optimized,
                                       .keys = keys_rail_optimized,
                                       .switches = switches_rail_optimized};

}  // namespace rdmalab::sim
