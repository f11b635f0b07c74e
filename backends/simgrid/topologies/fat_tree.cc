// fat_tree: SimGrid's fat-tree zone (fabric.fat_tree.*), the spine's links set apart.
#include <fmt/format.h>

#include <cstdio>
#include <simgrid/s4u.hpp>

#include "simgrid/topologies/topology.h"

namespace rdmalab::sim {

Result<FatTreeShape> fat_tree_shape(const Scenario& sc) {
  FatTreeShape t;
  const std::int64_t nodes = sc.get_int("fabric.nodes");
  const bool simgrid_form = sc.has("fabric.fat_tree.down") || sc.has("fabric.fat_tree.up");
  if (simgrid_form) {
    for (const char* k : {"fabric.fat_tree.down", "fabric.fat_tree.up"})
      if (!sc.has(k))
        return sc.error(k, "SimGrid's form needs fabric.fat_tree.down and .up both (or neither: then the tree is built from fabric.nodes, "
                           "fabric.fat_tree.radix and .oversubscription)");
    for (const char* k : {"fabric.fat_tree.radix", "fabric.fat_tree.oversubscription"})
      if (sc.is_set(k)) return sc.error(k, "is for a tree built from fabric.nodes: drop it, or drop fabric.fat_tree.down and .up");
    const auto levels = sc.get_int("fabric.fat_tree.levels");
    t.down = sc.get_ints("fabric.fat_tree.down");
    t.up = sc.get_ints("fabric.fat_tree.up");
    if (static_cast<std::int64_t>(t.down.size()) != levels)
      return sc.error("fabric.fat_tree.down", fmt::format("has {} entries; fabric.fat_tree.levels is {}", t.down.size(), levels));
    if (static_cast<std::int64_t>(t.up.size()) != levels)
      return sc.error("fabric.fat_tree.up", fmt::format("has {} entries; fabric.fat_tree.levels is {}", t.up.size(), levels));
    t.parallel.assign(t.down.size(), 1);
    if (sc.has("fabric.fat_tree.parallel")) {
      t.parallel = sc.get_ints("fabric.fat_tree.parallel");
      if (static_cast<std::int64_t>(t.parallel.size()) != levels)
        return sc.error("fabric.fat_tree.parallel", fmt::format("needs {} entries, one per level", levels));
    }
    std::string d, u;
    for (std::size_t i = 0; i < t.down.size(); ++i) {
      d += fmt::format("{}{}", i ? ", " : "", t.down[i]);
      u += fmt::format("{}{}", i ? ", " : "", t.up[i]);
    }
    t.described = fmt::format("fat tree of {} levels (SimGrid's form: down [{}], up [{}])", t.down.size(), d, u);
    return t;
  }
  if (sc.is_set("fabric.fat_tree.levels") && sc.get_int("fabric.fat_tree.levels") != 2)
    return sc.error("fabric.fat_tree.levels", "a tree built from fabric.nodes has two levels; for more, give fabric.fat_tree.down and .up");
  // Oversubscription k:1 (a whole k).
  const std::string os = sc.get_string("fabric.fat_tree.oversubscription");
  std::int64_t k = 0;
  {
    const auto colon = os.find(':');
    const std::string a = os.substr(0, colon), b = colon == std::string::npos ? "" : os.substr(colon + 1);
    char* end = nullptr;
    const long v = std::strtol(a.c_str(), &end, 10);
    if (colon == std::string::npos || b != "1" || a.empty() || *end != '\0' || v < 1 || v > 64)
      return sc.error("fabric.fat_tree.oversubscription", fmt::format("'{}': give k:1 with a whole k from 1 to 64 (1:1, 2:1, 4:1)", os));
    k = v;
  }
  std::int64_t d = 0, u = 0, radix = 0;
  if (sc.has("fabric.fat_tree.radix")) {
    // A leaf's ports: d to nodes, u up, d = k u, d + u = radix.
    radix = sc.get_int("fabric.fat_tree.radix");
    if (radix % (k + 1) != 0)
      return sc.error("fabric.fat_tree.radix", fmt::format("{} ports do not split {}:1 (down = {} x up): give a radix that is a multiple of {}", radix, k, k, k + 1));
    u = radix / (k + 1);
    d = radix - u;
  } else {
    // From the node count alone: leaves of d nodes, d the largest divisor of the node count not above
    // its square root (rounded up), so leaves and spines come out about as many as the nodes per leaf.
    const auto root = static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(nodes))));
    for (std::int64_t c = std::min(root, nodes); c >= 1; --c)
      if (nodes % c == 0) {
        d = c;
        break;
      }
    if (d % k != 0)
      return sc.error("fabric.fat_tree.oversubscription", fmt::format("{}:1 does not divide a leaf of {} nodes (the shape fabric.nodes {} gives): "
                                                                      "use an oversubscription that divides {}, or give fabric.fat_tree.radix", k, d, nodes, d));
    u = d / k;
  }
  if (nodes <= d) {
    // One switch holds them all: a one-level tree, nothing above it to oversubscribe.
    t.down = {nodes};
    t.up = {1};
    t.parallel = {1};
    t.described = fmt::format("fat tree: one switch of {} nodes{}", nodes, radix ? fmt::format(" (radix {})", radix) : std::string());
    return t;
  }
  if (nodes % d != 0)
    return sc.error("fabric.nodes", fmt::format("{} nodes do not fill leaves of {} nodes (radix {} at {}:1): give a multiple of {}", nodes, d, radix, k, d));
  const std::int64_t leaves = nodes / d;
  if (radix && leaves > radix)
    return sc.error("fabric.nodes", fmt::format("{} leaves of {} nodes need spines of {} ports, more than the radix {}: a two-level tree of radix {} "
                                                "at {}:1 holds at most {} nodes (for more, give a third level in SimGrid's form)",
                                                leaves, d, leaves, radix, radix, k, radix * d));
  t.down = {d, leaves};
  t.up = {1, u};
  t.parallel = {1, 1};
  t.described = fmt::format("fat tree: {} leaves of {} nodes, {} uplinks each to {} spines of {} ports ({}:1{})", leaves, d, u, u, leaves, k,
                            radix ? fmt::format(", switch radix {}", radix) : fmt::format(", switch radix {} needed", std::max(d + u, leaves)));
  return t;
}

