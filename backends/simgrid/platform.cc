#include "simgrid/platform.h"

#include "simgrid/topologies/topology.h"

#include "rdmalab/calibration.h"
#include "rdmalab/run.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <simgrid/s4u.hpp>

namespace rdmalab::sim {

namespace sg4 = simgrid::s4u;

std::string calibration_path(const Scenario& sc) {
  if (!sc.has("fabric.calibration")) return {};
  std::filesystem::path p = sc.get_string("fabric.calibration");
  if (p.is_relative() && sc.loc("fabric.calibration").line > 0) {
    // Written in a file: relative to that file.
    auto next_to = std::filesystem::path(sc.loc("fabric.calibration").file).parent_path() / p;
    if (std::filesystem::exists(next_to)) return next_to.string();
  }
  return p.string();
}

Result<std::vector<int>> node_placement(const Scenario& sc) {
  const auto machines = static_cast<int>(sc.get_int("fabric.nodes"));
  const std::string policy = sc.get_string("fabric.placement.policy");
  if (sc.is_set("fabric.placement.seed") && policy != "random")
    return sc.error("fabric.placement.seed", fmt::format("applies to fabric.placement.policy random (it is {})", policy));
  if (sc.is_set("fabric.placement.nodes") && policy != "list")
    return sc.error("fabric.placement.nodes", fmt::format("applies to fabric.placement.policy list (it is {})", policy));
  std::vector<int> at(static_cast<std::size_t>(machines));
  for (int j = 0; j < machines; ++j) at[static_cast<std::size_t>(j)] = j;
  if (policy == "spread") {
    const std::string topo = sc.get_string("fabric.topology");
    if (topo != "fat_tree")
      return sc.error("fabric.placement.policy",
                      fmt::format("spread deals the job's nodes round-robin over a fat tree's leaves; a {} has none: use random or list", topo));
    RDMALAB_ASSIGN(const FatTreeShape shape, fat_tree_shape(sc));
    const auto per_leaf = static_cast<int>(shape.down.front());
    const int leaves = machines / per_leaf;
    // Job node j on leaf j mod L, at place j div L there.
    for (int j = 0; j < machines; ++j) at[static_cast<std::size_t>(j)] = (j % leaves) * per_leaf + j / leaves;
  } else if (policy == "random") {
    // Fisher-Yates with a 64-bit Mersenne Twister, whose sequence the C++ standard fixes: the
    // same seed places the same way on every machine and library.
    std::mt19937_64 gen(static_cast<std::uint64_t>(sc.get_int("fabric.placement.seed")));
    for (int i = machines - 1; i > 0; --i) std::swap(at[static_cast<std::size_t>(i)], at[gen() % static_cast<std::uint64_t>(i + 1)]);
  } else if (policy == "list") {
    if (!sc.has("fabric.placement.nodes"))
      return sc.error("fabric.placement.policy", "list needs fabric.placement.nodes: the fabric node of each job node, e.g. [3, 0, 1, 2]");
    const auto list = sc.get_ints("fabric.placement.nodes");
    if (static_cast<int>(list.size()) != machines)
      return sc.error("fabric.placement.nodes", fmt::format("gives {} nodes for a job of {} (fabric.nodes): one per node", list.size(), machines));
    std::vector<bool> taken(static_cast<std::size_t>(machines), false);
    for (std::size_t j = 0; j < list.size(); ++j) {
      if (list[j] >= machines)
        return sc.error("fabric.placement.nodes", fmt::format("entry {} is node {}: the fabric has nodes 0 to {}", j, list[j], machines - 1));
      if (taken[static_cast<std::size_t>(list[j])])
        return sc.error("fabric.placement.nodes", fmt::format("entry {} is node {} again: every node once", j, list[j]));
      taken[static_cast<std::size_t>(list[j])] = true;
      at[j] = static_cast<int>(list[j]);
    }
  }
  return at;
}

namespace {

// The switches a topology has, by the name prefix the record gives them, and how many.
std::vector<std::pair<std::string, long>> switch_names(const Scenario& sc) {
  const TopologyKind* k = find_topology(sc.get_string("fabric.topology"));
  return k && k->switches ? k->switches(sc) : std::vector<std::pair<std::string, long>>{};
}

}  // namespace

Result<std::optional<Degrade>> read_degrade(const Scenario& sc) {
  const bool links = sc.has("fabric.degrade.links"), factor = sc.has("fabric.degrade.factor");
  if (!links && !factor) {
    if (sc.is_set("fabric.degrade.at")) return sc.error("fabric.degrade.at", "applies to degraded links: set fabric.degrade.links and .factor too");
    return std::optional<Degrade>();
  }
  if (!links) return sc.error("fabric.degrade.factor", "which links? set fabric.degrade.links too, e.g. [spine-0] or [leaf-3:up]");
  if (!factor) return sc.error("fabric.degrade.links", "by how much? set fabric.degrade.factor too: the fraction of bandwidth kept, e.g. 0.5");
  Degrade d;
  d.factor = sc.get_number("fabric.degrade.factor");
  d.at_s = sc.get_time("fabric.degrade.at");
  if (d.factor <= 0 && d.at_s > 0)
    return sc.error("fabric.degrade.at",
                    "a link that goes down during the run is not modelled (what it had on the wire would be lost mid-transfer): "
                    "take it down from the start (fabric.degrade.at: 0), or keep a fraction of it (fabric.degrade.factor above 0)");
  const std::string topo = sc.get_string("fabric.topology");
  const auto switches = switch_names(sc);
  const long nodes = static_cast<long>(sc.get_int("fabric.nodes"));
  const long gpus = topo == "rail_optimized" ? static_cast<long>(sc.get_int("fabric.gpus_per_node")) : 0;
  for (const auto& sel : sc.get_strings("fabric.degrade.links")) {
    std::string name = sel, side;
    if (const auto colon = sel.find(':'); colon != std::string::npos) {
      name = sel.substr(0, colon);
      side = sel.substr(colon + 1);
      if (side != "up" && side != "down")
        return sc.error("fabric.degrade.links", fmt::format("'{}': after the colon give up or down (the links to the tier above or below)", sel));
    }
    // A host (node-i; on rail_optimized node-i-gpuG) or a switch of this topology.
    bool known = false;
    long i = -1, g = -1;
    char tail = 0;
    if (gpus > 0 ? std::sscanf(name.c_str(), "node-%ld-gpu%ld%c", &i, &g, &tail) == 2 && g >= 0 && g < gpus
                 : std::sscanf(name.c_str(), "node-%ld%c", &i, &tail) == 1)
      known = i >= 0 && i < nodes;
    std::string examples = gpus > 0 ? fmt::format("node-0-gpu0 to node-{}-gpu{}", nodes - 1, gpus - 1) : fmt::format("node-0 to node-{}", nodes - 1);
    for (const auto& [prefix, count] : switches) {
      if (prefix.back() != '-') {
        known = known || name == prefix;
        examples += ", " + prefix;
        continue;
      }
      long k = -1;
      if (name.rfind(prefix, 0) == 0 && std::sscanf(name.c_str() + prefix.size(), "%ld%c", &k, &tail) == 1) known = known || (k >= 0 && k < count);
      examples += fmt::format(", {}0 to {}{}", prefix, prefix, count - 1);
    }
    if (!known) return sc.error("fabric.degrade.links", fmt::format("'{}' is not a node of this {}: it has {}", name, topo, examples));
    d.selectors.push_back(sel);
  }
  if (d.selectors.empty()) return sc.error("fabric.degrade.links", "is empty: name at least one node, e.g. [spine-0]");
  return std::optional<Degrade>(std::move(d));
}

std::vector<std::size_t> select_links(const Topology& t, const std::string& selector) {
  std::string name = selector, side;
  if (const auto colon = selector.find(':'); colon != std::string::npos) {
    name = selector.substr(0, colon);
    side = selector.substr(colon + 1);
  }
  int at = -1;
  for (std::size_t i = 0; i < t.nodes.size(); ++i)
    if (t.nodes[i].name == name) at = static_cast<int>(i);
  std::vector<std::size_t> out;
  if (at < 0) return out;
  const int tier = t.nodes[static_cast<std::size_t>(at)].tier;
  for (std::size_t i = 0; i < t.links.size(); ++i) {
    const auto& e = t.links[i].ends;
    if (e.size() != 2 || (e[0] != at && e[1] != at)) continue;
    const int other = t.nodes[static_cast<std::size_t>(e[0] == at ? e[1] : e[0])].tier;
    if ((side == "up" && other <= tier) || (side == "down" && other >= tier)) continue;
    out.push_back(i);
  }
  return out;
}

std::vector<std::string> sharp_tiers(const Scenario& sc) {
  return sc.has("fabric.sharp.tiers") ? sc.get_strings("fabric.sharp.tiers") : std::vector<std::string>{};
}

Status check_fabric(const Scenario& sc) {
  RDMALAB_TRY(check_fabric_shape(sc));  // node counts (run.h); run_scenario checks it too
  RDMALAB_TRY(node_placement(sc).status());
  RDMALAB_TRY(read_degrade(sc).status());
  if (sc.get_string("fabric.model") == "alpha_beta") {
    // The calibrated model's NIC and packet keys do nothing on alpha_beta (read_model): one the
    // user wrote is refused rather than ignored. A preset's values stay (a preset is a bundle).
    for (const char* key : {"fabric.link_layer", "fabric.mtu", "fabric.nic.message_rate", "fabric.nic.max_rd_atomic",
                            "fabric.nic.latency", "fabric.nic.jitter", "fabric.host.stall_rate", "fabric.host.stall"}) {
      if (!sc.is_set(key) || sc.loc(key).file.rfind("preset ", 0) == 0) continue;
      return sc.error(key, fmt::format("is a key of the calibrated model; fabric.model alpha_beta ({}) has link bandwidth and "
                                       "latency only and would not use it: drop the key, or use fabric.model calibrated",
                                       sc.values.at("fabric.model").source()));
    }
  }
  if (sc.has("fabric.calibration")) {
    if (sc.get_string("fabric.model") == "alpha_beta")
      return sc.error("fabric.calibration", "fabric.model alpha_beta turns every effect off: drop the calibration, or use the calibrated model");
    auto c = load_calibration(calibration_path(sc));
    if (!c) return sc.error("fabric.calibration", c.status().message());
  }
  const std::string topo = sc.get_string("fabric.topology");
  const std::string algorithm = sc.get_string("workload.algorithm");
  if ((algorithm == "nvls" || algorithm == "nvls_tree") &&
      ((sc.get_string("fabric.node.model") != "pcie" && topo != "rail_optimized") || !sc.get_bool("fabric.node.nvswitch.reduce")))
    return sc.error("workload.algorithm", algorithm + " needs a node whose NVSwitch reduces: fabric.node.model: pcie (or topology "
                                          "rail_optimized) with NVLink and fabric.node.nvswitch.reduce: true (the cx7-ndr-h100 preset has them)");
  if (topo != "rail_optimized")
    for (const char* k : {"fabric.sharp.tiers", "fabric.sharp.bandwidth", "fabric.sharp.trees_per_switch", "fabric.rail.nodes_per_leaf"})
      if (sc.is_set(k) && !(std::string(k) == "fabric.sharp.tiers" && sharp_tiers(sc).empty()))
        return sc.error(k, fmt::format("is modelled on topology rail_optimized (a {} here): SHARP needs the leaf switches cabled to one HCA "
                                       "rail each (NVIDIA's SHARP deployment rule), which rail_optimized builds", topo));
  if (algorithm == "collnet" && sc.get_int("fabric.nodes") > 1 && sharp_tiers(sc).empty())
    return sc.error("workload.algorithm", "collnet is NCCL's CollNet Direct: the network's switches must reduce (InfiniBand SHARP: "
                                          "fabric.sharp.tiers on a rail_optimized fabric); without SHARP use ring or tree");
  if (algorithm == "nvls" && sc.get_int("fabric.nodes") > 1 && sharp_tiers(sc).empty())
    return sc.error("workload.algorithm", fmt::format("nvls across nodes ({} here) is NCCL's NVLS with CollNet: the network's switches must "
                                                      "reduce too (InfiniBand SHARP: fabric.sharp.tiers on a rail_optimized fabric); without "
                                                      "SHARP use nvls_tree (NVLS in each node, a tree between them), ring or tree",
                                                      sc.get_int("fabric.nodes")));
  if (sc.get_time("fabric.switch.latency") > 0 && topo != "star" && topo != "fat_tree" && topo != "rail_optimized")
    return sc.error("fabric.switch.latency",
                    fmt::format("is modelled on star, fat_tree and rail_optimized; a {} {}: fold the switches' latency into "
                                "fabric.link.latency", topo, topo == "full" ? "joins nodes by direct cables" : "routes through SimGrid's own routers"));
  if (sc.get_bool("fabric.node.nvswitch.reduce") && !sc.has("fabric.node.nvlink.bandwidth"))
    return sc.error("fabric.node.nvswitch.reduce", "an NVSwitch reduces what NVLink brings it: set fabric.node.nvlink.bandwidth (or a fabric.preset) too");
  if (sc.has("fabric.node.nvswitch.reduce_bandwidth") && !sc.get_bool("fabric.node.nvswitch.reduce"))
    return sc.error("fabric.node.nvswitch.reduce_bandwidth", "applies to a switch that reduces: set fabric.node.nvswitch.reduce: true too");
  if (sc.get_number("fabric.node.nvlink.efficiency") != 1 && !sc.has("fabric.node.nvlink.bandwidth"))
    return sc.error("fabric.node.nvlink.efficiency", "applies to NVLink: set fabric.node.nvlink.bandwidth (or a fabric.preset) too");
  const TopologyKind* kind = find_topology(topo);
  if (!kind) return sc.error("fabric.topology", fmt::format("'{}' has no builder in this backend", topo));
  if (kind->check) RDMALAB_TRY(kind->check(sc));
  if (kind->own_node) return Status::ok();  // the topology models the node itself
  return check_node(sc);
}

namespace {

// A per-device list, or its default: devices spread evenly over `over` in order.
std::vector<int> placement(const Scenario& sc, const char* key, int count, int over) {
  std::vector<int> v;
  if (sc.has(key))
    for (auto x : sc.get_ints(key)) v.push_back(static_cast<int>(x));
  else
    for (int i = 0; i < count; ++i) v.push_back(i * over / count);
  return v;
}

}  // namespace

bool gpu_staged(const Scenario& sc, const FabricModel& model) {
  const std::string path = sc.get_string("workload.gpu_path");
  return path == "staged" || (path == "auto" && !model.node.gpudirect);
}

Status check_node(const Scenario& sc) {
  const std::string model = sc.get_string("fabric.node.model");
  const std::string path = sc.get_string("workload.gpu_path");
  if ((path == "dmabuf" || path == "peermem") && !sc.get_bool("fabric.node.gpudirect"))
    return sc.error("workload.gpu_path", fmt::format("{} is GPUDirect RDMA, which this node does not have (fabric.node.gpudirect: false); "
                                                     "use auto or staged", path));
  const int gpus = static_cast<int>(sc.get_int("fabric.gpus_per_node"));
  if (model == "none") {
    if (gpus > 1)
      return sc.error("fabric.gpus_per_node", fmt::format("{} GPUs per node need a node model: set fabric.node.model: pcie (or a fabric.preset)", gpus));
    return Status::ok();
  }
  const int nics = static_cast<int>(sc.get_int("fabric.node.nics")), sw = static_cast<int>(sc.get_int("fabric.node.pcie_switches")),
            sockets = static_cast<int>(sc.get_int("fabric.node.sockets"));
  struct List {
    const char* key;
    int count, limit;
    const char* what;
  };
  const List lists[] = {{"fabric.node.gpu_switch", gpus, sw, "fabric.node.pcie_switches"},
                        {"fabric.node.nic_switch", nics, sw, "fabric.node.pcie_switches"},
                        {"fabric.node.switch_socket", sw, sockets, "fabric.node.sockets"},
                        {"fabric.node.gpu_nic", gpus, nics, "fabric.node.nics"}};
  for (const auto& l : lists) {
    if (!sc.has(l.key)) continue;
    auto v = sc.get_ints(l.key);
    if (static_cast<int>(v.size()) != l.count)
      return sc.error(l.key, fmt::format("has {} entries; it needs one per {} ({})", v.size(),
                                         std::string(l.key).find("switch_socket") != std::string::npos ? "PCIe switch" : std::string(l.key).find("nic_switch") != std::string::npos ? "NIC" : "GPU",
                                         l.count));
    for (std::size_t i = 0; i < v.size(); ++i)
      if (v[i] >= l.limit)
        return sc.error(l.key, fmt::format("entry {} is {}, but there are only {} ({} is {}; indices start at 0)", i, v[i], l.limit, l.what, l.limit));
  }
  return Status::ok();
}

FabricModel read_model(const Scenario& sc) {
  FabricModel m;
  m.ranks = static_cast<int>(sc.get_int("fabric.nodes") * sc.get_int("fabric.gpus_per_node"));
  m.topology = sc.get_string("fabric.topology");
  m.alpha_beta = sc.get_string("fabric.model") == "alpha_beta";
  NodeModel& nm = m.node;
  nm.on = sc.get_string("fabric.node.model") == "pcie" && m.topology != "rail_optimized";
  m.nic_latency_in_routes = m.topology == "star" || m.topology == "full" || nm.on;
  const double nvlink_eff = sc.get_number("fabric.node.nvlink.efficiency");
  nm.gpu_memory_bw = sc.has("fabric.node.gpu.memory_bandwidth") ? sc.get_bandwidth("fabric.node.gpu.memory_bandwidth") : 0;
  if (m.topology == "rail_optimized") {
    m.rail.gpus = static_cast<int>(sc.get_int("fabric.gpus_per_node"));
    m.rail.spines = static_cast<int>(sc.get_int("fabric.rail.spines"));
    m.rail.nvlink_bw = sc.get_bandwidth("fabric.node.nvlink.bandwidth") * nvlink_eff;
    m.rail.pcie_bw = sc.get_bandwidth("fabric.node.pcie.bandwidth");
    m.rail.pcie_lat = sc.get_time("fabric.node.pcie.latency");
    m.rail.nodes_per_leaf = static_cast<int>(sc.get_int("fabric.rail.nodes_per_leaf"));
    m.rail.nvswitch_reduce = sc.get_bool("fabric.node.nvswitch.reduce");
    m.rail.nvswitch_reduce_bw = sc.has("fabric.node.nvswitch.reduce_bandwidth") ? sc.get_bandwidth("fabric.node.nvswitch.reduce_bandwidth") : 0;
    for (const std::string& t : sharp_tiers(sc)) {
      m.sharp.leaf = m.sharp.leaf || t == "leaf";
      m.sharp.spine = m.sharp.spine || t == "spine";
    }
    m.sharp.bw = sc.has("fabric.sharp.bandwidth") ? sc.get_bandwidth("fabric.sharp.bandwidth") : 0;
  }
  if (nm.on) {
    nm.gpus = static_cast<int>(sc.get_int("fabric.gpus_per_node"));
    nm.nics = static_cast<int>(sc.get_int("fabric.node.nics"));
    nm.switches = static_cast<int>(sc.get_int("fabric.node.pcie_switches"));
    nm.sockets = static_cast<int>(sc.get_int("fabric.node.sockets"));
    nm.gpu_switch = placement(sc, "fabric.node.gpu_switch", nm.gpus, nm.switches);
    nm.nic_switch = placement(sc, "fabric.node.nic_switch", nm.nics, nm.switches);
    nm.switch_socket = placement(sc, "fabric.node.switch_socket", nm.switches, nm.sockets);
    if (sc.has("fabric.node.gpu_nic")) {
      nm.gpu_nic = placement(sc, "fabric.node.gpu_nic", nm.gpus, nm.nics);
    } else {
      // The closest NIC (NCCL's choice): GPUs under a switch take the NICs under it in turn;
      // a switch without a NIC: NICs spread in order.
      for (int g = 0; g < nm.gpus; ++g) {
        std::vector<int> under;
        for (int n = 0; n < nm.nics; ++n)
          if (nm.nic_switch[static_cast<std::size_t>(n)] == nm.gpu_switch[static_cast<std::size_t>(g)]) under.push_back(n);
        int k = 0;
        for (int h = 0; h < g; ++h) k += nm.gpu_switch[static_cast<std::size_t>(h)] == nm.gpu_switch[static_cast<std::size_t>(g)];
        nm.gpu_nic.push_back(under.empty() ? g * nm.nics / nm.gpus : under[static_cast<std::size_t>(k) % under.size()]);
      }
    }
    nm.pcie_bw = sc.get_bandwidth("fabric.node.pcie.bandwidth");
    nm.pcie_lat = sc.get_time("fabric.node.pcie.latency");
    nm.socket_bw = sc.get_bandwidth("fabric.node.socket.bandwidth");
    nm.socket_lat = sc.get_time("fabric.node.socket.latency");
    nm.memory_bw = sc.get_bandwidth("fabric.node.memory.bandwidth");
    nm.nvlink_bw = sc.has("fabric.node.nvlink.bandwidth") ? sc.get_bandwidth("fabric.node.nvlink.bandwidth") * nvlink_eff : 0;
    nm.staging_overhead = sc.get_time("fabric.node.staging_overhead");
    nm.nvswitch_reduce = nm.nvlink_bw > 0 && sc.get_bool("fabric.node.nvswitch.reduce");
    nm.nvswitch_reduce_bw = sc.has("fabric.node.nvswitch.reduce_bandwidth") ? sc.get_bandwidth("fabric.node.nvswitch.reduce_bandwidth") : 0;
    nm.gpudirect = sc.get_bool("fabric.node.gpudirect");
  }
  if (!m.alpha_beta) {
    // Header bytes per packet: InfiniBand LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26; RoCE v2 adds
    // Ethernet 14 + IPv4 20 + UDP 8 + FCS 4 around BTH 12 + ICRC 4 = 62 (IBTA spec, Annex A17).
    const bool roce = sc.get_string("fabric.link_layer") == "roce";
    m.nic.header_bytes = roce ? 62 : 26;
    m.nic.control_bytes = m.nic.header_bytes + 16;  // + RETH/AETH: a read request or an ACK
    m.nic.mtu = static_cast<double>(sc.get_size("fabric.mtu"));
    m.nic.message_overhead_s = 1.0 / sc.get_number("fabric.nic.message_rate");
    m.nic.nic_latency_s = sc.get_time("fabric.nic.latency");
    m.nic.max_rd_atomic = static_cast<std::uint32_t>(sc.get_int("fabric.nic.max_rd_atomic"));
    m.nic.jitter_mean_s = sc.get_time("fabric.nic.jitter");
    m.nic.stall_rate = sc.get_number("fabric.host.stall_rate");
    m.nic.stall_s = sc.get_time("fabric.host.stall");
    m.nic.port_bw = sc.get_bandwidth("fabric.link.bandwidth");
  }
  return m;
}

std::vector<std::string> engine_args(const std::string& argv0) {
  // Actor stacks of 640 KiB: 512 for the rank's code, as before, and up to 128 more that the stack
  // colouring reserves (RDMALAB_SIM_COLOUR_STACK, platform.h). Never touched, they cost no memory.
  return {argv0, "--log=root.thres:critical", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
          "--cfg=contexts/stack-size:640"};
}

double wire_bytes(const NicModel& nic, double payload) {
  if (nic.mtu <= 0) return payload;
  double packets = std::max(1.0, std::ceil(payload / nic.mtu));
  return payload + packets * nic.header_bytes;
}

std::vector<RankEndpoints> build_platform(const Scenario& sc, const FabricModel& model) {
  const double bw = sc.get_bandwidth("fabric.link.bandwidth");
  const double lat = sc.get_time("fabric.link.latency");
  // Each switch crossed is paid once: a route from a node up to its leaf and down again crosses
  // one switch and two node links, so a node's link carries half a switch; every link above the
  // leaves carries one (going up k levels and down crosses 2k node/uplinks and 2k - 1 switches:
  // 2 × ½ + (2k - 2) × 1).
  const double sw_lat = sc.get_time("fabric.switch.latency");
  const double node_link_lat = lat + sw_lat / 2, upper_link_lat = lat + sw_lat;
  const int n = model.ranks;
  const NodeModel& nm = model.node;
  const int machines = nm.on ? n / nm.gpus : n;
  constexpr double kSpeed = 1e12;  // flop/s; compute phases are modelled as durations, not flops
  std::vector<RankEndpoints> eps(static_cast<std::size_t>(n));
  auto host_name = [](unsigned long id) { return fmt::format("node-{}", id); };
  // With a node model the NIC's latency is in the node (its NIC link), not in the fabric's routes.
  NodeBuilder node(nm, bw, nm.on ? model.nic.nic_latency_s : 0);
  auto plain_host = [&](sg4::NetZone* zone, unsigned long id) {
    sg4::Host* h = zone->create_host(host_name(id), kSpeed)->seal();
    if (id < eps.size()) eps[id] = {h, h, h, nullptr, {}};
    return h;
  };
  auto netpoint_cb = [&](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
    if (nm.on) return node.build(zone, id, eps);
    sg4::Host* h = plain_host(zone, id);
    return std::make_pair(h->get_netpoint(), static_cast<simgrid::kernel::routing::NetPoint*>(nullptr));
  };
  const auto policy = sg4::Link::SharingPolicy::SPLITDUPLEX;
  // Star and full zones: the NIC's own processing latency is a link on every route out of and
  // into a node (no bandwidth limit), so a message pays it at the sender and at the receiver.
  // (Cluster zones add it as a delay at the sender instead: see FabricModel::nic_latency_in_routes.)
  const double nic_lat = model.nic_latency_in_routes && !nm.on ? model.nic.nic_latency_s : 0;
  // One way out (UP) and one way in (DOWN), as every link here: SimGrid 3.32's lazy max-min
  // update (CM02's default) lets flows exceed a link's bandwidth when a link that is not split
  // duplex lies on the routes of both directions (here: 4 flows from node 1 to node 0 each at the
  // full 100 Gb/s while the 4 the other way shared it; reproduced with SimGrid alone, and gone
  // with network/optim:Full, which costs 2.5x the wall time). SimgridModel.NoRecordedLinkOrRankIsAboveItsBandwidth
  // checks every topology's record for it.
  auto nic_link = [nic_lat](sg4::NetZone* zone, unsigned long id) -> sg4::Link* {
    return zone->create_split_duplex_link(fmt::format("nic-{}", id), 1e15)->set_latency(nic_lat)->seal();
  };
  // A node's path to itself (its NIC's doorbell, rank-local transfers): no latency, no limit.
  auto loopback_cb = [](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) -> sg4::Link* {
    return zone->create_link(fmt::format("loopback-{}", id), 1e15)
        ->set_latency(0)
        ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
        ->seal();
  };
  const sg4::ClusterCallbacks callbacks =
      nm.on ? sg4::ClusterCallbacks(netpoint_cb) : sg4::ClusterCallbacks(netpoint_cb, loopback_cb, {});

  const TopologyKind* kind = find_topology(model.topology);
  if (!kind) throw std::logic_error("build_platform: topology " + model.topology + " has no builder (check_fabric should have refused it)");
  Fabric f{sc, model, bw, lat, sw_lat, node_link_lat, upper_link_lat, n, machines, kSpeed, node, eps, nic_lat, plain_host, nic_link, callbacks, policy};
  kind->build(f);
  return eps;
}

}  // namespace rdmalab::sim
