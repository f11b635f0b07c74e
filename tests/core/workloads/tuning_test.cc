// NCCL's tuning model (core/src/workloads/tuning.cc) against NCCL's formulas worked by hand:
// each expected latency, bandwidth and time below is written out from NCCL 2.30's
// src/graph/tuning.cc (ncclTopoTuneModel, ncclTopoGetAlgoTime) with the constants it names, for
// the node the search would see (graph_for), and the choice is the fastest as topoGetAlgoInfo
// picks it. Seventeen (shape, size) pairs over seven node shapes and three collectives.
#include <gtest/gtest.h>

#include "rdmalab/workloads/tuning.h"

namespace rdmalab::workloads {
namespace {

const TuningCandidate& find(const std::vector<TuningCandidate>& t, TunedAlgo a, Protocol p) {
  for (const auto& c : t)
    if (c.algo == a && c.proto == p) return c;
  ADD_FAILURE() << "no candidate " << tuned_algo_name(a) << "/" << protocol_name(p);
  static TuningCandidate none;
  return none;
}

void expect_near_rel(double got, double want, const char* what) { EXPECT_NEAR(got, want, 1e-9 * std::max(1.0, want)) << what; }

struct Expect {
  TunedAlgo algo;
  Protocol proto;
  double lat, bw;  // µs, GB/s (algorithm bandwidth as NCCL stores it)
};

void check(const TuningInput& in, Collective coll, std::uint64_t bytes, const std::vector<Expect>& exp, TunedAlgo want_a,
           Protocol want_p) {
  const auto t = tuning_table(in, coll, bytes);
  for (const auto& e : exp) {
    const auto& c = find(t, e.algo, e.proto);
    SCOPED_TRACE(std::string(tuned_algo_name(e.algo)) + "/" + protocol_name(e.proto) + " at " + std::to_string(bytes) + " B");
    expect_near_rel(c.latency_us, e.lat, "latency");
    expect_near_rel(c.bw, e.bw, "bandwidth");
    EXPECT_TRUE(c.enabled) << c.why;
  }
  const TuningCandidate* best = tuning_choice(t);
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(best->algo, want_a) << bytes << " B: got " << tuned_algo_name(best->algo) << "/" << protocol_name(best->proto);
  EXPECT_EQ(best->proto, want_p) << bytes << " B: got " << tuned_algo_name(best->algo) << "/" << protocol_name(best->proto);
}

// One DGX H100-class node: 18 NVLink 4 links × NCCL's 20.6 GB/s = 370.8 GB/s per GPU.
TuningInput h100_node() {
  TunedNode n;
  n.ranks = 8;
  n.ranks_per_node = 8;
  n.nics = 8;
  n.intra_bw = 370.8e9;
  n.nic_bw = 50e9;
  n.nvlink = true;
  n.gen = GpuGeneration::hopper;
  return graph_for(n);
}

TEST(NcclTuning, TheGraphIsOneChannelPerNvlinkOrNicDoubled) {
  const auto in = h100_node();
  EXPECT_EQ(in.nodes, 1);
  EXPECT_EQ(in.ring.channels, 32);  // 18 links, doubled, capped at MAXCHANNELS
  EXPECT_NEAR(in.ring.bw_intra * in.ring.channels, 370.8, 1e-9);
  TunedNode two{16, 8, 8, 370.8e9, 50e9, true, GpuGeneration::hopper, false, false};
  const auto in2 = graph_for(two);
  EXPECT_EQ(in2.nodes, 2);
  EXPECT_EQ(in2.ring.channels, 16);                            // 8 NICs, doubled
  EXPECT_NEAR(in2.ring.bw_inter * 16, 370.8, 1e-9);            // min(NVLink 370.8, 8 × 50)
  TunedNode pcie{4, 4, 1, 24e9, 25e9, false, GpuGeneration::ampere, false, false};
  EXPECT_EQ(graph_for(pcie).ring.channels, 2);
}

// 8 ranks, one node, NVLink: ring nsteps = 14; tree intra hops 7.
TEST(NcclTuning, AllReduceOnOneH100Node) {
  const auto in = h100_node();
  // Ring LL: min(llMaxBw 141, 370.8 × .5) × 8/14; 6.6 + 14 × 0.6.  LL128: min(370.8 × .92, 32 × 36.7)
  // × 8/14; 14 + 14 × 1.9.  Simple: 370.8 × 8/14; 8.4 + 14 × 3.4.
  // Tree LL: min(370.8 × .92 / 3.8, 141) × .5; 6.8 + 2 × 7 × 0.6.  LL128: 370.8 × .92 × 7/9 × .5;
  // 14 + 2 × 7 × 1.25.  Simple: 370.8 × .92 × .5; 8.4 + 2 × 7 × 4.
  const std::vector<Expect> e = {
      {TunedAlgo::ring, Protocol::ll, 15.0, 141.0 * 8 / 14},
      {TunedAlgo::ring, Protocol::ll128, 40.6, 370.8 * .92 * 8 / 14},
      {TunedAlgo::ring, Protocol::simple, 56.0, 370.8 * 8 / 14},
      {TunedAlgo::tree, Protocol::ll, 15.2, 370.8 * .92 / 3.8 * .5},
      {TunedAlgo::tree, Protocol::ll128, 31.5, 370.8 * .92 * 7 / 9 * .5},
      {TunedAlgo::tree, Protocol::simple, 64.4, 370.8 * .92 * .5},
  };
  // 1 KiB: ring LL 15.013 µs; tree LL 15.2 + 1024 / (1000 × 44.89 × .9) = 15.225.
  check(in, Collective::all_reduce, 1024, e, TunedAlgo::ring, Protocol::ll);
  // 1 MiB: ring LL 15 + 13.01 = 28.0; tree LL128 31.5 + 1048576 / (132.66e3 × .6) = 44.7; ring LL128 46.0.
  check(in, Collective::all_reduce, 1 << 20, e, TunedAlgo::ring, Protocol::ll);
  // 16 MiB: ring LL128 40.6 + 86.1 = 126.7; ring Simple 56 + 79.2 = 135.2; ring LL 223.
  check(in, Collective::all_reduce, 16u << 20, e, TunedAlgo::ring, Protocol::ll128);
  // 1 GiB: ring Simple 56 + 5067.5; ring LL128 40.6 + 5508.
  check(in, Collective::all_reduce, 1u << 30, e, TunedAlgo::ring, Protocol::simple);
  const auto t = tuning_table(in, Collective::all_reduce, 1u << 30);
  const auto& s = find(t, TunedAlgo::ring, Protocol::simple);
  expect_near_rel(s.time_us, 56.0 + 1073741824.0 / (1000 * 370.8 * 8 / 14), "ring Simple time at 1 GiB");
  EXPECT_FALSE(find(t, TunedAlgo::nvls, Protocol::simple).enabled);  // no NVLink SHARP asked for
}

// 2 nodes × 8 H100, 8 NICs of 50 GB/s, Intel CPUs: n = 16, nsteps 30, 2 inter-node steps.
TEST(NcclTuning, AllReduceOnTwoH100Nodes) {
  TunedNode node{16, 8, 8, 370.8e9, 50e9, true, GpuGeneration::hopper, false, false};
  const auto in = graph_for(node);
  // llMaxBw: Intel, 2 nodes = 39.0. netOverhead: 1 µs (×3 for Simple).
  // Ring LL: min(39, 370.8 × .5) × 16/30; 6.6 + 28 × max(0.6, 1) + 2 × 2.7.
  // Ring LL128: min(370.8 × .92, 16 × 36.7) × 16/30; 14 + 28 × 1.9 + 2 × 4.0.
  // Ring Simple: 370.8 × 16/30; 8.4 + 28 × max(3.4, 3) + 2 × 14.
  // Tree (bw_intra: 2 nodes): LL min(370.8 × .92 / 3.8, 39) × .5; 6.8 + 2 × (7 × 0.6 + 1 × 5.0).
  // Tree LL128: min(370.8 × .92 × 120/128, 16 × 36.7) × .5; 14 + 2 × (7 × 1.25 + 8.5).
  // Tree Simple: 370.8 × .92 × .5; 8.4 + 2 × (7 × 4 + 14).
  const std::vector<Expect> e = {
      {TunedAlgo::ring, Protocol::ll, 40.0, 39.0 * 16 / 30},
      {TunedAlgo::ring, Protocol::ll128, 75.2, 370.8 * .92 * 16 / 30},
      {TunedAlgo::ring, Protocol::simple, 131.6, 370.8 * 16 / 30},
      {TunedAlgo::tree, Protocol::ll, 25.2, 39.0 * .5},
      {TunedAlgo::tree, Protocol::ll128, 48.5, 370.8 * .92 * 120 / 128 * .5},
      {TunedAlgo::tree, Protocol::simple, 92.4, 370.8 * .92 * .5},
  };
  // 8 KiB: tree LL 25.2 + 8192 / (19.5e3 × .7) = 25.8; ring LL 40.4.
  check(in, Collective::all_reduce, 8192, e, TunedAlgo::tree, Protocol::ll);
  // 1 MiB: tree LL128 48.5 + 1048576 / (159.9e3 × .6) = 59.4; ring LL128 80.96; tree LL 132.7.
  check(in, Collective::all_reduce, 1 << 20, e, TunedAlgo::tree, Protocol::ll128);
  // 256 MiB: ring Simple 131.6 × 1.4 (the plateau) + 1357.4 = 1541.6; ring LL128 75.2 + 1475.4.
  check(in, Collective::all_reduce, 256u << 20, e, TunedAlgo::ring, Protocol::simple);
  const auto t = tuning_table(in, Collective::all_reduce, 256u << 20);
  expect_near_rel(find(t, TunedAlgo::ring, Protocol::simple).time_us, 131.6 * 1.4 + 268435456.0 / (1000 * 370.8 * 16 / 30),
                  "the ring plateau");
}

// One A100 node (12 NVLink 3 links × 20 GB/s = 240 GB/s): 24 channels; llMaxBw (Ampere, 1 node) 87.7.
TEST(NcclTuning, AllReduceOnOneA100Node) {
  TunedNode node{8, 8, 8, 240e9, 25e9, true, GpuGeneration::ampere, true, false};
  const auto in = graph_for(node);
  EXPECT_EQ(in.ring.channels, 24);
  const std::vector<Expect> e = {
      {TunedAlgo::ring, Protocol::ll, 15.0, 87.7 * 8 / 14},
      {TunedAlgo::ring, Protocol::ll128, 40.6, 240 * .92 * 8 / 14},  // 24 × 20 caps nothing
      {TunedAlgo::ring, Protocol::simple, 56.0, 240.0 * 8 / 14},
      {TunedAlgo::tree, Protocol::ll128, 31.5, 240 * .92 * 7 / 9 * .5},
  };
  // 4 MiB: ring LL128 40.6 + 33.2 = 73.8; ring Simple 56 + 30.6 = 86.6; tree LL128 92.6; ring LL 98.7.
  check(in, Collective::all_reduce, 4u << 20, e, TunedAlgo::ring, Protocol::ll128);
  // 64 KiB: ring LL 15 + 1.31 = 16.3.
  check(in, Collective::all_reduce, 64u << 10, e, TunedAlgo::ring, Protocol::ll);
}

// Four GPUs over PCIe only (24 GB/s), Ampere: LL128 off (typeIntra above NVB); PCI latencies.
TEST(NcclTuning, AllReduceOverPcieOnly) {
  TunedNode node{4, 4, 1, 24e9, 25e9, false, GpuGeneration::ampere, false, false};
  const auto in = graph_for(node);
  const std::vector<Expect> e = {
      {TunedAlgo::ring, Protocol::ll, 12.6, 12.0 * 4 / 6},     // min(87.7, 24 × .5) × 4/6; 6.6 + 6 × 1.0
      {TunedAlgo::ring, Protocol::simple, 42.6, 24.0 * 4 / 6}, // 8.4 + 6 × 5.7
      {TunedAlgo::tree, Protocol::simple, 32.4, 24 * .92 * .5},  // 8.4 + 2 × 3 × 4.0
  };
  check(in, Collective::all_reduce, 64u << 10, e, TunedAlgo::ring, Protocol::ll);      // 20.8 against 42.3
  check(in, Collective::all_reduce, 4u << 20, e, TunedAlgo::ring, Protocol::simple);   // 304.7 against 536.9
  const auto t = tuning_table(in, Collective::all_reduce, 4u << 20);
  EXPECT_FALSE(find(t, TunedAlgo::ring, Protocol::ll128).enabled);
}

// One GPU per node on four nodes, one 200 Gb/s NIC each, AMD CPUs: every ring step crosses the
// network (the tree's network latency, as ppn = 1), llMaxBw (AMD, > 2 nodes) 19.0, netOverhead 2.
TEST(NcclTuning, AllReduceWithOneGpuPerNode) {
  TunedNode node{4, 1, 1, 0, 25e9, false, GpuGeneration::ampere, true, false};
  const auto in = graph_for(node);
  const std::vector<Expect> e = {
      {TunedAlgo::ring, Protocol::ll, 36.6, 12.5 * 4 / 6},        // min(19, 25 × .5); 6.6 + 6 × 5.0
      {TunedAlgo::ring, Protocol::simple, 92.4, 25.0 * 4 / 6},    // 8.4 + 6 × 14
      {TunedAlgo::tree, Protocol::ll, 26.8, 23.0 / 3.8 * .5},     // 25 × .92 = 23; 6.8 + 2 × 2 × 5.0
      {TunedAlgo::tree, Protocol::simple, 64.4, 23.0 * .5},       // 8.4 + 2 × 2 × 14
  };
  check(in, Collective::all_reduce, 4096, e, TunedAlgo::tree, Protocol::ll);            // 28.7 against ring LL 37.1
  check(in, Collective::all_reduce, 64u << 20, e, TunedAlgo::ring, Protocol::simple);   // 129.4 + 4026.5
}

// all_gather and broadcast on the H100 node: rings only (PAT needs one GPU per node).
TEST(NcclTuning, AllGatherAndBroadcastOnOneH100Node) {
  const auto in = h100_node();
  const std::vector<Expect> ag = {
      {TunedAlgo::ring, Protocol::ll, 10.8, 141.0 * 8 / 7},            // 6.6 + 7 × 0.6
      {TunedAlgo::ring, Protocol::ll128, 27.3, 370.8 * .92 * 8 / 7},   // 14 + 7 × 1.9
      {TunedAlgo::ring, Protocol::simple, 32.2, 370.8 * 8 / 7},        // 8.4 + 7 × 3.4
  };
  check(in, Collective::all_gather, 1 << 20, ag, TunedAlgo::ring, Protocol::ll);          // 17.3 against 30.0
  check(in, Collective::all_gather, 128u << 20, ag, TunedAlgo::ring, Protocol::simple);   // 348.9 against 371.6
  const std::vector<Expect> bc = {
      {TunedAlgo::ring, Protocol::ll, 7.2, 141.0},          // one hop's latency (sameChannels): 6.6 + 0.6; ratio 8/8
      {TunedAlgo::ring, Protocol::simple, 11.8, 370.8},     // 8.4 + 3.4
  };
  check(in, Collective::broadcast, 4096, bc, TunedAlgo::ring, Protocol::ll);
  for (const auto& c : tuning_table(in, Collective::broadcast, 4096)) EXPECT_EQ(c.algo, TunedAlgo::ring);
  EXPECT_TRUE(tuning_table(in, Collective::all_to_all, 4096).empty());
}

// The same H100 node whose NVSwitch reduces: NCCL's NVLS graph has 8 channels (one per GPU) at
// 50 GB/s (8 × 60 > 370.8 × 8/7 ≥ 8 × 50), bwInter raised to 60 by the second pass. NVLS:
// min(50 × .85 × 7/8 × 2, 60) = 60 per channel, 8 × 60 × 8/14 = 274.3 GB/s of algorithm bandwidth
// (busbw 480, what NCCL measures, nccl-tests #212), latency 25 µs (NVLink's NVLS step).
TEST(NcclTuning, NvlsOnOneH100Node) {
  TunedNode node{8, 8, 8, 370.8e9, 50e9, true, GpuGeneration::hopper, false, true};
  const auto in = graph_for(node);
  EXPECT_EQ(in.nvls.channels, 8);
  EXPECT_EQ(in.nvls.bw_intra, 50.0);
  EXPECT_EQ(in.nvls.bw_inter, 60.0);
  const std::vector<Expect> e = {
      {TunedAlgo::nvls, Protocol::simple, 25.0, 8 * 60.0 * 8 / 14},
      {TunedAlgo::ring, Protocol::ll, 15.0, 141.0 * 8 / 14},
  };
  // 1 MiB: ring LL 15 + 13.01 = 28.01; NVLS 25 + 3.82 = 28.82.
  check(in, Collective::all_reduce, 1 << 20, e, TunedAlgo::ring, Protocol::ll);
  // 4 MiB: NVLS 25 + 15.3 = 40.3; ring LL128 62.1.
  check(in, Collective::all_reduce, 4u << 20, e, TunedAlgo::nvls, Protocol::simple);
  check(in, Collective::all_reduce, 1u << 30, e, TunedAlgo::nvls, Protocol::simple);
  // reduce_scatter: min(50 × .85 × 7/8 × 7/8, 60) × 8 = 260.3 GB/s, not converted (NVLS is not a
  // ring); 25 µs.
  const std::vector<Expect> rs = {{TunedAlgo::nvls, Protocol::simple, 25.0, 8 * 50 * .85 * 7 / 8 * 7 / 8}};
  check(in, Collective::reduce_scatter, 1u << 30, rs, TunedAlgo::ring, Protocol::simple);  // ring 423.8 beats it
  // Two nodes: NVLS needs CollNet there; it is listed, off.
  TunedNode two{16, 8, 8, 370.8e9, 50e9, true, GpuGeneration::hopper, false, true};
  for (const auto& c : tuning_table(graph_for(two), Collective::all_reduce, 1u << 30)) EXPECT_FALSE(c.algo == TunedAlgo::nvls && c.enabled);
}

// Two and four such nodes whose NVSwitches reduce, 8 NICs of 50 GB/s: NVLSTree's graph has one
// channel per head (8), at 48 GB/s (the inter-node list's top speed, within a NIC), not raised in
// pass 2 (already the top). NVLSTree: min(48 × .85 × 7/8 × 2 = 71.4, 48 × 2 (two nodes) or 48,
// perChMaxNVLSTreeBw 57.7 (two nodes) or 45.5) per channel; latency 25 (NVLink) + 2 log2(nodes) × 20.9.
TEST(NcclTuning, NvlsTreeOnTwoAndFourH100Nodes) {
  TunedNode two{16, 8, 8, 370.8e9, 50e9, true, GpuGeneration::hopper, false, true};
  const auto in = graph_for(two);
  EXPECT_EQ(in.nvls.channels, 8);
  EXPECT_EQ(in.nvls.bw_intra, 48.0);
  EXPECT_EQ(in.nvls.bw_inter, 48.0);
  const std::vector<Expect> e = {
      {TunedAlgo::nvls_tree, Protocol::simple, 25 + 2 * 20.9, 8 * 57.7 * 16 / 30},
      {TunedAlgo::tree, Protocol::ll128, 48.5, 370.8 * .92 * 120 / 128 * .5},
      {TunedAlgo::ring, Protocol::simple, 131.6, 370.8 * 16 / 30},
  };
  // 1 MiB: tree LL128 59.4; NVLSTree 66.8 + 4.26 = 71.1.
  check(in, Collective::all_reduce, 1 << 20, e, TunedAlgo::tree, Protocol::ll128);
  // 256 MiB: NVLSTree 66.8 + 1090.4 = 1157.2; ring Simple 1541.6.
  check(in, Collective::all_reduce, 256u << 20, e, TunedAlgo::nvls_tree, Protocol::simple);
  check(in, Collective::all_reduce, 1u << 30, e, TunedAlgo::nvls_tree, Protocol::simple);
  // Four nodes: NVLSTree 45.5 × 8 × 32/62 = 187.9 GB/s, latency 25 + 4 × 20.9 = 108.6; the ring's
  // 16 channels of 370.8/16 (the NICs' 400 would allow more) 191.4 GB/s, latency (8.4 + 56 × 3.4
  // + 6 × 14) × 1.4 = 395.9. 1 GiB: NVLSTree 5823.7, ring 6006.4; 16 GiB: the ring's bandwidth wins.
  TunedNode four{32, 8, 8, 370.8e9, 50e9, true, GpuGeneration::hopper, false, true};
  const auto in4 = graph_for(four);
  const std::vector<Expect> e4 = {
      {TunedAlgo::nvls_tree, Protocol::simple, 25 + 4 * 20.9, 8 * 45.5 * 32 / 62},
      {TunedAlgo::ring, Protocol::simple, 8.4 + 56 * 3.4 + 6 * 14, 370.8 * 32 / 62},
  };
  check(in4, Collective::all_reduce, 1u << 30, e4, TunedAlgo::nvls_tree, Protocol::simple);
  check(in4, Collective::all_reduce, 16ull << 30, e4, TunedAlgo::ring, Protocol::simple);
  // NVLSTree is an all_reduce only; NVLS alone stays off across nodes (it needs CollNet).
  for (const auto& c : tuning_table(in, Collective::reduce_scatter, 1u << 30)) EXPECT_NE(c.algo, TunedAlgo::nvls_tree);
  for (const auto& c : tuning_table(in, Collective::all_reduce, 1u << 30)) EXPECT_FALSE(c.algo == TunedAlgo::nvls && c.enabled);
}

// The same nodes with a network whose switches reduce (collnetEnable, InfiniBand SHARP): NVLS
// across nodes is on, on NVLSTree's graph (8 channels of 48 GB/s): min(48 × .85 × 7/8 × 2 = 71.4,
// bwInter 48) × 8 = 384 GB/s of bus bandwidth, converted as a ring's (16/30 on two nodes, 32/62
// on four); latency 25 (NVLink's NVLS step) + 18 (the network's), paid once.
TEST(NcclTuning, NvlsWithCollNetOnH100Nodes) {
  TunedNode two{16, 8, 8, 370.8e9, 50e9, true, GpuGeneration::hopper, false, true, true};
  const auto in = graph_for(two);
  EXPECT_TRUE(in.collnet);
  const std::vector<Expect> e = {
      {TunedAlgo::nvls, Protocol::simple, 25 + 18, 8 * 48.0 * 16 / 30},
      {TunedAlgo::nvls_tree, Protocol::simple, 25 + 2 * 20.9, 8 * 57.7 * 16 / 30},
  };
  // 1 MiB: NVLS 43 + 5.1 = 48.1, ahead of the tree's LL128 (59.4) and NVLSTree (71.1).
  check(in, Collective::all_reduce, 1 << 20, e, TunedAlgo::nvls, Protocol::simple);
  // 1 GiB: NVLSTree's kernels (246.2 GB/s) beat NVLS's 204.8: 4428 us against 5286.
  check(in, Collective::all_reduce, 1u << 30, e, TunedAlgo::nvls_tree, Protocol::simple);
  // Four nodes: NVLS 384 × 32/62 = 198.2 GB/s beats NVLSTree's 187.9 and the ring's 191.4, up to 16 GiB.
  TunedNode four{32, 8, 8, 370.8e9, 50e9, true, GpuGeneration::hopper, false, true, true};
  const auto in4 = graph_for(four);
  const std::vector<Expect> e4 = {{TunedAlgo::nvls, Protocol::simple, 43.0, 8 * 48.0 * 32 / 62}};
  check(in4, Collective::all_reduce, 1u << 30, e4, TunedAlgo::nvls, Protocol::simple);
  check(in4, Collective::all_reduce, 16ull << 30, e4, TunedAlgo::nvls, Protocol::simple);
  // CollNet Chain is listed, off (not run here); reduce_scatter does not take NVLS across nodes.
  for (const auto& c : tuning_table(in4, Collective::all_reduce, 1u << 30)) EXPECT_FALSE(c.algo == TunedAlgo::collnet_chain && c.enabled);
  for (const auto& c : tuning_table(in4, Collective::reduce_scatter, 1u << 30)) EXPECT_FALSE(c.algo == TunedAlgo::nvls && c.enabled);
  // One node: CollNet means nothing there.
  TunedNode one{8, 8, 8, 370.8e9, 50e9, true, GpuGeneration::hopper, false, true, true};
  EXPECT_FALSE(graph_for(one).collnet);
}

// Two DGX A100-class nodes (8 HDR NICs of 25 GB/s, NVLink 240 GB/s, AMD CPUs) with SHARP: CollNet
// Direct's graph has a channel per head (8) at the NIC's 25 GB/s: 200 GB/s of bus bandwidth, GPU/NIC
// ratio 1 (no penalty), no Hopper .85, converted as a tree's (1/2): 100 GB/s; latency 2 × (3.7
// (NVLink) + 7 × 0.4 (arity)) + 31 (network) = 44 µs. The ring: 16 channels of 200/16, 16/30:
// 106.7 GB/s, latency (8.4 + 28 × 6 (AMD's network overhead) + 2 × 14) × 1.4 = 286.2 µs.
TEST(NcclTuning, CollNetDirectOnTwoA100Nodes) {
  TunedNode two{16, 8, 8, 240e9, 25e9, true, GpuGeneration::ampere, true, false, true};
  const auto in = graph_for(two);
  EXPECT_EQ(in.collnet_direct.channels, 8);
  EXPECT_EQ(in.collnet_direct.bw_intra, 25.0);
  const std::vector<Expect> e = {{TunedAlgo::collnet_direct, Protocol::simple, 44.0, 100.0},
                                 {TunedAlgo::ring, Protocol::simple, 8.4 + 28 * 6 + 2 * 14, 200.0 * 16 / 30}};
  // 256 MiB: CollNet Direct 44 + 2684.4 = 2728.4; the ring 286.2 + 2516.6 = 2802.8.
  check(in, Collective::all_reduce, 256u << 20, e, TunedAlgo::collnet_direct, Protocol::simple);
  // 16 GiB: the ring's bandwidth wins (161347 against 171843).
  check(in, Collective::all_reduce, 16ull << 30, e, TunedAlgo::ring, Protocol::simple);
  // Without SHARP it is off; CollNet Chain is listed, off.
  TunedNode plain = two;
  plain.collnet = false;
  for (const auto& c : tuning_table(graph_for(plain), Collective::all_reduce, 1u << 30)) EXPECT_FALSE(c.algo == TunedAlgo::collnet_direct && c.enabled);
  for (const auto& c : tuning_table(in, Collective::all_reduce, 1u << 30)) EXPECT_FALSE(c.algo == TunedAlgo::collnet_chain && c.enabled);
}

// NCCL's NVLS chunks (src/enqueue.cc): 128 KiB, smaller while the size would not keep 16 channels
// x 8 heads = 128 operations busy (NVLS: under 64, 8, 2 chunks each; NVLSTree: under 4, 1), and
// NVLSTree at most 64 KiB from 4 nodes.
TEST(NcclTuning, NvlsChunksAreNcclsForTheSize) {
  const auto h = GpuGeneration::hopper;
  EXPECT_EQ(nvls_chunk_bytes(false, 4ull << 30, 1, 8, h), 128u * 1024);  // >= 64 x 128 x 128 KiB = 1 GiB
  EXPECT_EQ(nvls_chunk_bytes(false, 256ull << 20, 1, 8, h), 64u * 1024);
  EXPECT_EQ(nvls_chunk_bytes(false, 32ull << 20, 1, 8, h), 32u * 1024);  // < 8 x 128 x 64 KiB = 64 MiB
  EXPECT_EQ(nvls_chunk_bytes(false, 4ull << 20, 1, 8, h), 16u * 1024);   // < 2 x 128 x 32 KiB = 8 MiB
  EXPECT_EQ(nvls_chunk_bytes(true, 1ull << 30, 2, 8, h), 128u * 1024);
  EXPECT_EQ(nvls_chunk_bytes(true, 8ull << 20, 2, 8, h), 64u * 1024);    // < 4 x 128 x 128 KiB, not < 128 x 64 KiB
  EXPECT_EQ(nvls_chunk_bytes(true, 4ull << 20, 2, 8, h), 32u * 1024);
  EXPECT_EQ(nvls_chunk_bytes(true, 1ull << 30, 4, 8, h), 64u * 1024);    // NVLSTREE_MAX_CHUNKSIZE from 4 nodes
}

TEST(NcclTuning, ProtocolsCarryTheirFraming) {
  EXPECT_EQ(protocol_wire_factor(Protocol::ll), 2.0);
  EXPECT_DOUBLE_EQ(protocol_wire_factor(Protocol::ll128), 128.0 / 120.0);
  EXPECT_EQ(protocol_wire_factor(Protocol::simple), 1.0);
  EXPECT_EQ(protocol_step_bytes(Protocol::ll), 32u * 1024);
  EXPECT_EQ(protocol_step_bytes(Protocol::simple), 512u * 1024);
}

}  // namespace
}  // namespace rdmalab::workloads