int fat_tree_level(const FatTreeShape& shape, long nodes, long creation) {
  const auto& down = shape.down;
  const auto& up = shape.up;
  const std::size_t levels = down.size();
  const std::vector<std::int64_t>& par = shape.parallel;
  long first = 0, below = nodes;
  for (std::size_t l = 0; l < levels; ++l) {
    const long count = below * up[l] * par[l];
    if (creation < first + count) return static_cast<int>(l) + 1;
    first += count;
    below = below * up[l] / down[l];
  }
  return static_cast<int>(levels);
}

namespace {

Status nodes_fat_tree(const Scenario& sc) {
  if (!sc.has("fabric.fat_tree.down")) return Status::ok();  // a tree built from fabric.nodes
  return nodes_agree(sc, "fabric.fat_tree.down", sc.get_ints("fabric.fat_tree.down"));
}

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

// SimGrid's fat-tree zone names its links link_from_<child>_<parent>_<n>_UP|DOWN (SimGrid 3.32)
// and hands out no switches: ids of different levels may be equal, and the creation number n
// says the level. Switches are numbered tier by tier, in the zone's id order (leaf-0 is above
// host 0).
void describe_fat_tree(Picture& p) {
  const FatTreeShape shape = fat_tree_shape(p.sc).value();  // checked before the run
  auto level_of = [&](long creation) { return fat_tree_level(shape, p.n, creation); };
  std::map<std::pair<int, long>, int> sw;
  for (const TopoLink& tl : p.t.links) {
    long cid = 0, pid = 0, k = 0;
    if (std::sscanf(tl.name.c_str(), "link_from_%ld_%ld_%ld_", &cid, &pid, &k) != 3) continue;
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
      sw[{tier, id}] = p.add_switch((static_cast<long>(tier) << 40) + id,
                                    fmt::format("{}-{}", tier == 1 ? "leaf" : tier == 2 ? "spine" : fmt::format("tier{}", tier), count++), tier, -1);
  }
  for (TopoLink& tl : p.t.links) {
    long cid = 0, pid = 0, k = 0;
    if (std::sscanf(tl.name.c_str(), "link_from_%ld_%ld_%ld_", &cid, &pid, &k) != 3) continue;
    const int tier = level_of(k);
    const int x = tier == 1 ? static_cast<int>(cid) : sw.at({tier - 1, cid});
    tl.ends = link_ends(tl.name, x, sw.at({tier, pid}));
  }
}

void keys_fat_tree(Schema& s) {
  using T = ValueType;
  s.add("fabric.fat_tree.levels", T::integer, "2", "switch levels above the nodes", 1, 8);
  s.add("fabric.fat_tree.down", T::int_list, "",
        "children of a switch, per level from the leaves up (SimGrid's fat-tree); their product is the node count", 1, 1e6);
  s.add("fabric.fat_tree.up", T::int_list, "",
        "parents of an element, per level from the nodes up; a leaf with 16 down and 8 up is 2:1 oversubscribed", 1, 1e6);
  s.add("fabric.spine.bandwidth", T::bandwidth, "", "fat_tree: bandwidth of the links above the leaves (default: fabric.link.bandwidth)", 1, 1e15);
  s.add("fabric.spine.latency", T::time, "", "fat_tree: latency of the links above the leaves (default: fabric.link.latency)", 0, 1);
  s.add("fabric.fat_tree.parallel", T::int_list, "",
        "parallel links between an element and each parent, per level (default 1 each)", 1, 64);
  s.add("fabric.fat_tree.radix", T::integer, "",
        "ports of each switch, for a two-level tree built from fabric.nodes (instead of fabric.fat_tree.down/up): a leaf has "
        "radix x k/(k+1) nodes and radix/(k+1) uplinks for oversubscription k:1",
        2, 4096);
  s.add("fabric.fat_tree.oversubscription", T::string, "1:1",
        "k:1 at each leaf of a tree built from fabric.nodes (node links per uplink): 1:1 is non-blocking, 2:1 halves the spine");
}

std::vector<std::pair<std::string, long>> switches_fat_tree(const Scenario& sc) {
  std::vector<std::pair<std::string, long>> out;
  auto shape = fat_tree_shape(sc);
  if (!shape) return out;
  // Level l (1 = leaves) has the product of the down counts above it times the up counts up to it.
  const std::size_t levels = shape->down.size();
  for (std::size_t l = 1; l <= levels; ++l) {
    long count = 1;
    for (std::size_t j = l; j < levels; ++j) count *= static_cast<long>(shape->down[j]);
    for (std::size_t j = 0; j < l; ++j) count *= static_cast<long>(shape->up[j]);
    out.emplace_back(l == 1 ? "leaf-" : l == 2 ? "spine-" : fmt::format("tier{}-", l), count);
  }
  return out;
}

}  // namespace

// Its entry in the table of kinds (topologies.cc).
extern const TopologyKind kFatTree = {.name = "fat_tree",
                                 .check = check_fat_tree,
                                 .build = build_fat_tree,
                                 .check_nodes = nodes_fat_tree,
                                 .describe = describe_fat_tree,
                                 .keys = keys_fat_tree,
                                 .switches = switches_fat_tree};

}  // namespace rdmalab::sim
