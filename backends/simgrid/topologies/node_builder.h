// One node's insides (fabric.node.*) as a SimGrid zone: the builder every topology whose nodes
// can have a node model (star, full, fat_tree, torus, dragonfly) calls per node.
#pragma once

#include <fmt/format.h>

#include <simgrid/s4u.hpp>
#include <string>
#include <utility>
#include <vector>

#include "simgrid/platform.h"

namespace rdmalab::sim {

namespace sg4 = simgrid::s4u;

using LinkPath = std::vector<sg4::LinkInRoute>;

// One node's insides (NodeModel) as a SimGrid zone whose gateway is where the node meets the
// fabric. Every rank of the node has three endpoint hosts (RankEndpoints); a route between two
// endpoints, or between an endpoint and the gateway, lists the PCIe, socket, memory and NIC links
// its bytes cross, each in its direction.
class NodeBuilder {
 public:
  NodeBuilder(const NodeModel& nm, double nic_bw, double nic_lat) : nm_(nm), nic_bw_(nic_bw), nic_lat_(nic_lat) {}

  // Builds node `id` inside `parent`; fills out[first_rank .. first_rank + gpus).
  std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*> build(sg4::NetZone* parent, unsigned long id,
                                                                                          std::vector<RankEndpoints>& out) {
    const std::string n = fmt::format("node-{}", id);
    auto* zone = sg4::create_full_zone(n);
    zone->set_parent(parent);
    auto split = [&](const std::string& name, double bw, double lat) {
      return zone->create_split_duplex_link(fmt::format("{}-{}", n, name), bw)->set_latency(lat)->seal();
    };
    std::vector<sg4::Link*> gpu_pcie, nic_pcie, uplink, dram, nic, nvlink, staging;
    for (int g = 0; g < nm_.gpus; ++g) gpu_pcie.push_back(split(fmt::format("pcie-gpu{}", g), nm_.pcie_bw, nm_.pcie_lat));
    for (int k = 0; k < nm_.nics; ++k) nic_pcie.push_back(split(fmt::format("pcie-nic{}", k), nm_.pcie_bw, nm_.pcie_lat));
    for (int k = 0; k < nm_.nics; ++k) nic.push_back(split(fmt::format("nic{}", k), nic_bw_, nic_lat_));
    for (int w = 0; w < nm_.switches; ++w) uplink.push_back(split(fmt::format("pcie-switch{}-root", w), nm_.pcie_bw, nm_.pcie_lat));
    for (int c = 0; c < nm_.sockets; ++c) dram.push_back(split(fmt::format("memory{}", c), nm_.memory_bw, 0));
    socket_ = nm_.sockets > 1 ? split("socket-link", nm_.socket_bw, nm_.socket_lat) : nullptr;
    if (nm_.nvlink_bw > 0)
      for (int g = 0; g < nm_.gpus; ++g) nvlink.push_back(split(fmt::format("nvlink-gpu{}", g), nm_.nvlink_bw, 0));
    // The staging copy's fixed cost, one way out (UP) and one way in (DOWN): a link that both
    // directions' flows cross would meet SimGrid 3.32's lazy max-min bug (see nic_link below).
    for (int g = 0; g < nm_.gpus; ++g) staging.push_back(split(fmt::format("staging-gpu{}", g), 1e15, nm_.staging_overhead));
    auto* self = zone->create_link(fmt::format("{}-loopback", n), 1e15)->set_latency(0)->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)->seal();
    gpu_pcie_ = gpu_pcie, nic_pcie_ = nic_pcie, uplink_ = uplink, dram_ = dram, nvlink_ = nvlink;

