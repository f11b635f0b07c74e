// Building a SimGrid platform from a scenario's fabric: keys, checks and construction.
// Only backends/simgrid includes SimGrid.
#pragma once

#include <string>
#include <vector>

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
};

struct FabricModel {
  bool alpha_beta = false;
  NicModel nic;
  int ranks = 0;
  std::string topology;
  // Where the NIC latency is paid. Star and full zones: as a link on each node's routes (their
  // path from a node to itself crosses the node's link, so a NIC doorbell is not instantaneous and
  // a start delay would be noticed late). Cluster zones (zero-latency loopbacks): as a delay of
  // 2 × nic_latency_s before the sender starts the transfer.
  bool nic_latency_in_routes = true;
};

// Declares the fabric keys the SimGrid backend reads.
void add_fabric_keys(Schema& schema);
// Checks that the fabric parameters form the named topology. Errors name the key.
Status check_fabric(const Scenario& sc);
// Reads the model parameters (no SimGrid calls).
FabricModel read_model(const Scenario& sc);
// Builds the platform in the current SimGrid engine; returns one host per rank, in rank order.
std::vector<simgrid::s4u::Host*> build_platform(const Scenario& sc, const FabricModel& model);

// The SimGrid engine arguments every rdmalab simulation uses: CM02 with cross-traffic off
// (checked against closed forms), quiet logs, 512 KiB actor stacks.
std::vector<std::string> engine_args(const std::string& argv0);

// Bytes on the wire for a payload, with the model's segmentation and headers.
double wire_bytes(const NicModel& nic, double payload);

}  // namespace rdmalab::sim
