// NCCL's protocols and NVLink SHARP on the SimGrid model (docs/collectives.md): each mechanism's
// effect against its own formula, the choice `auto` makes, exact bytes through the NVSwitch, and
// the refusals where a mechanism does not exist.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "backends.h"
#include "rdmalab/run.h"
#include "rdmalab/workloads/tuning.h"

namespace rdmalab {
namespace {

RunOutcome run(const std::string& backend, const std::string& yaml, std::vector<std::string> sets) {
  auto sc = parse_scenario(yaml, "t.yaml", sets, full_schema(all_backends()));
  EXPECT_TRUE(sc.is_ok()) << sc.status().message();
  if (!sc) return RunOutcome{sc.status(), {}, 0};
  auto be = all_backends().make(backend);
  EXPECT_TRUE(be.is_ok());
  return run_scenario(*sc, **be);
}

bool have_simgrid() {
  auto be = all_backends().make("simgrid");
  return be && (*be)->availability().usable;
}

// One DGX H100-class node (18 NVLink 4 links, NCCL's 20.6 GB/s each = 370.8 GB/s per GPU).
const char* kH100Node = "name: t\nbackend: simgrid\nfabric: { topology: star, nodes: 1, preset: cx7-ndr-h100 }\n"
                        "workload: { type: all_reduce, memory: cuda, placement: out_of_place, iterations: 1, warmup: 0 }\n";

double busbw(const ResultRow& r) { return r.extra.at("busbw_gbps"); }

// The scenario is refused before the run, for workload.algorithm, with `words` in the reason.
void expect_refusal(const std::string& backend, const std::string& yaml, std::vector<std::string> sets, const char* words) {
  auto sc = parse_scenario(yaml, "t.yaml", sets, full_schema(all_backends()));
  ASSERT_TRUE(sc.is_ok()) << sc.status().message();
  auto be = all_backends().make(backend);
  ASSERT_TRUE(be.is_ok());
  Status st = check_run(*sc, **be);
  ASSERT_FALSE(st.is_ok()) << backend;
  EXPECT_NE(st.message().find(words), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("workload.algorithm"), std::string::npos) << st.message();
}

TEST(Protocols, LlHalvesTheBandwidthAndLl128TakesItsFraming) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  // A 256 MiB ring on one node is bandwidth-bound: LL's lines carry 4 data bytes in 8, LL128's
  // 120 in 128 (the flags), so the busbw falls to 15/16 of Simple's for LL128 and to at most half
  // for LL, whose 8 steps of 32 KiB in flight do not quite cover a step's latency either (0.42 of
  // Simple here; NCCL's own model caps LL at 141 GB/s on one Hopper node, 0.38 of Simple's).
  std::map<std::string, double> bw;
  for (const char* proto : {"simple", "ll", "ll128"}) {
    auto out = run("simgrid", kH100Node, {"workload.algorithm=ring", std::string("workload.protocol=") + proto, "workload.size=256MiB",
                                          "workload.payload=phantom"});
    ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
    ASSERT_EQ(out.rows.size(), 1u);
    bw[proto] = busbw(out.rows[0]);
    EXPECT_EQ(out.rows[0].notes.at("protocol"), proto == std::string("simple") ? "Simple" : proto == std::string("ll") ? "LL" : "LL128");
  }
  EXPECT_LE(bw["ll"] / bw["simple"], 0.5);
  EXPECT_GE(bw["ll"] / bw["simple"], 0.38);
  EXPECT_NEAR(bw["ll128"] / bw["simple"], 15.0 / 16.0, 0.02);
}

TEST(Protocols, ASmallRingPaysEachStepsLatencyOnceAndTheBaseLatencyOnce) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  // 8 B on 8 ranks of one node: 14 steps of NCCL's NVLink step latency and its base latency
  // (tuning.cc: Ring LL 0.6 µs per step + 6.6; Simple 3.4 + 8.4). The wire's own latency is inside
  // the step's, so nothing is paid twice; the few bytes add nanoseconds.
  for (auto [proto, want] : {std::pair{"ll", 6.6 + 14 * 0.6}, {"simple", 8.4 + 14 * 3.4}}) {
    auto out = run("simgrid", kH100Node, {"workload.algorithm=ring", std::string("workload.protocol=") + proto, "workload.size=8B",
                                          "workload.iterations=3"});
    ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
    EXPECT_NEAR(out.rows[0].time_s * 1e6, want, 0.05 * want) << proto;
  }
}