    auto* gw = zone->create_router(fmt::format("{}-gateway", n));
    // NVLink SHARP: the switch as an endpoint, one NVLink from each GPU (its speed: the reduction rate).
    sg4::Host* nvswitch = nullptr;
    if (nm_.nvswitch_reduce && !nvlink.empty())
      nvswitch = zone->create_host(fmt::format("{}-nvswitch", n), nm_.nvswitch_reduce_bw > 0 ? nm_.nvswitch_reduce_bw : 1e15)->seal();
    struct Ep {
      sg4::Host* host;
      int gpu;
      int kind;  // 0 GPUDirect, 1 staged, 2 host memory
    };
    std::vector<Ep> eps;
    for (int g = 0; g < nm_.gpus; ++g) {
      RankEndpoints e;
      e.gpu = zone->create_host(fmt::format("{}-gpu{}", n, g), 1e12)->seal();
      e.staged = zone->create_host(fmt::format("{}-gpu{}-staged", n, g), 1e12)->seal();
      e.host = zone->create_host(fmt::format("{}-gpu{}-host", n, g), 1e12)->seal();
      const std::size_t rank = id * static_cast<std::size_t>(nm_.gpus) + static_cast<std::size_t>(g);
      e.nvswitch = nvswitch;
      if (rank < out.size()) out[rank] = e;
      if (nvswitch) {
        zone->add_route(e.gpu->get_netpoint(), nvswitch->get_netpoint(), nullptr, nullptr,
                        {sg4::LinkInRoute(nvlink[static_cast<std::size_t>(g)], sg4::LinkInRoute::Direction::UP)}, false);
        zone->add_route(nvswitch->get_netpoint(), e.gpu->get_netpoint(), nullptr, nullptr,
                        {sg4::LinkInRoute(nvlink[static_cast<std::size_t>(g)], sg4::LinkInRoute::Direction::DOWN)}, false);
      }
      eps.push_back({e.gpu, g, 0});
      eps.push_back({e.staged, g, 1});
      eps.push_back({e.host, g, 2});
    }
    const auto UP = sg4::LinkInRoute::Direction::UP, DOWN = sg4::LinkInRoute::Direction::DOWN;
    // Where an endpoint's bytes live, and what the staged path adds before and after.
    auto location = [&](const Ep& e) -> Point {
      if (e.kind == 0) return {Point::gpu, e.gpu};
      if (e.kind == 1) return {Point::memory, socket_of_gpu(e.gpu)};
      return {Point::memory, socket_of_nic(nic_of(e.gpu))};
    };
    auto prefix = [&](const Ep& e) {  // leaving the endpoint
      LinkPath p;
      if (e.kind == 1) {
        p.emplace_back(staging[static_cast<std::size_t>(e.gpu)], UP);
        append(p, path({Point::gpu, e.gpu}, {Point::memory, socket_of_gpu(e.gpu)}));
      }
      return p;
    };
    auto suffix = [&](const Ep& e) {  // arriving at the endpoint
      LinkPath p;
      if (e.kind == 1) {
        append(p, path({Point::memory, socket_of_gpu(e.gpu)}, {Point::gpu, e.gpu}));
        p.emplace_back(staging[static_cast<std::size_t>(e.gpu)], DOWN);
      }
      return p;
    };
    for (const Ep& a : eps) {
      const int k = nic_of(a.gpu);
      // To the fabric: through the rank's NIC.
      LinkPath to_gw = prefix(a);
      append(to_gw, path(location(a), {Point::nic, k}));
      to_gw.emplace_back(nic[static_cast<std::size_t>(k)], UP);
      zone->add_route(a.host->get_netpoint(), gw, nullptr, nullptr, to_gw, false);
      LinkPath from_gw{sg4::LinkInRoute(nic[static_cast<std::size_t>(k)], DOWN)};
      append(from_gw, path({Point::nic, k}, location(a)));
      append(from_gw, suffix(a));
      zone->add_route(gw, a.host->get_netpoint(), nullptr, nullptr, from_gw, false);
      for (const Ep& b : eps) {
        if (a.host == b.host) {
          zone->add_route(a.host->get_netpoint(), b.host->get_netpoint(), nullptr, nullptr, {sg4::LinkInRoute(self)}, false);
          continue;
        }
        LinkPath r = prefix(a);
        append(r, path(location(a), location(b)));
        append(r, suffix(b));
        if (r.empty()) r.emplace_back(self);
        zone->add_route(a.host->get_netpoint(), b.host->get_netpoint(), nullptr, nullptr, r, false);
      }
    }
    zone->seal();
    return {zone->get_netpoint(), gw};
  }

