#include "rdmalab/transport.h"

#include <fmt/format.h>

namespace rdmalab {

const char* wc_status_str(WcStatus s) noexcept {
  // Same words as libibverbs' ibv_wc_status_str(), so users can search for them.
  switch (s) {
    case WcStatus::success: return "success";
    case WcStatus::loc_len_err: return "local length error";
    case WcStatus::loc_qp_op_err: return "local QP operation error";
    case WcStatus::loc_prot_err: return "local protection error";
    case WcStatus::wr_flush_err: return "Work Request Flushed Error";
    case WcStatus::rem_inv_req_err: return "remote invalid request error";
    case WcStatus::rem_access_err: return "remote access error";
    case WcStatus::rem_op_err: return "remote operation error";
    case WcStatus::retry_exc_err: return "transport retry counter exceeded";
    case WcStatus::rnr_retry_exc_err: return "RNR retry counter exceeded";
    case WcStatus::general_err: return "general error";
  }
  return "unknown";
}

const char* wc_opcode_name(WcOpcode op) noexcept {
  switch (op) {
    case WcOpcode::send: return "send";
    case WcOpcode::rdma_write: return "rdma_write";
    case WcOpcode::rdma_read: return "rdma_read";
    case WcOpcode::comp_swap: return "comp_swap";
    case WcOpcode::fetch_add: return "fetch_add";
    case WcOpcode::recv: return "recv";
    case WcOpcode::recv_rdma_with_imm: return "recv_rdma_with_imm";
  }
  return "unknown";
}

const char* send_opcode_name(SendOpcode op) noexcept {
  switch (op) {
    case SendOpcode::rdma_write: return "rdma_write";
    case SendOpcode::rdma_write_with_imm: return "rdma_write_with_imm";
    case SendOpcode::send: return "send";
    case SendOpcode::send_with_imm: return "send_with_imm";
    case SendOpcode::rdma_read: return "rdma_read";
    case SendOpcode::atomic_fetch_add: return "atomic_fetch_add";
    case SendOpcode::atomic_cmp_swap: return "atomic_cmp_swap";
  }
  return "unknown";
}

WcOpcode wc_opcode_for(SendOpcode op) noexcept {
  switch (op) {
    case SendOpcode::rdma_write:
    case SendOpcode::rdma_write_with_imm: return WcOpcode::rdma_write;
    case SendOpcode::send:
    case SendOpcode::send_with_imm: return WcOpcode::send;
    case SendOpcode::rdma_read: return WcOpcode::rdma_read;
    case SendOpcode::atomic_fetch_add: return WcOpcode::fetch_add;
    case SendOpcode::atomic_cmp_swap: return WcOpcode::comp_swap;
  }
  return WcOpcode::send;
}

Status check_send_wr(const SendWr& wr, const QpCaps& caps, std::uint64_t& len) {
  len = 0;
  for (const auto& s : wr.sg_list) len += s.length;
  if (wr.sg_list.size() > caps.max_send_sge)
    return Status(Errc::invalid_argument, fmt::format("{} SGEs, the QP allows {}", wr.sg_list.size(), caps.max_send_sge));
  if (is_atomic(wr.opcode) && (len != 8 || wr.sg_list.size() != 1)) return Status(Errc::invalid_argument, "an atomic needs one 8-byte SGE");
  if (wr.inline_data) {
    if (len > caps.max_inline) return Status(Errc::invalid_argument, fmt::format("{} bytes inline, the QP allows {}", len, caps.max_inline));
    if (wr.opcode == SendOpcode::rdma_read || is_atomic(wr.opcode)) return Status(Errc::invalid_argument, "reads and atomics cannot be inline");
  }
  return Status::ok();
}

Status check_registration(const void* addr, std::uint64_t length, std::uint32_t access) {
  if (!addr || length == 0) return Status(Errc::invalid_argument, "register_memory: null address or zero length");
  if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) && !(access & kAccessLocalWrite))
    return Status(Errc::invalid_argument, "remote write and remote atomic access need local write access too (as in verbs)");
  return Status::ok();
}

Status check_qp_caps(const QpCaps& caps, const Capabilities& c) {
  if (caps.max_send_wr == 0 || caps.max_send_wr > c.max_qp_wr || caps.max_recv_wr > c.max_qp_wr)
    return Status(Errc::invalid_argument, fmt::format("create_qp: queue depths must be 1..{}", c.max_qp_wr));
  if (caps.max_send_sge > c.max_sge || caps.max_recv_sge > c.max_sge)
    return Status(Errc::invalid_argument, fmt::format("create_qp: at most {} SGEs", c.max_sge));
  if (caps.max_inline > c.max_inline) return Status(Errc::invalid_argument, fmt::format("create_qp: at most {} bytes inline", c.max_inline));
  return Status::ok();
}

Status check_cq_entries(std::uint32_t entries, const Capabilities& c) {
  if (entries == 0 || entries > c.max_cq_entries)
    return Status(Errc::invalid_argument, fmt::format("create_cq: entries must be 1..{} (asked {})", c.max_cq_entries, entries));
  return Status::ok();
}

const char* qp_state_name(QpState s) noexcept {
  switch (s) {
    case QpState::reset: return "RESET";
    case QpState::init: return "INIT";
    case QpState::rtr: return "RTR";
    case QpState::rts: return "RTS";
    case QpState::err: return "ERR";
  }
  return "unknown";
}

}  // namespace rdmalab

namespace rdmalab::detail {

Status unsupported(const char* operation) {
  return Status(Errc::not_supported, fmt::format("{} is not implemented by this backend", operation));
}

}  // namespace rdmalab::detail
