// The fabric's topologies as a table of kinds (topologies.cc), one file per topology in this folder
// (star.cc, full.cc, fat_tree.cc, rail_optimized.cc, torus.cc, dragonfly.cc). Each file keeps its
// functions to itself and defines its entry, a TopologyKind: its name, keys, checks, builder and
// picture in the record. Adding a topology: its file, and its entry in topologies.cc's table (which
// also gives fabric.topology its names), and the file in CMakeLists.txt.
#pragma once

#include <functional>
#include <map>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "rdmalab/record.h"
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

// What a kind's describe is given: the record's picture with a node per fabric node and the
// fabric's links (names, rates, no ends yet, sorted by name), to which it adds its switches and
// gives every link of its own its two ends (each direction of a split-duplex link is a link).
struct Picture {
  const Scenario& sc;
  const FabricModel& model;
  int n;  // fabric nodes (hosts, or machines with a node model): t.nodes[0..n)
  Topology& t;
  std::map<long, int> switch_index;  // the zone's id of a switch → node index
  // Adds a switch once per id; its node index.
  int add_switch(long id, std::string name, int tier, int group);
  int sw(long id) const { return switch_index.at(id); }
};
// A link's ends in the direction it carries: [a, b] for a split-duplex link's _UP half, else [b, a].
std::vector<int> link_ends(const std::string& name, int a, int b);

struct TopologyKind {
  const char* name;  // fabric.topology
  // Its own keys checked before the run (the scenario's line and key in every refusal); nullptr:
  // nothing of its own.
  Status (*check)(const Scenario& sc) = nullptr;
  void (*build)(Fabric& f) = nullptr;
  bool own_node = false;  // it models the node itself (fabric.node.* are not read)
  // The node count its shape keys imply agrees with fabric.nodes (checked whichever backend
  // runs: loopback and verbs run fabric.nodes ranks); nullptr: its shape is fabric.nodes.
  Status (*check_nodes)(const Scenario& sc) = nullptr;
  // The record's picture of it: its switches and its links' ends (engine/topology_record.cc).
  void (*describe)(Picture& p) = nullptr;
  // Its own keys in the schema (add_fabric_keys); nullptr: none.
  void (*keys)(Schema& s) = nullptr;
  // Its switches by the name prefix the record gives them, and how many (fabric.degrade.links
  // names them); nullptr: none.
  std::vector<std::pair<std::string, long>> (*switches)(const Scenario& sc) = nullptr;
};
// The kind named `name`, or nullptr; every kind's name, in the table's order.
const TopologyKind* find_topology(const std::string& name);
std::vector<std::string> topology_names();
// Every kind's own keys, into the schema.
void add_topology_keys(Schema& s);
// The scenario's kind's check_nodes (added to the schema's checks by add_fabric_keys).
Status check_topology_nodes(const Scenario& sc);
// "WHAT 2 × 16 = 32 nodes, but fabric.nodes is 8" on `key` when the product of `counts` is not
// fabric.nodes.
Status nodes_agree(const Scenario& sc, const char* key, const std::vector<std::int64_t>& counts, const std::string& what = "");

}  // namespace rdmalab::sim
