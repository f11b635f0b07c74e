// Helpers shared by workloads: waiting for completions with clear errors, pair wiring.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rdmalab/backend.h"
#include "rdmalab/results.h"
#include "rdmalab/scenario.h"
#include "rdmalab/transport.h"

namespace rdmalab::workloads {

// Blocks until at least one completion; every completion with a non-success status becomes an
// Errc::transport error naming the rank, the request and the verbs status text.
Result<std::size_t> wait_ok(RankEnv& env, CompletionQueue& cq, std::span<Completion> out, double timeout_s,
                            const char* what);

// "rank 1: rdma_write wr_id 0x5 on QP 3 completed with 'remote access error' (rem_access_err)"
std::string describe_failed_completion(int rank, const Completion& wc);

// The scenario's workload.memory as a MemoryKind.
MemoryKind memory_kind_of(const Scenario& sc);

// Whether buffers hold no bytes: workload.payload: phantom, or workload.memory: phantom (host
// memory without bytes). Payload checks are off then.
bool phantom_payload(const Scenario& sc);

// workload.memory can be used here: a provider is installed (else why not) and the backend can
// register that kind. Errors name the key.
Status check_memory(const Scenario& sc, const Capabilities& caps);

// CPU seconds over a span of a rank's work (Runtime::cpu_times): its thread's and its machine's;
// -1 where not measured (a simulated clock). Plain data: it travels in the ranks' reports.
struct CpuSpan {
  double thread_s = -1, machine_s = -1;
  void start(Runtime& rt);  // the readings now
  void stop(Runtime& rt);   // the seconds since start (still -1 if it never started)
};

// A bandwidth row's CPU seconds per GB moved (perftest's --cpu_util, per byte): the initiators'
// threads, the targets' threads, and the machine of the first report (rank 0's), over all its
// CPUs. Each report has `bool initiator`, `std::uint64_t bytes` (moved, counted once over all
// reports) and `CpuSpan cpu`; nothing is set unless every rank measured and bytes moved.
template <class Report>
void add_cpu_per_gb(ResultRow& row, const std::vector<Report>& reports) {
  std::uint64_t moved = 0;
  double initiators = 0, targets = 0;
  for (const auto& r : reports) {
    if (r.cpu.thread_s < 0) return;
    moved += r.bytes;
    (r.initiator ? initiators : targets) += std::max(0.0, r.cpu.thread_s);
  }
  if (moved == 0) return;
  const double gb = static_cast<double>(moved) / 1e9;
  row.extra["cpu_initiator_s_per_gb"] = initiators / gb;
  row.extra["cpu_target_s_per_gb"] = targets / gb;
  if (reports[0].cpu.machine_s >= 0) row.extra["cpu_machine_s_per_gb"] = reports[0].cpu.machine_s / gb;
}

// Seed of the payload pattern a rank sends on one of its QPs.
inline std::uint64_t stream_seed(std::uint64_t scenario_seed, int rank, int qp) {
  return scenario_seed * 1000003ull + static_cast<std::uint64_t>(rank) * 131ull + static_cast<std::uint64_t>(qp) + 1;
}

}  // namespace rdmalab::workloads
