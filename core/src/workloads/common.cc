#include "rdmalab/workloads/common.h"

#include <fmt/format.h>

namespace rdmalab::workloads {

namespace {
const char* wc_status_code(WcStatus s) {
  switch (s) {
    case WcStatus::success: return "success";
    case WcStatus::loc_len_err: return "loc_len_err";
    case WcStatus::loc_qp_op_err: return "loc_qp_op_err";
    case WcStatus::loc_prot_err: return "loc_prot_err";
    case WcStatus::wr_flush_err: return "wr_flush_err";
    case WcStatus::rem_inv_req_err: return "rem_inv_req_err";
    case WcStatus::rem_access_err: return "rem_access_err";
    case WcStatus::rem_op_err: return "rem_op_err";
    case WcStatus::retry_exc_err: return "retry_exc_err";
    case WcStatus::rnr_retry_exc_err: return "rnr_retry_exc_err";
    case WcStatus::general_err: return "general_err";
  }
  return "?";
}
}  // namespace

MemoryKind memory_kind_of(const Scenario& sc) {
  const std::string m = sc.get_string("workload.memory");
  return m == "cuda" ? MemoryKind::cuda : m == "phantom" ? MemoryKind::phantom : MemoryKind::host;
}

bool phantom_payload(const Scenario& sc) {
  return sc.get_string("workload.payload") == "phantom" || memory_kind_of(sc) == MemoryKind::phantom;
}

Status check_memory(const Scenario& sc, const Capabilities& caps) {
  const MemoryKind kind = memory_kind_of(sc);
  if (phantom_payload(sc) && !caps.memory_kinds.has(MemoryKind::phantom))
    return sc.error(sc.get_string("workload.payload") == "phantom" ? "workload.payload" : "workload.memory",
                    "this backend moves real bytes: payloads without bytes exist only in a model (the simgrid backend)");
  if (phantom_payload(sc) && kind == MemoryKind::cuda) {
    if (!caps.memory_kinds.has(MemoryKind::cuda)) return sc.error("workload.memory", "this backend cannot register cuda memory");
    return Status::ok();
  }
  if (!(kind == MemoryKind::cuda && caps.models_gpu_memory) && !memory_provider(kind))
    return sc.error("workload.memory", fmt::format("no {} memory here: {}", memory_kind_name(kind), memory_unavailable_reason(kind)));
  if (!caps.memory_kinds.has(kind))
    return sc.error("workload.memory", fmt::format("this backend cannot register {} memory", memory_kind_name(kind)));
  return Status::ok();
}

std::string describe_failed_completion(int rank, const Completion& wc) {
  return fmt::format("rank {}: {} wr_id {:#x} on QP {} completed with '{}' ({})", rank, wc_opcode_name(wc.opcode), wc.wr_id,
                     wc.qp_num, wc_status_str(wc.status), wc_status_code(wc.status));
}

Result<std::size_t> wait_ok(RankEnv& env, CompletionQueue& cq, std::span<Completion> out, double timeout_s, const char* what) {
  auto n = cq.wait(out, timeout_s);
  if (!n) {
    if (n.status().code() == Errc::timeout)
      return Status(Errc::timeout, fmt::format("rank {}: no completion within {}s while {} (is the peer alive? raise workload.timeout "
                                               "for slow fabrics)", env.rank, timeout_s, what));
    return n.status().with_context(fmt::format("rank {}: while {}", env.rank, what));
  }
  for (std::size_t i = 0; i < *n; ++i)
    if (out[i].status != WcStatus::success) return Status(Errc::transport, describe_failed_completion(env.rank, out[i]));
  return n;
}

void CpuSpan::start(Runtime& rt) {
  if (auto c = rt.cpu_times()) {
    thread_s = c->thread_s;
    machine_s = c->machine_s;
  }
}

void CpuSpan::stop(Runtime& rt) {
  if (thread_s < 0) return;
  auto c = rt.cpu_times();
  if (!c) {
    thread_s = machine_s = -1;
    return;
  }
  thread_s = c->thread_s - thread_s;
  machine_s = machine_s >= 0 && c->machine_s >= 0 ? c->machine_s - machine_s : -1;
}

}  // namespace rdmalab::workloads
