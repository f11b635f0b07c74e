// End-to-end: the rdmalab executable as a user runs it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

struct CliRun {
  int status = -1;
  std::string out;  // stdout and stderr
};

CliRun rdmalab(const std::string& args) {
  std::string cmd = std::string(RDMALAB_CLI) + " " + args + " 2>&1";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return r;
}

std::string scenario(const char* name) { return std::string(RDMALAB_SOURCE_DIR) + "/scenarios/" + name; }

std::filesystem::path tmpdir() {
  auto d = std::filesystem::temp_directory_path() / ("rdmalab-cli-" + std::to_string(getpid()));
  std::filesystem::create_directories(d);
  return d;
}

std::string write_tmp(const std::string& name, const std::string& text) {
  auto p = tmpdir() / name;
  std::ofstream(p) << text;
  return p.string();
}

TEST(Cli, RunPrintsAPerftestTableAndWritesJson) {
  auto json = (tmpdir() / "out.json").string();
  CliRun r = rdmalab("run " + scenario("write-bw-64k.yaml") + " --backend loopback --set workload.iterations=200 --json " + json);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("BW average[Gb/sec]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("65536"), std::string::npos);
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["backend"], "loopback");
  EXPECT_EQ(j["status"], "ok");
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["workload"], "write_bw");
  EXPECT_EQ(j["results"][0]["bytes"], 65536);
  EXPECT_EQ(j["results"][0]["iterations"], 200);
  EXPECT_EQ(j["results"][0]["errors"], 0);
  EXPECT_GT(j["results"][0]["bw_gbps"].get<double>(), 0);
}

// A measured run and the model's run of the same scenario make a calibration file the model reads.
TEST(Cli, CalibrateWritesAFileTheModelReads) {
  const auto measured = (tmpdir() / "measured.json").string(), predicted = (tmpdir() / "predicted.json").string();
  const auto cal = (tmpdir() / "cal.yaml").string();
  const std::string sweep = " --set workload.sizes=4KiB..64KiB --set workload.iterations=100 --set fabric.model=calibrated";
  ASSERT_EQ(rdmalab("run " + scenario("write-bw-64k.yaml") + sweep + " --set fabric.link_layer=roce --json " + measured).status, 0);
  ASSERT_EQ(rdmalab("run " + scenario("write-bw-64k.yaml") + sweep + " --json " + predicted).status, 0);
  CliRun r = rdmalab("calibrate " + measured + " " + predicted + " -o " + cal);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("5 bandwidth and 0 latency steps"), std::string::npos) << r.out;
  r = rdmalab("run " + scenario("write-bw-64k.yaml") + sweep + " --set fabric.calibration=" + cal);
  EXPECT_EQ(r.status, 0) << r.out;
  r = rdmalab("calibrate " + measured + " /nonexistent.json");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("/nonexistent.json: cannot open"), std::string::npos) << r.out;
}

// calibrate shows each size's figures and factor, and refuses what would make a calibration that
// hides a problem: a failed run, a prediction that is not the calibrated model's (or is already
// calibrated), and factors no real fabric gives (unless --force).
TEST(Cli, CalibrateShowsItsTableAndRefusesWhatItCannotTrust) {
  namespace fs = std::filesystem;
  const fs::path dir = tmpdir() / "calibrate-trust";
  fs::create_directories(dir);
  const std::string measured = (dir / "measured.json").string(), predicted = (dir / "predicted.json").string();
  const std::string sweep = " --set workload.sizes=4KiB..64KiB --set workload.iterations=100 --set fabric.model=calibrated";
  ASSERT_EQ(rdmalab("run " + scenario("write-bw-64k.yaml") + sweep + " --set fabric.link_layer=roce --json " + measured).status, 0);
  ASSERT_EQ(rdmalab("run " + scenario("write-bw-64k.yaml") + sweep + " --json " + predicted).status, 0);
  CliRun r = rdmalab("calibrate " + measured + " " + predicted + " -o " + (dir / "cal.yaml").string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("measured"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("64KiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bandwidth steps: the factor changes by up to"), std::string::npos) << r.out;

  // A run that failed: its rows are what it finished before it stopped.
  nlohmann::json j;
  std::ifstream(measured) >> j;
  j["status"] = "failed";
  j["error"] = "rank 1: timeout";
  const std::string failed = (dir / "failed.json").string();
  std::ofstream(failed) << j.dump();
  r = rdmalab("calibrate " + failed + " " + predicted);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("is a run that failed (rank 1: timeout): calibrate from finished runs only"), std::string::npos) << r.out;

  // Predictions that are not the calibrated model's.
  const std::string alpha = (dir / "alpha.json").string(), calibrated = (dir / "calibrated.json").string();
  ASSERT_EQ(rdmalab("run " + scenario("write-bw-64k.yaml") + sweep + " --set fabric.model=alpha_beta --json " + alpha).status, 0);
  r = rdmalab("calibrate " + measured + " " + alpha);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("ran the alpha_beta model"), std::string::npos) << r.out;
  ASSERT_EQ(rdmalab("run " + scenario("write-bw-64k.yaml") + sweep + " --set fabric.calibration=" + (dir / "cal.yaml").string() + " --json " +
                    calibrated).status, 0);
  r = rdmalab("calibrate " + measured + " " + calibrated);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("was calibrated already"), std::string::npos) << r.out;
  const std::string loop = (dir / "loopback.json").string();
  ASSERT_EQ(rdmalab("run " + scenario("write-bw-64k.yaml") + " --backend loopback --set workload.sizes=4KiB..64KiB --set workload.iterations=100 "
                    "--json " + loop).status, 0);
  r = rdmalab("calibrate " + measured + " " + loop);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("ran on loopback: it must be the SimGrid model's run"), std::string::npos) << r.out;

  // A "device" of 10 Gb/s against the scenario's 100 Gb/s: refused, then kept with --force.
  const std::string slow = (dir / "slow.json").string();
  ASSERT_EQ(rdmalab("run " + scenario("write-bw-64k.yaml") + sweep + " --set fabric.link.bandwidth=10Gbps --json " + slow).status, 0);
  r = rdmalab("calibrate " + slow + " " + predicted);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("implausible factor at write_bw 4KiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("does the scenario's fabric describe it"), std::string::npos) << r.out;
  r = rdmalab("calibrate " + slow + " " + predicted + " --force -o " + (dir / "forced.yaml").string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("<- the device reached"), std::string::npos) << r.out;
  // The other way round, the "device" beats the model's link: never a factor above 1 in the file.
  r = rdmalab("calibrate " + predicted + " " + slow + " --force -o " + (dir / "fast.yaml").string());
  EXPECT_EQ(r.status, 0) << r.out;
  std::stringstream fast;
  fast << std::ifstream(dir / "fast.yaml").rdbuf();
  EXPECT_NE(fast.str().find("1.0000]"), std::string::npos) << fast.str();
}

