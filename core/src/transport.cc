#include "rdmalab/transport.h"

#include <fmt/format.h>

#include <iterator>

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

std::string wc_status_verbs_name(WcStatus status) {
  static const char* const kNames[] = {"SUCCESS",    "LOC_LEN_ERR",     "LOC_QP_OP_ERR", "LOC_PROT_ERR",      "WR_FLUSH_ERR", "REM_INV_REQ_ERR",
                                       "REM_ACCESS_ERR", "REM_OP_ERR",  "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "GENERAL_ERR"};
  const auto i = static_cast<std::size_t>(status);
  return std::string("IBV_WC_") + (i < std::size(kNames) ? kNames[i] : "?");
}

namespace {
constexpr double kRnrTimerMs[32] = {655.36, 0.01, 0.02, 0.03, 0.04,  0.06,  0.08,  0.12,  0.16,  0.24,   0.32,   0.48,   0.64,   0.96,   1.28,   1.92,
                                    2.56,   3.84, 5.12, 7.68, 10.24, 15.36, 20.48, 30.72, 40.96, 61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52};
}  // namespace

double rnr_timer_seconds(std::uint8_t code) noexcept { return code < 32 ? kRnrTimerMs[code] * 1e-3 : 0; }

std::uint8_t rnr_timer_code(double seconds) noexcept {
  const double ms = seconds * 1e3;
  for (std::uint8_t c = 1; c < 32; ++c)
    if (kRnrTimerMs[c] >= ms * (1 - 1e-9)) return c;
  return 0;
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
