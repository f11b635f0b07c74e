#include "rdmalab/results.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "rdmalab/memory.h"

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
