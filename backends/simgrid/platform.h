// Building a SimGrid platform from a scenario's fabric: keys, checks and construction.
// Only backends/simgrid includes SimGrid.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "rdmalab/backend.h"
#include "rdmalab/record.h"
#include "rdmalab/scenario.h"
#include "rdmalab/status.h"

namespace simgrid::s4u {
class Host;
}

namespace rdmalab::sim {

// NIC and protocol effects of the `calibrated` model; all zero under `alpha_beta`.
struct NicModel {
  double message_overhead_s = 0;  // NIC time per message: 1 / message rate
  double nic_latency_s = 0;       // per NIC crossed (a link on each node's routes; platform.cc)
  double mtu = 0;                 // bytes of payload per packet; 0 = no segmentation
  double header_bytes = 0;        // wire bytes added per packet
  double control_bytes = 0;       // size of a read request / atomic request / ACK on the wire
  std::uint32_t max_rd_atomic = 0;  // reads/atomics one QP keeps in flight; 0 = no limit (alpha_beta)
  // The host's timing noise at a request's start: an exponential delay of mean jitter_mean_s
  // (fabric.nic.jitter), and the stalls of the posting core, stall_rate a second (Poisson) of a
  // length uniform up to stall_s (fabric.host.stall*), that a request due during one waits out;
  // 0: none (alpha_beta).
  double jitter_mean_s = 0, stall_rate = 0, stall_s = 0;
  double port_bw = 0;  // the NIC's port, bytes/s (fabric.link.bandwidth): how fast a message's packets follow its first
};

// Inside a node (fabric.node.*): GPUs and NICs under PCIe switches, switches under the CPU root
// complex of their socket, sockets joined by one link, host memory per socket. Off by default
// (one rank per node, no internals); see docs/backends/simgrid.md.
struct NodeModel {
  bool on = false;
  int gpus = 1, nics = 1, switches = 1, sockets = 1;
  std::vector<int> gpu_switch, nic_switch, switch_socket, gpu_nic;  // per GPU / NIC / switch
  double pcie_bw = 0, pcie_lat = 0;      // each device's PCIe link, and each switch's uplink to its root
  double socket_bw = 0, socket_lat = 0;  // between two CPU sockets
  double memory_bw = 0;                  // host memory per socket, each direction
  double nvlink_bw = 0;                  // GPU to GPU in a node (NVSwitch), each direction, as NCCL moves data; 0 = over PCIe
  double gpu_memory_bw = 0;              // a GPU's memory, for copies and reductions; 0 = not modelled
  bool nvswitch_reduce = false;          // the NVSwitch reduces (NVLink SHARP, NCCL's NVLS)
  double nvswitch_reduce_bw = 0;         // bytes it reduces per second (inputs); 0 = not limiting
  double staging_overhead = 0;           // per message and side on the staged path (cudaMemcpyAsync)
  bool gpudirect = true;                 // the NIC can reach GPU memory (dmabuf or peermem)
  int socket_of_switch(int s) const { return switch_socket[static_cast<std::size_t>(s)]; }
};

// Where a rank's transfers start and end, by the memory they touch: GPU memory read or written
// by the NIC directly (GPUDirect), GPU memory through a host bounce buffer (staged), host memory.
// Without a node model the three are the same host.
struct RankEndpoints {
  simgrid::s4u::Host* gpu = nullptr;
  simgrid::s4u::Host* staged = nullptr;
  simgrid::s4u::Host* host = nullptr;
  // The node's NVSwitch as an endpoint, where it reduces (NodeModel::nvswitch_reduce): reached
  // from `gpu` over that GPU's NVLink alone; its speed is the switch's reduction rate.
  simgrid::s4u::Host* nvswitch = nullptr;
  // InfiniBand SHARP (FabricModel::sharp): the aggregation nodes of the reduction tree of this
  // rank's rail, from its leaf switch's up to the tree's root (one per reducing tier crossed); a
  // host's speed is its aggregation rate (bytes/s of output). Empty where the fabric has none.
  std::vector<simgrid::s4u::Host*> sharp;
};

// rail_optimized: GPU g of every node uses NIC g, cabled to rail leaf g; leaves joined by spines;
// a node's GPUs joined by NVLink (NVSwitch), which is how traffic changes rail (NCCL's PXN).
// Nodes come in groups of nodes_per_leaf (a scalable unit): each group has its own leaf per rail,
// and every leaf has an uplink to every spine.
struct RailModel {
  int gpus = 0, spines = 0;
  int nodes_per_leaf = 0;  // 0: every node on one leaf per rail
  double nvlink_bw = 0, pcie_bw = 0, pcie_lat = 0;
  bool nvswitch_reduce = false;   // the node's NVSwitch reduces (NodeModel::nvswitch_reduce)
  double nvswitch_reduce_bw = 0;  // its rate; 0: not limiting
};

// InfiniBand SHARP (fabric.sharp.*, rail_optimized): the switches of the tiers listed reduce.
// Each rail has one reduction tree (NCCL runs one aggregation flow per HCA rail): its leaves'
// aggregation nodes (ANs) reduce their nodes' data, and with the spine tier one spine's AN (rail
// g's on spine g mod spines) reduces the leaves' sums; the total comes back down the same tree.
struct SharpModel {
  bool leaf = false, spine = false;
  double bw = 0;  // bytes/s an AN aggregates (its output); 0: not limiting (the ports are)
  bool on() const { return leaf; }
};

struct FabricModel {
  NodeModel node;
  RailModel rail;
  SharpModel sharp;
  bool alpha_beta = false;
  NicModel nic;
  int ranks = 0;
  std::string topology;
  // Where the NIC latency is paid, once per NIC crossed. With a node model: on each NIC's link
  // inside the node. Star and full zones: as a link on each node's routes (their path from a node
  // to itself crosses the node's link, so a NIC doorbell is not instantaneous and a start delay
  // would be noticed late). Other zones without a node model (zero-latency loopbacks): as a delay
  // of 2 × nic_latency_s before the sender starts the transfer.
  bool nic_latency_in_routes = true;
  // The node shape the collectives lay their rings out on (NodeShape in backend.h).
  // The GPUs of a node reach each other over NVLink (rail_optimized, or the node model with
  // fabric.node.nvlink.bandwidth) or PCIe (the node model without it); the tuning facts the
  // scenario states (fill_tuning_facts) are added by the backend.
  NodeShape shape() const {
    NodeShape s;
    s.gpu_memory_bw = node.gpu_memory_bw;
    s.protocol_costs = !alpha_beta;
    if (rail.gpus > 0) {
      s.ranks_per_node = s.nics = rail.gpus;
      s.intra_bw = rail.nvlink_bw;
      s.nvlink = true;
      s.nvls = rail.nvswitch_reduce;
    } else if (node.on) {
      s.ranks_per_node = node.gpus;
      s.nics = node.nics;
      s.nvlink = node.nvlink_bw > 0;
      s.intra_bw = s.nvlink ? node.nvlink_bw : node.pcie_bw;
      s.nvls = node.nvswitch_reduce;
    }
    s.collnet = sharp.on();
    return s;
  }
};

// The tiers whose switches reduce (fabric.sharp.tiers; empty when unset).
std::vector<std::string> sharp_tiers(const Scenario& sc);
// Declares the fabric keys the SimGrid backend reads.
void add_fabric_keys(Schema& schema);
// Checks that the fabric parameters form the named topology. Errors name the key.
Status check_fabric(const Scenario& sc);
// Whether GPU memory goes through host bounce buffers (workload.gpu_path, fabric.node.gpudirect).
bool gpu_staged(const Scenario& sc, const FabricModel& model);
// A fat tree's shape in SimGrid's form, from the scenario's SimGrid form (fabric.fat_tree.down,
// .up, .levels, .parallel) or from what a planner gives: fabric.nodes alone (a non-blocking
// two-level tree), with fabric.fat_tree.radix (switch ports) and fabric.fat_tree.oversubscription
// ("2:1": downlinks per uplink at a leaf). `described` says the shape in words. Errors name the key.
struct FatTreeShape {
  std::vector<std::int64_t> down, up, parallel;
  std::string described;
};
Result<FatTreeShape> fat_tree_shape(const Scenario& sc);
// The level (1: node to leaf, 2: leaf to the next tier, …) of the fat-tree link SimGrid created
// `creation`-th: it makes them level by level from the `nodes` up.
int fat_tree_level(const FatTreeShape& shape, long nodes, long creation);
// Which fabric node runs each of the job's nodes (fabric.placement.*), indexed by job node (a
// job node holds the ranks of one machine, in rank order): packed (job node j on node j), spread
// (round-robin over a fat tree's leaves), random (a seeded shuffle), list (fabric.placement.nodes).
// Errors name the key.
Result<std::vector<int>> node_placement(const Scenario& sc);
// A what-if (fabric.degrade.*): links that keep a fraction of their bandwidth, from the start or
// from a simulated time. Selectors name nodes as the record does: NAME (every link at it), NAME:up
// or NAME:down (its links to the tier above or below). read_degrade checks the names against the
// topology's shape (errors name the key, the name and the names there are); empty when not set.
struct Degrade {
  std::vector<std::string> selectors;
  double factor = 1;
  double at_s = 0;
};
Result<std::optional<Degrade>> read_degrade(const Scenario& sc);
// The indices of the topology's links a selector names (both directions of each).
std::vector<std::size_t> select_links(const Topology& t, const std::string& selector);
// The calibration file of a scenario (fabric.calibration; relative: next to the scenario), or "".
std::string calibration_path(const Scenario& sc);
// Checks the node model's keys (called by check_fabric).
Status check_node(const Scenario& sc);
// Reads the model parameters (no SimGrid calls).
FabricModel read_model(const Scenario& sc);
// Builds the platform in the current SimGrid engine; returns each rank's endpoints, in rank order.
std::vector<RankEndpoints> build_platform(const Scenario& sc, const FabricModel& model);
// Declares the hardware presets (fabric.preset) and their sources.
void add_presets(Schema& schema);

// The SimGrid engine arguments every rdmalab simulation uses: CM02 with cross-traffic off
// (checked against closed forms), quiet logs, 512 KiB actor stacks.
std::vector<std::string> engine_args(const std::string& argv0);

// Bytes on the wire for a payload, with the model's segmentation and headers.
double wire_bytes(const NicModel& nic, double payload);

}  // namespace rdmalab::sim

// Stack colouring, the first statement of every rank's actor (rdmalab's and the ring benchmark's
// plain programs alike). SimGrid gives each actor its own stack, all of one size and alignment, so
// the lines near the top that an actor's frames use sit at the same offset in every stack: they
// fall into the same few sets of a cache, and at hundreds of ranks they evict each other there
// however large the cache is. Shifting each rank's frames by a different number of lines spreads
// them over all the sets. The space is taken (never touched) in the actor's own frame, hence a
// macro: 64 bytes times the rank modulo 2048, at most 128 KiB, which engine_args adds to the stacks.
#define RDMALAB_SIM_COLOUR_STACK(rank)                                                        \
  do {                                                                                        \
    void* rdmalab_colour_ = __builtin_alloca(64 * (static_cast<std::size_t>(rank) % 2048) + 64); \
    asm volatile("" : : "r"(rdmalab_colour_) : "memory");                                     \
  } while (0)