TEST(Cli, LatencyRunReportsPerftestColumns) {
  CliRun r = rdmalab("run " + scenario("write-bw-64k.yaml") + " --backend loopback --set workload.type=send_lat --set workload.size=8B");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("t_typical[usec]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("99.9%"), std::string::npos) << r.out;
}

TEST(Cli, BadScenarioExitsTwoWithFileLineAndKey) {
  auto bad = write_tmp("bad.yaml", "name: x\nworkload:\n  type: write_bw\n  size: 64 KiBs\n");
  CliRun r = rdmalab("run " + bad);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("bad.yaml:4:9: workload.size: unknown size unit 'KiBs'"), std::string::npos) << r.out;
  CliRun v = rdmalab("validate " + bad);
  EXPECT_EQ(v.status, 2);
  CliRun missing = rdmalab("run /nonexistent/lab.yaml");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.out.find("cannot open"), std::string::npos);
}

TEST(Cli, BadInputLosesNothingAlreadyWritten) {
  auto json = write_tmp("keep.json", "{\"precious\": true}\n");
  auto bad = write_tmp("bad2.yaml", "workload: { qps: 99 }\n");
  CliRun r = rdmalab("run " + bad + " --json " + json);
  EXPECT_EQ(r.status, 2);
  std::ifstream in(json);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "{\"precious\": true}\n");
}

TEST(Cli, FailedRunExitsOneAndRecordsTheFailure) {
  auto json = (tmpdir() / "failed.json").string();
  CliRun r = rdmalab("run " + scenario("write-bw-64k.yaml") + " --backend loopback --set workload.iterations=50 --set loopback.corrupt_every=5 --json " + json);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("wrong bytes"), std::string::npos) << r.out;
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["status"], "failed");
  EXPECT_GT(j["results"][0]["errors"].get<int>(), 0);
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(rdmalab("").status, 2);
  EXPECT_EQ(rdmalab("frobnicate").status, 2);
  EXPECT_EQ(rdmalab("run").status, 2);
  CliRun b = rdmalab("run " + scenario("write-bw-64k.yaml") + " --backend nosuch");
  EXPECT_EQ(b.status, 2);
  EXPECT_NE(b.out.find("no backend named 'nosuch'"), std::string::npos) << b.out;
}

TEST(Cli, AnOutputPathThatCannotBeWrittenIsRefusedBeforeTheRun) {
  const std::string run = "run " + scenario("write-bw-64k.yaml") + " --backend loopback --set workload.iterations=50";
  CliRun j = rdmalab(run + " --json /nonexistent-folder/out.json");
  EXPECT_EQ(j.status, 2);
  EXPECT_NE(j.out.find("--json: /nonexistent-folder/out.json: the folder /nonexistent-folder does not exist"), std::string::npos) << j.out;
  EXPECT_EQ(j.out.find("#bytes"), std::string::npos) << "the run went ahead: " << j.out;
  CliRun d = rdmalab(run + " --json " + tmpdir().string());
  EXPECT_EQ(d.status, 2);
  EXPECT_NE(d.out.find("is a folder, not a file"), std::string::npos) << d.out;
  CliRun r = rdmalab("run " + scenario("write-bw-64k.yaml") + " --record /nonexistent-folder/run.rec");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--record: /nonexistent-folder/run.rec: the folder /nonexistent-folder does not exist"), std::string::npos) << r.out;
}

