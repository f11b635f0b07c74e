// The record's picture of the model's platform (describe_topology).
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "simgrid/engine/world.h"
#include "simgrid/engine/record.h"
#include "simgrid/topologies/topology.h"

namespace rdmalab::sim {

// The record's picture of the platform: a node per rank, the switches (routers) with their
// tier, and every link with its two ends (each direction of a split-duplex link is a link of its
// own). The nodes and the links are the same for every topology; each topology's describe
// (topologies/) adds its switches and gives its links their ends. SimGrid's cluster zones do not
// hand out their switches, so those kinds read them back from the link names the zones give
// (tests/backends/simgrid/model_test.cc checks that every link of each topology gets its ends).
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
  std::vector<sg4::Link*> links = sg4::Engine::get_instance()->get_all_links();
  std::sort(links.begin(), links.end(), [](const sg4::Link* a, const sg4::Link* b) { return a->get_name() < b->get_name(); });
  for (sg4::Link* l : links) {
    const std::string& name = l->get_name();
    if (name.rfind("loopback-", 0) == 0 || name.rfind("nic-", 0) == 0 || name.rfind("__", 0) == 0 || name.rfind("node-", 0) == 0 ||
        name == "rail-loopback" || name == "rail-hop" || name == "rail-spine-hop" ||
        name.find("_loopback") != std::string::npos || name.find("_limiter") != std::string::npos)
      continue;  // rank-local
    if (l->get_sharing_policy() == sg4::Link::SharingPolicy::FATPIPE && l->get_bandwidth() >= 1e15)
      continue;  // costs nothing: it only steers a zone's shortest paths (rail_optimized's hops, SHARP's edges)
    t.links.push_back(TopoLink{name, l->get_bandwidth(), l->get_latency(), {}});
  }
  // The topology's switches and its links' ends (each kind's describe, topologies/).
  Picture pic{*w.sc, w.model, n, t, {}};
  if (const TopologyKind* kind = find_topology(w.model.topology); kind && kind->describe) kind->describe(pic);
  return t;
}

}  // namespace rdmalab::sim