TEST(Protocols, AutoRunsWhatNcclsModelPicksAndSaysSo) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  auto out = run("simgrid", kH100Node, {"workload.sizes=[8KiB,16MiB,1GiB]", "workload.payload=phantom"});
  ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
  ASSERT_EQ(out.rows.size(), 3u);
  // tuning_test.cc works these out by hand: Ring/LL, NVLS (the preset's NVSwitch reduces), NVLS.
  EXPECT_EQ(out.rows[0].notes.at("algorithm"), "ring");
  EXPECT_EQ(out.rows[0].notes.at("protocol"), "LL");
  EXPECT_EQ(out.rows[1].notes.at("algorithm"), "nvls");
  EXPECT_EQ(out.rows[2].notes.at("algorithm"), "nvls");
  for (const auto& r : out.rows) {
    EXPECT_EQ(r.notes.at("nccl_choice"), r.notes.at("algorithm") == "nvls" ? "NVLS/Simple" : "Ring/LL");
    EXPECT_NE(r.notes.at("tuning").find("Tree/LL128"), std::string::npos);
  }
}

TEST(Nvls, TheSwitchReducesEveryTypeAndOperatorExactly) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  for (const char* coll : {"all_reduce", "reduce_scatter", "all_gather"})
    for (const char* dt : {"fp32", "fp16", "bf16", "int32", "int8"})
      for (const char* op : {"sum", "prod", "max", "min"}) {
        if (std::string(coll) == "all_gather" && std::string(op) != "sum") continue;
        std::vector<std::string> sets = {std::string("workload.type=") + coll, "workload.algorithm=nvls", std::string("workload.dtype=") + dt,
                                         "workload.placement=both", "workload.sizes=[64B,1000000B]", "workload.chunk=64KiB", "workload.iterations=2"};
        if (std::string(coll) != "all_gather") sets.push_back(std::string("workload.op=") + op);  // all_gather reduces nothing
        auto out = run("simgrid", kH100Node, sets);
        ASSERT_TRUE(out.status.is_ok()) << coll << " " << dt << " " << op << ": " << out.status.to_string();
        ASSERT_EQ(out.rows.size(), 4u);
        for (const auto& r : out.rows) {
          EXPECT_EQ(r.errors, 0u) << coll << " " << dt << " " << op << " " << r.bytes << " " << r.notes.at("placement");
          EXPECT_EQ(r.notes.at("algorithm"), "nvls");
        }
      }
}

TEST(Nvls, BandwidthIsEachGpusNvlinkOverTheBytesItCarries) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  // all_reduce of n bytes on p GPUs: each GPU's NVLink carries n + n/p each way (the inputs up and
  // the store up; the sum down and the multicast down), at NCCL's NVLS efficiency (0.85 on
  // Hopper) of the rate the ring reaches (370.8 GB/s). busbw = 2(p-1)/p · n / t.
  const double p = 8, link = 370.8 * 0.85;
  auto out = run("simgrid", kH100Node, {"workload.algorithm=nvls", "workload.size=1GiB", "workload.payload=phantom"});
  ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
  const double t_ideal = (1 + 1 / p) * 1073741824.0 / (link * 1e9);
  const double want = 2 * (p - 1) / p * 1073741824.0 / t_ideal / 1e9;
  EXPECT_NEAR(busbw(out.rows[0]), want, 0.03 * want);
  EXPECT_LT(busbw(out.rows[0]), want);  // latency and pipeline fill only take away
  // reduce_scatter: n up, n/p down: the inputs' way is the bottleneck.
  auto rs = run("simgrid", kH100Node, {"workload.type=reduce_scatter", "workload.algorithm=nvls", "workload.size=1GiB", "workload.payload=phantom"});
  ASSERT_TRUE(rs.status.is_ok()) << rs.status.to_string();
  const double rs_want = (p - 1) / p * link;
  EXPECT_NEAR(busbw(rs.rows[0]), rs_want, 0.03 * rs_want);
}

