// The scenario keys core understands. docs/scenarios.md lists them; `rdmalab keys` prints them.
#include "rdmalab/scenario.h"

namespace rdmalab {

Schema core_schema() {
  Schema s;
  using T = ValueType;
  auto add = [&](std::string key, T type, std::string def, std::string help, double min = -1e300, double max = 1e300,
                 std::vector<std::string> allowed = {}) {
    s.add(KeySpec{std::move(key), type, std::move(def), std::move(help), std::move(allowed), min, max});
  };
  add("name", T::string, "unnamed", "short name of the scenario, printed with results");
  add("description", T::string, "", "what the scenario shows and what to look at");
  add("backend", T::enumeration, "loopback", "transport to run on when --backend is not given");
  add("seed", T::integer, "1", "seed for payload patterns and any randomness; same seed, same results", 0, 9.2e18);

  add("fabric.topology", T::enumeration, "star", "shape of the cluster network", -1e300, 1e300,
      {"star", "full", "fat_tree", "rail_optimized", "torus", "dragonfly"});
  add("fabric.nodes", T::integer, "2", "number of nodes (one rank per node)", 1, 1 << 20);
  add("fabric.link.bandwidth", T::bandwidth, "100Gbps", "bandwidth of each link, each direction", 1, 1e15);
  add("fabric.link.latency", T::time, "1us", "latency of each link", 0, 1);

  add("workload.type", T::enumeration, "write_bw", "the workload to run (rdmalab list)");
  add("workload.size", T::size, "64KiB", "message size", 1, 1u << 30);
  add("workload.sizes", T::size_list, "", "several message sizes: a list, or a power-of-two range 2B..8MiB", 1, 1u << 30);
  add("workload.iterations", T::integer, "1000", "messages per QP per size (perftest -n)", 1, 1e9);
  add("workload.warmup", T::integer, "0", "untimed iterations before the timed ones", 0, 1e9);
  add("workload.duration", T::time, "", "run each size for this long instead of a fixed count (perftest -D)", 1e-6, 86400);
  add("workload.qps", T::integer, "1", "queue pairs per rank pair (perftest -q)", 1, 16);
  add("workload.tx_depth", T::integer, "128", "outstanding send requests per QP (perftest -t)", 1, 16384);
  add("workload.rx_depth", T::integer, "512", "posted receives per QP for send workloads (perftest -r)", 1, 16384);
  add("workload.inline", T::size, "0B", "send payloads up to this size inline (perftest -I)", 0, 4096);
  add("workload.cq_mod", T::integer, "100", "signal one send completion every N requests (perftest -Q); at most tx_depth", 1, 16384);
  add("workload.post_list", T::integer, "1", "requests handed to each post_send call (perftest -l)", 1, 1024);
  add("workload.bidirectional", T::boolean, "false", "both sides send at once (perftest -b)");
  add("workload.atomic", T::enumeration, "fetch_add", "atomic operation for atomic_* workloads (perftest -A)", -1e300, 1e300,
      {"fetch_add", "cmp_swap"});
  add("workload.verify", T::boolean, "true", "check every payload byte that arrives");
  add("workload.memory", T::enumeration, "host",
      "where buffers live: host, cuda (GPU), or phantom (simulated only: sizes without bytes, for runs too large to hold)",
      -1e300, 1e300, {"host", "cuda", "phantom"});
  add("workload.timeout", T::time, "30s", "longest wait for one completion before the run fails", 1e-6, 86400);
  s.add_alternatives("workload.size", "workload.sizes");
  s.add_alternatives("workload.iterations", "workload.duration");
  return s;
}

}  // namespace rdmalab