// Outputs never clobber the scenario or each other, never follow a link left at a temporary
// name, and leave no temporary behind.
TEST(Cli, OutputsAreWrittenWholeAndNeverOverEachOther) {
  const auto dir = tmpdir() / "outputs";
  std::filesystem::create_directories(dir);
  const std::string sc = write_tmp("outputs.yaml", "name: outputs\nworkload: { type: write_bw, size: 4KiB, iterations: 20 }\n");
  const std::string run = "run " + sc + " --backend loopback";
  CliRun self = rdmalab(run + " --json " + sc);
  EXPECT_EQ(self.status, 2) << self.out;
  EXPECT_NE(self.out.find("that is the scenario file itself"), std::string::npos) << self.out;
  const std::string same = (dir / "same.json").string();
  CliRun both = rdmalab("run " + sc + " --json " + same + " --record " + (dir / "." / "same.json").string());
  EXPECT_EQ(both.status, 2) << both.out;
  EXPECT_NE(both.out.find("--json and --record both name"), std::string::npos) << both.out;
  // A symbolic link where the old code wrote its temporary: the run does not write through it.
  const auto target = dir / "target.txt";
  { std::ofstream(target) << "untouched\n"; }
  const auto out = dir / "out.json";
  std::filesystem::remove(out.string() + ".tmp");
  std::filesystem::create_symlink(target, out.string() + ".tmp");
  CliRun ok = rdmalab(run + " --json " + out.string());
  EXPECT_EQ(ok.status, 0) << ok.out;
  std::ifstream t(target);
  std::string line;
  std::getline(t, line);
  EXPECT_EQ(line, "untouched");
  std::ifstream j(out);
  EXPECT_EQ(nlohmann::json::parse(j)["status"], "ok");
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "a temporary was left: " << e.path();
}

// --rank, --size and --token belong to --bootstrap, and --bootstrap to a backend with a process
// per rank: anything else is refused before the run, exit 2.
TEST(Cli, PlacementOptionsAreCheckedBeforeTheRun) {
  const std::string run = "run " + scenario("write-bw-64k.yaml");
  CliRun size = rdmalab(run + " --size 2");
  EXPECT_EQ(size.status, 2) << size.out;
  EXPECT_NE(size.out.find("--size goes only with --bootstrap"), std::string::npos) << size.out;
  CliRun rank = rdmalab(run + " --rank abc");
  EXPECT_EQ(rank.status, 2) << rank.out;
  CliRun sim = rdmalab(run + " --bootstrap 127.0.0.1:5999 --rank 0 --size 2 --token t");
  EXPECT_EQ(sim.status, 2) << sim.out;
  EXPECT_NE(sim.out.find("runs every rank in this process"), std::string::npos) << sim.out;
  EXPECT_EQ(sim.out.find("#bytes"), std::string::npos) << "the run went ahead: " << sim.out;
}

// A key of another backend's section on the command line would not act: refused. In the file it
// is how one scenario serves several backends: the run says it is not used.
TEST(Cli, KeysForAnotherBackendAreRefusedOrNamed) {
  const std::string sc = write_tmp("other.yaml", "name: other\nworkload: { type: write_bw, size: 4KiB, iterations: 20 }\nloopback: { corrupt_every: 7 }\n");
  CliRun set = rdmalab("validate " + scenario("write-bw-64k.yaml") + " --set loopback.corrupt_every=3");
  EXPECT_EQ(set.status, 2) << set.out;
  EXPECT_NE(set.out.find("loopback.corrupt_every: is read by the loopback backend only; this run uses simgrid"), std::string::npos) << set.out;
  CliRun file = rdmalab("validate " + sc + " --backend simgrid");
  EXPECT_EQ(file.status, 0) << file.out;
  EXPECT_NE(file.out.find("not used on backend simgrid: loopback.corrupt_every"), std::string::npos) << file.out;
}

// A workload key the workload does not read would not act: refused, from the file or --set. A
// file's keys for its own workload, when --set picks another, are named as not used.
TEST(Cli, KeysTheWorkloadDoesNotReadAreRefusedOrNamed) {
  CliRun set = rdmalab("validate " + scenario("write-bw-64k.yaml") + " --set workload.atomic=cmp_swap");
  EXPECT_EQ(set.status, 2) << set.out;
  EXPECT_NE(set.out.find("workload.atomic: write_bw does not read this key, so it would not act: drop it (it is read by atomic_bw, atomic_lat)"),
            std::string::npos) << set.out;
  const std::string sc = write_tmp("unread.yaml", "name: unread\nworkload: { type: write_bw, size: 4KiB, rx_depth: 4 }\n");
  CliRun file = rdmalab("validate " + sc + " --backend simgrid");
  EXPECT_EQ(file.status, 2) << file.out;
  EXPECT_NE(file.out.find("unread.yaml:2:51: workload.rx_depth: write_bw does not read this key"), std::string::npos) << file.out;
  CliRun other = rdmalab("validate " + scenario("write-bw-64k.yaml") + " --set workload.type=all_reduce");
  EXPECT_EQ(other.status, 0) << other.out;
  EXPECT_NE(other.out.find("not used by workload all_reduce: workload.qps, workload.tx_depth"), std::string::npos) << other.out;
}

