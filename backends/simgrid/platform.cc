#include "simgrid/platform.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>
#include <simgrid/s4u.hpp>

namespace rdmalab::sim {

namespace sg4 = simgrid::s4u;

void add_fabric_keys(Schema& s) {
  using T = ValueType;
  s.add_choice(
      "fabric.model", "calibrated",
      "alpha_beta: link bandwidth and latency only (checkable against formulas); calibrated: adds NIC and packet effects",
      {"calibrated", "alpha_beta"});
  s.add_choice("fabric.link_layer", "infiniband", "packet headers of the calibrated model", {"infiniband", "roce"});
  s.add("fabric.mtu", T::size, "4KiB", "payload bytes per packet in the calibrated model", 256, 65536);
  s.add("fabric.nic.message_rate", T::number, "200e6", "messages per second one NIC can issue (calibrated model)", 1e3, 1e10);
  s.add("fabric.nic.latency", T::time, "150ns",
        "NIC processing per NIC a message crosses, sender and receiver each (calibrated model)", 0, 1e-3);
  s.add("record.interval", T::time, "10us", "simulated time between two samples of a --record file", 1e-9, 3600);
  s.add("fabric.fat_tree.levels", T::integer, "2", "switch levels above the nodes", 1, 8);
  s.add("fabric.fat_tree.down", T::int_list, "",
        "children of a switch, per level from the leaves up (SimGrid's fat-tree); their product is the node count", 1, 1e6);
  s.add("fabric.fat_tree.up", T::int_list, "",
        "parents of an element, per level from the nodes up; a leaf with 16 down and 8 up is 2:1 oversubscribed", 1, 1e6);
  s.add("fabric.fat_tree.parallel", T::int_list, "",
        "parallel links between an element and each parent, per level (default 1 each)", 1, 64);
  s.add("fabric.torus.dims", T::int_list, "", "torus dimensions; their product is the node count", 1, 1e6);
  s.add("fabric.dragonfly.groups", T::int_list, "", "[groups, links between two groups]", 1, 1e6);
  s.add("fabric.dragonfly.chassis", T::int_list, "", "[chassis per group, links between two chassis]", 1, 1e6);
  s.add("fabric.dragonfly.routers", T::int_list, "", "[routers per chassis, links between two routers]", 1, 1e6);
  s.add("fabric.dragonfly.blades", T::integer, "1", "nodes per router", 1, 1e6);
}

namespace {

std::int64_t product(const std::vector<std::int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::int64_t{1}, [](std::int64_t a, std::int64_t b) { return a * b; });
}

std::string times(const std::vector<std::int64_t>& v) {
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : " × ") + std::to_string(x);
  return s;
}

}  // namespace

Status check_fabric(const Scenario& sc) {
  const std::string topo = sc.get_string("fabric.topology");
  const std::int64_t nodes = sc.get_int("fabric.nodes");
  if (topo == "fat_tree") {
    for (const char* k : {"fabric.fat_tree.down", "fabric.fat_tree.up"})
      if (!sc.has(k)) return sc.error("fabric.topology", fmt::format("a fat_tree needs {} (see docs/backends/simgrid.md)", k));
    auto levels = sc.get_int("fabric.fat_tree.levels");
    auto down = sc.get_ints("fabric.fat_tree.down");
    auto up = sc.get_ints("fabric.fat_tree.up");
    if (static_cast<std::int64_t>(down.size()) != levels)
      return sc.error("fabric.fat_tree.down", fmt::format("has {} entries; fabric.fat_tree.levels is {}", down.size(), levels));
    if (static_cast<std::int64_t>(up.size()) != levels)
      return sc.error("fabric.fat_tree.up", fmt::format("has {} entries; fabric.fat_tree.levels is {}", up.size(), levels));
    if (sc.has("fabric.fat_tree.parallel") && static_cast<std::int64_t>(sc.get_ints("fabric.fat_tree.parallel").size()) != levels)
      return sc.error("fabric.fat_tree.parallel", fmt::format("needs {} entries, one per level", levels));
    if (product(down) != nodes)
      return sc.error("fabric.fat_tree.down",
                      fmt::format("{} = {} nodes, but fabric.nodes is {}", times(down), product(down), nodes));
  } else if (topo == "torus") {
    if (!sc.has("fabric.torus.dims")) return sc.error("fabric.topology", "a torus needs fabric.torus.dims, e.g. [4, 4, 4]");
    auto dims = sc.get_ints("fabric.torus.dims");
    if (product(dims) != nodes)
      return sc.error("fabric.torus.dims",
                      fmt::format("{} = {} nodes, but fabric.nodes is {}", times(dims), product(dims), nodes));
  } else if (topo == "dragonfly") {
    for (const char* k : {"fabric.dragonfly.groups", "fabric.dragonfly.chassis", "fabric.dragonfly.routers"}) {
      if (!sc.has(k)) return sc.error("fabric.topology", fmt::format("a dragonfly needs {} as [count, links]", k));
      if (sc.get_ints(k).size() != 2) return sc.error(k, "needs two numbers: [count, links]");
    }
    std::int64_t n = sc.get_ints("fabric.dragonfly.groups")[0] * sc.get_ints("fabric.dragonfly.chassis")[0] *
                     sc.get_ints("fabric.dragonfly.routers")[0] * sc.get_int("fabric.dragonfly.blades");
    // SimGrid 3.32 wires the links between groups from router k of a chassis to group k, and
    // crashes (segmentation fault) when a chassis has fewer routers than there are groups.
    if (sc.get_ints("fabric.dragonfly.groups")[0] > sc.get_ints("fabric.dragonfly.routers")[0])
      return sc.error("fabric.dragonfly.groups",
                      fmt::format("{} groups need at least {} routers per chassis (fabric.dragonfly.routers is [{}, …]): SimGrid "
                                  "3.32 links router k of each chassis to group k",
                                  sc.get_ints("fabric.dragonfly.groups")[0], sc.get_ints("fabric.dragonfly.groups")[0],
                                  sc.get_ints("fabric.dragonfly.routers")[0]));
    if (n != nodes)
      return sc.error("fabric.dragonfly.blades",
                      fmt::format("groups × chassis × routers × blades = {} nodes, but fabric.nodes is {}", n, nodes));
  } else if (topo == "full") {
    if (nodes > 256)
      return sc.error("fabric.nodes",
                      fmt::format("a full mesh has a link per pair: at most 256 nodes (asked {}); use fat_tree", nodes));
  } else if (topo == "rail_optimized") {
    return sc.error("fabric.topology",
                    "rail_optimized is not modelled by this build yet (star, full, fat_tree, torus, dragonfly are)");
  }
  return Status::ok();
}

