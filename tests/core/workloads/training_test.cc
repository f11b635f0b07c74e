// Training-step workloads: presets add up to their published sizes, compute follows the FLOP
// model exactly on SimGrid, communication overlaps the backward pass, the 1F1B bubble matches
// (S-1)/(m+S-1), gradients and activations arrive exact, and bad parameters are refused.
#include <fmt/format.h>
#include <map>
#include <gtest/gtest.h>

#include "backends.h"
#include "rdmalab/gpus.h"
#include "rdmalab/run.h"
#include "rdmalab/workloads/training.h"

namespace rdmalab {
namespace {

using workloads::find_layer;
using workloads::find_preset;
using workloads::find_throughput;
using workloads::measured_layers;
using workloads::measured_throughputs;
using workloads::ModelPreset;

bool usable(const char* b) {
  auto be = all_backends().make(b);
  return be && (*be)->availability().usable;
}

RunOutcome run(const std::string& backend, std::vector<std::string> sets) {
  // Event-driven waits on verbs: busy-polling ranks would starve each other on a VM's 2 CPUs.
  if (backend == "verbs") sets.push_back("verbs.wait=event");
  auto sc = parse_scenario("name: t\n", "t.yaml", sets, full_schema(all_backends()));
  EXPECT_TRUE(sc.is_ok()) << sc.status().message();
  if (!sc) return RunOutcome{sc.status(), {}, 0};
  return run_scenario(*sc, **all_backends().make(backend));
}

TEST(ModelPresets, AddUpToThePublishedSizes) {
  EXPECT_EQ(find_preset("resnet50")->total_params(), 25557032u);  // torchvision
  const double gpt3 = static_cast<double>(find_preset("gpt3-175b")->total_params());
  EXPECT_NEAR(gpt3 / 1e9, 174.6, 0.5);
  const double llama = static_cast<double>(find_preset("llama2-70b")->total_params());
  EXPECT_NEAR(llama / 1e9, 68.98, 0.05);
  double flops = 0;
  for (const auto& l : find_preset("resnet50")->layers) flops += l.fwd_flops_per_sample;
  EXPECT_NEAR(flops / 2e9, 4.09, 0.01);  // GMACs per image
}

TEST(TrainDp, ExactGradientsComputeFromFlopsAndOverlap) {
  if (!usable("simgrid")) GTEST_SKIP() << "needs the SimGrid backend (simulated time makes the compute exact)";
  // 6 layers of 1 M parameters (fp32: 4 MB each), 4 MB buckets, 1 TFLOP/s per GPU, batch 100:
  // backward of a layer = 2 * 2e6 * 100 / 1e12 = 0.4 ms, long enough for a bucket's all-reduce.
  RunOutcome out = run("simgrid", {"fabric.nodes=4", "workload.type=train_dp", "training.model=custom",
                                   "training.layers=[1000000,1000000,1000000,1000000,1000000,1000000]", "training.batch=100",
                                   "training.gpu_flops=1e12", "training.bucket=4MB", "workload.iterations=2",
                                   // the arithmetic below is for rings of Simple chunks
                                   "workload.algorithm=ring", "workload.protocol=simple"});
  ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
  ASSERT_EQ(out.rows.size(), 1u);
  const auto& r = out.rows[0];
  EXPECT_EQ(r.errors, 0u);
  EXPECT_EQ(r.extra.at("buckets"), 6);
  // forward 6 x 0.2 ms + backward 6 x 0.4 ms
  EXPECT_NEAR(r.extra.at("compute_ms"), 3.6, 1e-6);
  EXPECT_GE(r.extra.at("step_ms"), r.extra.at("compute_ms"));
  // Communication overlapped the backward pass: less is exposed than was communicated.
  EXPECT_GT(r.extra.at("comm_ms"), 0);
  EXPECT_LT(r.extra.at("exposed_ms"), 0.6 * r.extra.at("comm_ms")) << "comm " << r.extra.at("comm_ms") << " exposed " << r.extra.at("exposed_ms");
  // The step's timeline (rank 0's last step, for the dashboard): forward 0-1.2 ms, backward
  // 1.2-3.6 ms, each bucket launched as its layer's backward ends (every 0.4 ms from 1.6 ms),
  // and the exposed tail after the backward pass.
  const std::string& tl = r.notes.at("timeline");
  EXPECT_EQ(tl.rfind("forward 0.000000 1.200000;backward 1.200000 3.600000;bucket 0 1.600000 ", 0), 0u) << tl;
  for (int b = 0; b < 6; ++b) EXPECT_NE(tl.find(fmt::format("bucket {} {:.6f} ", b, 1.6 + 0.4 * b)), std::string::npos) << b << ": " << tl;
  EXPECT_NE(tl.find(";exposed 3.600000 "), std::string::npos) << tl;
}

// A straggler: rank 2 computes 1.5x slower. The job's compute is its (3.6 ms -> 5.4 ms), and the
// step waits for it: every all-reduce needs its gradients, so the others idle that long.
TEST(TrainDp, AStragglerSlowsTheWholeStep) {
  if (!usable("simgrid")) GTEST_SKIP() << "needs the SimGrid backend (simulated time makes the compute exact)";
  const std::vector<std::string> base = {"fabric.nodes=4", "workload.type=train_dp", "training.model=custom",
                                         "training.layers=[1000000,1000000,1000000,1000000,1000000,1000000]", "training.batch=100",
                                         "training.gpu_flops=1e12", "training.bucket=4MB", "workload.iterations=2"};
  RunOutcome even = run("simgrid", base);
  std::vector<std::string> slow = base;
  slow.push_back("training.stragglers=[2]");
  slow.push_back("training.straggler_factor=1.5");
  RunOutcome one = run("simgrid", slow);
  ASSERT_TRUE(even.status.is_ok() && one.status.is_ok()) << even.status.to_string() << one.status.to_string();
  const auto &a = even.rows[0], &b = one.rows[0];
  EXPECT_NEAR(a.extra.at("compute_ms"), 3.6, 1e-6);
  EXPECT_NEAR(b.extra.at("compute_ms"), 5.4, 1e-6);
  EXPECT_GE(b.extra.at("step_ms"), a.extra.at("step_ms") + 1.8 * 0.9) << "the others wait for the straggler's 1.8 ms";
  EXPECT_EQ(b.notes.at("stragglers"), "rank 2 compute 1.5x slower");
  EXPECT_EQ(b.errors, 0u);
}

TEST(TrainDp, LowPrecisionGradientsStayExactOnManyRanks) {
  if (!usable("simgrid")) GTEST_SKIP() << "needs the SimGrid backend for 40 ranks";
  // bf16 holds integers only up to 256: the gradients are chosen so that 40 ranks' sum is exact.
  for (const char* dt : {"bf16", "fp16", "int8"}) {
    RunOutcome out = run("simgrid", {"fabric.nodes=40", "workload.type=train_dp", "training.model=custom", "training.layers=[3000,5000]",
                                     "training.batch=1", std::string("workload.dtype=") + dt, "workload.iterations=1", "workload.warmup=0"});
    ASSERT_TRUE(out.status.is_ok()) << dt << ": " << out.status.to_string();
    EXPECT_EQ(out.rows[0].errors, 0u) << dt;
  }
}

TEST(TrainDp, RunsOnEveryBackendWithTensorParallelAndMoe) {
  for (const char* b : {"loopback", "simgrid", "verbs"}) {
    if (!usable(b)) continue;
    RunOutcome out = run(b, {"fabric.nodes=4", "workload.type=train_dp", "training.model=custom", "training.layers=[20000,50000,30000]",
                             "training.batch=8", "training.gpu_flops=1e12", "training.bucket=100KB", "training.tensor_parallel=2",
                             "training.moe_alltoall=8KiB", "training.activation=16KiB", "workload.iterations=2"});
    ASSERT_TRUE(out.status.is_ok()) << b << ": " << out.status.to_string();
    ASSERT_EQ(out.rows.size(), 1u);
    EXPECT_EQ(out.rows[0].errors, 0u) << b;
    EXPECT_EQ(out.rows[0].notes.at("parallelism"), "dp 2 x tp 2 + moe");
  }
}

TEST(TrainPp, BubbleMatchesOneFOneBWhenCommunicationIsFree) {
  if (!usable("simgrid")) GTEST_SKIP() << "needs the SimGrid backend (simulated time)";
  // Tiny activations on fast links: the step is (m + S - 1) micro-batch times, the bubble
  // (S - 1) / (m + S - 1) of it.
  for (int S : {2, 4}) {
    for (int m : {4, 8}) {
      RunOutcome out = run("simgrid", {"fabric.nodes=" + std::to_string(S), "workload.type=train_pp", "training.model=custom",
                                       "training.layers=[1000000,1000000,1000000,1000000]", "training.batch=" + std::to_string(100 * m),
                                       "training.gpu_flops=1e12", "training.microbatches=" + std::to_string(m), "training.activation=8B",
                                       "fabric.link.bandwidth=10Tbps", "fabric.link.latency=1ns", "fabric.model=alpha_beta", "workload.iterations=1"});
      ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
      const auto& r = out.rows[0];
      EXPECT_EQ(r.errors, 0u);
      const double ideal = static_cast<double>(S - 1) / (m + S - 1);
      EXPECT_NEAR(r.extra.at("ideal_bubble_fraction"), ideal, 1e-12);
      EXPECT_NEAR(r.extra.at("bubble_fraction"), ideal, 0.01) << "S " << S << " m " << m;
    }
  }
}

TEST(TrainPp, ActivationsArriveExactOnEveryBackend) {
  for (const char* b : {"loopback", "simgrid", "verbs"}) {
    if (!usable(b)) continue;
    RunOutcome out = run(b, {"fabric.nodes=3", "workload.type=train_pp", "training.model=custom", "training.layers=[1000,1000,1000]",
                             "training.gpu_flops=1e12", "training.microbatches=5", "training.activation=100KB", "workload.chunk=16KiB",
                             "workload.iterations=2"});
    ASSERT_TRUE(out.status.is_ok()) << b << ": " << out.status.to_string();
    EXPECT_EQ(out.rows[0].errors, 0u) << b;
  }
}

// DDP's first bucket is capped at 1 MiB (the last layers' gradients start their all-reduce
// early), the others at training.bucket.
TEST(TrainDp, TheFirstBucketIsSmallAsInDdp) {
  if (!usable("simgrid")) GTEST_SKIP() << "needs the SimGrid backend (simulated time)";
  // 8 layers of 100,000 fp32 parameters (400 kB each), backward from the last: 1 MiB closes
  // after three layers (1.2 MB), 4 MB after ten, so the rest is one bucket.
  const std::vector<std::string> base = {"fabric.nodes=2", "workload.type=train_dp", "training.model=custom",
                                         "training.layers=[100000,100000,100000,100000,100000,100000,100000,100000]",
                                         "training.gpu_flops=1e12", "training.bucket=4MB", "workload.iterations=1"};
  RunOutcome ddp = run("simgrid", base);
  ASSERT_TRUE(ddp.status.is_ok()) << ddp.status.to_string();
  EXPECT_EQ(ddp.rows[0].extra.at("buckets"), 2);
  EXPECT_EQ(ddp.rows[0].errors, 0u);
  auto one = base;
  one.push_back("training.first_bucket=4MB");
  RunOutcome same = run("simgrid", one);
  ASSERT_TRUE(same.status.is_ok()) << same.status.to_string();
  EXPECT_EQ(same.rows[0].extra.at("buckets"), 1);
}

// FSDP: each layer's parameters are all-gathered before its forward (and, FULL_SHARD, again
// before its backward), its gradients reduce-scattered after its backward.
TEST(TrainFsdp, GathersHideBehindComputeAndEverythingArrivesExact) {
  if (!usable("simgrid")) GTEST_SKIP() << "needs the SimGrid backend (simulated time makes the compute exact)";
  // 6 layers of 1 M parameters (4 MB fp32) on 4 ranks; 1e11 FLOP/s and batch 100: a layer's
  // forward takes 2 ms, far longer than its 4 MB all-gather.
  const std::vector<std::string> base = {"fabric.nodes=4", "workload.type=train_fsdp", "training.model=custom",
                                         "training.layers=[1000000,1000000,1000000,1000000,1000000,1000000]", "training.batch=100",
                                         "workload.iterations=2"};
  auto with = [&](std::vector<std::string> more) {
    auto s = base;
    s.insert(s.end(), more.begin(), more.end());
    return s;
  };
  RunOutcome slow_gpu = run("simgrid", with({"training.gpu_flops=1e11"}));
  ASSERT_TRUE(slow_gpu.status.is_ok()) << slow_gpu.status.to_string();
  const auto& r = slow_gpu.rows[0];
  EXPECT_EQ(r.errors, 0u);
  EXPECT_EQ(r.extra.at("units"), 6);
  EXPECT_EQ(r.notes.at("parallelism"), "fsdp 4 (full_shard)");
  EXPECT_NEAR(r.extra.at("compute_ms"), 36.0, 1e-6);  // 6 x 2 ms forward + 6 x 4 ms backward
  // Exposed: the first unit's all-gather (nothing to hide behind, about 0.37 ms) and the last
  // reduce-scatter (about 0.29 ms); the other 15 collectives (about 5 ms) overlapped compute.
  EXPECT_GT(r.extra.at("exposed_ms"), 0);
  EXPECT_LT(r.extra.at("exposed_ms"), 0.2 * r.extra.at("comm_ms")) << r.notes.at("timeline");
  EXPECT_NEAR(r.extra.at("step_ms"), r.extra.at("compute_ms") + r.extra.at("exposed_ms"), 1e-9);
  const std::string& tl = r.notes.at("timeline");
  EXPECT_EQ(tl.rfind("forward 0.000000 ", 0), 0u) << tl;
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = tl.find(what); at != std::string::npos; at = tl.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(";gather "), 11u) << tl;  // 6 before the forwards, 5 before the backwards (the last unit kept its own)
  EXPECT_EQ(count(";scatter "), 6u) << tl;
  EXPECT_NE(tl.find(";gather 0 0.000000 "), std::string::npos) << tl;