// The labs: a lab whose output changed fails its check with where it parted; bless takes the new
// output; a malformed lab file is refused with its line.
TEST(CliLabs, CheckFindsAChangedOutputAndBlessTakesIt) {
  namespace fs = std::filesystem;
  const fs::path root = tmpdir() / "course";
#ifdef RDMALAB_SANITIZED_BUILD
  // AddressSanitizer warns once per process about SimGrid's stack switching, on stderr, which a
  // lab compares: its reports go to files here instead, and the test fails on any error in them
  // (abort_on_error also changes the lab's exit status).
  const char* had = std::getenv("ASAN_OPTIONS");
  const std::string saved = had ? had : "";
  const fs::path asan_log = tmpdir() / "labs-asan";
  ::setenv("ASAN_OPTIONS", (saved + (saved.empty() ? "" : ":") + "log_path=" + asan_log.string()).c_str(), 1);
  struct Restore {
    std::string saved;
    fs::path dir;
    ~Restore() {
      ::setenv("ASAN_OPTIONS", saved.c_str(), 1);
      for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().filename().string().rfind("labs-asan", 0) != 0) continue;
        std::ifstream in(e.path());
        std::stringstream t;
        t << in.rdbuf();
        EXPECT_EQ(t.str().find("ERROR:"), std::string::npos) << e.path() << ":\n" << t.str();
      }
    }
  } restore{saved, tmpdir()};
#endif
  fs::create_directories(root / "scenarios/labs");
  fs::copy_file(fs::path(RDMALAB_SOURCE_DIR) / "scenarios/labs/04-access-errors.yaml", root / "scenarios/labs/04-access-errors.yaml",
                fs::copy_options::overwrite_existing);
  std::ifstream in(fs::path(RDMALAB_SOURCE_DIR) / "scenarios/labs/04-access-errors.tesh");
  std::stringstream text;
  text << in.rdbuf();
  std::string tesh = text.str();
  const std::string good = "IBV_WC_REM_ACCESS_ERR (remote access error)";
  ASSERT_NE(tesh.find(good), std::string::npos);
  tesh.replace(tesh.find(good), good.size(), "IBV_WC_SUCCESS (success)");
  const fs::path lab = root / "scenarios/labs/04-access-errors.tesh";
  { std::ofstream(lab) << tesh; }
  const std::string dir = " --dir " + (root / "scenarios/labs").string();
  CliRun check = rdmalab("labs check 4" + dir);
  EXPECT_EQ(check.status, 1) << check.out;
  EXPECT_NE(check.out.find("completion  IBV_WC_SUCCESS (success)"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("got:"), std::string::npos) << check.out;
  CliRun bless = rdmalab("labs bless 04" + dir);
  EXPECT_EQ(bless.status, 0) << bless.out;
  EXPECT_EQ(rdmalab("labs check" + dir).status, 0);
  { std::ofstream(lab, std::ios::app) << "oops\n"; }
  CliRun bad = rdmalab("labs check 4" + dir);
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("04-access-errors.tesh:"), std::string::npos) << bad.out;
  EXPECT_EQ(rdmalab("labs run 99" + dir).status, 2);
}

