// A large all-reduce at scale on the SimGrid model (a benchmark, not a test): RANKS one-GPU nodes
// on a two-level fat tree (1:1, 400 Gb/s), an all-reduce of SIZE with NCCL's choice of algorithm
// and protocol (workload.algorithm and .protocol auto), phantom payloads. Prints what ran, the
// simulated time and bus bandwidth, the wall time and the peak memory of the process; exits 1 when
// the peak is above 2 GiB or the bus bandwidth above the link's (a figure that cannot be).
//
//   build/bench/allreduce_scale_bench [RANKS [SIZE]]      (default 1024 16GiB)
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <string>

#include "backends.h"
#include "rdmalab/run.h"

using namespace rdmalab;

int main(int argc, char** argv) {
  const std::string ranks = argc > 1 ? argv[1] : "1024";
  const std::string size = argc > 2 ? argv[2] : "16GiB";
  const double link_gbps = 400;
  auto backend = all_backends().make("simgrid");
  if (!backend) {
    fmt::print(stderr, "{}\n", backend.status().message());
    return 2;
  }
  auto sc = parse_scenario("name: allreduce-scale\nbackend: simgrid\n", "allreduce-scale.yaml",
                           {"fabric.topology=fat_tree", "fabric.nodes=" + ranks, fmt::format("fabric.link.bandwidth={}Gbps", link_gbps),
                            "fabric.link.latency=1us", "workload.type=all_reduce", "workload.size=" + size, "workload.memory=phantom",
                            "workload.algorithm=auto", "workload.protocol=auto", "workload.placement=out_of_place", "workload.iterations=1",
                            "workload.warmup=0"},
                           full_schema(all_backends()));
  if (!sc) {
    fmt::print(stderr, "{}\n", sc.status().message());
    return 2;
  }
  RunOptions opt;
  opt.progress = true;
  const auto t0 = std::chrono::steady_clock::now();
  RunOutcome out = run_scenario(*sc, **backend, opt);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!out.status || out.rows.empty()) {
    fmt::print(stderr, "run failed: {}\n", out.status.message());
    return 1;
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double peak_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
  const auto& r = out.rows[0];
  const double busbw = r.extra.at("busbw_gbps");
  auto note = [&](const char* k) { return r.notes.count(k) ? r.notes.at(k) : std::string("-"); };
  fmt::print("all_reduce of {} on {} ranks (fat tree 1:1, {} Gb/s), algorithm and protocol auto\n", size, ranks, link_gbps);
  fmt::print("ran: {}, {}; NCCL's model picks {}; chunk {}\n", note("algorithm"), note("protocol"), note("nccl_choice"), note("chunk"));
  fmt::print("simulated time {:.2f} ms, busbw {:.2f} GB/s (link {:.1f} GB/s)\n", r.time_s * 1e3, busbw, link_gbps / 8);
  fmt::print("wall time {:.1f} s, peak memory {:.0f} MiB\n", wall, peak_mib);
  int rc = 0;
  if (peak_mib > 2048) {
    fmt::print("FAIL: peak memory above 2 GiB\n");
    rc = 1;
  }
  if (busbw > link_gbps / 8) {
    fmt::print("FAIL: bus bandwidth above the link's\n");
    rc = 1;
  }
  return rc;
}
