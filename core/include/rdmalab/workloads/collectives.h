// NCCL-style collectives, written once against the transport contract, and the plans they run.
//
// A collective is compiled, per rank, into a Plan: the transfers this rank sends and receives,
// in order, with the dependencies between them. One engine (collectives.cc) runs every plan:
// each transfer is cut into chunks that travel as RDMA writes with immediate into the
// receiver's staging slots, with credits for flow control (NCCL's "simple" protocol). A chunk
// that depends on a received chunk leaves as soon as that one has been reduced or copied, so
// the steps of a ring pipeline as in NCCL. docs/collectives.md describes the algorithms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rdmalab/reduce.h"
#include "rdmalab/workload.h"

namespace rdmalab::workloads {

void register_collectives(WorkloadRegistry& registry);

enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, sendrecv };
// nvls: NVLink SHARP, the node's NVSwitch reduces (Device::switch_collective; one node, SimGrid).
// nvls_tree: NCCL's NVLSTree (all_reduce across nodes): NVLS inside each node, NCCL's double
// binary tree between the nodes' heads (the GPUs with a NIC; SimGrid).
// collnet: NCCL's CollNet Direct (all_reduce across nodes whose network's switches reduce,
// InfiniBand SHARP): in each node the GPUs send each head (a GPU with a NIC) its share over
// NVLink, the heads reduce it and send it up their rails' SHARP trees, and give the total back
// to the node's GPUs (SimGrid).
enum class Algorithm { ring, tree, rhd, chain, binomial, pairwise, nvls, nvls_tree, collnet };
// The algorithm runs on switches that move the data (Device::switch_collective), not on a plan's
// transfers: nvls, nvls_tree, collnet.
bool switched(Algorithm a) noexcept;
const char* collective_name(Collective c) noexcept;
const char* algorithm_name(Algorithm a) noexcept;

// A place in one of a rank's buffers: the collective's input, its output, or scratch space.
enum class Buf : std::uint8_t { in, out, scratch };
struct Ref {
  Buf buf = Buf::in;
  std::uint64_t off = 0;  // bytes
};

struct SendOp {
  int peer = 0;
  int chan = 0;
  Ref src;
  std::uint64_t len = 0;  // bytes
  int dep = -1;           // index into Plan::recvs this send waits for, or -1
  bool chunkwise = false; // wait only for the same chunk of `dep` (pipelining), not all of it
  bool serial = false;    // start only once the previous send of this channel has completed
};

struct RecvOp {
  int peer = 0;
  int chan = 0;
  Ref dst;
  std::uint64_t len = 0;
  bool reduce = false;  // dst = operand op incoming; else dst = incoming
  Ref operand;
  int after = -1;  // index into Plan::recvs that must be processed first, or -1
  bool after_whole = false;  // all of `after` first; else only its same chunk (pipelining)
};

struct LocalCopy {
  Ref dst, src;
  std::uint64_t len = 0;
};

struct Plan {
  std::vector<LocalCopy> pre;  // before any transfer
  std::vector<SendOp> sends;   // issued in this order, per (peer, channel)
  std::vector<RecvOp> recvs;   // processed in this order, per (peer, channel)
  std::uint64_t in_bytes = 0, out_bytes = 0, scratch_bytes = 0;  // buffer sizes this plan needs
  // The protocol it runs with (NCCL's LL, LL128, Simple; tuning.h): bytes per chunk (0: the
  // engine's), and, where the backend models time, wire bytes per data byte and a step's latency
  // (seconds) to a peer on the same node and on another: each data chunk reaches its peer no
  // sooner than that after it is posted (SendWr::model_min_latency_s).
  std::uint64_t chunk = 0;
  double wire_factor = 1, step_latency_intra = 0, step_latency_inter = 0;
  std::string label;  // its name in a --trace timeline ("all_reduce 1 MiB, ring"); empty: the engine's `what`
};

struct CollectiveArgs {
  Collective coll = Collective::all_reduce;
  Algorithm algo = Algorithm::ring;
  int rank = 0;
  int ranks = 1;
  int root = 0;
  std::uint64_t count = 0;  // elements, as nccl-tests counts them (see docs/collectives.md)
  std::size_t elem = 4;     // bytes per element
  bool in_place = false;
  // NCCL's channels: the ring algorithms split the data over `channels` rings, each with its own
  // order and connections (SendOp::chan / RecvOp::chan = the channel). With several ranks per
  // node (packed: node n holds ranks n*ranks_per_node ..), channel c's ring enters every node at
  // its local rank c and leaves it from local rank c-1, so the channels' rings cross between
  // nodes on different GPUs and therefore through different NICs (ring_order).
  int channels = 1;
  int ranks_per_node = 1;
};

// The ring of channel `channel`: ranks in the order the data flows. Nodes in order; inside node
// n the ranks n*G + (channel + k) mod G for k = 0..G-1 (G = ranks_per_node). A rank count that is
// not a multiple of G, or G = 1: ranks in order, whatever the channel.
std::vector<int> ring_order(int ranks, int ranks_per_node, int channel);

// The channels `workload.channels: auto` runs (docs/collectives.md): one ring per NIC of a node
// when the ranks span several nodes with several NICs each (NCCL's ring search finds one ring
// through each NIC), else one.
int auto_channels(int ranks, int ranks_per_node, int nics_per_node);

// This rank's plan. `count` must already be rounded as nccl-tests does (a multiple of ranks for
// all_gather, reduce_scatter and all_to_all).
Plan build_plan(const CollectiveArgs& a);

// Whether an algorithm's plan is split over CollectiveArgs::channels (the rings); the others
// run on their own fixed channels (the tree's two trees) whatever the count.
bool uses_channels(Collective c, Algorithm a);

// The algorithms a collective offers (the first is used when none is named), and the one NCCL
// would pick for a size: tree / halving-doubling for small all-reduces, ring for large ones.
std::vector<Algorithm> algorithms_for(Collective c);
Algorithm default_algorithm(Collective c, std::uint64_t bytes, int ranks);

// The two binary trees of NCCL's double binary tree, for tests: parent (-1 at the root) and
// children (up to two) of `rank` in tree 0 or 1.
struct TreeNode {
  int parent = -1;
  std::vector<int> children;
};
TreeNode btree_node(int rank, int ranks, int which);

// Element i of `rank`'s input (of `ranks`) when the result must be checked exactly: small
// integers chosen so that every partial result, in any order, is exactly representable in `t`
// (fp16 holds integers up to 2048, bf16 up to 256; integer sums wrap, exactly). `reduction`
// false: values for collectives that only move data.
double exact_input(DataType t, ReduceOp op, bool reduction, int ranks, int rank, std::uint64_t i, std::uint64_t seed);

// nccl-tests' bus bandwidth factor for a collective on n ranks.
double busbw_factor(Collective c, int ranks);

}  // namespace rdmalab::workloads