// compare: rows paired by what they are (not by order), A, B and B/A per column, and what makes
// the comparison doubtful said first: rows without a partner, a failed run, differing fabrics.
TEST(CliCompare, PairsRowsByWhatTheyAreAndSaysWhatIsDoubtful) {
  const std::string d = tmpdir().string();
  ASSERT_EQ(rdmalab("run " + scenario("write-bw-64k.yaml") + " --quiet --set 'workload.sizes=[4KiB,64KiB]' --set workload.iterations=50 --json " +
                    d + "/a.json").status, 0);
  ASSERT_EQ(rdmalab("run " + scenario("write-bw-64k.yaml") + " --quiet --set 'workload.sizes=[64KiB,1MiB]' --set workload.iterations=50 "
                    "--set fabric.link.bandwidth=200Gbps --json " + d + "/b.json").status, 0);
  CliRun c = rdmalab("compare " + d + "/a.json " + d + "/b.json --csv " + d + "/c.csv");
  EXPECT_EQ(c.status, 0) << c.out;
  for (const char* want : {"fabric.link.bandwidth differs: a has 100Gbps, b has 200Gbps", "1 row(s) of a have no match in b: write_bw 4096 B",
                           "1 row(s) of b have no match in a: write_bw 1048576 B", "1 row(s) matched, 1 only in A, 1 only in B",
                           "BW average[Gb/sec] b/a"})
    EXPECT_NE(c.out.find(want), std::string::npos) << want << " missing from: " << c.out;
  // The 64 KiB row: B (200 Gb/s links) is about twice A.
  auto line_at = c.out.find("\nwrite_bw    65536");
  ASSERT_NE(line_at, std::string::npos) << c.out;
  EXPECT_NE(c.out.substr(line_at, 200).find(" 1.9"), std::string::npos) << c.out;
  std::ifstream csv(d + "/c.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_NE(header.find("BW average[Gb/sec] a"), std::string::npos) << header;
  // A failed run is named; rows of different kinds are refused.
  ASSERT_EQ(rdmalab("run " + scenario("write-bw-64k.yaml") + " --quiet --set workload.type=write_lat --set workload.size=8B --json " + d +
                    "/lat.json").status, 0);
  CliRun kinds = rdmalab("compare " + d + "/a.json " + d + "/lat.json");
  EXPECT_EQ(kinds.status, 2) << kinds.out;
  EXPECT_NE(kinds.out.find("has bandwidth rows and"), std::string::npos) << kinds.out;
  std::string failed = "{\"backend\": \"verbs\", \"status\": \"failed\", \"error\": \"rank 1 died\", \"results\": []}";
  { std::ofstream(d + "/failed.json") << failed; }
  CliRun f = rdmalab("compare " + d + "/a.json " + d + "/failed.json");
  EXPECT_EQ(f.status, 0) << f.out;
  EXPECT_NE(f.out.find("is a run that failed: rank 1 died"), std::string::npos) << f.out;
  EXPECT_EQ(rdmalab("compare " + d + "/a.json " + d + "/missing.json").status, 2);
  // A verbs run's rows name the port it measured (as on Soft-RoCE: rxe0 at 10 Gb/s); against a
  // model of 100 Gb/s links the comparison says so with both numbers.
  nlohmann::json v;
  std::ifstream(d + "/a.json") >> v;
  v["backend"] = "verbs";
  for (auto& r : v["results"]) {
    r["backend"] = "verbs";
    r["device"] = "rxe0";
    r["port_gbps"] = 10;
  }
  { std::ofstream(d + "/verbs.json") << v.dump(); }
  CliRun port = rdmalab("compare " + d + "/a.json " + d + "/verbs.json");
  EXPECT_EQ(port.status, 0) << port.out;
  EXPECT_NE(port.out.find("simgrid models links of 100 Gb/s, but verbs ran on rxe0 active at 10 Gb/s"), std::string::npos) << port.out;
}

// validate reports every problem of a file in one pass, each with its line and key.
TEST(Cli, ValidateReportsEveryProblem) {
  const std::string sc = write_tmp("many.yaml", "name: many\nworkload: { type: write_bw, size: 64KiBs, itertions: 5, qps: 99 }\nfabric: { lnk: 3 }\n");
  CliRun v = rdmalab("validate " + sc);
  EXPECT_EQ(v.status, 2) << v.out;
  for (const char* want : {"many.yaml:2:", "workload.size:", "workload.itertions: unknown key", "workload.qps:", "many.yaml:3:", "fabric.lnk: unknown key"})
    EXPECT_NE(v.out.find(want), std::string::npos) << want << " missing from: " << v.out;
}

// A run whose buffers cannot fit in this machine's memory is refused before it starts, with the
// numbers and the fix; phantom payloads need no bytes and pass.
TEST(Cli, ARunThatCannotFitInMemoryIsRefusedBeforeItStarts) {
  const std::string base = "validate " + scenario("write-bw-64k.yaml") + " --set fabric.nodes=1024 --set workload.size=1GiB";
  CliRun big = rdmalab(base);
  EXPECT_EQ(big.status, 2) << big.out;
  EXPECT_NE(big.out.find("1024 ranks here need at least 2048.0 GiB of buffers"), std::string::npos) << big.out;
  EXPECT_NE(big.out.find("workload.payload: phantom"), std::string::npos) << big.out;
  CliRun phantom = rdmalab(base + " --set workload.payload=phantom");
  EXPECT_EQ(phantom.status, 0) << phantom.out;
}

// Values are never echoed as terminal escape sequences: a control character is refused where it is.
TEST(Cli, ControlCharactersAreRefusedNotEchoed) {
  const std::string sc = write_tmp("escape.yaml", "name: \"a\x1b[31mred\"\n");
  CliRun f = rdmalab("validate " + sc);
  EXPECT_EQ(f.status, 2) << f.out;
  EXPECT_NE(f.out.find("escape.yaml:1: a control character (0x1b)"), std::string::npos) << f.out;
  CliRun s = rdmalab("validate " + scenario("write-bw-64k.yaml") + " --set 'workload.size=\x1b[2Jzz'");
  EXPECT_EQ(s.status, 2) << s.out;
  EXPECT_EQ(s.out.find('\x1b'), std::string::npos) << "an escape reached the terminal";
}

TEST(Cli, HelpListValidateAndKeys) {
  for (const char* sub : {"--help", "run --help", "validate --help", "list --help", "keys --help"}) {
    CliRun h = rdmalab(sub);
    EXPECT_EQ(h.status, 0) << sub << "\n" << h.out;
  }
  CliRun l = rdmalab("list");
  ASSERT_EQ(l.status, 0);
  EXPECT_NE(l.out.find("loopback"), std::string::npos);
  EXPECT_NE(l.out.find("usable"), std::string::npos);
  for (const char* w : {"write_bw", "read_bw", "send_bw", "atomic_bw", "write_lat", "read_lat", "send_lat", "atomic_lat"})
    EXPECT_NE(l.out.find(w), std::string::npos) << w;
  // The in-network reductions, and that they are the model's alone.
  EXPECT_NE(l.out.find("in-network reductions:"), std::string::npos) << l.out;
  for (const char* r : {"nvls ", "nvls_tree ", "collnet "}) EXPECT_NE(l.out.find(std::string("  ") + r), std::string::npos) << r << "\n" << l.out;
  if (l.out.find("simgrid    usable") != std::string::npos)
    EXPECT_NE(l.out.find("NCCL's tree between the nodes: simgrid only"), std::string::npos) << l.out;
  CliRun v = rdmalab("validate " + scenario("write-bw-64k.yaml"));
  EXPECT_EQ(v.status, 0) << v.out;
  EXPECT_NE(v.out.find("ok"), std::string::npos);
  CliRun k = rdmalab("keys");
  EXPECT_EQ(k.status, 0);
  EXPECT_NE(k.out.find("workload.tx_depth"), std::string::npos);
}

TEST(Cli, EveryShippedScenarioValidates) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(RDMALAB_SOURCE_DIR) + "/scenarios")) {
    if (e.path().extension() != ".yaml") continue;
    CliRun v = rdmalab("validate " + e.path().string());
    EXPECT_EQ(v.status, 0) << e.path() << "\n" << v.out;
  }
}

}  // namespace