FabricModel read_model(const Scenario& sc) {
  FabricModel m;
  m.ranks = static_cast<int>(sc.get_int("fabric.nodes"));
  m.topology = sc.get_string("fabric.topology");
  m.alpha_beta = sc.get_string("fabric.model") == "alpha_beta";
  m.nic_latency_in_routes = m.topology == "star" || m.topology == "full";
  if (!m.alpha_beta) {
    // Header bytes per packet: InfiniBand LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26; RoCE v2 adds
    // Ethernet 14 + IPv4 20 + UDP 8 + FCS 4 around BTH 12 + ICRC 4 = 62 (IBTA spec, Annex A17).
    const bool roce = sc.get_string("fabric.link_layer") == "roce";
    m.nic.header_bytes = roce ? 62 : 26;
    m.nic.control_bytes = m.nic.header_bytes + 16;  // + RETH/AETH: a read request or an ACK
    m.nic.mtu = static_cast<double>(sc.get_size("fabric.mtu"));
    m.nic.message_overhead_s = 1.0 / sc.get_number("fabric.nic.message_rate");
    m.nic.nic_latency_s = sc.get_time("fabric.nic.latency");
  }
  return m;
}

std::vector<std::string> engine_args(const std::string& argv0) {
  return {argv0, "--log=root.thres:critical", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
          "--cfg=contexts/stack-size:512"};
}

double wire_bytes(const NicModel& nic, double payload) {
  if (nic.mtu <= 0) return payload;
  double packets = std::max(1.0, std::ceil(payload / nic.mtu));
  return payload + packets * nic.header_bytes;
}

