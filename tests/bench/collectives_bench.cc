// All-reduce bus bandwidth on the loopback backend (host memory) against the memory bandwidth
// measured in the same run: loopback moves every byte with memcpy and reduces on the CPU, so
// memory bandwidth is its ceiling. Prints a table and the ratio busbw / memcpy bandwidth.
//
//   build/bench/collectives_bench [RANKS...]      (default 2 4)
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends.h"
#include "rdmalab/run.h"

using namespace rdmalab;

namespace {

// Bytes copied per second by memcpy of 256 MiB, best of 5 (read + write counted once, as the
// bytes moved, like busbw).
double memcpy_gbps() {
  const std::size_t n = 256u << 20;
  std::vector<char> a(n, 1), b(n, 2);
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), n);
    auto t1 = std::chrono::steady_clock::now();
    best = std::max(best, static_cast<double>(n) / std::chrono::duration<double>(t1 - t0).count() / 1e9);
    a[static_cast<std::size_t>(i)] = b[static_cast<std::size_t>(i) + 1];
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> ranks;
  for (int i = 1; i < argc; ++i) ranks.push_back(std::atoi(argv[i]));
  if (ranks.empty()) ranks = {2, 4};
  auto backend = all_backends().make("loopback");
  if (!backend) {
    fmt::print(stderr, "{}\n", backend.status().message());
    return 2;
  }
  const double mem = memcpy_gbps();
  fmt::print("memcpy bandwidth (256 MiB, best of 5): {:.2f} GB/s\n\n", mem);
  fmt::print("{:>6} {:>10} {:>10} {:>10} {:>10} {:>14}\n", "ranks", "size", "algo", "time[us]", "busbw", "busbw/memcpy");
  for (int p : ranks) {
    for (const char* size : {"1MiB", "16MiB", "64MiB"}) {
      auto sc = parse_scenario("name: bench\n", "bench.yaml",
                               {"fabric.nodes=" + std::to_string(p), "workload.type=all_reduce", std::string("workload.size=") + size,
                                "workload.algorithm=ring", "workload.iterations=10", "workload.warmup=2", "workload.placement=out_of_place",
                                "workload.chunk=1MiB"},
                               full_schema(all_backends()));
      if (!sc) {
        fmt::print(stderr, "{}\n", sc.status().message());
        return 2;
      }
      RunOutcome out = run_scenario(*sc, **backend);
      if (!out.status || out.rows.empty()) {
        fmt::print(stderr, "run failed: {}\n", out.status.message());
        return 1;
      }
      const auto& r = out.rows[0];
      const double busbw = r.extra.at("busbw_gbps");
      fmt::print("{:>6} {:>10} {:>10} {:>10.1f} {:>10.2f} {:>14.3f}\n", p, size, r.notes.at("algorithm"), r.time_s * 1e6, busbw, busbw / mem);
    }
  }
  return 0;
}