  // A fast GPU: the gathers no longer hide, and FULL_SHARD's second round of them costs what
  // SHARD_GRAD_OP (parameters kept from forward to backward) saves.
  RunOutcome full = run("simgrid", with({"training.gpu_flops=1e12"}));
  RunOutcome grad_op = run("simgrid", with({"training.gpu_flops=1e12", "training.sharding=grad_op"}));
  ASSERT_TRUE(full.status.is_ok()) << full.status.to_string();
  ASSERT_TRUE(grad_op.status.is_ok()) << grad_op.status.to_string();
  EXPECT_EQ(full.rows[0].errors + grad_op.rows[0].errors, 0u);
  EXPECT_EQ(grad_op.rows[0].notes.at("parallelism"), "fsdp 4 (shard_grad_op)");
  EXPECT_NE(grad_op.rows[0].notes.at("timeline").find(";gather 5 "), std::string::npos);
  EXPECT_GT(full.rows[0].extra.at("exposed_ms"), grad_op.rows[0].extra.at("exposed_ms") + 0.2)
      << full.rows[0].notes.at("timeline") << "\n" << grad_op.rows[0].notes.at("timeline");
}

TEST(TrainFsdp, ShardsArriveExactOnEveryBackend) {
  for (const char* b : {"loopback", "simgrid", "verbs"}) {
    if (!usable(b)) continue;
    for (const char* dt : {"fp32", "bf16"}) {
      // Layer sizes that do not divide by the 3 ranks: the shards are padded as FSDP pads them.
      RunOutcome out = run(b, {"fabric.nodes=3", "workload.type=train_fsdp", "training.model=custom", "training.layers=[20000,50001,777]",
                               "training.batch=8", "training.gpu_flops=1e12", std::string("workload.dtype=") + dt, "workload.iterations=2"});
      ASSERT_TRUE(out.status.is_ok()) << b << " " << dt << ": " << out.status.to_string();
      EXPECT_EQ(out.rows[0].errors, 0u) << b << " " << dt;
      EXPECT_EQ(out.rows[0].notes.at("verify"), "on");
    }
  }
}

TEST(Train3d, InterleavingShrinksTheBubbleAsMegatronsSchedule) {
  if (!usable("simgrid")) GTEST_SKIP() << "needs the SimGrid backend (simulated time)";
  // Four stages, tiny activations on fast links: the idle share of the step is Megatron's
  // (S - 1) / (v m + S - 1) with v chunks per stage, and the compute does not depend on v.
  const int S = 4, m = 8;
  double step_v1 = 0;
  for (int v : {1, 2}) {
    RunOutcome out = run("simgrid", {"fabric.nodes=4", "workload.type=train_3d", "training.model=custom",
                                     "training.layers=[1000000,1000000,1000000,1000000,1000000,1000000,1000000,1000000]",
                                     "training.batch=800", "training.gpu_flops=1e12", "training.microbatches=8",
                                     "training.pipeline_parallel=4", "training.virtual_stages=" + std::to_string(v), "training.activation=8B",
                                     "fabric.link.bandwidth=10Tbps", "fabric.link.latency=1ns", "fabric.model=alpha_beta", "workload.iterations=1"});
    ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
    const auto& r = out.rows[0];
    EXPECT_EQ(r.errors, 0u);
    // Two layers of 2 MFLOP per sample per stage, 100 samples per micro-batch, forward and
    // backward (3x), 8 micro-batches, at 1 TFLOP/s.
    EXPECT_NEAR(r.extra.at("compute_ms"), 2 * 2e6 * 100 * 3 * m / 1e12 * 1e3, 1e-6) << v;
    const double ideal = static_cast<double>(S - 1) / (v * m + S - 1);
    EXPECT_NEAR(r.extra.at("ideal_bubble_fraction"), ideal, 1e-12);
    EXPECT_NEAR(r.extra.at("idle_ms") / r.extra.at("step_ms"), ideal, 0.01) << "v " << v;
    if (v == 1) {
      step_v1 = r.extra.at("step_ms");
    } else {
      EXPECT_LT(r.extra.at("step_ms"), step_v1);
    }
  }
}

TEST(Train3d, ActivationsGradientsAndShardsArriveExactOnEveryBackend) {
  struct Layout {
    int nodes, tp, pp, v;
  };
  for (const char* b : {"loopback", "simgrid", "verbs"}) {
    if (!usable(b)) continue;
    // Tensor x interleaved pipeline; pipeline x data parallel; and all three (not on the VM's 2 CPUs).
    std::vector<Layout> layouts = {{4, 2, 2, 2}, {4, 1, 2, 1}};
    if (std::string(b) != "verbs") layouts.push_back({8, 2, 2, 2});
    for (const Layout& l : layouts)
      for (const char* dt : {"fp32", "bf16"}) {
        // Layer sizes that do not divide by the ranks: shards are padded.
        RunOutcome out = run(b, {"fabric.nodes=" + std::to_string(l.nodes), "workload.type=train_3d", "training.model=custom",
                                 "training.layers=[20000,50001,777,3000]", "training.batch=8", "training.gpu_flops=1e12",
                                 "training.microbatches=4", "training.activation=10KB", "workload.chunk=16KiB",
                                 "training.tensor_parallel=" + std::to_string(l.tp), "training.pipeline_parallel=" + std::to_string(l.pp),
                                 "training.virtual_stages=" + std::to_string(l.v), std::string("workload.dtype=") + dt, "workload.iterations=2"});
        const std::string what = fmt::format("{} {} tp {} pp {} v {}", b, dt, l.tp, l.pp, l.v);
        ASSERT_TRUE(out.status.is_ok()) << what << ": " << out.status.to_string();
        EXPECT_EQ(out.rows[0].errors, 0u) << what;
        EXPECT_EQ(out.rows[0].notes.at("verify"), "on");
        if (l.tp > 1) {
          EXPECT_GT(out.rows[0].extra.at("tp_comm_ms"), 0) << what;
        }
      }
  }
}

TEST(MeasuredThroughputs, EveryEntryIsPhysicallyPossibleAndNamesItsSource) {
  for (const auto& m : measured_throughputs()) {
    const ModelPreset* model = find_preset(m.model);
    const GpuSpec* gpu = find_gpu(m.gpu);
    ASSERT_NE(model, nullptr) << m.model;
    ASSERT_NE(gpu, nullptr) << m.gpu;
    EXPECT_FALSE(m.source.empty());
    double fwd = 0;
    for (const auto& l : model->layers) fwd += l.fwd_flops_per_sample;
    // Forward and backward FLOPs per second the figure implies, under the precision's peak.
    const double rate = 3 * fwd * m.samples_per_s;
    EXPECT_LT(rate, gpu->peak_flops(m.precision)) << m.model << " " << m.gpu << " " << m.precision;
  }
  // Nearest batch when none is equal; nothing for a GPU with no entry.
  EXPECT_EQ(find_throughput("resnet50", "a100", "amp", 64)->batch, 256u);
  EXPECT_EQ(find_throughput("resnet50", "h200", "amp", 256), nullptr);
}

TEST(TrainDp, ComputeComesFromTheMeasuredThroughputOfTheNamedGpu) {
  if (!usable("simgrid")) GTEST_SKIP() << "needs the SimGrid backend (simulated time makes the compute exact)";
  // One A100 alone: the step is the measured 256 / 938 s of compute, nothing else.
  RunOutcome out = run("simgrid", {"fabric.nodes=1", "fabric.gpu.model=a100", "workload.type=train_dp", "training.model=resnet50",
                                   "training.precision=tf32", "training.batch=256", "workload.iterations=1", "workload.payload=phantom"});
  ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
  const auto& r = out.rows[0];
  EXPECT_NEAR(r.extra.at("compute_ms"), 256.0 / 938 * 1e3, 1e-6);
  EXPECT_NEAR(r.extra.at("samples_per_s"), 938, 0.01);
  EXPECT_NE(r.notes.at("compute").find("938 img/s"), std::string::npos) << r.notes.at("compute");
  // MFU of the TF32 peak: 3 x 8.18 GFLOP x 938 / 156 TFLOP/s.
  EXPECT_NEAR(r.extra.at("mfu"), 3 * 8.18e9 * 938 / 156e12, 0.001);
  // Without a named GPU there is no measurement: the row says the compute has no source.
  out = run("simgrid", {"fabric.nodes=1", "workload.type=train_dp", "training.model=resnet50", "workload.iterations=1", "workload.payload=phantom"});
  ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
  EXPECT_NE(out.rows[0].notes.at("compute").find("no measured throughput"), std::string::npos) << out.rows[0].notes.at("compute");
  EXPECT_EQ(out.rows[0].extra.count("mfu"), 0u);
  // Several nodes: the gradient all-reduce is NCCL's choice, on a channel per NIC.
  out = run("simgrid", {"fabric.nodes=2", "fabric.preset=cx7-ndr-h100", "workload.type=train_dp", "training.model=resnet50",
                        "training.gpu_flops=300e12", "workload.iterations=1", "workload.payload=phantom", "workload.memory=cuda"});
  ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
  EXPECT_NE(out.rows[0].notes.at("gradient_all_reduce").find("8 channels"), std::string::npos) << out.rows[0].notes.at("gradient_all_reduce");
  const double auto_comm = out.rows[0].extra.at("comm_ms");
  // workload.channels names the count, as for a collective: one ring through one NIC is slower.
  out = run("simgrid", {"fabric.nodes=2", "fabric.preset=cx7-ndr-h100", "workload.type=train_dp", "training.model=resnet50",
                        "training.gpu_flops=300e12", "workload.iterations=1", "workload.payload=phantom", "workload.memory=cuda",
                        "workload.channels=1", "workload.algorithm=ring"});
  ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
  EXPECT_NE(out.rows[0].notes.at("gradient_all_reduce").find("1 channel"), std::string::npos) << out.rows[0].notes.at("gradient_all_reduce");
  EXPECT_GT(out.rows[0].extra.at("comm_ms"), auto_comm) << "one NIC of eight carries the gradients";
}

TEST(MeasuredLayers, EveryEntryIsPhysicallyPossibleAndNamesItsSource) {
  ASSERT_FALSE(measured_layers().empty());
  for (const auto& m : measured_layers()) {
    const ModelPreset* model = find_preset(m.model);
    const GpuSpec* gpu = find_gpu(m.gpu);
    ASSERT_NE(model, nullptr) << m.model;
    ASSERT_NE(gpu, nullptr) << m.gpu;
    ASSERT_GT(model->sequence, 0u) << m.model;
    EXPECT_FALSE(m.source.empty());
    const std::string what = fmt::format("{} {} {} tp {} mb {}", m.model, m.gpu, m.precision, m.tp, m.micro_batch);
    // One rank's share of one decoder layer's FLOPs for the micro-batch, over the measured time:
    // under the precision's dense peak, forward alone and forward with backward (twice the products).
    const double tokens = static_cast<double>(m.micro_batch * model->sequence);
    const double flops = model->layers[1].fwd_flops_per_sample * tokens / m.tp;
    EXPECT_LT(flops / m.fwd_s, gpu->peak_flops(m.precision)) << what;
    EXPECT_LT(3 * flops / (m.fwd_s + m.bwd_s), gpu->peak_flops(m.precision)) << what;
    // The backward computes the gradients of both the inputs and the weights: more than the forward.
    EXPECT_GT(m.bwd_s, m.fwd_s) << what;
    EXPECT_GT(m.head_fwd_s, 0) << what;
    EXPECT_GT(m.head_bwd_s, 0) << what;
  }
  // The nearest micro-batch when none is equal; nothing for a GPU or a split with no entry.
  EXPECT_EQ(find_layer("llama2-70b", "h100", "amp", 4, 3)->micro_batch, 2u);
  EXPECT_EQ(find_layer("llama2-70b", "h200", "amp", 4, 1), nullptr);
  EXPECT_EQ(find_layer("llama2-70b", "h100", "amp", 16, 1), nullptr);
}

TEST(TrainDp, ALanguageModelComputesFromItsMeasuredLayers) {
  if (!usable("simgrid")) GTEST_SKIP() << "needs the SimGrid backend (simulated time makes the compute exact)";
  // Llama 2 70B's compute on one H100, two sequences per step: 80 decoder layers and the output
  // layer, each at its measured time for two sequences (one GPU, so nothing else is in the step).
  std::map<std::string, double> compute;
  for (const std::string precision : {"amp", "fp8"}) {
    RunOutcome out = run("simgrid", {"fabric.nodes=1", "fabric.gpu.model=h100", "workload.type=train_dp", "training.model=llama2-70b",
                                     "training.batch=8192", "training.precision=" + precision, "workload.iterations=1",
                                     "workload.warmup=0", "workload.payload=phantom"});
    ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
    const auto& r = out.rows[0];
    const auto* m = find_layer("llama2-70b", "h100", precision, 1, 2);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->micro_batch, 2u);
    compute[precision] = r.extra.at("compute_ms");
    EXPECT_NEAR(compute[precision], (80 * (m->fwd_s + m->bwd_s) + m->head_fwd_s + m->head_bwd_s) * 1e3, 1e-6) << precision;
    EXPECT_NEAR(r.extra.at("step_ms"), compute[precision], 1e-6) << precision;
    EXPECT_EQ(r.notes.at("compute"), m->source);
    // MFU against the precision's own peak, and under it.
    EXPECT_GT(r.extra.at("mfu"), 0.1) << precision;
    EXPECT_LT(r.extra.at("mfu"), 1.0) << precision;
  }
  EXPECT_LT(compute["fp8"], compute["amp"]);
}