TEST(Nvls, RefusedWhereNoSwitchReduces) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  // Loopback has no switch at all; an A100 node's NVSwitch does not reduce; two nodes need CollNet.
  expect_refusal("loopback", "name: t\nworkload: { type: all_reduce, algorithm: nvls }\n", {}, "modelled on simgrid only");
  expect_refusal("simgrid", "name: t\nfabric: { nodes: 1, preset: cx6-hdr-a100 }\nworkload: { type: all_reduce, algorithm: nvls }\n", {},
                 "fabric.node.nvswitch.reduce");
  expect_refusal("simgrid", kH100Node, {"fabric.nodes=2", "workload.algorithm=nvls"}, "InfiniBand SHARP");
}

// Two H100 nodes (8 GPUs, 8 NDR NICs each) whose NVSwitches reduce, under one switch.
std::string h100_nodes(int nodes) {
  return "name: t\nbackend: simgrid\nfabric: { topology: fat_tree, nodes: " + std::to_string(nodes) +
         ", preset: cx7-ndr-h100, fat_tree: { levels: 1, down: [" + std::to_string(nodes) +
         "], up: [1] } }\nworkload: { type: all_reduce, memory: cuda, placement: out_of_place, iterations: 1, warmup: 0 }\n";
}

TEST(NvlsTree, ReducesExactlyAcrossNodes) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  // Two nodes (one tree each way) and three (a parent with a child in one tree, a leaf in the
  // other); sizes that do not split evenly over the 8 heads or into whole chunks.
  for (int nodes : {2, 3})
    for (const char* dt : {"fp32", "bf16", "int8"})
      for (const char* op : {"sum", "max"}) {
        auto out = run("simgrid", h100_nodes(nodes),
                       {"workload.algorithm=nvls_tree", std::string("workload.dtype=") + dt, std::string("workload.op=") + op,
                        "workload.placement=both", "workload.sizes=[64B,1000000B]", "workload.chunk=64KiB", "workload.iterations=2"});
        ASSERT_TRUE(out.status.is_ok()) << nodes << " " << dt << " " << op << ": " << out.status.to_string();
        ASSERT_EQ(out.rows.size(), 4u);
        for (const auto& r : out.rows) {
          EXPECT_EQ(r.errors, 0u) << nodes << " nodes " << dt << " " << op << " " << r.bytes << " " << r.notes.at("placement");
          EXPECT_EQ(r.notes.at("algorithm"), "nvls_tree");
        }
      }
}

TEST(NvlsTree, TwoNodesRunAtTheKernelsRateAndAutoPicksIt) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  // 1 GiB on 2 nodes: NVLink would allow busbw 2·15/16 · 315.2 / (9/8) = 525 GB/s and the NICs
  // more; each head's channel moves at most perChMaxNVLSTreeBw (57.7 GB/s of bus bandwidth, two
  // Hopper nodes), 8 channels: 461.6, less the latency (66.8 µs) and the pipeline's fill.
  // (1 MiB chunks: the bound is the kernels', whatever the chunk; NCCL's 256 KiB only take longer to simulate.)
  auto out = run("simgrid", h100_nodes(2), {"workload.size=1GiB", "workload.payload=phantom", "workload.chunk=1MiB"});
  ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
  EXPECT_EQ(out.rows[0].notes.at("algorithm"), "nvls_tree");
  EXPECT_EQ(out.rows[0].notes.at("nccl_choice"), "NVLSTree/Simple");
  EXPECT_LT(busbw(out.rows[0]), 461.6);
  EXPECT_GT(busbw(out.rows[0]), 0.95 * 461.6);
  // With the links alone (alpha_beta: no kernel rate, no protocol costs) NVLink is the limit.
  auto links = run("simgrid", h100_nodes(2), {"workload.size=1GiB", "workload.payload=phantom", "workload.algorithm=nvls_tree",
                                              "fabric.model=alpha_beta", "workload.chunk=1MiB"});
  ASSERT_TRUE(links.status.is_ok()) << links.status.to_string();
  const double nvlink = 2.0 * 15 / 16 * 370.8 * 0.85 / (9.0 / 8);
  EXPECT_LT(busbw(links.rows[0]), 1.0001 * 2.0 * 15 / 16 * 370.8 / (9.0 / 8));
  EXPECT_GT(busbw(links.rows[0]), 0.9 * nvlink);
}

