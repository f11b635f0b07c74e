// NCCL's protocols and its tuning model: how NCCL predicts the time of each (algorithm, protocol)
// for a collective and picks the fastest (docs/collectives.md, "Protocols and algorithm choice").
//
// The formulas and constants are those of NCCL 2.30 (src/graph/tuning.cc: ncclTopoTuneModel,
// ncclTopoGetAlgoTime, the default tuner constants; src/enqueue.cc: topoGetAlgoInfo). This file
// restates them; it copies no code. What NCCL takes from its topology search (channels and the
// bandwidth per channel of each graph) is derived from the modelled node by graph_for().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rdmalab/workloads/collectives.h"

namespace rdmalab::workloads {

// NCCL's three protocols (NCCL_PROTO): LL sends 8-byte lines of 4 data bytes and a 4-byte flag,
// LL128 128-byte lines of 120 data bytes and an 8-byte flag, Simple the data itself with a
// fence and a flag per step.
enum class Protocol { ll, ll128, simple };
const char* protocol_name(Protocol p) noexcept;  // "LL", "LL128", "Simple" (NCCL's spelling)
// workload.protocol's spelling ("ll", "ll128", "simple"); nullopt for "auto".
std::optional<Protocol> parse_protocol(const std::string& s);

// NVLS moves data on NVLink with multimem loads and stores, which reach nvlsEfficiency of what
// NCCL's ring kernels reach there (src/graph/tuning.cc: Hopper 0.85, Blackwell 0.74): the wire
// bytes per data byte are its inverse.
double nvls_wire_factor(GpuGeneration g) noexcept;

// Wire bytes per data byte: LL 2 (src/include/device.h, union ncclLLFifoLine), LL128 16/15
// (NCCL_LL128_LINEELEMS 16 eight-byte words of which NCCL_LL128_DATAELEMS 15 carry data), Simple 1.
double protocol_wire_factor(Protocol p) noexcept;
// Data bytes per step (NCCL's chunk): the protocol's buffer over NCCL_STEPS = 8. LL: 512 threads
// × 8 lines of 16 bytes = 64 KiB of lines, 32 KiB of data; LL128: 640 threads × 120 words of 8
// bytes = 600 KiB of lines, 562.5 KiB of data; Simple: 4 MiB / 8 = 512 KiB.
std::uint64_t protocol_step_bytes(Protocol p) noexcept;

const char* gpu_generation_name(GpuGeneration g) noexcept;

// NCCL's algorithms, in NCCL's order (which breaks ties: the first fastest wins).
enum class TunedAlgo { tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat };
constexpr int kTunedAlgos = 7;
const char* tuned_algo_name(TunedAlgo a) noexcept;  // NCCL's spelling: "Tree", "Ring", "NVLS", ...

// What NCCL's topology search hands its tuning model (struct ncclTopoGraph), and the facts of
// the communicator it reads.
struct TuningGraph {
  int channels = 0;        // nChannels
  double bw_intra = 0;     // GB/s per channel inside a node
  double bw_inter = 0;     // GB/s per channel between nodes
  double latency_inter = 0;  // µs (latencyInter)
  bool nvlink = true;      // typeIntra is NVLink (else PCIe)
};
struct TuningInput {
  int ranks = 1, nodes = 1;
  GpuGeneration gen = GpuGeneration::hopper;
  bool amd_cpu = false;  // cpuVendor: the LL bandwidth cap and the network post overhead depend on it
  TuningGraph ring, tree, nvls;
  TuningGraph collnet_direct;  // CollNet Direct's: one channel per head (a GPU with its own NIC) at the NIC's rate
  bool nvls_support = false;  // NVLink SHARP usable (an NVSwitch that reduces, several GPUs per node)
  bool collnet = false;       // collnetEnable with a SHARP network (NCCL_COLLNET_ENABLE=1 and the plugin)
};

// One (algorithm, protocol): the model's latency (µs) and bus bandwidth (GB/s, converted to the
// algorithm bandwidth as NCCL does), and its predicted time for the size; enabled false when
// NCCL would not consider it (then `why` says why).
struct TuningCandidate {
  TunedAlgo algo = TunedAlgo::ring;
  Protocol proto = Protocol::simple;
  double latency_us = 0;
  double bw = 0;  // GB/s, bandwidths[coll][algo][proto]
  double time_us = -1;
  bool enabled = false;
  std::string why;
};

// Every (algorithm, protocol) NCCL's model knows for this collective (the tuned collectives:
// broadcast, reduce, all_gather, reduce_scatter, all_reduce), with their times for `bytes`.
std::vector<TuningCandidate> tuning_table(const TuningInput& in, Collective coll, std::uint64_t bytes);
// The fastest enabled candidate (NCCL's topoGetAlgoInfo), or null when none is (a collective
// NCCL does not tune, or one rank).
const TuningCandidate* tuning_choice(const std::vector<TuningCandidate>& table);
// Whether NCCL tunes this collective (all_to_all and sendrecv are point-to-point in NCCL).
bool is_tuned(Collective c) noexcept;

// The node as NCCL's search would see it, from what the backend knows of it (NodeShape).
struct TunedNode {
  int ranks = 1, ranks_per_node = 1, nics = 1;
  double intra_bw = 0;  // bytes/s per GPU to the other GPUs of its node, as NCCL moves data (NVLink × NCCL's per-link rate, or PCIe)
  double nic_bw = 0;    // bytes/s per NIC
  bool nvlink = false;
  GpuGeneration gen = GpuGeneration::hopper;
  bool amd_cpu = false;
  bool nvls = false;
  bool collnet = false;  // the network's switches reduce (InfiniBand SHARP)
};
TuningInput graph_for(const TunedNode& node);
TunedNode tuned_node(const NodeShape& shape, int ranks);

// What a protocol costs a collective's transfers, as NCCL's model counts it for (algorithm,
// protocol) on this node: the base latency, paid once per collective (launch, setup), and one
// step's latency inside a node and between nodes (µs), each paid by every chunk at every hop.
struct ProtocolCosts {
  double base_us = 0, intra_step_us = 0, inter_step_us = 0;
};
ProtocolCosts protocol_costs(const TuningInput& in, TunedAlgo a, Protocol p, Collective coll);

// The algorithm and protocol a collective runs (workload.algorithm / workload.protocol, auto:
// NCCL's choice among what rdmalab runs). model_protocols: the backend models time, so LL and
// LL128 have their effect; elsewhere the chunks move as they are (Simple) and only Simple is
// chosen from.
struct CollectiveChoice {
  Algorithm algo = Algorithm::ring;
  Protocol proto = Protocol::simple;
  TuningInput input;
  std::vector<TuningCandidate> table;  // NCCL's candidates for the size (empty: not tuned)
  std::string nccl;                    // what NCCL's model itself would pick ("Ring/LL128"), if tuned
  ProtocolCosts costs;
};
CollectiveChoice choose_collective(Collective c, std::uint64_t bytes, int ranks, const NodeShape& shape, bool model_protocols,
                                   std::optional<Algorithm> algo, std::optional<Protocol> proto);
// `plan` as it runs with the choice's protocol: the protocol's chunk, for Simple at least
// `min_chunk` (or `chunk` when not 0: workload.chunk), and where the backend models time
// (`modelled`) its framing and step latencies.
Plan with_protocol(Plan plan, const CollectiveChoice& choice, std::uint64_t chunk, std::size_t elem, bool modelled, std::uint64_t min_chunk = 0);

// The smallest chunk a simulation runs a buffer of `bytes` with: a buffer moves in at most
// kSimulatedChunksPerBuffer chunks, so that a collective's simulated events grow with the rank
// count and not with the size (a 16 GiB all-reduce in 4 MiB chunks instead of NCCL's 512 KiB
// steps). It applies to Simple, the protocol of large sizes; below 2 GiB it is under Simple's
// step and changes nothing. What it costs: a step's chunks pipeline in fewer, larger pieces
// (docs/collectives.md, "Sizes up to 16 GiB").
inline constexpr std::uint64_t kSimulatedChunksPerBuffer = 4096;
std::uint64_t simulated_chunk_floor(std::uint64_t bytes, std::size_t elem);

// One collective as it runs, for the collectives and for the training steps' all-reduces: the
// algorithm and protocol (choose_collective), its channels (`channels`, or auto_channels for the
// node shape; 1 for algorithms that do not use them) and the plan with its protocol.
struct TunedPlan {
  CollectiveChoice choice;
  int channels = 1;
  Plan plan;
};
struct TunedRequest {
  Collective coll = Collective::all_reduce;
  int rank = 0, ranks = 1, root = 0;
  std::uint64_t count = 0;  // elements
  std::size_t elem = 4;
  bool in_place = false;
  std::optional<Algorithm> algo;  // none: NCCL's choice
  std::optional<Protocol> proto;  // none: NCCL's choice
  std::optional<int> channels;    // none: auto_channels
  std::uint64_t chunk = 0;        // 0: the protocol's
  bool modelled = false;          // the backend models time (NodeShape::protocol_costs)
  std::uint64_t min_chunk = 0;    // the protocol's chunk grows to at least this (simulated_chunk_floor)
};
TunedPlan tuned_plan(const TunedRequest& r, const NodeShape& shape);

// workload.channels: "auto" (none) or a count 1..64 (NCCL's MAXCHANNELS); nullopt with ok = false
// when neither.
std::optional<int> parse_channels(const std::string& s, bool& ok);

// The NCCL algorithm an rdmalab algorithm is (ring and chain: Ring, tree: Tree, nvls: NVLS,
// nvls_tree: NVLSTree); the others are not NCCL's and are costed as rings.
TunedAlgo tuned_algo_of(Algorithm a) noexcept;

// NVLSTree's kernel: the bus bandwidth one channel moves at most (NCCL's perChMaxNVLSTreeBws,
// GB/s; 0 before Hopper), and what that is of a head's own shard per second on `ranks` ranks
// (bytes/s: busbw × ranks / (2 (ranks − 1)), as NCCL converts bus to algorithm bandwidth).
double nvls_tree_channel_busbw(GpuGeneration g, int nodes) noexcept;

// The chunk NCCL moves NVLS and NVLSTree in (src/enqueue.cc, computeCollChunkInfo; src/transport/
// nvls.cc): NCCL_NVLS_CHUNKSIZE (128 KiB), for NVLSTree at most NVLSTREE_MAX_CHUNKSIZE (64 KiB from
// 4 nodes), then smaller for sizes that would not keep its concurrent operations (the NVLS
// channels, 16 on Hopper and 24 or 32 on Blackwell, times the heads) busy: down to 16 KiB (NVLS)
// or 32 KiB (NVLSTree).
std::uint64_t nvls_chunk_bytes(bool tree, std::uint64_t bytes, int nodes, int heads, GpuGeneration g) noexcept;
double nvls_tree_head_bytes_per_s(GpuGeneration g, int nodes, int ranks) noexcept;

}  // namespace rdmalab::workloads
