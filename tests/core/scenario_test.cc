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

namespace rdmalab {
namespace {

// Inputs that used to crash, read without bounds or be silently accepted: each is refused with
// where and why (a corpus of the reproducers of "numbers a user can trust").
TEST(ScenarioInput, MalformedFilesAreRefusedWithWhereAndWhy) {
  struct Bad {
    std::string text, want;
  };
  const std::vector<Bad> bad = {
      {"name: a\nworkload: { sizes: [] }\n", "lab.yaml:2:20: workload.sizes: an empty list"},
      {"name: a\nfabric: { gpus_per_node: [] }\n", "fabric.gpus_per_node"},
      {"name: a\n---\nname: b\n", "lab.yaml:3: a second YAML document"},
      {"# a comment\n , b\n", "lab.yaml:2: not YAML that can be read as a scenario"},  // yaml-cpp's LoadAll looped on it
      {"name: \"a\x1b[31m\"\n", "lab.yaml:1: a control character (0x1b)"},
      {"name: a\rworkload: { type: send_bw }\r", "lab.yaml:1: a carriage return without a line feed"},
      {std::string("name: a\n\0\n", 10), "lab.yaml:2: a NUL byte"},
      {"workload: { type: send_bw }\nworkload: { size: 8B }\n", "lab.yaml:2:1: workload: given twice in the same mapping"},
      {"fabric: { nic: { message_rate: .nan } }\n", "fabric.nic.message_rate: '.nan' is not a finite number"},
      {"fabric: { nic: { message_rate: .inf } }\n", "not a finite number"},
      {"name: \"a\xff\"\n", "lab.yaml:1: a byte that is not UTF-8 (0xff)"},
      {"name: \"a\xc3\"\n", "not UTF-8"},
  };
  for (const auto& b : bad) {
    const std::string msg = error_of(b.text);
    EXPECT_NE(msg.find(b.want), std::string::npos) << "got: " << msg;
  }
  // Windows line ends and UTF-8 text are fine.
  auto ok = parse("name: caf\xc3\xa9\r\nworkload: { type: send_bw }\r\n");
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  EXPECT_EQ(ok->get_string("name"), "caf\xc3\xa9");
}

TEST(ScenarioInput, OnlySmallRegularFilesAreRead) {
  const Schema schema = full_schema(all_backends());
  auto msg = [&](const std::string& path) {
    auto r = load_scenario(path, {}, schema);
    EXPECT_FALSE(r.is_ok()) << path;
    return r.is_ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(msg(::testing::TempDir()).find("not a regular file (a folder)"), std::string::npos);
  EXPECT_NE(msg("/dev/zero").find("not a regular file"), std::string::npos);
  EXPECT_NE(msg("/nonexistent/lab.yaml").find("cannot open the scenario file: no such file"), std::string::npos);
  const std::string big = ::testing::TempDir() + "/rdmalab-big.yaml";
  {
    std::FILE* f = std::fopen(big.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::string line = "# " + std::string(1000, 'x') + "\n";
    for (int i = 0; i < 1100; ++i) std::fputs(line.c_str(), f);
    std::fclose(f);
  }
  EXPECT_NE(msg(big).find("a scenario is a small text file"), std::string::npos);
  std::remove(big.c_str());
}

}  // namespace
}  // namespace rdmalab
