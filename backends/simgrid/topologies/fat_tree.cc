// fat_tree: SimGrid's fat-tree zone (fabric.fat_tree.*), the spine's links set apart.
#include <fmt/format.h>

#include <cstdio>
#include <simgrid/s4u.hpp>

#include "simgrid/topologies/topology.h"

namespace rdmalab::sim {

Status check_fat_tree(const Scenario& sc) {
  RDMALAB_ASSIGN(const FatTreeShape shape, fat_tree_shape(sc));
  const auto levels = static_cast<std::int64_t>(shape.down.size());
  // SimGrid's fat tree routes between nodes: with a node model, all of a node's NICs would take
  // one path above the leaves to a given node, where a real fabric routes each NIC's address
  // on its own (NCCL's channels cross on different NICs to reach different spines).
  if (levels >= 2 && sc.get_string("fabric.node.model") == "pcie" && sc.get_int("fabric.node.nics") > 1)
    return sc.error("fabric.topology",
                    fmt::format("a fat_tree of {} levels routes node to node, so the {} NICs of a node (fabric.node.nics) would share "
                                "one path over the spines; use topology rail_optimized (each NIC cabled to its rail), a one-level "
                                "fat_tree, or one NIC per node", levels, sc.get_int("fabric.node.nics")));
  return Status::ok();
}

void build_fat_tree(Fabric& f) {
  const Scenario& sc = f.sc;
  const double bw = f.bw;
  const double lat = f.lat;
  const double sw_lat = f.sw_lat;
  const double node_link_lat = f.node_link_lat;
  const int machines = f.machines;
  const NodeModel& nm = f.model.node;
  const sg4::ClusterCallbacks& callbacks = f.callbacks;
  const auto policy = f.policy;
  auto to_u = [](const std::vector<std::int64_t>& v) {
    std::vector<unsigned int> out;
    for (auto x : v) out.push_back(static_cast<unsigned int>(x));
    return out;
  };
  const FatTreeShape shape = fat_tree_shape(sc).value();  // checked before the run (check_fabric)
  auto down = to_u(shape.down);
  auto up = to_u(shape.up);
  auto levels = static_cast<unsigned int>(down.size());
  std::vector<unsigned int> par = to_u(shape.parallel);
  auto* zone =
      sg4::create_fatTree_zone("fabric", nullptr, sg4::FatTreeParams(levels, down, up, par), callbacks, bw, lat, policy);
  zone->seal();
  // Per tier: the links above the leaves (level 2 and up) take the spine's figures and a
  // switch's latency each; a node's links to its leaves carry half a switch, and the ports of
  // every NIC the node has (its NICs' cables, spread over the links to its leaves).
  const auto up0 = static_cast<int>(up[0] * par[0]);
  const double ports = nm.on && nm.nics > up0 ? static_cast<double>(nm.nics) / up0 : 1.0;
  const double spine_bw = sc.has("fabric.spine.bandwidth") ? sc.get_bandwidth("fabric.spine.bandwidth") : bw;
  const double spine_lat = (sc.has("fabric.spine.latency") ? sc.get_time("fabric.spine.latency") : lat) + sw_lat;
  if (sc.has("fabric.spine.bandwidth") || sc.has("fabric.spine.latency") || sw_lat > 0 || ports > 1) {
    for (sg4::Link* l : sg4::Engine::get_instance()->get_all_links()) {
      long c = 0, p = 0, k = 0;
      if (std::sscanf(l->get_name().c_str(), "link_from_%ld_%ld_%ld_", &c, &p, &k) != 3) continue;
      if (fat_tree_level(shape, machines, k) >= 2) {
        l->set_bandwidth(spine_bw);
        l->set_latency(spine_lat);
      } else {
        l->set_bandwidth(bw * ports);
        l->set_latency(node_link_lat);
      }
    }
  }
}

}  // namespace rdmalab::sim
