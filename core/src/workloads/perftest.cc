// The perftest RC set. Ranks work in pairs: rank i (the client, i < n/2) with rank i + n/2 (the
// server), as ib_*_bw's client and server. Bandwidth tests keep tx_depth requests in flight per
// QP; latency tests ping-pong one message. Every payload that arrives is checked against the
// sender's pattern, and the counts of wrong bytes are summed over all ranks.
#include "rdmalab/workloads/perftest.h"

#include <fmt/format.h>

#include <algorithm>

#include "perftest_pair.h"
#include "rdmalab/units.h"
#include "rdmalab/workloads/common.h"

namespace rdmalab::workloads {
namespace {

using namespace perftest_detail;

// ------------------------------------------------------------------------------------------
// Checks before a run.

Status check_common(const Scenario& sc, const Capabilities& caps, int ranks, Op op, bool latency, const char* name) {
  if (ranks < 2 || ranks % 2 != 0)
    return sc.error("fabric.nodes", fmt::format("{} runs between pairs of ranks: needs an even number of ranks, 2 or more (is {})", name, ranks));
  if (sc.is_set("workload.size") && sc.is_set("workload.sizes"))
    return sc.error("workload.sizes", "give either workload.size or workload.sizes, not both");
  if (sc.is_set("workload.iterations") && sc.is_set("workload.duration"))
    return sc.error("workload.duration", "give either workload.iterations or workload.duration, not both");
  if (latency && (op == Op::write || op == Op::send) && sc.is_set("workload.duration"))
    return sc.error("workload.duration", fmt::format("{} is a ping-pong: give workload.iterations, not a duration", name));
  if (latency && sc.get_int("workload.qps") != 1)
    return sc.error("workload.qps", fmt::format("{} measures one QP, as perftest's latency tests do: qps must be 1", name));
  if (latency && sc.get_bool("workload.bidirectional"))
    return sc.error("workload.bidirectional", fmt::format("{} is already a round trip: bidirectional applies to *_bw workloads", name));
  auto tx = sc.get_int("workload.tx_depth");
  if (sc.is_set("workload.cq_mod") && sc.get_int("workload.cq_mod") > tx)
    return sc.error("workload.cq_mod", fmt::format("cq_mod ({}) must not exceed tx_depth ({}): the send queue would fill before a completion is asked for",
                                                   sc.get_int("workload.cq_mod"), tx));
  if (sc.get_int("workload.post_list") > tx)
    return sc.error("workload.post_list", fmt::format("post_list ({}) must not exceed tx_depth ({})", sc.get_int("workload.post_list"), tx));
  if (op == Op::atomic && ((sc.is_set("workload.size") && sc.get_size("workload.size") != 8) || sc.is_set("workload.sizes")))
    return sc.error(sc.is_set("workload.sizes") ? "workload.sizes" : "workload.size", "atomics always move 8 bytes: leave size out");
  if (op == Op::read && !caps.rdma_read) return sc.error("workload.type", fmt::format("{} needs RDMA read, which this backend does not offer", name));
  if (op == Op::atomic && !caps.atomics) return sc.error("workload.type", fmt::format("{} needs atomics, which this backend does not offer", name));
  auto inl = sc.get_size("workload.inline");
  if (inl > caps.max_inline)
    return sc.error("workload.inline", fmt::format("this backend sends at most {} inline (asked {})", units::format_size(caps.max_inline), units::format_size(inl)));
  if (inl > 0 && memory_kind_of(sc) == MemoryKind::cuda)
    return sc.error("workload.inline", "inline payloads are read by the CPU when posted: not from GPU memory (set inline: 0B)");
  if ((op == Op::read || op == Op::atomic) && sc.is_set("workload.inline") && inl > 0)
    return sc.error("workload.inline", "reads and atomics carry no inline payload");
  std::uint64_t max_size = 8;
  if (op != Op::atomic) {
    auto sizes = sc.is_set("workload.sizes") ? sc.get_sizes("workload.sizes") : std::vector<std::uint64_t>{sc.get_size("workload.size")};
    max_size = *std::max_element(sizes.begin(), sizes.end());
  }
  if (caps.max_msg_size && max_size > caps.max_msg_size)
    return sc.error(sc.is_set("workload.sizes") ? "workload.sizes" : "workload.size",
                    fmt::format("this backend moves at most {} per message", units::format_size(caps.max_msg_size)));
  if (static_cast<std::uint64_t>(tx) > caps.max_qp_wr)
    return sc.error("workload.tx_depth", fmt::format("this backend allows at most {} requests per queue", caps.max_qp_wr));
  if (static_cast<std::uint64_t>(sc.get_int("workload.rx_depth")) > caps.max_qp_wr)
    return sc.error("workload.rx_depth", fmt::format("this backend allows at most {} requests per queue", caps.max_qp_wr));
  RDMALAB_TRY(check_memory(sc, caps));
  const MemoryKind kind = memory_kind_of(sc);
  if (kind == MemoryKind::cuda && latency && op == Op::write)
    return sc.error("workload.memory", fmt::format("{} sees a message arrive by polling its last byte from the CPU, which cannot read GPU memory "
                                                   "(perftest's write latency test has the same limit): use host memory, or send_lat", name));
  if (phantom_payload(sc) && (op == Op::atomic || (latency && op == Op::write)))
    return sc.error(kind == MemoryKind::phantom ? "workload.memory" : "workload.payload", fmt::format("{} needs bytes that really change (counters, arrival markers): use host memory", name));
  return Status::ok();
}

void add(WorkloadRegistry& reg, const char* name, const char* desc, Op op, bool latency) {
  WorkloadInfo w;
  w.name = name;
  w.description = desc;
  w.kind = latency ? WorkloadKind::latency : WorkloadKind::bandwidth;
  w.check = [op, latency, name](const Scenario& sc, const Capabilities& caps, int ranks) {
    return check_common(sc, caps, ranks, op, latency, name);
  };
  // Every QP has a send and a receive region of at least the largest message (setup()).
  w.min_buffer_bytes = [op](const Scenario& sc) -> std::uint64_t {
    if (op == Op::atomic) return 0;
    auto sizes = sc.is_set("workload.sizes") ? sc.get_sizes("workload.sizes") : std::vector<std::uint64_t>{sc.get_size("workload.size")};
    return 2 * static_cast<std::uint64_t>(sc.get_int("workload.qps")) * *std::max_element(sizes.begin(), sizes.end());
  };
  w.reads = {"workload.size", "workload.sizes", "workload.iterations", "workload.warmup", "workload.duration", "workload.qps",
             "workload.tx_depth", "workload.cq_mod", "workload.bidirectional", "workload.verify", "workload.memory", "workload.payload",
             "workload.gpu_path", "workload.timeout"};
  if (!latency) w.reads.push_back("workload.post_list");
  if (op == Op::send) w.reads.push_back("workload.rx_depth");
  if (op == Op::write || op == Op::send) w.reads.push_back("workload.inline");
  if (op == Op::atomic) w.reads.push_back("workload.atomic");
  if (latency)
    w.run = [op, name](RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows) { return run_lat(env, sc, rows, op, name); };
  else
    w.run = [op, name](RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows) { return run_bw(env, sc, rows, op, name); };
  reg.add(std::move(w));
}

}  // namespace

void register_perftest(WorkloadRegistry& reg) {
  add(reg, "write_bw", "RDMA write bandwidth (ib_write_bw)", Op::write, false);
  add(reg, "read_bw", "RDMA read bandwidth (ib_read_bw)", Op::read, false);
  add(reg, "send_bw", "send/receive bandwidth (ib_send_bw)", Op::send, false);
  add(reg, "atomic_bw", "8-byte atomic operation rate (ib_atomic_bw)", Op::atomic, false);
  add(reg, "write_lat", "RDMA write ping-pong latency, half round trip (ib_write_lat)", Op::write, true);
  add(reg, "read_lat", "RDMA read latency, full round trip (ib_read_lat)", Op::read, true);
  add(reg, "send_lat", "send/receive ping-pong latency, half round trip (ib_send_lat)", Op::send, true);
  add(reg, "atomic_lat", "8-byte atomic latency, full round trip (ib_atomic_lat)", Op::atomic, true);
}

}  // namespace rdmalab::workloads