TEST(NvlsTree, RefusedWhereItDoesNotExist) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  expect_refusal("loopback", "name: t\nfabric: { nodes: 2 }\nworkload: { type: all_reduce, algorithm: nvls_tree }\n", {}, "simgrid only");
  expect_refusal("simgrid", kH100Node, {"workload.algorithm=nvls_tree"}, "several nodes");
  expect_refusal("simgrid", "name: t\nfabric: { nodes: 2, preset: cx6-hdr-a100 }\nworkload: { type: all_reduce, algorithm: nvls_tree }\n", {},
                 "fabric.node.nvswitch.reduce");
}

// H100 nodes on rails (GPU g of every node on NIC g, cabled to rail g's leaf) whose switches
// reduce (InfiniBand SHARP): `extra` goes into the fabric mapping.
std::string sharp_rails(int nodes, int gpus, const std::string& extra) {
  return "name: t\nbackend: simgrid\nfabric: { topology: rail_optimized, nodes: " + std::to_string(nodes) + ", gpus_per_node: " +
         std::to_string(gpus) + ", preset: cx7-ndr-h100, " + extra +
         " }\nworkload: { type: all_reduce, memory: cuda, placement: out_of_place, iterations: 1, warmup: 0 }\n";
}

TEST(Sharp, ReducesExactlyUpTheLeavesAndTheSpine) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  // Two nodes under one leaf per rail; four in two groups of two, whose rails' trees go up to a spine.
  for (const std::string& fabric : {sharp_rails(2, 4, "sharp: { tiers: [leaf] }"),
                                    sharp_rails(4, 2, "rail: { nodes_per_leaf: 2, spines: 2 }, sharp: { tiers: [leaf, spine] }")})
    for (const char* dt : {"fp32", "bf16"})
      for (const char* op : {"sum", "max"}) {
        auto out = run("simgrid", fabric,
                       {"workload.algorithm=nvls", std::string("workload.dtype=") + dt, std::string("workload.op=") + op, "workload.placement=both",
                        "workload.sizes=[64B,1000000B]", "workload.chunk=64KiB", "workload.iterations=2"});
        ASSERT_TRUE(out.status.is_ok()) << dt << " " << op << ": " << out.status.to_string();
        ASSERT_EQ(out.rows.size(), 4u);
        for (const auto& r : out.rows) {
          EXPECT_EQ(r.errors, 0u) << fabric << dt << " " << op << " " << r.bytes << " " << r.notes.at("placement");
          EXPECT_EQ(r.notes.at("algorithm"), "nvls");
        }
      }
}

TEST(CollNet, ReducesExactlyUpTheLeavesAndTheSpine) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  // CollNet Direct on A100 nodes (their NVSwitch does not reduce: the heads gather over NVLink).
  for (const std::string& rails : {std::string("sharp: { tiers: [leaf] }"), std::string("rail: { nodes_per_leaf: 2, spines: 2 }, sharp: { tiers: [leaf, spine] }")}) {
    std::string f = sharp_rails(4, 4, rails);
    f.replace(f.find("cx7-ndr-h100"), 12, "cx6-hdr-a100");
    for (const char* dt : {"fp32", "int8"}) {
      auto out = run("simgrid", f, {"workload.algorithm=collnet", std::string("workload.dtype=") + dt, "workload.op=prod", "workload.placement=both",
                                    "workload.sizes=[64B,1000000B]", "workload.chunk=64KiB", "workload.iterations=2"});
      ASSERT_TRUE(out.status.is_ok()) << dt << ": " << out.status.to_string();
      ASSERT_EQ(out.rows.size(), 4u);
      for (const auto& r : out.rows) {
        EXPECT_EQ(r.errors, 0u) << rails << " " << dt << " " << r.bytes << " " << r.notes.at("placement");
        EXPECT_EQ(r.notes.at("algorithm"), "collnet");
      }
    }
  }
}

