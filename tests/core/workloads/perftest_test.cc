// Every perftest workload runs on every usable backend with its payload checks at zero, and a
// delivery that corrupts bytes is caught.
#include <gtest/gtest.h>

#include <cmath>

#include "../../listing.h"
#include "backends.h"
#include "rdmalab/run.h"

namespace rdmalab {
namespace {

struct Case {
  std::string backend;
  std::string workload;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.backend << "/" << c.workload; }

class Perftest : public ::testing::TestWithParam<Case> {};

Result<Scenario> scenario(const Case& c, std::vector<std::string> sets) {
  sets.push_back("workload.type=" + c.workload);
  return parse_scenario("name: t\n", "t.yaml", sets, full_schema(all_backends()));
}

TEST_P(Perftest, RunsWithZeroErrorsAcrossSizesAndOptions) {
  const Case& c = GetParam();
  auto backend = all_backends().make(c.backend);
  ASSERT_TRUE(backend.is_ok());
  bool atomic = c.workload.rfind("atomic", 0) == 0;
  bool lat = c.workload.find("_lat") != std::string::npos;
  std::vector<std::vector<std::string>> variants = {
      {"workload.iterations=50"},
      {"workload.iterations=40", "workload.warmup=5", "workload.cq_mod=8", "workload.tx_depth=16"},
  };
  if (!atomic) variants.push_back({"workload.iterations=30", "workload.sizes=[1B,3B,4KiB,100KiB]"});
  if (!lat) variants.push_back({"workload.iterations=30", "workload.qps=3", "workload.bidirectional=true", "workload.post_list=4"});
  if (!lat && !atomic) variants.push_back({"workload.iterations=30", "fabric.nodes=4", "workload.size=64B"});
  if (c.workload == "write_bw" || c.workload == "send_bw" || c.workload == "write_lat" || c.workload == "send_lat")
    variants.push_back({"workload.iterations=30", "workload.inline=64B", "workload.sizes=[8B,64B,128B]"});
  if (atomic) variants.push_back({"workload.iterations=30", "workload.atomic=cmp_swap"});
  for (const auto& v : variants) {
    auto sc = scenario(c, v);
    ASSERT_TRUE(sc.is_ok()) << sc.status().message();
    RunOutcome out = run_scenario(*sc, **backend);
    std::string what = c.workload;
    for (const auto& s : v) what += " " + s;
    ASSERT_TRUE(out.status.is_ok()) << what << ": " << out.status.to_string();
    ASSERT_FALSE(out.rows.empty()) << what;
    for (const auto& r : out.rows) {
      EXPECT_EQ(r.errors, 0u) << what << " size " << r.bytes;
      EXPECT_EQ(r.workload, c.workload);
      EXPECT_EQ(r.backend, c.backend);
      EXPECT_GT(r.iterations, 0u);
      if (lat) {
        ASSERT_TRUE(r.lat.has_value());
        EXPECT_GT(r.lat->min_us, 0);
        EXPECT_LE(r.lat->min_us, r.lat->typical_us);
        EXPECT_LE(r.lat->typical_us, r.lat->max_us);
        EXPECT_LE(r.lat->p99_us, r.lat->p999_us);
      } else {
        EXPECT_GT(r.bw_gbps, 0) << what;
        EXPECT_GE(r.bw_peak_gbps, r.bw_gbps);
        EXPECT_GT(r.msg_rate_mpps, 0);
        // CPU seconds per GB: measured where the ranks run on real CPUs, not on the model's clock.
        const bool real_cpus = c.backend != "simgrid";
        EXPECT_EQ(r.extra.count("cpu_initiator_s_per_gb") > 0, real_cpus) << what;
        EXPECT_EQ(r.extra.count("cpu_target_s_per_gb") > 0, real_cpus) << what;
        for (const char* k : {"cpu_initiator_s_per_gb", "cpu_target_s_per_gb", "cpu_machine_s_per_gb"}) {
          if (r.extra.count(k)) {
            EXPECT_TRUE(r.extra.at(k) >= 0 && std::isfinite(r.extra.at(k))) << what << " " << k;
          }
        }
      }
    }
  }
}

// An RDMA write costs its target nothing: the initiator's thread posts and polls (on verbs busy,
// as perftest polls), the target's only waits. Per GB, no thread can have used more CPU than the
// wall time the transfer took (8 / Gb/s seconds per GB, with the barrier after it as slack).
class PerftestCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(PerftestCpu, AWritesTargetOnlyWaitsAndNoThreadUsesMoreThanTheWallTime) {
  const std::string b = GetParam();
  auto backend = all_backends().make(b);
  ASSERT_TRUE(backend.is_ok());
  auto sc = parse_scenario("name: t\n", "t.yaml", {"workload.type=write_bw", "workload.size=1MiB", "workload.iterations=2000"},
                           full_schema(all_backends()));
  ASSERT_TRUE(sc.is_ok()) << sc.status().message();
  RunOutcome out = run_scenario(*sc, **backend);
  ASSERT_TRUE(out.status.is_ok()) << b << ": " << out.status.to_string();
  const ResultRow& r = out.rows.at(0);
  const double init = r.extra.at("cpu_initiator_s_per_gb"), target = r.extra.at("cpu_target_s_per_gb");
  const double wall_per_gb = 8 / r.bw_gbps;
  EXPECT_GE(init, 0) << b;  // loopback's engine thread does its NIC's work: its ranks' threads only post and wait
  EXPECT_LE(target, 0.25 * wall_per_gb) << b << ": the target's thread used " << target << " s/GB at " << r.bw_gbps << " Gb/s";
  EXPECT_LE(init, 2 * wall_per_gb) << b << ": " << init << " s/GB of CPU at " << r.bw_gbps << " Gb/s";
}

// The backends whose ranks run on real CPUs (the model's clock is not its CPUs').
std::vector<std::string> real_cpu_backends() {
  std::vector<std::string> out;
  for (const auto& b : usable_backend_names("PerftestCpu"))
    if (b != "simgrid") out.push_back(b);
  return out;
}
INSTANTIATE_TEST_SUITE_P(RealCpus, PerftestCpu, ::testing::ValuesIn(real_cpu_backends()), [](const auto& p) { return p.param; });

// The kernel TCP baseline (tcp_bw, tcp_lat) between the same pairs: every message checked, the
// same columns, CPU per GB for the bandwidth test.
class TcpBaseline : public ::testing::TestWithParam<std::string> {};

TEST_P(TcpBaseline, BandwidthAndLatencyOverKernelTcpWithEveryByteChecked) {
  const std::string b = GetParam();
  auto backend = all_backends().make(b);
  ASSERT_TRUE(backend.is_ok());
  for (const char* type : {"tcp_bw", "tcp_lat"})
    for (std::vector<std::string> v : {std::vector<std::string>{"workload.sizes=[1B,3B,4KiB,100KiB]", "workload.iterations=200"},
                                       std::vector<std::string>{"fabric.nodes=4", "workload.size=64KiB", "workload.iterations=100", "workload.warmup=3"}}) {
      v.push_back(std::string("workload.type=") + type);
      auto sc = parse_scenario("name: t\n", "t.yaml", v, full_schema(all_backends()));
      ASSERT_TRUE(sc.is_ok()) << sc.status().message();
      RunOutcome out = run_scenario(*sc, **backend);
      ASSERT_TRUE(out.status.is_ok()) << b << " " << type << ": " << out.status.to_string();
      ASSERT_FALSE(out.rows.empty());
      for (const auto& r : out.rows) {
        EXPECT_EQ(r.errors, 0u) << type << " " << r.bytes;
        EXPECT_NE(r.notes.at("data_path").find("TCP"), std::string::npos) << r.notes.at("data_path");
        if (std::string(type) == "tcp_lat") {
          ASSERT_TRUE(r.lat.has_value());
          EXPECT_GT(r.lat->min_us, 0);
          EXPECT_LE(r.lat->typical_us, r.lat->max_us);
        } else {
          EXPECT_GT(r.bw_gbps, 0);
          EXPECT_EQ(r.bw_peak_gbps, r.bw_gbps);
          EXPECT_GE(r.extra.at("cpu_initiator_s_per_gb"), 0);
          EXPECT_GE(r.extra.at("cpu_target_s_per_gb"), 0);
        }
      }
    }
}

INSTANTIATE_TEST_SUITE_P(RealCpus, TcpBaseline, ::testing::ValuesIn(real_cpu_backends()), [](const auto& p) { return p.param; });

TEST(TcpBaselineRefusal, TheModelHasNoKernelAndPairsNeedAnEvenCount) {
  auto refused = [](const std::string& backend, std::vector<std::string> sets, const char* key, const char* words) {
    auto sc = parse_scenario("name: t\n", "t.yaml", sets, full_schema(all_backends()));
    ASSERT_TRUE(sc.is_ok()) << sc.status().message();
    auto be = all_backends().make(backend);
    ASSERT_TRUE(be.is_ok());
    Status st = check_run(*sc, **be);
    ASSERT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find(key), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(words), std::string::npos) << st.message();
  };
  refused("simgrid", {"workload.type=tcp_bw"}, "workload.type", "no kernel to measure");
  refused("loopback", {"workload.type=tcp_lat", "fabric.nodes=3"}, "fabric.nodes", "even number");
  refused("loopback", {"workload.type=tcp_bw", "workload.qps=2"}, "workload.qps", "tcp_bw");
}

TEST_P(Perftest, DurationModeStopsByTime) {
  const Case& c = GetParam();
  if (c.workload == "write_lat" || c.workload == "send_lat") GTEST_SKIP() << "ping-pong tests take iterations, not a duration";
  auto backend = all_backends().make(c.backend);
  ASSERT_TRUE(backend.is_ok());
  auto sc = scenario(c, {"workload.duration=20ms"});
  ASSERT_TRUE(sc.is_ok()) << sc.status().message();
  RunOutcome out = run_scenario(*sc, **backend);
  ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
  ASSERT_EQ(out.rows.size(), 1u);
  EXPECT_EQ(out.rows[0].errors, 0u);
  EXPECT_GT(out.rows[0].iterations, 1u);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& b : all_backends().all()) {
    if (!b.make()->availability().usable && !listing_every_backend()) continue;
    for (const auto& w : builtin_workloads().all())
      if ((w.kind == WorkloadKind::bandwidth || w.kind == WorkloadKind::latency) && w.name.rfind("tcp_", 0) != 0)  // TcpBaseline below
        out.push_back({b.name, w.name});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllBackends, Perftest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.backend + "_" + i.param.workload; });

}  // namespace
}  // namespace rdmalab