TEST(Training, BadParametersAreRefusedWithTheKey) {
  struct Bad {
    std::vector<std::string> sets;
    std::string key;
  };
  std::vector<Bad> bad = {
      {{"workload.type=train_dp", "fabric.nodes=6", "training.tensor_parallel=4"}, "training.tensor_parallel"},
      {{"workload.type=train_dp", "training.model=custom"}, "training.model"},
      {{"workload.type=train_dp", "training.layers=[10,20]"}, "training.layers"},
      {{"workload.type=train_dp", "training.model=bert"}, "training.model"},
      {{"workload.type=train_pp", "fabric.nodes=8", "training.model=custom", "training.layers=[10,20]"}, "fabric.nodes"},
      {{"workload.type=train_pp", "training.tensor_parallel=2"}, "training.tensor_parallel"},
      {{"workload.type=train_dp", "workload.algorithm=pairwise"}, "workload.algorithm"},
      {{"workload.type=train_dp", "workload.channels=65"}, "workload.channels"},
      {{"workload.type=train_pp", "workload.channels=2"}, "workload.channels"},
      {{"workload.type=train_dp", "training.model=custom", "training.layers=[10,20]", "training.layer_flops=[5]"}, "training.layer_flops"},
      // A rate above the named GPU's dense peak is not physically possible.
      {{"workload.type=train_dp", "fabric.gpu.model=a100", "training.gpu_flops=400e12"}, "training.gpu_flops"},
      {{"workload.type=train_dp", "fabric.gpu.model=h100", "training.precision=tf32", "training.gpu_flops=600e12"}, "training.gpu_flops"},
      // A named GPU the model has no measured throughput on, and no rate given.
      {{"workload.type=train_dp", "fabric.gpu.model=h200", "training.model=gpt3-175b"}, "training.model"},
      // FP8 on a GPU without FP8 tensor cores, or on an unnamed one.
      {{"workload.type=train_dp", "fabric.gpu.model=a100", "training.model=llama2-70b", "training.precision=fp8"}, "training.precision"},
      {{"workload.type=train_dp", "training.model=llama2-70b", "training.precision=fp8"}, "training.precision"},
      // A named GPU and a generation that is not its own.
      {{"workload.type=train_dp", "fabric.gpu.model=a100", "fabric.gpu.generation=hopper"}, "fabric.gpu.generation"},
      // Stragglers: both keys, ranks in the job.
      {{"workload.type=train_dp", "training.stragglers=[1]"}, "training.straggler_factor too"},
      {{"workload.type=train_dp", "training.straggler_factor=1.2"}, "training.stragglers too"},
      {{"workload.type=train_dp", "fabric.nodes=4", "training.stragglers=[4]", "training.straggler_factor=1.2"}, "rank 4 is not in the job"},
      // FSDP: its collectives are rings, and it has no buckets, tensor parallelism or micro-batches.
      {{"workload.type=train_fsdp", "workload.algorithm=tree"}, "allowed: auto, ring"},
      {{"workload.type=train_fsdp", "training.bucket=4MB"}, "training.bucket"},
      {{"workload.type=train_fsdp", "training.tensor_parallel=2"}, "training.tensor_parallel"},
      {{"workload.type=train_dp", "training.sharding=grad_op"}, "training.sharding"},
      {{"workload.type=train_fsdp", "training.sharding=zero3"}, "training.sharding"},
      // Megatron-LM's layout: the parallel sizes divide the ranks, interleaving needs a pipeline and
      // micro-batches in multiples of its stages, a chunk needs a layer, and the model is a transformer.
      {{"workload.type=train_3d", "fabric.nodes=6", "training.model=llama2-70b", "training.tensor_parallel=2", "training.pipeline_parallel=2"},
       "training.pipeline_parallel"},
      {{"workload.type=train_3d", "fabric.nodes=4", "training.model=llama2-70b", "training.pipeline_parallel=1", "training.virtual_stages=2"},
       "training.virtual_stages"},
      {{"workload.type=train_3d", "fabric.nodes=4", "training.model=llama2-70b", "training.pipeline_parallel=4", "training.virtual_stages=2",
        "training.microbatches=6"},
       "training.microbatches"},
      {{"workload.type=train_3d", "fabric.nodes=4", "training.model=custom", "training.layers=[10,20,30]", "training.pipeline_parallel=4"},
       "training.virtual_stages"},
      {{"workload.type=train_3d", "fabric.nodes=2", "training.model=resnet50"}, "training.model"},
      {{"workload.type=train_3d", "fabric.nodes=2", "training.model=llama2-70b", "workload.algorithm=tree"}, "allowed: auto, ring"},
      {{"workload.type=train_3d", "fabric.nodes=2", "training.model=llama2-70b", "training.bucket=4MB"}, "training.bucket"},
  };
  for (const auto& b : bad) {
    auto sc = parse_scenario("name: t\n", "t.yaml", b.sets, full_schema(all_backends()));
    Status st = sc.is_ok() ? check_run(*sc, **all_backends().make("loopback")) : sc.status();
    EXPECT_FALSE(st.is_ok()) << b.key;
    EXPECT_NE(st.message().find(b.key), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace rdmalab
