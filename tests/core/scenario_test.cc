#include "rdmalab/scenario.h"

#include <gtest/gtest.h>

#include "backends.h"
#include "rdmalab/run.h"

namespace rdmalab {
namespace {

Result<Scenario> parse(const std::string& text, std::vector<std::string> sets = {}) {
  return parse_scenario(text, "lab.yaml", sets, full_schema(all_backends()));
}

std::string error_of(const std::string& text, std::vector<std::string> sets = {}) {
  auto r = parse(text, std::move(sets));
  EXPECT_FALSE(r.is_ok()) << "expected an error for:\n" << text;
  return r.is_ok() ? "" : r.status().message();
}

const char* kExample = R"(name: write-bw-64k
backend: loopback
seed: 1
fabric:
  topology: star
  nodes: 2
  link: { bandwidth: 100Gbps, latency: 1us }
workload:
  type: write_bw
  size: 64KiB
  iterations: 1000
  qps: 1
  tx_depth: 128
)";

TEST(Scenario, TheDocumentedExampleParses) {
  auto sc = parse(kExample);
  ASSERT_TRUE(sc.is_ok()) << sc.status().message();
  EXPECT_EQ(sc->get_string("name"), "write-bw-64k");
  EXPECT_EQ(sc->get_size("workload.size"), 65536u);
  EXPECT_DOUBLE_EQ(sc->get_bandwidth("fabric.link.bandwidth"), 12.5e9);
  EXPECT_DOUBLE_EQ(sc->get_time("fabric.link.latency"), 1e-6);
  EXPECT_EQ(sc->get_int("workload.tx_depth"), 128);
  EXPECT_TRUE(sc->is_set("workload.size"));
  EXPECT_FALSE(sc->is_set("workload.cq_mod"));
  EXPECT_EQ(sc->get_int("workload.cq_mod"), 100) << "defaults are filled in";
  EXPECT_EQ(sc->loc("workload.size").line, 10);
  EXPECT_EQ(sc->loc("workload.size").column, 9);
}

TEST(Scenario, SizeListsAndRanges) {
  auto sc = parse("workload: { sizes: 2B..8MiB }");
  ASSERT_TRUE(sc.is_ok()) << sc.status().message();
  auto sizes = sc->get_sizes("workload.sizes");
  ASSERT_EQ(sizes.size(), 23u);
  EXPECT_EQ(sizes.front(), 2u);
  EXPECT_EQ(sizes.back(), 8u << 20);
  auto list = parse("workload: { sizes: [4KiB, 1MiB] }");
  ASSERT_TRUE(list.is_ok());
  EXPECT_EQ(list->get_sizes("workload.sizes"), (std::vector<std::uint64_t>{4096, 1 << 20}));
  EXPECT_NE(error_of("workload: { sizes: 3B..8MiB }").find("powers of two"), std::string::npos);
  EXPECT_NE(error_of("workload: { sizes: 8MiB..2B }").find("smaller to a larger"), std::string::npos);
}

TEST(Scenario, OverridesFromTheCommandLine) {
  auto sc = parse(kExample, {"workload.size=1MiB", "fabric.nodes=64", "workload.sizes=[1KiB,2KiB]"});
  ASSERT_TRUE(sc.is_ok()) << sc.status().message();
  EXPECT_EQ(sc->get_int("fabric.nodes"), 64);
  EXPECT_FALSE(sc->is_set("workload.size")) << "a --set of sizes replaces the file's size";
  EXPECT_EQ(sc->get_sizes("workload.sizes").size(), 2u);
  EXPECT_NE(error_of(kExample, {"workload.sise=1MiB"}).find("did you mean 'workload.size'"), std::string::npos);
  EXPECT_NE(error_of(kExample, {"workload.size"}).find("KEY=VALUE"), std::string::npos);
  EXPECT_NE(error_of(kExample, {"workload.size=lots"}).find("--set workload.size=lots"), std::string::npos);
}

TEST(Scenario, YamlSyntaxErrorNamesLineAndColumn) {
  std::string e = error_of("name: x\nworkload:\n  type: [write_bw\n");
  EXPECT_NE(e.find("lab.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("YAML syntax error"), std::string::npos) << e;
}

TEST(Scenario, UnknownKeySuggestsTheNearestAndListsKnownOnes) {
  std::string e = error_of("workload:\n  type: write_bw\n  itertions: 10\n");
  EXPECT_NE(e.find("lab.yaml:3:3: workload.itertions: unknown key"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'workload.iterations'"), std::string::npos) << e;
  EXPECT_NE(error_of("fabrik: {}").find("known keys"), std::string::npos);
}

TEST(Scenario, WrongTypesAndRanges) {
  EXPECT_NE(error_of("workload: { iterations: many }").find("lab.yaml:1:25: workload.iterations: 'many' is not a whole number"),
            std::string::npos)
      << error_of("workload: { iterations: many }");
  EXPECT_NE(error_of("workload: { qps: 0 }").find("between 1 and 16"), std::string::npos);
  EXPECT_NE(error_of("workload: { bidirectional: yes }").find("true, false"), std::string::npos);
  EXPECT_NE(error_of("workload: { type: write_bandwidth }").find("allowed: write_bw"), std::string::npos);
  EXPECT_NE(error_of("fabric: { link: { bandwidth: 100 } }").find("no unit"), std::string::npos);
  EXPECT_NE(error_of("fabric: { link: { latency: 1 lightyear } }").find("unknown time unit"), std::string::npos);
  EXPECT_NE(error_of("workload: { size: 64KiB, tx_depth: [1, 2] }").find("not a list"), std::string::npos);
  EXPECT_NE(error_of("workload: 5").find("expected a mapping"), std::string::npos);
  EXPECT_NE(error_of("workload:\n  size:\n").find("has no value"), std::string::npos);
  EXPECT_NE(error_of("- a\n- b\n").find("YAML mapping"), std::string::npos);
}

TEST(Scenario, KeysGivenTwiceAreRefused) {
  EXPECT_NE(error_of("seed: 1\nseed: 2\n").find("given twice"), std::string::npos);
}

TEST(Scenario, WorkloadChecksNameTheKey) {
  auto backend = all_backends().make("loopback");
  ASSERT_TRUE(backend.is_ok());
  auto check = [&](const std::string& text) {
    auto sc = parse(text);
    EXPECT_TRUE(sc.is_ok()) << sc.status().message();
    return check_run(*sc, **backend).message();
  };
  EXPECT_NE(check("fabric: { nodes: 3 }").find("fabric.nodes: write_bw runs between pairs"), std::string::npos);
  EXPECT_NE(check("workload: { size: 1KiB, sizes: [1KiB] }").find("either workload.size or workload.sizes"), std::string::npos);
  EXPECT_NE(check("workload: { iterations: 5, duration: 1s }").find("not both"), std::string::npos);
  EXPECT_NE(check("workload: { tx_depth: 16, cq_mod: 32 }").find("cq_mod (32) must not exceed tx_depth (16)"), std::string::npos);
  EXPECT_NE(check("workload: { type: atomic_bw, size: 64KiB }").find("atomics always move 8 bytes"), std::string::npos);
  EXPECT_NE(check("workload: { type: write_lat, qps: 2 }").find("qps must be 1"), std::string::npos);
  EXPECT_NE(check("workload: { type: send_lat, duration: 1s }").find("ping-pong"), std::string::npos);
  EXPECT_NE(check("workload: { inline: 4KiB }").find("inline"), std::string::npos);
  // Without a GPU provider (this test installs none) the reason is given first.
  const std::string cuda = check("workload: { memory: cuda }");
  EXPECT_NE(cuda.find("workload.memory"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("no cuda memory here"), std::string::npos) << cuda;
  EXPECT_EQ(check(kExample), "");
}

}  // namespace
}  // namespace rdmalab
