// rail_optimized: GPUs on rails (fabric.rail.*), NVLink inside a node, PXN between rails.
#include <fmt/format.h>

#include <cstdio>
#include <simgrid/s4u.hpp>

#include "simgrid/topologies/topology.h"

namespace rdmalab::sim {

namespace {

// Rail g's leaf: rail-<g> when one group holds every node, else su<s>-rail-<g> (scalable unit s).
std::string rail_leaf_name(long groups, long s, long g) { return groups > 1 ? fmt::format("su{}-rail-{}", s, g) : fmt::format("rail-{}", g); }

Status check_rail_optimized(const Scenario& sc) {
  if (sc.get_int("fabric.gpus_per_node") < 2)
    return sc.error("fabric.gpus_per_node", "rail_optimized needs several GPUs (rails) per node: GPU g of every node uses NIC g on rail g");
  if (!sc.has("fabric.node.nvlink.bandwidth"))
    return sc.error("fabric.topology", "rail_optimized needs fabric.node.nvlink.bandwidth (GPUs of a node reach other rails through NVLink)");
  if (sc.get_string("fabric.node.model") != "none" && !sc.is_set("fabric.preset"))
    return sc.error("fabric.node.model", "rail_optimized models the node itself (GPU, NIC, NVLink): leave fabric.node.model at none");
  const std::int64_t nodes = sc.get_int("fabric.nodes"), per_leaf = sc.get_int("fabric.rail.nodes_per_leaf");
  if (per_leaf > 0 && nodes % per_leaf != 0)
    return sc.error("fabric.rail.nodes_per_leaf", fmt::format("{} nodes do not fill groups of {}: give a divisor of fabric.nodes", nodes, per_leaf));
  const std::int64_t groups = per_leaf > 0 ? nodes / per_leaf : 1;
  if (groups > 1 && sc.get_int("fabric.rail.spines") < 1)
    return sc.error("fabric.rail.spines", fmt::format("is 0, but the {} nodes are in {} groups of {} (fabric.rail.nodes_per_leaf), whose "
                                                      "leaves only spines join: give at least one spine", nodes, groups, per_leaf));
  // InfiniBand SHARP: a reduction tree per rail, from the rail's leaves up to one spine.
  const auto tiers = sharp_tiers(sc);
  bool leaf = false, spine = false;
  for (const std::string& t : tiers) {
    if (t != "leaf" && t != "spine")
      return sc.error("fabric.sharp.tiers", fmt::format("'{}' is not a tier of rail_optimized: allowed: leaf, spine", t));
    leaf = leaf || t == "leaf";
    spine = spine || t == "spine";
  }
  if (tiers.empty()) {
    for (const char* k : {"fabric.sharp.bandwidth", "fabric.sharp.trees_per_switch"})
      if (sc.is_set(k)) return sc.error(k, "applies to switches that reduce: set fabric.sharp.tiers too (e.g. [leaf, spine])");
    return Status::ok();
  }
  if (!leaf)
    return sc.error("fabric.sharp.tiers", "a SHARP tree starts at the leaf switches the NICs are cabled to: list leaf (and spine above it)");
  if (spine && sc.get_int("fabric.rail.spines") < 1)
    return sc.error("fabric.sharp.tiers", "lists spine, but fabric.rail.spines is 0: give spines, or reduce at the leaves alone");
  if (groups > 1 && !spine)
    return sc.error("fabric.sharp.tiers", fmt::format("lists leaf alone, but the job's nodes are under {} leaves per rail "
                                                      "(fabric.rail.nodes_per_leaf {}): a rail's tree needs its root above them: add spine",
                                                      groups, per_leaf));
  // Each rail's tree uses one aggregation flow on each switch it crosses: its leaves carry one
  // each, and with the spine tier (and several groups) spine k carries the rails g = k mod spines.
  const std::int64_t gpus = sc.get_int("fabric.gpus_per_node"), spines = sc.get_int("fabric.rail.spines");
  const std::int64_t limit = sc.get_int("fabric.sharp.trees_per_switch");
  if (spine && groups > 1 && (gpus + spines - 1) / spines > limit)
    return sc.error("fabric.sharp.trees_per_switch",
                    fmt::format("is {}, but {} rails' trees on {} spines put {} on a spine: a switch runs at most {} aggregation flows "
                                "(NVIDIA's SHARP limit, HPC-X's NCCL-RDMA-SHARP plugin notes): give fabric.rail.spines at least {}",
                                limit, gpus, spines, (gpus + spines - 1) / spines, limit, (gpus + limit - 1) / limit));
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
  // leaf → NIC → GPU (→ spine → leaf between groups); another rail goes over NVLink to the GPU on
  // that rail first (PXN: one hop fewer than through a spine); GPUs of one node talk over NVLink.
  const RailModel& rm = model.rail;
  const int G = rm.gpus, N = n / G;
  const int per_leaf = rm.nodes_per_leaf > 0 ? rm.nodes_per_leaf : N, groups = N / per_leaf;
  auto* zone = sg4::create_dijkstra_zone("fabric", true);
  auto split = [&](const std::string& name, double b, double l) { return zone->create_split_duplex_link(name, b)->set_latency(l)->seal(); };
  const auto UP = sg4::LinkInRoute::Direction::UP, DOWN = sg4::LinkInRoute::Direction::DOWN;
  auto edge = [&](simgrid::kernel::routing::NetPoint* a, simgrid::kernel::routing::NetPoint* b, std::vector<sg4::LinkInRoute> links) {
    zone->add_route(a, b, nullptr, nullptr, links, false);
  };
  std::vector<simgrid::kernel::routing::NetPoint*> leaf, spine;  // leaf[group * G + g]
  // Links that cost nothing and only steer Dijkstra (below) are one per place, never shared by
  // all routes: a link every flow crosses joins all flows into one max-min system, which SimGrid
  // then solves whole at every start and end of a transfer (the cost grew as flows squared).
  auto free_link = [&](const std::string& name) {
    return zone->create_link(name, 1e15)->set_latency(0)->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)->seal();
  };
  for (int s = 0; s < groups; ++s)
    for (int g = 0; g < G; ++g) leaf.push_back(zone->create_router(rail_leaf_name(groups, s, g)));
  for (int k = 0; k < rm.spines; ++k) spine.push_back(zone->create_router(fmt::format("spine-{}", k)));
  std::vector<sg4::Link*> uplink;  // [(group * G + g) * spines + k]
  for (int s = 0; s < groups; ++s)
    for (int g = 0; g < G; ++g)
      for (int k = 0; k < rm.spines; ++k) {
        const std::string name = fmt::format("{}-spine-{}", rail_leaf_name(groups, s, g), k);
        auto* l = split(name, bw, upper_link_lat);
        uplink.push_back(l);
        auto* lf = leaf[static_cast<std::size_t>(s * G + g)];
        edge(lf, spine[static_cast<std::size_t>(k)], {sg4::LinkInRoute(l, UP), sg4::LinkInRoute(free_link(name + "-hop-up"))});
        edge(spine[static_cast<std::size_t>(k)], lf, {sg4::LinkInRoute(l, DOWN), sg4::LinkInRoute(free_link(name + "-hop-down"))});
      }
  // InfiniBand SHARP: each reducing switch's aggregation node (AN) as an endpoint, its speed the
  // aggregation rate. Its edges are the cables into its switch (a NIC's cable to a leaf AN, a
  // leaf's uplink to the spine AN), not a port of its own: a link that every flow of a rail
  // crossed would join them all into one max-min system (see free_link). Two free links on each
  // make a route through an AN longer than the switch's own, so other traffic never takes one.
  const double an_speed = model.sharp.bw > 0 ? model.sharp.bw : 1e15;
  auto aggregation_node = [&](const std::string& name) { return zone->create_host(name + "-sharp", an_speed)->seal(); };
  auto an_edge = [&](simgrid::kernel::routing::NetPoint* a, simgrid::kernel::routing::NetPoint* b, sg4::Link* l,
                     sg4::LinkInRoute::Direction d, const std::string& name) {
    edge(a, b, {sg4::LinkInRoute(l, d), sg4::LinkInRoute(free_link(name + "-a")), sg4::LinkInRoute(free_link(name + "-b"))});
  };
  std::vector<sg4::Host*> leaf_an, spine_an;  // leaf_an[group * G + g]; spine_an[g]: rail g's root above the leaves
  if (model.sharp.on()) {
    for (int s = 0; s < groups; ++s)
      for (int g = 0; g < G; ++g) leaf_an.push_back(aggregation_node(rail_leaf_name(groups, s, g)));
    if (model.sharp.spine && groups > 1 && rm.spines > 0) {
      std::vector<sg4::Host*> per_spine(static_cast<std::size_t>(rm.spines), nullptr);
      for (int g = 0; g < G; ++g) {
        const int k = g % rm.spines;
        auto*& root = per_spine[static_cast<std::size_t>(k)];
        if (!root) root = aggregation_node(fmt::format("spine-{}", k));
        spine_an.push_back(root);
        for (int s = 0; s < groups; ++s) {
          const std::size_t at = static_cast<std::size_t>(s * G + g);
          sg4::Link* l = uplink[at * static_cast<std::size_t>(rm.spines) + static_cast<std::size_t>(k)];
          const std::string name = fmt::format("{}-sharp-spine-{}", rail_leaf_name(groups, s, g), k);
          an_edge(leaf_an[at]->get_netpoint(), root->get_netpoint(), l, UP, name + "-up");
          an_edge(root->get_netpoint(), leaf_an[at]->get_netpoint(), l, DOWN, name + "-down");
        }
      }
    }
  }
  // SimGrid's Dijkstra counts the links of an edge. A link that costs nothing else steers it:
  // on NVLink into a GPU, so a route never passes through another GPU of the receiving node,
  // and on the spines, so the sender's NVLink (PXN) is preferred to crossing the spine.
  for (int i = 0; i < N; ++i) {
    const int group = i / per_leaf;
    auto* nvsw = zone->create_router(fmt::format("node-{}-nvswitch", i));
    // NVLink SHARP: the NVSwitch as an endpoint, reached over each GPU's NVLink alone.
    sg4::Host* reducer = nullptr;
    if (rm.nvswitch_reduce)
      reducer = zone->create_host(fmt::format("node-{}-nvswitch-reduce", i), rm.nvswitch_reduce_bw > 0 ? rm.nvswitch_reduce_bw : 1e15)->seal();
    std::vector<sg4::Link*> pcie, nvl;
    std::vector<simgrid::kernel::routing::NetPoint*> nic;
    for (int g = 0; g < G; ++g) {
      const std::size_t r = static_cast<std::size_t>(i) * static_cast<std::size_t>(G) + static_cast<std::size_t>(g);
      auto* lf = leaf[static_cast<std::size_t>(group * G + g)];
      sg4::Host* h = zone->create_host(fmt::format("node-{}-gpu{}", i, g), kSpeed)->seal();
      eps[r] = {h, h, h, reducer, {}};
      if (!leaf_an.empty()) eps[r].sharp.push_back(leaf_an[static_cast<std::size_t>(group * G + g)]);
      if (!spine_an.empty()) eps[r].sharp.push_back(spine_an[static_cast<std::size_t>(g)]);
      nic.push_back(zone->create_router(fmt::format("node-{}-nic{}", i, g)));
      pcie.push_back(split(fmt::format("node-{}-pcie{}", i, g), rm.pcie_bw, rm.pcie_lat));
      nvl.push_back(split(fmt::format("node-{}-nvlink{}", i, g), rm.nvlink_bw, 0));
      auto* cable = split(fmt::format("rail-{}-{}", i, g), bw, node_link_lat);  // NIC g of node i to its rail leaf
      auto* np = h->get_netpoint();
      edge(np, np, {sg4::LinkInRoute(free_link(fmt::format("node-{}-gpu{}-loopback", i, g)))});
      edge(np, nic.back(), {sg4::LinkInRoute(pcie.back(), UP)});
      edge(nic.back(), np, {sg4::LinkInRoute(pcie.back(), DOWN)});
      edge(nic.back(), lf, {sg4::LinkInRoute(cable, UP)});
      edge(lf, nic.back(), {sg4::LinkInRoute(cable, DOWN)});
      if (!leaf_an.empty()) {
        auto* an = leaf_an[static_cast<std::size_t>(group * G + g)]->get_netpoint();
        an_edge(nic.back(), an, cable, UP, fmt::format("rail-{}-{}-sharp-up", i, g));
        an_edge(an, nic.back(), cable, DOWN, fmt::format("rail-{}-{}-sharp-down", i, g));
      }
      edge(np, nvsw, {sg4::LinkInRoute(nvl.back(), UP)});
      edge(nvsw, np, {sg4::LinkInRoute(nvl.back(), DOWN), sg4::LinkInRoute(free_link(fmt::format("node-{}-hop{}", i, g)))});
      // Into GPU g over NVLink and out through its NIC: the sender changes rail (PXN). There is
      // no way back from a NIC into NVLink, so the receiver never does (as in NCCL).
      edge(nvsw, nic.back(), {sg4::LinkInRoute(nvl.back(), DOWN), sg4::LinkInRoute(pcie.back(), UP)});
      if (reducer) {
        zone->add_route(np, reducer->get_netpoint(), nullptr, nullptr, {sg4::LinkInRoute(nvl.back(), UP)}, false);
        zone->add_route(reducer->get_netpoint(), np, nullptr, nullptr,
                        {sg4::LinkInRoute(nvl.back(), DOWN), sg4::LinkInRoute(free_link(fmt::format("node-{}-reduce-hop{}", i, g)))}, false);
      }
    }
    if (reducer)
      edge(reducer->get_netpoint(), reducer->get_netpoint(), {sg4::LinkInRoute(free_link(fmt::format("node-{}-nvswitch-loopback", i)))});
  }
  zone->seal();
}

// A leaf per rail (per group of nodes: su<s>-rail-<g>), then the spines; rail-<node>-<gpu>_UP|DOWN
// from a GPU's NIC to its rail's leaf, <leaf>-spine-<k>_UP|DOWN from a leaf to a spine.
void describe_rail_optimized(Picture& p) {
  const int G = p.model.rail.gpus, N = p.n / std::max(1, G);
  const int per_leaf = p.model.rail.nodes_per_leaf > 0 ? p.model.rail.nodes_per_leaf : N, groups = std::max(1, N / std::max(1, per_leaf));
  for (int s = 0; s < groups; ++s)
    for (int g = 0; g < G; ++g) p.add_switch(s * G + g, rail_leaf_name(groups, s, g), 1, groups > 1 ? s : -1);
  for (int k = 0; k < p.model.rail.spines; ++k) p.add_switch(1000000 + k, fmt::format("spine-{}", k), 2, -1);
  for (TopoLink& tl : p.t.links) {
    long a = -1, b = -1, c = -1;
    if (std::sscanf(tl.name.c_str(), "su%ld-rail-%ld-spine-%ld_", &a, &b, &c) == 3)
      tl.ends = link_ends(tl.name, p.sw(a * G + b), p.sw(1000000 + c));
    else if (std::sscanf(tl.name.c_str(), "rail-%ld-spine-%ld_", &a, &b) == 2)
      tl.ends = link_ends(tl.name, p.sw(a), p.sw(1000000 + b));
    else if (std::sscanf(tl.name.c_str(), "rail-%ld-%ld_", &a, &b) == 2)
      tl.ends = link_ends(tl.name, static_cast<int>(a * G + b), p.sw(a / per_leaf * G + b));
  }
}

void keys_rail_optimized(Schema& s) {
  using T = ValueType;
  s.add("fabric.rail.spines", T::integer, "1",
        "rail_optimized: spine switches joining the rail leaves (0: rails are joined only through the nodes' NVLink)", 0, 1024);
  s.add("fabric.rail.nodes_per_leaf", T::integer, "0",
        "rail_optimized: nodes under one leaf per rail (a scalable unit; the leaves of the groups su0, su1, … are joined by the "
        "spines); 0: every node under one leaf per rail", 0, 1 << 20);
  s.add("fabric.sharp.tiers", T::string_list, "",
        "rail_optimized: the tiers whose switches reduce (InfiniBand SHARP, NCCL's CollNet): [leaf] or [leaf, spine]; each rail has one "
        "reduction tree (leaf aggregation nodes, then rail g's on spine g mod spines); empty: none reduce");
  s.add("fabric.sharp.bandwidth", T::bandwidth, "",
        "bytes per second a switch's aggregation node reduces (its output, per tree); unset: not limiting (its ports are)", 1, 1e15);
  s.add("fabric.sharp.trees_per_switch", T::integer, "2",
        "aggregation flows one switch runs at once (NVIDIA's SHARP allows at most 2: HPC-X's NCCL-RDMA-SHARP plugin notes); a rail's "
        "tree takes one on each switch it crosses", 1, 64);
}

std::vector<std::pair<std::string, long>> switches_rail_optimized(const Scenario& sc) {
  const long nodes = static_cast<long>(sc.get_int("fabric.nodes")), per_leaf = static_cast<long>(sc.get_int("fabric.rail.nodes_per_leaf"));
  const long gpus = static_cast<long>(sc.get_int("fabric.gpus_per_node"));
  std::vector<std::pair<std::string, long>> out;
  if (per_leaf > 0 && nodes / per_leaf > 1)
    for (long s = 0; s < nodes / per_leaf; ++s) out.emplace_back(fmt::format("su{}-rail-", s), gpus);
  else
    out.emplace_back("rail-", gpus);
  out.emplace_back("spine-", static_cast<long>(sc.get_int("fabric.rail.spines")));
  return out;
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
