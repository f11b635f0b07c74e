// The record's picture of the model's platform (describe_topology).
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "simgrid/engine/world.h"
#include "simgrid/engine/record.h"

namespace rdmalab::sim {

// The record's picture of the platform: a node per rank, the switches (routers) with their
// tier, and every link with its two ends (each direction of a split-duplex link is a link of its
// own). SimGrid's cluster zones do not hand out their switches, so they are read back from the
// link names those zones give (SimGrid 3.32; tests/backends/simgrid/model_test.cc checks that
// every link of each topology gets its ends):
//   fat tree   link_from_<child>_<parent>_<n>_UP|DOWN   (the creation number n gives the level)
//   torus      fabric_link_from_<a>_to_<b>_UP|DOWN
//   dragonfly  local_link_from_router_<r>_to_node_<k>_<n>, green_link_in_chassis_<c>_between_
//              routers_<a>_and_<b>_<n> (group from creation order), black_link_in_group_<g>_
//              between_chassis_<a>_and_<b>_blade_<r>_<n>, blue_link_between_group_<g>_and_<h>_
//              routers_<a>_and_<b>_<n>
Topology describe_topology(const World& w) {
  Topology t;
  // With a node model a fabric node is a machine of several ranks: it is named node-i and carries
  // its first rank; the links inside it are not drawn.
  const int per = w.model.node.on ? w.model.node.gpus : 1;
  const int n = static_cast<int>(w.hosts.size()) / per;
  const NodeModel& nm = w.model.node;
  // Fabric node i runs the job node placed there (fabric.placement.*): its first rank is that one's.
  std::vector<int> job_of(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) job_of[static_cast<std::size_t>(j)] = j;
  if (static_cast<int>(w.placement.size()) == n)
    for (int j = 0; j < n; ++j) job_of[static_cast<std::size_t>(w.placement[static_cast<std::size_t>(j)])] = j;
  for (int r = 0; r < n; ++r) {
    const int job = job_of[static_cast<std::size_t>(r)];
    TopoNode& tn = t.nodes.emplace_back();
    tn.name = nm.on ? fmt::format("node-{}", r) : w.hosts[static_cast<std::size_t>(job * per)]->get_name();
    tn.kind = "host";
    tn.rank = job * per;
    if (nm.on) {
      tn.gpus = nm.gpus;
      tn.nics = nm.nics;
      tn.pcie_switches = nm.switches;
      tn.sockets = nm.sockets;
      tn.gpu_switch = nm.gpu_switch;
      tn.nic_switch = nm.nic_switch;
      tn.switch_socket = nm.switch_socket;
      tn.gpu_nic = nm.gpu_nic;
    }
  }
  const std::string& topo = w.model.topology;
  std::map<long, int> switch_index;  // the zone's id of a switch → node index
  auto add_switch = [&](long id, std::string name, int tier, int group) {
    auto it = switch_index.find(id);
    if (it != switch_index.end()) return it->second;
    int idx = static_cast<int>(t.nodes.size());
    TopoNode& sn = t.nodes.emplace_back();
    sn.name = std::move(name);
    sn.kind = "switch";
    sn.tier = tier;
    sn.group = group;
    switch_index.emplace(id, idx);
    return idx;
  };
  if (topo == "star") add_switch(0, "switch", 1, -1);
  if (topo == "rail_optimized") {
    for (int g = 0; g < w.model.rail.gpus; ++g) add_switch(g, fmt::format("rail-{}", g), 1, -1);
    for (int k = 0; k < w.model.rail.spines; ++k) add_switch(1000000 + k, fmt::format("spine-{}", k), 2, -1);
  }
  std::vector<sg4::Link*> links = sg4::Engine::get_instance()->get_all_links();
  std::sort(links.begin(), links.end(), [](const sg4::Link* a, const sg4::Link* b) { return a->get_name() < b->get_name(); });

  // Dragonfly sizes, for router numbering.
  long df_chassis = 1, df_routers = 1, df_blades = 1, df_green = 1;
  if (topo == "dragonfly") {
    df_chassis = w.sc->get_ints("fabric.dragonfly.chassis")[0];
    df_routers = w.sc->get_ints("fabric.dragonfly.routers")[0];
    df_green = w.sc->get_ints("fabric.dragonfly.routers")[1];
    df_blades = w.sc->get_int("fabric.dragonfly.blades");
  }
  if (topo == "dragonfly") {
    const long routers = w.sc->get_ints("fabric.dragonfly.groups")[0] * df_chassis * df_routers;
    for (long r = 0; r < routers; ++r)
      add_switch(r, fmt::format("router-{}", r), 1, static_cast<int>(r / (df_chassis * df_routers)));
  }
  auto router = [&](long global) { return switch_index.at(global); };
  std::vector<std::pair<long, long>> ft_ends;  // per kept link: the fat tree's (child, parent) ids, or (-1,-1)
  // Green dragonfly links carry no group in their name: their creation number does.
  std::vector<std::pair<long, std::size_t>> green;  // (creation number, link index)

  for (sg4::Link* l : links) {
    const std::string& name = l->get_name();
    if (name.rfind("loopback-", 0) == 0 || name.rfind("nic-", 0) == 0 || name.rfind("__", 0) == 0 || name.rfind("node-", 0) == 0 ||
        name == "rail-loopback" || name == "rail-hop" || name == "rail-spine-hop" ||
        name.find("_loopback") != std::string::npos || name.find("_limiter") != std::string::npos)
      continue;  // rank-local
    TopoLink tl{name, l->get_bandwidth(), l->get_latency(), {}};
    const bool up = name.size() > 3 && name.compare(name.size() - 3, 3, "_UP") == 0;
    auto dir = [up](int a, int b) { return up ? std::vector<int>{a, b} : std::vector<int>{b, a}; };
    long a = -1, b = -1, c = -1, g = -1, h = -1, k = -1;
    std::pair<long, long> ft{-1, -1};
    if (topo == "star" && std::sscanf(name.c_str(), "link-%ld_", &a) == 1) {
      tl.ends = dir(static_cast<int>(a), switch_index.at(0));
    } else if (topo == "full" && std::sscanf(name.c_str(), "link-%ld-%ld_", &a, &b) == 2) {
      tl.ends = dir(static_cast<int>(a), static_cast<int>(b));
    } else if (topo == "fat_tree" && std::sscanf(name.c_str(), "link_from_%ld_%ld_%ld_", &a, &b, &k) == 3) {
      ft = {a, b};
    } else if (topo == "rail_optimized" && std::sscanf(name.c_str(), "rail-%ld-spine-%ld_", &a, &b) == 2) {
      tl.ends = dir(switch_index.at(a), switch_index.at(1000000 + b));
    } else if (topo == "rail_optimized" && std::sscanf(name.c_str(), "rail-%ld-%ld_", &a, &b) == 2) {
      tl.ends = dir(static_cast<int>(a * w.model.rail.gpus + b), switch_index.at(b));
    } else if (topo == "torus" && std::sscanf(name.c_str(), "fabric_link_from_%ld_to_%ld_", &a, &b) == 2) {
      tl.ends = dir(static_cast<int>(a), static_cast<int>(b));
    } else if (topo == "dragonfly") {
      if (std::sscanf(name.c_str(), "local_link_from_router_%ld_to_node_%ld_", &a, &b) == 2) {
        tl.ends = dir(static_cast<int>(a * df_blades + b), router(a));
      } else if (std::sscanf(name.c_str(), "black_link_in_group_%ld_between_chassis_%ld_and_%ld_blade_%ld_", &g, &a, &b, &c) == 4) {
        const long base = g * df_chassis * df_routers;
        tl.ends = dir(router(base + a * df_routers + c), router(base + b * df_routers + c));
      } else if (std::sscanf(name.c_str(), "blue_link_between_group_%ld_and_%ld_routers_%ld_and_%ld_", &g, &h, &a, &b) == 4) {
        tl.ends = dir(router(a), router(b));
      } else if (std::sscanf(name.c_str(), "green_link_in_chassis_%ld_between_routers_%ld_and_%ld_%ld_", &c, &a, &b, &k) == 4) {
        green.emplace_back(k, t.links.size());
      }
    }
    ft_ends.push_back(ft);
    t.links.push_back(std::move(tl));
  }
  if (topo == "fat_tree") {
    // Ids of different levels may be equal; the creation number says the level.
    const FatTreeShape shape = fat_tree_shape(*w.sc).value();  // checked before the run
    auto level_of = [&](long creation) { return fat_tree_level(shape, n, creation); };
    // Switches numbered tier by tier, in the zone's id order (leaf-0 is above host 0).
    std::map<std::pair<int, long>, int> sw;
    for (std::size_t i = 0; i < t.links.size(); ++i) {
      long cid = 0, pid = 0, k = 0;
      if (ft_ends[i].first < 0) continue;
      std::sscanf(t.links[i].name.c_str(), "link_from_%ld_%ld_%ld_", &cid, &pid, &k);
      const int tier = level_of(k);
      sw.emplace(std::make_pair(tier, pid), -1);
      if (tier > 1) sw.emplace(std::make_pair(tier - 1, cid), -1);
    }
    std::map<int, std::vector<long>> by_tier;
    for (auto& [key, idx] : sw) by_tier[key.first].push_back(key.second);
    for (auto& [tier, ids] : by_tier) {
      std::sort(ids.rbegin(), ids.rend());
      int count = 0;
      for (long id : ids)
        sw[{tier, id}] = add_switch((static_cast<long>(tier) << 40) + id,
                                    fmt::format("{}-{}", tier == 1 ? "leaf" : tier == 2 ? "spine" : fmt::format("tier{}", tier), count++), tier, -1);
    }
    for (std::size_t i = 0; i < t.links.size(); ++i) {
      long cid = 0, pid = 0, k = 0;
      if (ft_ends[i].first < 0) continue;
      std::sscanf(t.links[i].name.c_str(), "link_from_%ld_%ld_%ld_", &cid, &pid, &k);
      const int tier = level_of(k);
      const int x = tier == 1 ? static_cast<int>(cid) : sw.at({tier - 1, cid});
      const int y = sw.at({tier, pid});
      const std::string& name = t.links[i].name;
      const bool up = name.compare(name.size() - 3, 3, "_UP") == 0;
      t.links[i].ends = up ? std::vector<int>{x, y} : std::vector<int>{y, x};
    }
  }
  if (!green.empty()) {
    std::sort(green.begin(), green.end());
    // Created group by group: per group, chassis × router pairs × parallel links, twice (UP and
    // DOWN share a creation number).
    const long per_group = df_chassis * (df_routers * (df_routers - 1) / 2) * df_green;
    long idx = 0;
    for (std::size_t i = 0; i < green.size(); i += 2, ++idx) {
      for (std::size_t j = i; j < std::min(i + 2, green.size()); ++j) {
        TopoLink& tl = t.links[green[j].second];
        long c = 0, a = 0, b = 0, k = 0;
        std::sscanf(tl.name.c_str(), "green_link_in_chassis_%ld_between_routers_%ld_and_%ld_%ld_", &c, &a, &b, &k);
        const long base = (idx / per_group) * df_chassis * df_routers + c * df_routers;
        const bool up = tl.name.compare(tl.name.size() - 3, 3, "_UP") == 0;
        int x = router(base + a), y = router(base + b);
        tl.ends = up ? std::vector<int>{x, y} : std::vector<int>{y, x};
      }
    }
  }
  return t;
}

}  // namespace rdmalab::sim