TEST(CollNet, TwoA100NodesAreBoundByNvlinkAndAutoPicksIt) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  // Two DGX A100-class nodes (8 HDR NICs) with SHARP leaves, 256 MiB: each GPU's NVLink (300 GB/s
  // x 0.8) carries 7/8 of its data to the other heads and, as a head, 7/8 of the totals to the
  // others, 1.75 n each way: algbw <= 240 / 1.75 = 137 GB/s; the NICs (n/8 each way at 25 GB/s)
  // would allow 200. NCCL's engineer estimates about 110 (NVIDIA/nccl #320, "NVLink still has to
  // transmit ~2x more data"). NCCL's model picks CollNet Direct there (NcclTuning.CollNetDirectOnTwoA100Nodes).
  std::string f = sharp_rails(2, 8, "sharp: { tiers: [leaf] }");
  f.replace(f.find("cx7-ndr-h100"), 12, "cx6-hdr-a100");
  auto out = run("simgrid", f, {"workload.size=256MiB", "workload.payload=phantom", "workload.chunk=1MiB"});
  ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
  EXPECT_EQ(out.rows[0].notes.at("algorithm"), "collnet");
  EXPECT_EQ(out.rows[0].notes.at("nccl_choice"), "CollNetDirect/Simple");
  const double algbw = out.rows[0].extra.at("algbw_gbps");
  EXPECT_LT(algbw, 240.0 / 1.75);
  EXPECT_GT(algbw, 0.9 * 240.0 / 1.75);
}

TEST(Sharp, EachNicCarriesItsShardOnceEachWayWhereATreeCarriesItTwice) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  // Four nodes of 4 GPUs under one leaf per rail, 100 Gb/s NICs (12.5 GB/s), links alone: the NICs
  // are the limit (NVLink carries n + n/4 at 300+ GB/s). With SHARP each head's NIC sends its shard
  // (n/4) up once and receives the total once: algbw = 4 NICs x 12.5 = 50 GB/s. NVLSTree's double
  // binary tree makes each head an inner node of one tree: twice its shard each way, 25 GB/s.
  const std::string f = sharp_rails(4, 4, "model: alpha_beta, link: { bandwidth: 100Gbps }, sharp: { tiers: [leaf] }");
  const std::vector<std::string> sets = {"workload.size=256MiB", "workload.payload=phantom", "workload.chunk=1MiB"};
  auto with = [&](const char* algo) {
    auto s = sets;
    s.push_back(std::string("workload.algorithm=") + algo);
    auto out = run("simgrid", f, s);
    EXPECT_TRUE(out.status.is_ok()) << out.status.to_string();
    return out.rows.empty() ? 0.0 : out.rows[0].extra.at("algbw_gbps");
  };
  const double sharp = with("nvls"), tree = with("nvls_tree");
  EXPECT_LT(sharp, 50.0);
  EXPECT_GT(sharp, 0.9 * 50.0);
  EXPECT_LT(tree, 25.0);
  EXPECT_GT(tree, 0.8 * 25.0);  // its chunks share the link and end together (83 % here)
}

