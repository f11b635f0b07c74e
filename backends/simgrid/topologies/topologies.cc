#include "simgrid/topologies/topology.h"

#include <fmt/format.h>

namespace rdmalab::sim {

namespace {

// The table of kinds (topology.h says what each field is).
const TopologyKind kinds[] = {
    {.name = "star", .build = build_star, .describe = describe_star, .switches = switches_star},
    {.name = "full", .check = check_full, .build = build_full, .describe = describe_full},
    {.name = "fat_tree", .check = check_fat_tree, .build = build_fat_tree, .check_nodes = nodes_fat_tree, .describe = describe_fat_tree,
     .keys = keys_fat_tree, .switches = switches_fat_tree},
    {.name = "rail_optimized", .check = check_rail_optimized, .build = build_rail_optimized, .own_node = true,
     .describe = describe_rail_optimized, .keys = keys_rail_optimized, .switches = switches_rail_optimized},
    {.name = "torus", .check = check_torus, .build = build_torus, .check_nodes = nodes_torus, .describe = describe_torus, .keys = keys_torus},
    {.name = "dragonfly", .check = check_dragonfly, .build = build_dragonfly, .check_nodes = nodes_dragonfly, .describe = describe_dragonfly,
     .keys = keys_dragonfly, .switches = switches_dragonfly},
};

// "2 × 16": the counts as a product.
std::string times(const std::vector<std::int64_t>& v) {
  std::string t;
  for (auto x : v) t += (t.empty() ? "" : " × ") + std::to_string(x);
  return t;
}

}  // namespace

const TopologyKind* find_topology(const std::string& name) {
  for (const auto& k : kinds)
    if (name == k.name) return &k;
  return nullptr;
}

std::vector<std::string> topology_names() {
  std::vector<std::string> out;
  for (const auto& k : kinds) out.emplace_back(k.name);
  return out;
}

void add_topology_keys(Schema& s) {
  for (const auto& k : kinds)
    if (k.keys) k.keys(s);
}

Status check_topology_nodes(const Scenario& sc) {
  const TopologyKind* k = find_topology(sc.get_string("fabric.topology"));
  return k && k->check_nodes ? k->check_nodes(sc) : Status::ok();
}

int Picture::add_switch(long id, std::string name, int tier, int group) {
  auto it = switch_index.find(id);
  if (it != switch_index.end()) return it->second;
  const int idx = static_cast<int>(t.nodes.size());
  TopoNode& sn = t.nodes.emplace_back();
  sn.name = std::move(name);
  sn.kind = "switch";
  sn.tier = tier;
  sn.group = group;
  switch_index.emplace(id, idx);
  return idx;
}

std::vector<int> link_ends(const std::string& name, int a, int b) {
  const bool up = name.size() > 3 && name.compare(name.size() - 3, 3, "_UP") == 0;
  return up ? std::vector<int>{a, b} : std::vector<int>{b, a};
}

Status nodes_agree(const Scenario& sc, const char* key, const std::vector<std::int64_t>& counts, const std::string& what) {
  long double product = 1;  // lists of up to a million each: no integer overflow
  for (auto x : counts) product *= static_cast<long double>(x);
  const std::int64_t nodes = sc.get_int("fabric.nodes");
  if (product == static_cast<long double>(nodes)) return Status::ok();
  return sc.error(key, fmt::format("{}{} = {:.0f} nodes, but fabric.nodes is {}", what, times(counts), static_cast<double>(product), nodes));
}

}  // namespace rdmalab::sim