namespace rdmalab {
namespace {

// Fault injection in the reference backend: a corrupted delivery must be counted and fail the run.
TEST(PayloadChecks, CorruptedDeliveriesAreCountedAndFailTheRun) {
  auto backend = all_backends().make("loopback");
  ASSERT_TRUE(backend.is_ok());
  for (const char* w : {"write_bw", "read_bw", "send_bw", "send_lat", "write_lat", "read_lat"}) {
    auto sc = parse_scenario("name: t\n", "t.yaml",
                             {std::string("workload.type=") + w, "workload.iterations=20", "loopback.corrupt_every=3", "workload.size=4KiB"},
                             full_schema(all_backends()));
    ASSERT_TRUE(sc.is_ok()) << sc.status().message();
    RunOutcome out = run_scenario(*sc, **backend);
    EXPECT_EQ(out.status.code(), Errc::data) << w << ": " << out.status.to_string();
    ASSERT_FALSE(out.rows.empty()) << w;
    EXPECT_GT(out.rows[0].errors, 0u) << w;
  }
  // With checks off, nothing is counted (and the run says so in its notes).
  auto sc = parse_scenario("name: t\n", "t.yaml", {"workload.iterations=20", "loopback.corrupt_every=3", "workload.verify=false"},
                           full_schema(all_backends()));
  ASSERT_TRUE(sc.is_ok());
  RunOutcome out = run_scenario(*sc, **backend);
  ASSERT_TRUE(out.status.is_ok());
  EXPECT_EQ(out.rows[0].notes.at("verify"), "off");
}

}  // namespace
}  // namespace rdmalab