 private:
  struct Point {
    enum Kind { gpu, nic, memory } kind;
    int index;  // GPU, NIC, or socket
  };
  int nic_of(int g) const { return nm_.gpu_nic[static_cast<std::size_t>(g)]; }
  int switch_of(const Point& p) const {
    return p.kind == Point::gpu ? nm_.gpu_switch[static_cast<std::size_t>(p.index)] : nm_.nic_switch[static_cast<std::size_t>(p.index)];
  }
  int socket_of_gpu(int g) const { return nm_.socket_of_switch(nm_.gpu_switch[static_cast<std::size_t>(g)]); }
  int socket_of_nic(int k) const { return nm_.socket_of_switch(nm_.nic_switch[static_cast<std::size_t>(k)]); }
  sg4::Link* device_link(const Point& p) const {
    return p.kind == Point::gpu ? gpu_pcie_[static_cast<std::size_t>(p.index)] : nic_pcie_[static_cast<std::size_t>(p.index)];
  }
  static void append(LinkPath& to, const LinkPath& more) { to.insert(to.end(), more.begin(), more.end()); }
  void cross_sockets(LinkPath& p, int from, int to) const {
    if (from != to && socket_) p.emplace_back(socket_, from < to ? sg4::LinkInRoute::Direction::UP : sg4::LinkInRoute::Direction::DOWN);
  }
  // The links from one place to another inside the node, each in its direction.
  LinkPath path(const Point& a, const Point& b) const {
    const auto UP = sg4::LinkInRoute::Direction::UP, DOWN = sg4::LinkInRoute::Direction::DOWN;
    LinkPath p;
    if (a.kind == Point::gpu && b.kind == Point::gpu && !nvlink_.empty()) {
      p.emplace_back(nvlink_[static_cast<std::size_t>(a.index)], UP);
      p.emplace_back(nvlink_[static_cast<std::size_t>(b.index)], DOWN);
      return p;
    }
    if (a.kind != Point::memory && b.kind != Point::memory) {
      const int sa = switch_of(a), sb = switch_of(b);
      p.emplace_back(device_link(a), UP);
      if (sa != sb) {  // through the CPU root complex, and the socket link when the roots differ
        p.emplace_back(uplink_[static_cast<std::size_t>(sa)], UP);
        cross_sockets(p, nm_.socket_of_switch(sa), nm_.socket_of_switch(sb));
        p.emplace_back(uplink_[static_cast<std::size_t>(sb)], DOWN);
      }
      p.emplace_back(device_link(b), DOWN);
      return p;
    }
    if (a.kind != Point::memory) {  // device → host memory
      const int sa = switch_of(a);
      p.emplace_back(device_link(a), UP);
      p.emplace_back(uplink_[static_cast<std::size_t>(sa)], UP);
      cross_sockets(p, nm_.socket_of_switch(sa), b.index);
      p.emplace_back(dram_[static_cast<std::size_t>(b.index)], DOWN);
      return p;
    }
    if (b.kind != Point::memory) {  // host memory → device
      const int sb = switch_of(b);
      p.emplace_back(dram_[static_cast<std::size_t>(a.index)], UP);
      cross_sockets(p, a.index, nm_.socket_of_switch(sb));
      p.emplace_back(uplink_[static_cast<std::size_t>(sb)], DOWN);
      p.emplace_back(device_link(b), DOWN);
      return p;
    }
    p.emplace_back(dram_[static_cast<std::size_t>(a.index)], UP);  // memory → memory
    cross_sockets(p, a.index, b.index);
    p.emplace_back(dram_[static_cast<std::size_t>(b.index)], DOWN);
    return p;
  }

  const NodeModel& nm_;
  double nic_bw_, nic_lat_;
  sg4::Link* socket_ = nullptr;
  std::vector<sg4::Link*> gpu_pcie_, nic_pcie_, uplink_, dram_, nvlink_;
};


}  // namespace rdmalab::sim
