// The fabric's topologies as a table: each kind's name and its builder, one file per topology in
// this folder (star.cc, full.cc, fat_tree.cc, torus.cc, dragonfly.cc, rail_optimized.cc). Adding a
// topology: its file with build_<name>(Fabric&), and one line in topologies.cc's table (and its
// name in core's fabric.topology choices and its keys, for the scenario reader).
#pragma once

#include <functional>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "rdmalab/scenario.h"
#include "simgrid/platform.h"
#include "simgrid/topologies/node_builder.h"

namespace rdmalab::sim {

// What every builder is given (build_platform in platform.cc makes it).
struct Fabric {
  const Scenario& sc;
  const FabricModel& model;
  double bw, lat;                       // fabric.link.*
  double sw_lat;                        // fabric.switch.latency
  double node_link_lat, upper_link_lat;  // a node's link carries half a switch, a link above the leaves one
  int n;                                // ranks
  int machines;                         // nodes (ranks / GPUs per node with a node model)
  double speed;                         // flop/s of a plain host (compute phases are durations)
  NodeBuilder& node;                    // a node's insides, when the node model is on (model.node.on)
  std::vector<RankEndpoints>& eps;      // filled per rank by the builder
  double nic_lat;                       // the NIC's latency as a link on routes (star and full), else 0
  std::function<sg4::Host*(sg4::NetZone*, unsigned long)> plain_host;  // node `id` as one host (no node model)
  std::function<sg4::Link*(sg4::NetZone*, unsigned long)> nic_link;    // node `id`'s NIC latency link (split duplex)
  const sg4::ClusterCallbacks& callbacks;  // SimGrid's cluster zones: a node per leaf, its loopback
  sg4::Link::SharingPolicy policy;         // of the cluster zones' links
};

struct TopologyKind {
  const char* name;  // fabric.topology
  // Its own keys checked before the run (the scenario's line and key in every refusal); nullptr:
  // nothing of its own.
  Status (*check)(const Scenario& sc);
  void (*build)(Fabric& f);
  bool own_node = false;  // it models the node itself (fabric.node.* are not read)
};
// The kind named `name`, or nullptr.
const TopologyKind* find_topology(const std::string& name);

Status check_full(const Scenario& sc);
Status check_fat_tree(const Scenario& sc);
Status check_torus(const Scenario& sc);
Status check_dragonfly(const Scenario& sc);
Status check_rail_optimized(const Scenario& sc);
void build_star(Fabric& f);
void build_full(Fabric& f);
void build_fat_tree(Fabric& f);
void build_torus(Fabric& f);
void build_dragonfly(Fabric& f);
void build_rail_optimized(Fabric& f);

}  // namespace rdmalab::sim