TEST(Sharp, AutoRunsNvlsAcrossNodesWhereNcclsModelPicksIt) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  // Four nodes of 8 H100 with SHARP leaves: NCCL's model puts NVLS (with CollNet) first at 1 MiB
  // (43 us + bytes / 198.2 GB/s; NcclTuning.NvlsWithCollNetOnH100Nodes) and the tree with LL at 4 KiB.
  auto out = run("simgrid", sharp_rails(4, 8, "sharp: { tiers: [leaf] }"), {"workload.sizes=[4KiB,1MiB]", "workload.payload=phantom"});
  ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
  ASSERT_EQ(out.rows.size(), 2u);
  EXPECT_EQ(out.rows[0].notes.at("algorithm"), "tree");
  EXPECT_EQ(out.rows[1].notes.at("algorithm"), "nvls");
  EXPECT_EQ(out.rows[1].notes.at("nccl_choice"), "NVLS/Simple");
}

// The scenario is refused before the run, naming `key`, with `words` in the reason.
void expect_key_refusal(const std::string& yaml, std::vector<std::string> sets, const char* key, const char* words) {
  auto sc = parse_scenario(yaml, "t.yaml", sets, full_schema(all_backends()));
  ASSERT_TRUE(sc.is_ok()) << sc.status().message();
  auto be = all_backends().make("simgrid");
  ASSERT_TRUE(be.is_ok());
  Status st = check_run(*sc, **be);
  ASSERT_FALSE(st.is_ok()) << yaml;
  EXPECT_NE(st.message().find(key), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(words), std::string::npos) << st.message();
}

TEST(Sharp, RefusedWhereTheSwitchesCannotReduce) {
  if (!have_simgrid()) GTEST_SKIP() << "needs the SimGrid backend";
  // No backend but the model has switches that reduce; across nodes nvls needs them.
  expect_refusal("loopback", "name: t\nfabric: { nodes: 2 }\nworkload: { type: all_reduce, algorithm: nvls }\n", {}, "simgrid only");
  expect_refusal("simgrid", h100_nodes(2), {"workload.algorithm=nvls"}, "fabric.sharp.tiers");
  expect_refusal("simgrid", sharp_rails(2, 4, "sharp: { tiers: [leaf] }"), {"workload.algorithm=nvls", "workload.type=reduce_scatter"}, "use ring");
  // SHARP is built on rails only, needs its leaves, a root above several groups, and at most
  // trees_per_switch rails' trees on a spine.
  expect_key_refusal(h100_nodes(2), {"fabric.sharp.tiers=[leaf]"}, "fabric.sharp.tiers", "rail_optimized");
  expect_key_refusal(sharp_rails(2, 4, "sharp: { tiers: [spine] }"), {}, "fabric.sharp.tiers", "starts at the leaf");
  expect_key_refusal(sharp_rails(4, 4, "rail: { nodes_per_leaf: 2 }, sharp: { tiers: [leaf] }"), {}, "fabric.sharp.tiers", "add spine");
  expect_key_refusal(sharp_rails(4, 8, "rail: { nodes_per_leaf: 2, spines: 2 }, sharp: { tiers: [leaf, spine] }"), {},
                     "fabric.sharp.trees_per_switch", "at least 4");
  expect_key_refusal(sharp_rails(2, 4, "sharp: { tiers: [leaf, core] }"), {}, "fabric.sharp.tiers", "allowed: leaf, spine");
  expect_key_refusal(sharp_rails(2, 4, "sharp: { bandwidth: 400Gbps }"), {}, "fabric.sharp.bandwidth", "set fabric.sharp.tiers");
  expect_key_refusal(sharp_rails(3, 4, "rail: { nodes_per_leaf: 2 }"), {}, "fabric.rail.nodes_per_leaf", "divisor");
  // CollNet Direct: the model only, across nodes, with SHARP.
  expect_refusal("loopback", "name: t\nfabric: { nodes: 2 }\nworkload: { type: all_reduce, algorithm: collnet }\n", {}, "simgrid only");
  expect_refusal("simgrid", h100_nodes(2), {"workload.algorithm=collnet"}, "fabric.sharp.tiers");
  expect_refusal("simgrid", kH100Node, {"workload.algorithm=collnet"}, "between nodes");
  expect_refusal("simgrid", sharp_rails(2, 4, "sharp: { tiers: [leaf] }"), {"workload.algorithm=collnet", "workload.type=all_gather"}, "allowed");
}

}  // namespace
}  // namespace rdmalab
