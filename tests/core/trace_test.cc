// --trace (trace.h, docs/trace.md): every rank's timeline as Chrome trace events, on every usable
// backend. The events are checked against what the run moved: the bytes of the transfer spans are
// the bytes the collective's plans send, perftest's posts add up to its rows, training steps and
// compute appear as spans; a failed run still leaves its timeline; the cap on events says what
// it dropped.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "../listing.h"
#include "backends.h"
#include "rdmalab/run.h"
#include "rdmalab/trace.h"

namespace rdmalab {
namespace {

using nlohmann::json;

struct Traced {
  RunOutcome out;
  json trace;
};

Traced run_traced(const std::string& backend, std::vector<std::string> sets) {
  if (backend == "verbs") sets.push_back("verbs.wait=event");
  auto sc = parse_scenario("name: t\n", "t.yaml", sets, full_schema(all_backends()));
  EXPECT_TRUE(sc.is_ok()) << sc.status().message();
  if (!sc) return {RunOutcome{sc.status(), {}, 0}, {}};
  const std::string path = (std::filesystem::temp_directory_path() / ("rdmalab-trace-test-" + backend + std::to_string(::getpid()) + ".json")).string();
  RunOptions o;
  o.trace_path = path;
  Traced t{run_scenario(*sc, **all_backends().make(backend), o), {}};
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << backend << ": no trace at " << path;
  if (in.good()) t.trace = json::parse(in);
  std::remove(path.c_str());
  return t;
}

// The events of one rank (tid) of one category, spans ("X") or instants ("i").
std::vector<json> events(const json& trace, int rank, const std::string& cat, const char* ph = "X") {
  std::vector<json> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.value("tid", -1) == rank && e.value("cat", "") == cat && e.at("ph") == ph) out.push_back(e);
  return out;
}

class TraceOnEveryBackend : public ::testing::TestWithParam<std::string> {};

TEST_P(TraceOnEveryBackend, EachRankSendsWhatTheRingPlansInItsTransferSpans) {
  const int n = 4;
  const std::uint64_t size = 1 << 20;
  Traced t = run_traced(GetParam(), {"fabric.nodes=4", "workload.type=all_reduce", "workload.size=1MiB", "workload.algorithm=ring",
                                     "workload.protocol=simple", "workload.channels=1", "workload.chunk=64KiB", "workload.iterations=2",
                                     "workload.warmup=1"});
  ASSERT_TRUE(t.out.status.is_ok()) << t.out.status.to_string();
  ASSERT_TRUE(t.trace.contains("traceEvents"));
  for (int r = 0; r < n; ++r) {
    bool named = false;
    for (const auto& e : t.trace["traceEvents"]) named = named || (e.at("ph") == "M" && e.value("tid", -1) == r && e.at("name") == "thread_name");
    EXPECT_TRUE(named) << "rank " << r << " has no track";
    auto whole = events(t.trace, r, "workload");
    ASSERT_FALSE(whole.empty()) << "rank " << r;
    double begin = 1e300, end = -1;
    for (const auto& w : whole) {
      begin = std::min(begin, w.at("ts").get<double>());
      end = std::max(end, w.at("ts").get<double>() + w.at("dur").get<double>());
    }
    // Every execution of the plan (warm-up, timed, the check run; out of place and in place) is a
    // collective span, and each sends 2 (n-1) / n of the buffer: the transfer spans carry exactly that.
    const auto colls = events(t.trace, r, "collective");
    EXPECT_EQ(colls.size(), 2u * (1 + 2 + 1)) << "rank " << r;
    std::uint64_t bytes = 0;
    for (const auto& x : events(t.trace, r, "transfer")) {
      bytes += x.at("args").at("bytes").get<std::uint64_t>();
      EXPECT_GE(x.at("ts").get<double>(), begin - 1e-3);
      EXPECT_LE(x.at("ts").get<double>() + x.at("dur").get<double>(), end + 1e-3) << "a transfer outside the workload's span";
    }
    EXPECT_EQ(bytes, colls.size() * 2 * (n - 1) * size / n) << "rank " << r;
    EXPECT_EQ(events(t.trace, r, "step").size(), colls.size() * 2 * (n - 1) * (size / n / 65536)) << "a reduce or copy span per chunk, rank " << r;
  }
  EXPECT_EQ(t.trace.at("otherData").at("backend"), GetParam());
}

TEST_P(TraceOnEveryBackend, PerftestsPostsAddUpToItsRowsAndTrainingStepsAreSpans) {
  Traced bw = run_traced(GetParam(), {"workload.type=write_bw", "workload.sizes=4KiB..16KiB", "workload.iterations=300"});
  ASSERT_TRUE(bw.out.status.is_ok()) << bw.out.status.to_string();
  std::uint64_t posted = 0, rows = 0;
  for (const auto& e : events(bw.trace, 0, "post", "i")) posted += e.at("args").at("bytes").get<std::uint64_t>();
  for (const auto& r : bw.out.rows) rows += r.bytes * r.iterations;
  EXPECT_EQ(posted, rows) << "rank 0 posts each size's messages (write_bw has no warm-up)";
  EXPECT_FALSE(events(bw.trace, 0, "completion", "i").empty());
  EXPECT_TRUE(events(bw.trace, 1, "post", "i").empty()) << "the target of writes posts nothing";
  EXPECT_EQ(events(bw.trace, 0, "workload").size(), 1u + 3u) << "the workload and its three sizes";

  Traced dp = run_traced(GetParam(), {"fabric.nodes=2", "workload.type=train_dp", "training.model=custom", "training.layers=[20000,50000]",
                                      "training.batch=8", "training.gpu_flops=1e12", "training.bucket=100KB", "workload.iterations=3",
                                      "workload.warmup=1"});
  ASSERT_TRUE(dp.out.status.is_ok()) << dp.out.status.to_string();
  for (int r = 0; r < 2; ++r) {
    int steps = 0;
    for (const auto& e : events(dp.trace, r, "workload")) steps += e.at("name").get<std::string>().find("step") != std::string::npos;
    EXPECT_EQ(steps, 1 + 3) << "rank " << r;
    EXPECT_FALSE(events(dp.trace, r, "compute").empty()) << "forward and backward compute, rank " << r;
    bool bucket = false;
    for (const auto& e : events(dp.trace, r, "collective")) bucket = bucket || e.at("name").get<std::string>().rfind("gradient bucket", 0) == 0;
    EXPECT_TRUE(bucket) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, TraceOnEveryBackend, ::testing::ValuesIn(usable_backend_names("TraceOnEveryBackend")),
                         [](const auto& p) { return p.param; });

TEST(Trace, AFailedRunStillLeavesItsTimeline) {
  auto be = all_backends().make("simgrid");
  if (!be || !(*be)->availability().usable) GTEST_SKIP() << "needs the SimGrid backend (a link down fails the run after the QP's retries)";
  Traced t = run_traced("simgrid", {"fabric.topology=star", "workload.type=write_bw", "fabric.degrade.links=[node-1]", "fabric.degrade.factor=0"});
  ASSERT_FALSE(t.out.status.is_ok());
  ASSERT_TRUE(t.trace.contains("traceEvents"));
  EXPECT_FALSE(events(t.trace, 0, "workload").empty()) << "rank 0's span up to the failure";
}

// A Runtime whose clock the test moves.
struct StepClock final : Runtime {
  double t = 0;
  double now() override { return t; }
  Status compute(double s) override {
    t += s;
    return Status::ok();
  }
  Status wait_for_byte(const volatile std::uint8_t*, std::uint8_t, double) override { return Status::ok(); }
};

TEST(Trace, PastItsCapARankSaysHowManyEventsItDropped) {
  StepClock clock;
  RankTrace trace(3, clock, 5);
  TracingRuntime rt(clock, trace);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(rt.compute(1e-6).is_ok());
  EXPECT_EQ(trace.dropped(), 3u);
  json file = json::parse(trace_file_json({trace.events_json()}, "loopback", "x.yaml", "wall"));
  std::vector<json> spans;
  json dropped;
  for (const auto& e : file.at("traceEvents")) {
    if (e.at("ph") == "X") spans.push_back(e);
    if (e.at("name") == "rdmalab_dropped") dropped = e.at("args");
  }
  ASSERT_EQ(spans.size(), 5u);
  EXPECT_EQ(dropped.at("events"), 3);
  // Spans in microseconds on the runtime's clock: the third compute ran from 2 us to 3 us.
  EXPECT_NEAR(spans[2].at("ts").get<double>(), 2.0, 1e-9);
  EXPECT_NEAR(spans[2].at("dur").get<double>(), 1.0, 1e-9);
  EXPECT_EQ(spans[2].at("tid"), 3);
}

}  // namespace
}  // namespace rdmalab
