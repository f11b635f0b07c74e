#include "rdmalab/results.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "rdmalab/memory.h"
#include "rdmalab/record.h"

#include <cstdio>

namespace rdmalab {
namespace {

TEST(Results, LatencyStatisticsFollowPerftest) {
  std::vector<double> s;
  for (int i = 1; i <= 1000; ++i) s.push_back(i);
  LatencyStats st = latency_stats(s);
  EXPECT_DOUBLE_EQ(st.min_us, 1);
  EXPECT_DOUBLE_EQ(st.max_us, 1000);
  EXPECT_DOUBLE_EQ(st.typical_us, 501);  // the median sample
  EXPECT_DOUBLE_EQ(st.avg_us, 500.5);
  EXPECT_DOUBLE_EQ(st.p99_us, 990);
  EXPECT_DOUBLE_EQ(st.p999_us, 999);
  EXPECT_NEAR(st.stdev_us, 288.675, 1e-3);
}

TEST(Results, JsonCarriesTheDocumentedFields) {
  RunInfo info;
  info.scenario = "s.yaml";
  info.name = "demo";
  info.backend = "loopback";
  info.seed = 7;
  info.version = "0.1.0";
  ResultRow bw;
  bw.workload = "write_bw";
  bw.backend = "loopback";
  bw.bytes = 65536;
  bw.iterations = 1000;
  bw.ranks = 2;
  bw.bw_gbps = 90;
  ResultRow lat = bw;
  lat.workload = "write_lat";
  lat.lat = LatencyStats{1, 9, 2, 3, 0.5, 8, 9, {}};
  auto j = nlohmann::json::parse(results_to_json(info, {bw, lat}));
  EXPECT_EQ(j["backend"], "loopback");
  EXPECT_EQ(j["seed"], 7);
  EXPECT_EQ(j["rdmalab_version"], "0.1.0");
  ASSERT_EQ(j["results"].size(), 2u);
  for (const char* k : {"workload", "backend", "bytes", "iterations", "ranks", "time_s", "bw_gbps", "msg_rate_mpps", "errors"})
    EXPECT_TRUE(j["results"][0].contains(k)) << k;
  EXPECT_FALSE(j["results"][0].contains("lat_us"));
  EXPECT_EQ(j["results"][1]["lat_us"]["p999"], 9);
  EXPECT_EQ(j["results"][1]["lat_us"]["typical"], 2);
}

TEST(Memory, PatternVerificationCountsEveryWrongByte) {
  auto b = host_memory().allocate(1000);
  ASSERT_TRUE(b.is_ok());
  ASSERT_TRUE(host_memory().fill(*b, 0, 1000, 42).is_ok());
  EXPECT_EQ(*host_memory().verify(*b, 0, 1000, 42), 0u);
  EXPECT_GT(*host_memory().verify(*b, 0, 1000, 43), 990u) << "another seed is another stream";
  b->bytes()[0] ^= std::byte{1};
  b->bytes()[999] ^= std::byte{0x80};
  b->bytes()[500] ^= std::byte{0xff};
  EXPECT_EQ(*host_memory().verify(*b, 0, 1000, 42), 3u);
  // A slice carries its own stream: offsets are relative to the slice.
  ASSERT_TRUE(host_memory().fill(*b, 100, 200, 5).is_ok());
  EXPECT_EQ(*host_memory().verify(*b, 100, 200, 5), 0u);
}

// Checks compare with a per-thread copy of recent patterns first: a longer range than the copy
// holds, more seeds than it keeps, and ranges too long to keep must all count the same.
TEST(Memory, CachedPatternsCountTheSameAsComputedOnes) {
  const std::size_t big = (1u << 20) + 4099;  // over the 1 MiB the cache keeps
  auto b = host_memory().allocate(big);
  ASSERT_TRUE(b.is_ok());
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {  // more seeds than entries: evictions
    for (std::size_t len : {std::size_t{17}, std::size_t{4096 + 3}, std::size_t{300000}, big}) {
      ASSERT_TRUE(host_memory().fill(*b, 0, len, seed).is_ok());
      EXPECT_EQ(*host_memory().verify(*b, 0, len, seed), 0u) << "seed " << seed << " len " << len;
      b->bytes()[len - 1] ^= std::byte{0x10};
      b->bytes()[len / 2] ^= std::byte{0x01};
      EXPECT_EQ(*host_memory().verify(*b, 0, len, seed), len / 2 == len - 1 ? 1u : 2u) << "seed " << seed << " len " << len;
    }
  }
}

}  // namespace
}  // namespace rdmalab

namespace rdmalab {
namespace {

// A real run's record (verbs: docs/record.md) carries per-rank CPU, the port's counters and the
// GPUs beside the model's fields; they are read back as written, and a model's record has none.
TEST(Record, RealRunMonitoringRoundTrips) {
  const std::string path = ::testing::TempDir() + "rdmalab-record-monitor.jsonl";
  RecordWriter w;
  ASSERT_TRUE(w.open(path, false).is_ok());
  w.header("x.yaml", "verbs", 2, 0.1);
  Topology t;
  TopoNode a, d;
  a.name = "rank-0";
  a.kind = "host";
  a.rank = 0;
  d.name = "rxe0:1";
  d.kind = "switch";
  d.tier = 1;
  t.nodes = {a, d};
  t.links = {TopoLink{"rank-0_UP", 1.25e9, 0, {0, 1}}};
  w.topology(t);
  w.monitor(Monitor{"rxe0:1", "/sys/class/infiniband/rxe0/ports/1/hw_counters", "no NVML (test)"});
  Sample s;
  s.t = 0.1;
  s.rank_tx_Bps = {5e7, 0};
  s.rank_cpu = {0.98, 0.01};
  s.port = {{"rcvd_pkts", 100}, {"sent_pkts", 120.5}};
  s.gpu = {GpuSample{0, 0.75, 1ull << 30, 80ull << 30}};
  w.sample(s);
  Sample model;
  model.t = 0.2;
  model.rank_tx_Bps = {1, 2};
  w.sample(model);
  w.end("ok");
  ASSERT_TRUE(w.close().is_ok());
  auto rec = read_record(path);
  ASSERT_TRUE(rec.is_ok()) << rec.status().message();
  EXPECT_EQ(rec->monitor.port, "rxe0:1");
  EXPECT_EQ(rec->monitor.gpu, "no NVML (test)");
  ASSERT_EQ(rec->samples.size(), 2u);
  const Sample& r = rec->samples[0];
  EXPECT_EQ(r.rank_cpu, (std::vector<double>{0.98, 0.01}));
  ASSERT_EQ(r.port.size(), 2u);
  EXPECT_EQ(r.port[1].first, "sent_pkts");
  EXPECT_DOUBLE_EQ(r.port[1].second, 120.5);
  ASSERT_EQ(r.gpu.size(), 1u);
  EXPECT_DOUBLE_EQ(r.gpu[0].util, 0.75);
  EXPECT_EQ(r.gpu[0].mem_total, 80ull << 30);
  EXPECT_TRUE(rec->samples[1].rank_cpu.empty() && rec->samples[1].port.empty() && rec->samples[1].gpu.empty());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rdmalab
