#include "simgrid/topologies/topology.h"

#include <fmt/format.h>

namespace rdmalab::sim {

// Each kind's entry is defined in its file.
extern const TopologyKind kStar, kFull, kFatTree, kRailOptimized, kTorus, kDragonfly;

namespace {

// The table of kinds (topology.h says what each field is).
const TopologyKind* const kinds[] = {&kStar, &kFull, &kFatTree, &kRailOptimized, &kTorus, &kDragonfly};

// "2 × 16": the counts as a product.
std::string times(const std::vector<std::int64_t>& v) {
  std::string t;
  for (auto x : v) t += (t.empty() ? "" : " × ") + std::to_string(x);
  return t;
}

}  // namespace

const TopologyKind* find_topology(const std::string& name) {
  for (const TopologyKind* k : kinds)
    if (name == k->name) return k;
  return nullptr;
}

std::vector<std::string> topology_names() {
  std::vector<std::string> out;
  for (const TopologyKind* k : kinds) out.emplace_back(k->name);
  return out;
}

void add_topology_keys(Schema& s) {
  for (const TopologyKind* k : kinds)
    if (k->keys) k->keys(s);
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
