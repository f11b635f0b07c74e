// NCCL's tuning model, restated from NCCL 2.30's src/graph/tuning.cc (ncclTopoTuneModel,
// ncclTopoGetAlgoTime and the default tuner constants) and src/enqueue.cc (topoGetAlgoInfo).
// Each constant below is NCCL's, under NCCL's own name; docs/collectives.md explains the model.
#include "rdmalab/workloads/tuning.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rdmalab::workloads {
namespace {

constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kNvlink = 0, kPci = 1, kNet = 2;  // NCCL_HW_NVLINK, NCCL_HW_PCI, NCCL_HW_NET

int idx(TunedAlgo a) { return static_cast<int>(a); }
int idx(Protocol p) { return p == Protocol::ll ? kLL : p == Protocol::ll128 ? kLL128 : kSimple; }
int idx(GpuGeneration g) { return static_cast<int>(g); }

// baseLatencies [algorithm][LL, LL128, Simple], µs.
constexpr double kBaseLat[kTunedAlgos][3] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4},  // Tree, Ring
    {0, 0, 0},        {0, 0, 0},         // CollNet Direct, Chain
    {0, 0, 0},        {0, 0, 0},         // NVLS, NVLS Tree
    {8.0, 8.0, 8.0}};                    // PAT
// hwLatencies [NVLink, PCI, Net][algorithm][LL, LL128, Simple], µs: one step's latency.
constexpr double kHwLat[3][kTunedAlgos][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};
// llMaxBws [Volta, Ampere, Hopper, Blackwell on one node; or Intel (0) / AMD (1) CPUs across
// nodes][1 node, 2 nodes, more], GB/s.
constexpr double kLlMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
// perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws, perChMaxNVLSTreeBws [generation][nodes], GB/s.
constexpr double kRingLL128Bw[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
constexpr double kTreeLL128Bw[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kTreeBw[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kNvlsTreeBw[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
// nvlsEfficiency per generation (no NVLS before Hopper).
constexpr double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};
// treeCorrectionFactor [protocol][log2(bytes / 64)], for tree all-reduces of 64 B to 256 MiB.
constexpr double kTreeCorrection[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

int log2i(std::uint64_t n) {  // floor(log2 n); -1 for 0
  int l = -1;
  while (n) {
    n >>= 1;
    ++l;
  }
  return l;
}

const TuningGraph& graph_of(const TuningInput& in, TunedAlgo a) {
  return a == TunedAlgo::nvls || a == TunedAlgo::nvls_tree ? in.nvls
         : a == TunedAlgo::tree                             ? in.tree
         : a == TunedAlgo::collnet_direct                   ? in.collnet_direct
                                                            : in.ring;
}

}  // namespace

const char* protocol_name(Protocol p) noexcept {
  switch (p) {
    case Protocol::ll: return "LL";
    case Protocol::ll128: return "LL128";
    case Protocol::simple: return "Simple";
  }
  return "?";
}

double protocol_wire_factor(Protocol p) noexcept {
  switch (p) {
    case Protocol::ll: return 2.0;
    case Protocol::ll128: return 16.0 / 15.0;
    case Protocol::simple: return 1.0;
  }
  return 1.0;
}

std::optional<Protocol> parse_protocol(const std::string& s) {
  if (s == "ll") return Protocol::ll;
  if (s == "ll128") return Protocol::ll128;
  if (s == "simple") return Protocol::simple;
  return std::nullopt;  // auto
}

TunedPlan tuned_plan(const TunedRequest& r, const NodeShape& shape) {
  TunedPlan t;
  t.choice = choose_collective(r.coll, r.count * r.elem, r.ranks, shape, r.modelled, r.algo, r.proto);
  CollectiveArgs a{r.coll, t.choice.algo, r.rank, r.ranks, r.root, r.count, r.elem, r.in_place};
  a.ranks_per_node = shape.ranks_per_node;
  a.channels = uses_channels(r.coll, t.choice.algo) ? (r.channels ? *r.channels : auto_channels(r.ranks, shape.ranks_per_node, shape.nics)) : 1;
  t.channels = a.channels;
  t.plan = with_protocol(build_plan(a), t.choice, r.chunk, r.elem, r.modelled, r.min_chunk);
  return t;
}

std::optional<int> parse_channels(const std::string& s, bool& ok) {
  ok = true;
  if (s == "auto") return std::nullopt;
  int n = 0;
  for (char c : s) {
    if (c < '0' || c > '9' || n > 64) {
      ok = false;
      return std::nullopt;
    }
    n = n * 10 + (c - '0');
  }
  ok = !s.empty() && n >= 1 && n <= 64;
  return n;
}

Plan with_protocol(Plan plan, const CollectiveChoice& choice, std::uint64_t chunk, std::size_t elem, bool modelled, std::uint64_t min_chunk) {
  // Only Simple's chunk grows: LL's and LL128's short steps are their mechanism (a step's latency
  // that the steps in flight do not quite cover), and NCCL picks them for small sizes anyway.
  const std::uint64_t floor = choice.proto == Protocol::simple ? min_chunk : 0;
  const std::uint64_t step = chunk ? chunk : std::max(protocol_step_bytes(choice.proto), floor);
  plan.chunk = std::max<std::uint64_t>(step / elem * elem, elem);
  if (modelled) {
    plan.wire_factor = protocol_wire_factor(choice.proto);
    plan.step_latency_intra = choice.costs.intra_step_us * 1e-6;
    plan.step_latency_inter = choice.costs.inter_step_us * 1e-6;
  }
  return plan;
}

std::uint64_t simulated_chunk_floor(std::uint64_t bytes, std::size_t elem) {
  const std::uint64_t e = std::max<std::size_t>(elem, 1);
  const std::uint64_t c = (bytes + kSimulatedChunksPerBuffer - 1) / kSimulatedChunksPerBuffer;
  return (c + e - 1) / e * e;
}

std::uint64_t protocol_step_bytes(Protocol p) noexcept {
  switch (p) {
    case Protocol::ll: return 512ull * 8 * 16 / 2;        // 32 KiB
    case Protocol::ll128: return 640ull * 120 * 8 * 15 / 16;  // 576000 B
    case Protocol::simple: return 4ull * 1024 * 1024 / 8;   // 512 KiB
  }
  return 512 * 1024;
}

const char* gpu_generation_name(GpuGeneration g) noexcept {
  switch (g) {
    case GpuGeneration::volta: return "volta";
    case GpuGeneration::ampere: return "ampere";
    case GpuGeneration::hopper: return "hopper";
    case GpuGeneration::blackwell: return "blackwell";
  }
  return "?";
}

const char* tuned_algo_name(TunedAlgo a) noexcept {
  switch (a) {
    case TunedAlgo::tree: return "Tree";
    case TunedAlgo::ring: return "Ring";
    case TunedAlgo::collnet_direct: return "CollNetDirect";
    case TunedAlgo::collnet_chain: return "CollNetChain";
    case TunedAlgo::nvls: return "NVLS";
    case TunedAlgo::nvls_tree: return "NVLSTree";
    case TunedAlgo::pat: return "PAT";
  }
  return "?";
}

bool is_tuned(Collective c) noexcept { return c != Collective::all_to_all && c != Collective::sendrecv; }

std::vector<TuningCandidate> tuning_table(const TuningInput& in, Collective coll, std::uint64_t bytes) {
  std::vector<TuningCandidate> out;
  if (!is_tuned(coll) || in.ranks <= 1 || in.nodes < 1) return out;
  const int n = in.ranks, nodes = in.nodes;
  const bool ar = coll == Collective::all_reduce, ag_rs = coll == Collective::all_gather || coll == Collective::reduce_scatter;
  const bool bcast_reduce = coll == Collective::broadcast || coll == Collective::reduce;
  const int nsteps = ar ? 2 * (n - 1) : ag_rs ? n - 1 : n;
  const int gen = idx(in.gen);
  const int i2 = nodes <= 2 ? nodes - 1 : 2;
  const int i1 = nodes == 1 ? gen : (in.amd_cpu ? 1 : 0);
  const double ll_max_bw = kLlMaxBw[i1][i2];
  const double ppn = static_cast<double>(n) / nodes;
  const int ppn_int = n / nodes;

  for (int ai = 0; ai < kTunedAlgos; ++ai) {
    const auto a = static_cast<TunedAlgo>(ai);
    if (bcast_reduce && a != TunedAlgo::ring) continue;
    if (ag_rs && a != TunedAlgo::pat && a != TunedAlgo::ring && a != TunedAlgo::nvls && a != TunedAlgo::collnet_direct) continue;
    if (ar && a == TunedAlgo::pat) continue;
    const TuningGraph& g = graph_of(in, a);
    const int intra_hw = g.nvlink ? kNvlink : kPci;
    const int hw = nodes == 1 ? intra_hw : kNet;
    for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple}) {
      const int pi = idx(p);
      if ((a == TunedAlgo::nvls || a == TunedAlgo::nvls_tree) && p != Protocol::simple) continue;
      TuningCandidate c;
      c.algo = a;
      c.proto = p;
      c.enabled = true;
      auto disable = [&](std::string why) {
        if (c.enabled) c.why = std::move(why);
        c.enabled = false;
      };
      if (a == TunedAlgo::pat) {
        if (p != Protocol::simple) continue;  // PAT runs Simple only
        if (nodes != n) continue;             // PAT only with one GPU per node (ncclPatEnable)
        disable("PAT (NCCL 2.23+) is not among rdmalab's algorithms");
      }
      const bool collnet = a == TunedAlgo::collnet_direct || a == TunedAlgo::collnet_chain;
      double bw = nodes <= 2 || collnet ? g.bw_intra : g.bw_inter;
      if (a == TunedAlgo::nvls || a == TunedAlgo::nvls_tree) {
        if (g.channels < 2) {
          bw = 0;
        } else {
          double intra = g.bw_intra * kNvlsEfficiency[gen] * (g.channels - 1) / g.channels;
          intra *= ar ? 2.0 : (ppn - 1) / ppn;  // an all-reduce pipelines two operations
          const double inter = g.bw_inter * (nodes <= 2 && a == TunedAlgo::nvls_tree ? 2 : 1);
          bw = std::min({intra, inter, a == TunedAlgo::nvls_tree ? kNvlsTreeBw[gen][i2] : std::numeric_limits<double>::max()});
        }
      }
      double bus = g.channels * bw;
      if (a == TunedAlgo::ring && p == Protocol::ll) bus = std::min(ll_max_bw, bus * .5);
      if (a == TunedAlgo::ring && p == Protocol::ll128) bus = std::min(bus * 0.92, g.channels * kRingLL128Bw[gen][i2]);
      if (a == TunedAlgo::tree && ar) bus = std::min(bus * .92, g.channels * kTreeBw[gen][i2]);
      if (a == TunedAlgo::tree && p == Protocol::ll) bus = std::min(bus * 1.0 / 3.8, ll_max_bw);
      if (a == TunedAlgo::tree && p == Protocol::ll128)
        bus = std::min(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), g.channels * kTreeLL128Bw[gen][i2]);
      if (a == TunedAlgo::pat) bus *= .75;
      if (collnet && p != Protocol::simple) bus = 0;
      if (a == TunedAlgo::collnet_direct && p == Protocol::simple && ar) {
        // CollNet Direct needs every GPU to have a NIC of its own for full speed: the GPU/NIC ratio.
        double factor = ppn / g.channels;
        factor -= (factor - 1) / 2;
        bus /= factor;
        if (in.gen != GpuGeneration::volta && in.gen != GpuGeneration::ampere) bus *= .85;  // minCompCap >= 90
      }
      // Bus bandwidth to algorithm bandwidth.
      if (!(a != TunedAlgo::ring && ag_rs)) {
        const double ratio = a == TunedAlgo::ring || a == TunedAlgo::nvls || a == TunedAlgo::nvls_tree ? static_cast<double>(n) / nsteps : .5;
        bus *= ratio;
      }
      c.bw = bus;
      double lat = kBaseLat[ai][pi];
      double intra_lat = kHwLat[intra_hw][ai][pi];
      double inter_lat = (ppn_int == 1 && ppn == 1 ? kHwLat[kNet][idx(TunedAlgo::tree)][pi] : kHwLat[kNet][ai][pi]) + g.latency_inter;
      if (p == Protocol::simple) inter_lat += g.latency_inter;  // the flush
      if (a == TunedAlgo::ring) {
        if (bcast_reduce) {
          lat += kHwLat[hw][ai][pi];  // the graph's channels are the same (sameChannels)
        } else {
          double net_overhead = 0;
          if (nodes > 1) net_overhead = (in.amd_cpu ? 2.0 : 1.0) * (p == Protocol::simple ? 3 : 1);
          intra_lat = std::max(intra_lat, net_overhead);
          const int inter_steps = nodes == 1 ? 0 : ar ? 2 * (nodes - 1) : nodes - 1;
          lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
        }
      } else if (a == TunedAlgo::tree) {
        if (ar) lat += 2 * ((ppn_int - 1) * intra_lat + log2i(static_cast<std::uint64_t>(nodes)) * inter_lat);
      } else if (a == TunedAlgo::collnet_direct) {
        lat += 2 * (std::min(1, ppn_int - 1) * intra_lat + (ppn_int - 1) * 0.4) + inter_lat;  // 0.4 µs: arity serialization
      } else if (a == TunedAlgo::collnet_chain) {
        lat += 2 * (ppn_int - 1) * intra_lat + inter_lat;
      } else if (a == TunedAlgo::nvls) {
        lat = intra_lat;
        if (nodes > 1) lat += inter_lat;
      } else if (a == TunedAlgo::nvls_tree) {
        lat += intra_lat + 2 * log2i(static_cast<std::uint64_t>(nodes)) * inter_lat;
      } else if (a == TunedAlgo::pat) {
        lat += log2i(static_cast<std::uint64_t>(nodes)) * (inter_lat / 3.5) + n * 2.8;
      }
      c.latency_us = lat;
      // Which NCCL would not consider.
      if (collnet && !in.collnet) disable("CollNet needs a network whose switches reduce (collnetEnable; fabric.sharp.tiers)");
      if (a == TunedAlgo::collnet_chain && in.collnet) disable("CollNet Chain is not among rdmalab's algorithms (collnet runs CollNet Direct)");
      if (a == TunedAlgo::collnet_direct && in.collnet && !g.nvlink) disable("CollNet Direct needs an NVSwitch system (NVLink between the GPUs)");
      if (a == TunedAlgo::collnet_direct && in.collnet && !ar) disable("CollNet Direct runs all_reduce only here (all_gather and reduce_scatter need the plugin's)");
      if (a == TunedAlgo::nvls_tree && nodes == 1) disable("NVLSTree is for several nodes");
      if (a == TunedAlgo::nvls && nodes > 1 && !in.collnet) disable("NVLS across nodes needs CollNet (a network whose switches reduce)");
      if (a == TunedAlgo::nvls && nodes > 1 && !ar) disable("NVLS across nodes runs all_reduce only here");
      if ((a == TunedAlgo::nvls || a == TunedAlgo::nvls_tree) && !in.nvls_support)
        disable("no NVLink SHARP here (an NVSwitch that reduces, Hopper or later)");
      if (p == Protocol::ll128 && !g.nvlink && ppn > 1) disable("LL128 needs NVLink between the GPUs of a node (typeIntra <= NVB)");
      if (c.bw <= 0) disable("no bandwidth in the model");
      if (c.enabled) {
        double b = c.bw;
        const int log_size = log2i(bytes >> 6);
        if (a == TunedAlgo::tree && ar && log_size >= 0 && log_size < 23) b *= kTreeCorrection[pi][log_size];
        if (a == TunedAlgo::nvls_tree && ar && log_size >= 0 && log_size < 24 && in.gen == GpuGeneration::blackwell)
          b *= kTreeCorrection[pi][log_size];
        double l = lat;
        if (a == TunedAlgo::ring && p == Protocol::simple && nodes > 1 && ar &&
            bytes / (static_cast<std::uint64_t>(in.ring.channels) * static_cast<std::uint64_t>(n)) >= 64)
          l *= in.gen == GpuGeneration::volta ? 1.9 : 1.4;  // the ring's plateau
        c.time_us = l + static_cast<double>(bytes) / (1000 * b);
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

const TuningCandidate* tuning_choice(const std::vector<TuningCandidate>& table) {
  const TuningCandidate* best = nullptr;
  for (const auto& c : table)
    if (c.enabled && c.time_us >= 0 && (!best || c.time_us < best->time_us)) best = &c;
  return best;
}

TuningInput graph_for(const TunedNode& node) {
  TuningInput in;
  const int rpn = node.ranks_per_node >= 1 && node.ranks % node.ranks_per_node == 0 ? node.ranks_per_node : 1;
  in.ranks = node.ranks;
  in.nodes = std::max(1, node.ranks / rpn);
  in.gen = node.gen;
  in.amd_cpu = node.amd_cpu;
  in.nvls_support = node.nvls && rpn > 1;
  in.collnet = node.collnet && in.nodes > 1;
  const double intra = node.intra_bw / 1e9, nic = node.nic_bw / 1e9;  // GB/s, as NCCL counts
  // NCCL's search finds one ring per NVLink (NCCL's per-link rate, 20 GB/s and up) or per NIC,
  // and ncclTopoPostset doubles the channels, halving each one's share (at most MAXCHANNELS 32).
  TuningGraph g;
  g.nvlink = node.nvlink;
  if (in.nodes == 1) {
    const int found = node.nvlink ? std::max(1, static_cast<int>(intra / 20.0)) : 1;
    g.channels = std::min(32, 2 * found);
    g.bw_intra = g.bw_inter = intra / g.channels;
  } else {
    g.channels = std::min(32, 2 * std::max(1, node.nics));
    const double node_bw = rpn > 1 ? std::min(intra, node.nics * nic) : std::max(1, node.nics) * nic;
    g.bw_intra = g.bw_inter = node_bw / g.channels;
  }
  in.ring = g;
  in.tree = g;
  // CollNet Direct's graph (NCCL_TOPO_PATTERN_COLLNET_DIRECT): a channel per head, a GPU with a NIC
  // of its own, at the NIC's rate (NCCL's search takes the highest speed of its list a NIC carries;
  // the NIC's own rate here).
  in.collnet_direct = g;
  if (in.nodes > 1) {
    in.collnet_direct.channels = std::max(1, std::min(node.nics, rpn));
    in.collnet_direct.bw_intra = in.collnet_direct.bw_inter = std::min(nic, node.nvlink ? intra : nic);
  }
  // NVLS on one node (src/graph/search.cc): one channel per GPU ("pull evenly from all GPUs"), at
  // the highest speed of NCCL's list whose channels fit the GPU's NVLink (raised by ranks/(ranks-1)
  // for patterns other than the ring); the second pass then raises bwInter one speed.
  if (in.nvls_support && in.nodes > 1) {
    // Across nodes (NVLSTree's graph): one channel per head, a GPU with its own NIC ("NVLS search
    // only tries to find NIC:GPU combinations to compute the heads"), at the highest speed of the
    // inter-node list a NIC's path carries (NCCL's maxBw: the NIC, or the PCIe link before it);
    // pass 2 then raises bwInter while it is below twice bwIntra and a NIC still carries it.
    static constexpr double kSm90Inter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12};
    static constexpr double kSm100Inter[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                             20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
    const bool bw = node.gen == GpuGeneration::blackwell;
    const double* speeds = bw ? kSm100Inter : kSm90Inter;
    const int n = bw ? 20 : 17;
    const int heads = std::max(1, std::min(node.nics, rpn));
    int i = 0;
    while (i < n - 1 && (speeds[i] > nic || speeds[i] > intra)) ++i;
    int j = i;
    while (j > 0 && speeds[j] < 2 * speeds[i] && speeds[j - 1] <= nic) --j;
    in.nvls.nvlink = true;
    in.nvls.channels = heads;
    in.nvls.bw_intra = speeds[i];
    in.nvls.bw_inter = speeds[j];
  } else if (in.nvls_support) {
    static constexpr double kSm90[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
    static constexpr double kSm100[] = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
    const bool bw = node.gen == GpuGeneration::blackwell;
    const double* speeds = bw ? kSm100 : kSm90;
    const int n = bw ? 12 : 11;
    int i = 0;
    while (i < n - 1 && speeds[i] * rpn > intra * rpn / (rpn - 1)) ++i;
    in.nvls.nvlink = true;
    in.nvls.channels = std::min(32, rpn);
    in.nvls.bw_intra = speeds[i];
    in.nvls.bw_inter = i > 0 && speeds[i - 1] < 2 * speeds[i] ? speeds[i - 1] : speeds[i];
  }
  return in;
}

TunedNode tuned_node(const NodeShape& shape, int ranks) {
  TunedNode n;
  n.ranks = ranks;
  n.ranks_per_node = shape.ranks_per_node;
  n.nics = shape.nics;
  n.nic_bw = shape.nic_bw;
  n.intra_bw = shape.intra_bw > 0 ? shape.intra_bw : shape.nic_bw;
  n.nvlink = shape.nvlink;
  n.gen = shape.gpu;
  n.amd_cpu = shape.amd_cpu;
  n.nvls = shape.nvls;
  n.collnet = shape.collnet;
  return n;
}

TunedAlgo tuned_algo_of(Algorithm a) noexcept {
  return a == Algorithm::tree        ? TunedAlgo::tree
         : a == Algorithm::collnet   ? TunedAlgo::collnet_direct
         : a == Algorithm::nvls      ? TunedAlgo::nvls
         : a == Algorithm::nvls_tree ? TunedAlgo::nvls_tree
                                     : TunedAlgo::ring;
}

double nvls_tree_channel_busbw(GpuGeneration g, int nodes) noexcept {
  return kNvlsTreeBw[idx(g)][nodes <= 2 ? std::max(0, nodes - 1) : 2];
}

std::uint64_t nvls_chunk_bytes(bool tree, std::uint64_t bytes, int nodes, int heads, GpuGeneration g) noexcept {
  const std::uint64_t channels = g == GpuGeneration::blackwell ? (nodes > 1 ? 32 : 24) : 16;  // NVLS_NCHANNELS_SM90 / SM100(_NVL)
  const std::uint64_t ops = channels * static_cast<std::uint64_t>(std::max(1, heads));
  std::uint64_t chunk = 128 * 1024;  // NCCL_NVLS_CHUNKSIZE
  if (tree) {
    if (nodes >= 4) chunk = 64 * 1024;  // NVLSTREE_MAX_CHUNKSIZE's default from 4 nodes
    if (bytes < 4 * ops * chunk && chunk > 65536) chunk = 65536;
    if (bytes < 1 * ops * chunk && chunk > 32768) chunk = 32768;
  } else {
    if (bytes < 64 * ops * chunk && chunk > 65536) chunk = 65536;
    if (bytes < 8 * ops * chunk && chunk > 32768) chunk = 32768;
    if (bytes < 2 * ops * chunk && chunk > 16384) chunk = 16384;
  }
  return chunk;
}

double nvls_tree_head_bytes_per_s(GpuGeneration g, int nodes, int ranks) noexcept {
  if (ranks < 2) return 0;
  return nvls_tree_channel_busbw(g, nodes) * 1e9 * ranks / (2.0 * (ranks - 1));
}

double nvls_wire_factor(GpuGeneration g) noexcept {
  const double e = kNvlsEfficiency[idx(g)];
  return e > 0 ? 1.0 / e : 1.0;
}

ProtocolCosts protocol_costs(const TuningInput& in, TunedAlgo a, Protocol p, Collective coll) {
  ProtocolCosts c;
  const int ai = idx(a), pi = idx(p);
  const TuningGraph& g = graph_of(in, a);
  const int nodes = std::max(1, in.nodes);
  const bool single_gpu_nodes = in.ranks == nodes;
  c.base_us = kBaseLat[ai][pi];  // 0 for NVLS: its latency is the one intra-node step below
  c.intra_step_us = kHwLat[g.nvlink ? kNvlink : kPci][ai][pi];
  c.inter_step_us = (single_gpu_nodes ? kHwLat[kNet][idx(TunedAlgo::tree)][pi] : kHwLat[kNet][ai][pi]) + g.latency_inter +
                    (p == Protocol::simple ? g.latency_inter : 0);
  const bool bcast_reduce = coll == Collective::broadcast || coll == Collective::reduce;
  if (a == TunedAlgo::ring && nodes > 1 && !bcast_reduce)
    c.intra_step_us = std::max(c.intra_step_us, (in.amd_cpu ? 2.0 : 1.0) * (p == Protocol::simple ? 3 : 1));
  return c;
}

CollectiveChoice choose_collective(Collective coll, std::uint64_t bytes, int ranks, const NodeShape& shape, bool model_protocols,
                                   std::optional<Algorithm> algo, std::optional<Protocol> proto) {
  CollectiveChoice ch;
  ch.input = graph_for(tuned_node(shape, ranks));
  if (is_tuned(coll)) ch.table = tuning_table(ch.input, coll, bytes);
  if (const TuningCandidate* nccl = tuning_choice(ch.table))
    ch.nccl = std::string(tuned_algo_name(nccl->algo)) + "/" + protocol_name(nccl->proto);
  // The algorithms rdmalab runs that NCCL's model costs: Ring (ring; chain for broadcast and
  // reduce) and Tree (all_reduce's double binary tree).
  auto ours = [&](TunedAlgo a) -> std::optional<Algorithm> {
    if (a == TunedAlgo::ring) return coll == Collective::broadcast || coll == Collective::reduce ? Algorithm::chain : Algorithm::ring;
    if (a == TunedAlgo::tree && coll == Collective::all_reduce) return Algorithm::tree;
    if (a == TunedAlgo::nvls && coll != Collective::broadcast && coll != Collective::reduce) return Algorithm::nvls;
    if (a == TunedAlgo::nvls_tree && coll == Collective::all_reduce) return Algorithm::nvls_tree;
    if (a == TunedAlgo::collnet_direct && coll == Collective::all_reduce) return Algorithm::collnet;
    return std::nullopt;
  };
  const TuningCandidate* best = nullptr;
  for (const auto& c : ch.table) {
    const auto mine = ours(c.algo);
    if (!c.enabled || !mine || (algo && *mine != *algo)) continue;
    if (proto ? c.proto != *proto : !model_protocols && c.proto != Protocol::simple) continue;
    if (!best || c.time_us < best->time_us) best = &c;
  }
  if (best) {
    ch.algo = *ours(best->algo);
    ch.proto = best->proto;
  } else {
    ch.algo = algo ? *algo : default_algorithm(coll, bytes, ranks);
    ch.proto = proto ? *proto : Protocol::simple;
  }
  if (!model_protocols) ch.proto = Protocol::simple;
  ch.costs = protocol_costs(ch.input, tuned_algo_of(ch.algo), ch.proto, coll);
  return ch;
}

}  // namespace rdmalab::workloads
