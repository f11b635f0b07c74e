#include "simgrid/topologies/topology.h"

namespace rdmalab::sim {

const TopologyKind* find_topology(const std::string& name) {
  static const TopologyKind kinds[] = {
      {"star", nullptr, build_star},
      {"full", check_full, build_full},
      {"fat_tree", check_fat_tree, build_fat_tree},
      {"torus", check_torus, build_torus},
      {"dragonfly", check_dragonfly, build_dragonfly},
      {"rail_optimized", check_rail_optimized, build_rail_optimized, true},
  };
  for (const auto& k : kinds)
    if (name == k.name) return &k;
  return nullptr;
}

}  // namespace rdmalab::sim