namespace {

TEST(Cli, CollectiveRunPrintsNcclTestsColumnsAndJson) {
  auto json = (tmpdir() / "coll.json").string();
  CliRun r = rdmalab("run " + scenario("all-reduce-sweep.yaml") + " --set workload.sizes=8B..64KiB --set fabric.nodes=8 " +
                     "--set 'fabric.fat_tree.down=[4,2]' --set 'fabric.fat_tree.up=[1,2]' --set workload.memory=host --json " + json);
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* col : {"size", "count", "type", "redop", "root", "algbw", "busbw", "#wrong", "out-of-place", "in-place"})
    EXPECT_NE(r.out.find(col), std::string::npos) << col << "\n" << r.out;
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["results"].size(), 28u);  // 14 sizes, out-of-place and in-place
  EXPECT_GT(j["results"][27]["busbw_gbps"].get<double>(), 0);
  EXPECT_EQ(j["results"][0]["placement"], "out-of-place");
  EXPECT_EQ(j["results"][1]["placement"], "in-place");
}

TEST(Cli, TrainingRunPrintsStepComputeAndExposedCommunication) {
  CliRun r = rdmalab("run " + scenario("write-bw-64k.yaml") + " --backend simgrid --set workload.type=train_dp --set fabric.nodes=4 " +
                     "--set training.model=custom --set 'training.layers=[100000,300000]' --set training.batch=32 --set workload.iterations=1");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* col : {"step[ms]", "compute[ms]", "comm[ms]", "exposed[ms]", "custom", "dp 4 x tp 1"})
    EXPECT_NE(r.out.find(col), std::string::npos) << col << "\n" << r.out;
}

TEST(Cli, DoctorSaysWhatGpuDirectNeedsHere) {
  CliRun r = rdmalab("doctor");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* line : {"GPU", "nvidia_peermem", "RDMA devices", "path dmabuf", "path peermem", "path staged"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  CliRun j = rdmalab("doctor --json");
  ASSERT_EQ(j.status, 0) << j.out;
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_TRUE(doc.contains("gpus"));
  EXPECT_TRUE(doc.contains("paths"));
}

}  // namespace