namespace rdmalab {
namespace {

// verbs_error: each mistake gives the status verbs gives, on every backend, and a failed request
// writes nothing. Cases are named <backend>_<mistake>, so the Soft-RoCE VM runs the verbs ones.
struct ErrorCase {
  std::string backend, provoke, completion, qp_state;
};
void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.backend << "/" << c.provoke; }

class VerbsErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(VerbsErrors, EachMistakeGivesTheStatusVerbsGivesAndWritesNothing) {
  const ErrorCase& c = GetParam();
  auto backend = all_backends().make(c.backend);
  ASSERT_TRUE(backend.is_ok());
  std::vector<std::string> sets = {"workload.type=verbs_error", "workload.provoke=" + c.provoke, "workload.size=4KiB"};
  if (c.provoke == "rnr") sets.insert(sets.end(), {"workload.rnr_retry=2", "workload.min_rnr_timer=1"});  // 0.01 ms
  auto sc = parse_scenario("name: t\n", "t.yaml", sets, full_schema(all_backends()));
  ASSERT_TRUE(sc.is_ok()) << sc.status().message();
  RunOutcome out = run_scenario(*sc, **backend);
  ASSERT_TRUE(out.status.is_ok()) << out.status.to_string();
  ASSERT_EQ(out.rows.size(), 1u);
  const ResultRow& r = out.rows[0];
  if (c.backend == "verbs" && c.provoke == "bad_lkey") {
    // Linux 6.1's rxe says loc_qp_op_err where mlx5 and the soft RC NIC say loc_prot_err
    // (Conformance.BadLocalKeyGivesLocalProtectionError).
    EXPECT_TRUE(r.notes.at("completion") == c.completion || r.notes.at("completion") == "IBV_WC_LOC_QP_OP_ERR") << r.notes.at("completion");
  } else {
    EXPECT_EQ(r.notes.at("completion"), c.completion);
  }
  EXPECT_EQ(r.notes.at("qp_state"), c.qp_state);
  EXPECT_EQ(r.errors, 0u) << r.notes.at("target");
  const std::string next = r.notes.at("next");
  if (c.completion.rfind("IBV_WC_", 0) == 0) {
    EXPECT_TRUE(next == "IBV_WC_WR_FLUSH_ERR" || next.rfind("not tried", 0) == 0) << next;
  }
  if (c.provoke == "rnr") {
    EXPECT_GE(r.extra.at("time_us"), 2 * 10.0) << "two RNR timers of 0.01 ms pass before the error";
  }
}

std::vector<ErrorCase> error_cases() {
  std::vector<ErrorCase> out;
  for (const auto& b : all_backends().all()) {
    if (!b.make()->availability().usable && !listing_every_backend()) continue;
    out.push_back({b.name, "wrong_rkey", "IBV_WC_REM_ACCESS_ERR", "IBV_QPS_ERR"});
    out.push_back({b.name, "outside_region", "IBV_WC_REM_ACCESS_ERR", "IBV_QPS_ERR"});
    out.push_back({b.name, "no_remote_write", "IBV_WC_REM_ACCESS_ERR", "IBV_QPS_ERR"});
    out.push_back({b.name, "no_remote_read", "IBV_WC_REM_ACCESS_ERR", "IBV_QPS_ERR"});
    out.push_back({b.name, "bad_lkey", "IBV_WC_LOC_PROT_ERR", "IBV_QPS_ERR"});
    out.push_back({b.name, "not_rts", "refused at post: EINVAL", "IBV_QPS_INIT"});
    out.push_back({b.name, "rnr", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_QPS_ERR"});
    out.push_back({b.name, "cq_overflow", "CQ overflow: completions lost (verbs raises IBV_EVENT_CQ_ERR)", "IBV_QPS_ERR"});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllBackends, VerbsErrors, ::testing::ValuesIn(error_cases()),
                         [](const ::testing::TestParamInfo<ErrorCase>& i) { return i.param.backend + "_" + i.param.provoke; });

// A key that only one mistake reads is refused with another.
TEST(VerbsErrorKeys, RnrKeysAreRefusedForOtherMistakes) {
  auto backend = all_backends().make("loopback");
  ASSERT_TRUE(backend.is_ok());
  auto sc = parse_scenario("name: t\n", "t.yaml", {"workload.type=verbs_error", "workload.provoke=wrong_rkey", "workload.rnr_retry=1"},
                           full_schema(all_backends()));
  ASSERT_TRUE(sc.is_ok());
  RunOutcome out = run_scenario(*sc, **backend);
  EXPECT_NE(out.status.message().find("workload.rnr_retry: is read by workload.provoke: rnr only"), std::string::npos) << out.status.to_string();
}

}  // namespace
}  // namespace rdmalab