std::vector<sg4::Host*> build_platform(const Scenario& sc, const FabricModel& model) {
  const double bw = sc.get_bandwidth("fabric.link.bandwidth");
  const double lat = sc.get_time("fabric.link.latency");
  const int n = model.ranks;
  constexpr double kSpeed = 1e12;  // flop/s; compute phases are modelled as durations, not flops
  std::vector<sg4::Host*> hosts(static_cast<std::size_t>(n), nullptr);
  auto host_name = [](unsigned long id) { return fmt::format("node-{}", id); };
  auto netpoint_cb = [&](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
    sg4::Host* h = zone->create_host(host_name(id), kSpeed)->seal();
    if (id < hosts.size()) hosts[id] = h;
    return std::make_pair(h->get_netpoint(), static_cast<simgrid::kernel::routing::NetPoint*>(nullptr));
  };
  const auto policy = sg4::Link::SharingPolicy::SPLITDUPLEX;
  // Star and full zones: the NIC's own processing latency is a link on every route out of and
  // into a node (no bandwidth limit), so a message pays it at the sender and at the receiver.
  // (Cluster zones add it as a delay at the sender instead: see FabricModel::nic_latency_in_routes.)
  const double nic_lat = model.nic_latency_in_routes ? model.nic.nic_latency_s : 0;
  auto nic_link = [nic_lat](sg4::NetZone* zone, unsigned long id) -> sg4::Link* {
    return zone->create_link(fmt::format("nic-{}", id), 1e15)
        ->set_latency(nic_lat)
        ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
        ->seal();
  };
  // A node's path to itself (its NIC's doorbell, rank-local transfers): no latency, no limit.
  auto loopback_cb = [](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) -> sg4::Link* {
    return zone->create_link(fmt::format("loopback-{}", id), 1e15)
        ->set_latency(0)
        ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
        ->seal();
  };
  const sg4::ClusterCallbacks callbacks(netpoint_cb, loopback_cb, {});

  if (model.topology == "star") {
    auto* zone = sg4::create_star_zone("fabric");
    for (int i = 0; i < n; ++i) {
      sg4::Host* h = zone->create_host(host_name(static_cast<unsigned long>(i)), kSpeed);
      auto* link = zone->create_split_duplex_link(fmt::format("link-{}", i), bw)->set_latency(lat)->seal();
      std::vector<sg4::LinkInRoute> route;
      if (nic_lat > 0) route.emplace_back(nic_link(zone, static_cast<unsigned long>(i)));
      route.emplace_back(link, sg4::LinkInRoute::Direction::UP);
      zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, route, true);
      hosts[static_cast<std::size_t>(i)] = h;
    }
    zone->seal();
  } else if (model.topology == "full") {
    auto* zone = sg4::create_full_zone("fabric");
    std::vector<sg4::Link*> nics;
    for (int i = 0; i < n; ++i) {
      hosts[static_cast<std::size_t>(i)] = zone->create_host(host_name(static_cast<unsigned long>(i)), kSpeed);
      if (nic_lat > 0) nics.push_back(nic_link(zone, static_cast<unsigned long>(i)));
    }
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j) {
        auto* link = zone->create_split_duplex_link(fmt::format("link-{}-{}", i, j), bw)->set_latency(lat)->seal();
        std::vector<sg4::LinkInRoute> route;
        if (nic_lat > 0) route.emplace_back(nics[static_cast<std::size_t>(i)]);
        route.emplace_back(link, sg4::LinkInRoute::Direction::UP);
        if (nic_lat > 0) route.emplace_back(nics[static_cast<std::size_t>(j)]);
        zone->add_route(hosts[static_cast<std::size_t>(i)]->get_netpoint(), hosts[static_cast<std::size_t>(j)]->get_netpoint(),
                        nullptr, nullptr, route, true);
      }
    zone->seal();
  } else if (model.topology == "fat_tree") {
    auto to_u = [](const std::vector<std::int64_t>& v) {
      std::vector<unsigned int> out;
      for (auto x : v) out.push_back(static_cast<unsigned int>(x));
      return out;
    };
    auto down = to_u(sc.get_ints("fabric.fat_tree.down"));
    auto up = to_u(sc.get_ints("fabric.fat_tree.up"));
    auto levels = static_cast<unsigned int>(sc.get_int("fabric.fat_tree.levels"));
    std::vector<unsigned int> par =
        sc.has("fabric.fat_tree.parallel") ? to_u(sc.get_ints("fabric.fat_tree.parallel")) : std::vector<unsigned int>(levels, 1);
    auto* zone =
        sg4::create_fatTree_zone("fabric", nullptr, sg4::FatTreeParams(levels, down, up, par), callbacks, bw, lat, policy);
    zone->seal();
  } else if (model.topology == "torus") {
    std::vector<unsigned long> dims;
    for (auto d : sc.get_ints("fabric.torus.dims")) dims.push_back(static_cast<unsigned long>(d));
    auto* zone = sg4::create_torus_zone("fabric", nullptr, dims, callbacks, bw, lat, policy);
    zone->seal();
  } else if (model.topology == "dragonfly") {
    auto g = sc.get_ints("fabric.dragonfly.groups"), c = sc.get_ints("fabric.dragonfly.chassis"),
         r = sc.get_ints("fabric.dragonfly.routers");
    auto pr = [](const std::vector<std::int64_t>& v) {
      return std::make_pair(static_cast<unsigned>(v[0]), static_cast<unsigned>(v[1]));
    };
    auto* zone = sg4::create_dragonfly_zone(
        "fabric", nullptr,
        sg4::DragonflyParams(pr(g), pr(c), pr(r), static_cast<unsigned>(sc.get_int("fabric.dragonfly.blades"))), callbacks, bw,
        lat, policy);
    zone->seal();
  }
  return hosts;
}

}  // namespace rdmalab::sim