// --progress: lines into a pipe (every 2 s), and for a collective the share of its bytes sent
// with an ETA (a 1 GiB ring all-reduce on 32 simulated nodes, both placements: about 5 s).
TEST(Cli, ProgressIntoAPipeSaysHowMuchIsDoneAndWhatIsLeft) {
  CliRun r = rdmalab("run " + scenario("ar-1gib-fat-tree.yaml") + " --set fabric.nodes=32 --set workload.placement=both --progress");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto at = r.out.find("% of the work, ETA ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const auto line = r.out.rfind('\n', at);
  const int pct = std::stoi(r.out.substr(line + std::string("\n[simgrid] ").size()));
  EXPECT_GT(pct, 0);
  EXPECT_LT(pct, 100);
  CliRun quiet = rdmalab("run " + scenario("ar-1gib-fat-tree.yaml") + " --set fabric.nodes=32");
  EXPECT_EQ(quiet.out.find("[simgrid]"), std::string::npos) << "no progress into a pipe without --progress";
}

// rdmalab sweep: the product of two keys' values in parallel processes, one table, a cache that
// reruns only what changed, and every bad input refused before any point runs.
TEST(CliSweep, ProductOfValuesInParallelWithOneTableAndACache) {
  const auto out = tmpdir() / "sweep";
  std::filesystem::remove_all(out);
  const std::string cmd = "sweep " + scenario("write-bw-64k.yaml") +
                          " --vary workload.size=4KiB,64KiB --vary fabric.link.bandwidth=100Gbps,200Gbps,400Gbps -j 2 --out " + out.string();
  CliRun r = rdmalab(cmd);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("6 points (6 run, 0 cached, 0 failed)"), std::string::npos) << r.out;
  std::ifstream csv(out / "sweep.csv");
  std::string header, line;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("workload.size,fabric.link.bandwidth,status,workload,#bytes", 0), 0u) << header;
  std::vector<std::string> lines;
  while (std::getline(csv, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0].rfind("4KiB,100Gbps,ok,write_bw,4096,", 0), 0u) << lines[0];
  EXPECT_EQ(lines[5].rfind("64KiB,400Gbps,ok,write_bw,65536,", 0), 0u) << lines[5];
  // Each point is the run `rdmalab run --set ...` gives: the 200 Gb/s point twice the 100 Gb/s one at 64 KiB, within the headers.
  std::ifstream jin(out / "sweep.json");
  auto j = nlohmann::json::parse(jin);
  ASSERT_EQ(j["points"].size(), 6u);
  const double bw100 = j["points"][3]["results"][0]["bw_gbps"], bw200 = j["points"][4]["results"][0]["bw_gbps"];
  EXPECT_NEAR(bw200 / bw100, 2.0, 0.05);
  EXPECT_LE(bw100, 100.0);
  EXPECT_EQ(j["points"][4]["values"]["fabric.link.bandwidth"], "200Gbps");
  const std::string first_table = j["rows"].dump();
  // Again: every point is cached and the table is the same, byte for byte.
  CliRun again = rdmalab(cmd);
  ASSERT_EQ(again.status, 0) << again.out;
  EXPECT_NE(again.out.find("6 points (0 run, 6 cached, 0 failed)"), std::string::npos) << again.out;
  std::ifstream jin2(out / "sweep.json");
  EXPECT_EQ(nlohmann::json::parse(jin2)["rows"].dump(), first_table);
  // One more value: only the new points run.
  CliRun more = rdmalab("sweep " + scenario("write-bw-64k.yaml") +
                        " --vary workload.size=4KiB,64KiB --vary fabric.link.bandwidth=100Gbps,200Gbps,400Gbps,800Gbps -j 2 --out " + out.string());
  ASSERT_EQ(more.status, 0) << more.out;
  EXPECT_NE(more.out.find("8 points (2 run, 6 cached, 0 failed)"), std::string::npos) << more.out;
}

// The sweep draws its plots (rdmalab-plot, Qt Charts off screen): PNG and SVG files whose axes,
// units, ticks and legends are labelled; --no-plots draws none.
TEST(CliSweep, PlotsWithLabelledAxesAndLegends) {
  const auto out = tmpdir() / "sweep-plots";
  std::filesystem::remove_all(out);
  const std::string cmd = "sweep " + scenario("all-reduce-sweep.yaml") +
                          " --vary fabric.link.bandwidth=100Gbps,400Gbps --vary workload.algorithm=ring,tree --set 'workload.sizes=[1MiB,16MiB]' -j 2 --out " +
                          out.string();
  CliRun r = rdmalab(cmd);
  ASSERT_EQ(r.status, 0) << r.out;
#ifdef RDMALAB_HAVE_PLOT
  EXPECT_NE(r.out.find("# plots (PNG and SVG"), std::string::npos) << r.out;
  auto text = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string size_svg = text(out / "plots" / "busbw-vs-size.svg");
  for (const char* label : {"busbw vs message size", "message size (bytes)", "busbw (GB/s)", "1 MiB", "16 MiB",
                            "link.bandwidth=400Gbps, algorithm=tree"})
    EXPECT_NE(size_svg.find(label), std::string::npos) << label;
  const std::string bw_svg = text(out / "plots" / "busbw-vs-link.bandwidth.svg");
  for (const char* label : {"busbw vs fabric.link.bandwidth at 16 MiB", "100Gbps", "400Gbps", "algorithm=ring", "algorithm=tree"})
    EXPECT_NE(bw_svg.find(label), std::string::npos) << label;
  for (const char* png : {"busbw-vs-size.png", "busbw-vs-link.bandwidth.png", "busbw-vs-algorithm.png"}) {
    const std::string bytes = text(out / "plots" / png);
    EXPECT_GT(bytes.size(), 10000u) << png;
    EXPECT_EQ(bytes.substr(0, 4), "\x89PNG") << png;
  }
  EXPECT_FALSE(std::filesystem::exists(out / "plots" / "busbw-vs-size.svg.part"));
#else
  EXPECT_NE(r.out.find("no plots: rdmalab-plot is not built here"), std::string::npos) << r.out;
#endif
  std::filesystem::remove_all(out / "plots");
  CliRun none = rdmalab(cmd + " --no-plots");
  ASSERT_EQ(none.status, 0) << none.out;
  EXPECT_FALSE(std::filesystem::exists(out / "plots"));
  CliRun bad = rdmalab(cmd + " --measure 'busbw'");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("--measure 'busbw': not a result column; use one of"), std::string::npos) << bad.out;
}

TEST(CliSweep, ZipPairsTheValues) {
  const auto out = tmpdir() / "sweep-zip";
  std::filesystem::remove_all(out);
  CliRun r = rdmalab("sweep " + scenario("write-bw-64k.yaml") + " --zip --vary workload.size=4KiB,64KiB --vary fabric.link.bandwidth=100Gbps,200Gbps --out " +
                     out.string() + " --quiet");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "") << "--quiet prints nothing";
  std::ifstream jin(out / "sweep.json");
  auto j = nlohmann::json::parse(jin);
  ASSERT_EQ(j["points"].size(), 2u);
  EXPECT_EQ(j["form"], "zip");
  EXPECT_EQ(j["points"][1]["values"]["workload.size"], "64KiB");
  EXPECT_EQ(j["points"][1]["values"]["fabric.link.bandwidth"], "200Gbps");
}

TEST(CliSweep, BadInputIsRefusedBeforeAnyPointRuns) {
  const auto out = tmpdir() / "sweep-bad";
  std::filesystem::remove_all(out);
  struct Case {
    std::string vary, says;
  };
  for (const Case& c : {Case{"--vary fabric.nodez=2,4", "unknown key 'fabric.nodez'; did you mean 'fabric.nodes'?"},
                        Case{"--vary workload.size=4KiB,4Kib", "sweep point 1 (workload.size=4Kib)"},
                        Case{"--vary workload.size=4KiB,", "an empty value"},
                        Case{"--vary workload.size", "give KEY=V1,V2"},
                        Case{"--vary fabric.nodes=2,3", "needs an even number of ranks"},
                        Case{"--vary workload.size=1KiB --vary workload.size=2KiB", "given twice"},
                        Case{"--zip --vary workload.size=1KiB,2KiB --vary fabric.nodes=2", "zipped axes need as many each"},
                        Case{"--vary workload.size=1KiB -j 0", "-j 0"}}) {
    CliRun r = rdmalab("sweep " + scenario("write-bw-64k.yaml") + " " + c.vary + " --out " + out.string());
    EXPECT_EQ(r.status, 2) << c.vary << "\n" << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.vary << "\n" << r.out;
    EXPECT_TRUE(!std::filesystem::exists(out / "points") || std::filesystem::is_empty(out / "points")) << c.vary << ": a point ran";
  }
}

TEST(CliSweep, APointThatFailsIsReportedAndTheOthersGoOn) {
  const auto out = tmpdir() / "sweep-fail";
  std::filesystem::remove_all(out);
  // Loopback's fault injection corrupts the payload of one point: its run fails (wrong bytes), the other is fine.
  CliRun r = rdmalab("sweep " + scenario("write-bw-64k.yaml") + " --backend loopback --set workload.iterations=50 --vary loopback.corrupt_every=0,1 --out " +
                     out.string());
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("sweep point 1 (loopback.corrupt_every=1) failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 points (2 run, 0 cached, 1 failed)"), std::string::npos) << r.out;
  std::ifstream jin(out / "sweep.json");
  auto j = nlohmann::json::parse(jin);
  EXPECT_EQ(j["points"][0]["status"], "ok");
  EXPECT_EQ(j["points"][1]["status"], "failed");
}

// A run's results say what produced them: its overrides, every key as it resolved and where
// from, and a name that says it was overridden.
TEST(Cli, ResultsRecordTheResolvedScenarioAndTheOverrides) {
  auto json = (tmpdir() / "provenance.json").string();
  CliRun r = rdmalab("run " + scenario("write-bw-64k.yaml") + " --set fabric.nodes=4 --set workload.iterations=100 --json " + json);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("scenario write-bw-64k [--set fabric.nodes=4 workload.iterations=100]"), std::string::npos) << r.out;
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["name"], "write-bw-64k [--set fabric.nodes=4 workload.iterations=100]");
  ASSERT_EQ(j["overrides"].size(), 2u);
  EXPECT_EQ(j["overrides"][0], "fabric.nodes=4");
  EXPECT_EQ(j["resolved"]["fabric.nodes"]["value"], "4");
  EXPECT_EQ(j["resolved"]["fabric.nodes"]["from"].get<std::string>().rfind("--set", 0), 0u);
  EXPECT_EQ(j["resolved"]["workload.size"]["value"], "64KiB");
  EXPECT_NE(j["resolved"]["workload.size"]["from"].get<std::string>().find("write-bw-64k.yaml:"), std::string::npos);
  EXPECT_EQ(j["resolved"]["fabric.model"]["from"], "default");
  // Without --set: the scenario's own name, no overrides.
  CliRun plain = rdmalab("run " + scenario("write-bw-64k.yaml") + " --json " + json);
  ASSERT_EQ(plain.status, 0) << plain.out;
  std::ifstream in2(json);
  auto j2 = nlohmann::json::parse(in2);
  EXPECT_EQ(j2["name"], "write-bw-64k");
  EXPECT_FALSE(j2.contains("overrides"));
}
