// One software RC NIC's rules, shared by the backends that are a NIC in software (loopback, and
// the SimGrid model): the QP state machine, the responder's verdict on a request, receiver not
// ready, an atomic's arithmetic, where a send lands in a receive, and the completions they give.
// Each backend keeps only what is its own: its key tables and queues (laid out for its engine),
// when a request executes (loopback's engine thread, SimGrid's simulated time) and how bytes move
// (memcpy, a GPU copy, nothing for phantom buffers).
//
// The rules are verbs' (docs/transport-contract.md says which choice each backend once made
// differently, and how it was settled). Everything here is inline: the SimGrid engine calls it on
// every transfer.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "rdmalab/status.h"
#include "rdmalab/transport.h"

namespace rdmalab::soft_rc {

// --- The QP ----------------------------------------------------------------------------------

// A state transition as verbs allows it: only from `from` (RESET→INIT→RTR→RTS).
inline Status transition(QpState& state, QpState from, QpState to, std::uint32_t qpn) {
  if (state != from)
    return Status(Errc::invalid_state,
                  fmt::format("QP {:#x}: cannot move from {} to {} (only from {})", qpn, qp_state_name(state), qp_state_name(to), qp_state_name(from)));
  state = to;
  return Status::ok();
}

// The connection attributes RTR accepts: the retry counters are 3 bits, as in verbs.
inline Status check_connect(const QpConnectAttr& attr) {
  if (attr.rnr_retry > 7 || attr.retry_cnt > 7) return Status(Errc::invalid_argument, "retry_cnt and rnr_retry are 3-bit counters (0..7)");
  return Status::ok();
}

// What post_send refuses before anything else: a QP that is neither in RTS nor in ERR (in ERR,
// requests are accepted and flushed).
inline bool accepts_sends(QpState s) { return s == QpState::rts || s == QpState::err; }
// A responder that is connected and ready: in RTR or RTS.
inline bool responds(QpState s) { return s == QpState::rtr || s == QpState::rts; }
// Moves a QP to ERR (a request failed, or to_error): true when it was not there yet; the caller
// then flushes what it holds (every request and receive completes with wr_flush_err).
inline bool enter_error(QpState& s) {
  if (s == QpState::err) return false;
  s = QpState::err;
  return true;
}

// post_send's checks of one request, before it is queued (without the QP's number, which the
// caller prefixes): the QP's state, the request itself (check_send_wr: SGEs, inline, atomics;
// `len` receives its length), and the send queue's room — back-pressure, Errc::queue_full.
inline Status check_post_send(QpState state, const SendWr& wr, const QpCaps& limits, std::uint64_t outstanding,
                              std::uint32_t max_send_wr, std::uint64_t& len) {
  if (!accepts_sends(state)) return Status(Errc::invalid_state, fmt::format("post_send needs the QP in RTS (it is in {})", qp_state_name(state)));
  RDMALAB_TRY(check_send_wr(wr, limits, len));
  if (outstanding >= max_send_wr)
    return Status(Errc::queue_full, fmt::format("send queue full ({} outstanding): poll completions before posting more", max_send_wr));
  return Status::ok();
}

// post_recv's checks of one receive: allowed from INIT on, at most max_recv_sge SGEs, and room in
// the receive queue (back-pressure, Errc::queue_full).
inline Status check_post_recv(QpState state, const RecvWr& wr, std::uint32_t max_recv_sge, std::size_t queued, std::uint32_t max_recv_wr,
                              std::uint32_t qpn) {
  if (state == QpState::reset)
    return Status(Errc::invalid_state, fmt::format("QP {:#x}: post_recv needs the QP in INIT or later (it is in RESET)", qpn));
  if (wr.sg_list.size() > max_recv_sge || queued >= max_recv_wr)
    return Status(queued >= max_recv_wr ? Errc::queue_full : Errc::invalid_argument, fmt::format("QP {:#x}: receive queue full or too many SGEs", qpn));
  return Status::ok();
}

// A QP's address for its peer: its number, a starting PSN derived from it, and the owning rank.
inline QpEndpoint endpoint(std::uint32_t qpn, int rank) {
  QpEndpoint ep;
  ep.qpn = qpn;
  ep.psn = qpn * 7919u & 0xffffff;
  ep.rank = static_cast<std::uint32_t>(rank);
  return ep;
}

// The completion of a receive flushed from a QP in ERR.
inline Completion flushed_receive(std::uint64_t wr_id, std::uint32_t qpn) {
  Completion wc;
  wc.wr_id = wr_id;
  wc.opcode = WcOpcode::recv;
  wc.status = WcStatus::wr_flush_err;
  wc.qp_num = qpn;
  return wc;
}

// The requester's completion of a request.
inline Completion send_completion(std::uint64_t wr_id, SendOpcode op, WcStatus st, std::uint32_t byte_len, std::uint32_t qpn) {
  Completion wc;
  wc.wr_id = wr_id;
  wc.status = st;
  wc.byte_len = byte_len;
  wc.qp_num = qpn;
  wc.opcode = wc_opcode_for(op);
  return wc;
}

// --- The responder ---------------------------------------------------------------------------

// The right the responder's region must grant (0 for a send, which needs a receive instead).
constexpr std::uint32_t access_needed(SendOpcode op) {
  switch (op) {
    case SendOpcode::rdma_write:
    case SendOpcode::rdma_write_with_imm: return kAccessRemoteWrite;
    case SendOpcode::rdma_read: return kAccessRemoteRead;
    case SendOpcode::atomic_fetch_add:
    case SendOpcode::atomic_cmp_swap: return kAccessRemoteAtomic;
    default: return 0;
  }
}

// Whether a request consumes a receive at the responder: a send, and a write with immediate.
constexpr bool consumes_receive(SendOpcode op) {
  return op == SendOpcode::send || op == SendOpcode::send_with_imm || op == SendOpcode::rdma_write_with_imm;
}

// The responder's verdict on a request's remote part, in verbs' order: the key, the bounds and the
// right (rem_access_err), then an atomic's alignment (rem_inv_req_err). `remote_ok(need)` checks
// the rkey, the range [remote_addr, remote_addr + len) and the right against the responder's
// protection domain. A zero-length request touches no remote memory.
template <typename RemoteOk>
WcStatus remote_verdict(SendOpcode op, std::uint64_t remote_addr, std::uint64_t len, RemoteOk&& remote_ok) {
  const std::uint32_t need = access_needed(op);
  if (need && len > 0 && !remote_ok(need)) return WcStatus::rem_access_err;
  if (is_atomic(op) && remote_addr % 8 != 0) return WcStatus::rem_inv_req_err;
  return WcStatus::success;
}

// The local part, checked when the NIC reads or writes the requester's memory (as hardware does:
// post_send does not look at lkeys): every SGE's key, range and, where the NIC writes into it (a
// read's or an atomic's result), local write. Inline data has no keys. `local_ok(sge, write)`.
template <typename Sges, typename LocalOk>
WcStatus local_verdict(SendOpcode op, bool inline_data, const Sges& sges, LocalOk&& local_ok) {
  if (inline_data) return WcStatus::success;
  const bool writes = op == SendOpcode::rdma_read || is_atomic(op);
  for (const auto& s : sges)
    if (!local_ok(s, writes)) return WcStatus::loc_prot_err;
  return WcStatus::success;
}

// Receiver not ready (a request that consumes a receive found none): whether the requester retries
// after the responder's min_rnr_timer, having retried `attempts` times; rnr_retry 7 retries forever.
// When it does not, the request fails with rnr_retry_exc_err.
constexpr bool rnr_retries(std::uint32_t attempts, std::uint8_t rnr_retry) { return rnr_retry == 7 || attempts < rnr_retry; }

// An atomic's arithmetic: the value the target holds afterwards, given the one it held.
constexpr std::uint64_t atomic_result(SendOpcode op, std::uint64_t old, std::uint64_t compare_add, std::uint64_t swap) {
  if (op == SendOpcode::atomic_fetch_add) return old + compare_add;
  return old == compare_add ? swap : old;
}

// Where a send lands in a receive: whether the receive's SGEs hold the message (loc_len_err) and
// the receiver may write them (loc_prot_err). When it cannot be placed, the receiver's receive
// completes with that status and no bytes, the requester's request fails with `requester`, and
// both QPs go to ERR. `writable(sge)` checks the SGE in the responder's protection domain.
struct Placement {
  WcStatus receiver = WcStatus::success;
  WcStatus requester = WcStatus::success;
  bool ok() const { return receiver == WcStatus::success; }
};
template <typename Sges, typename Writable>
Placement place(const Sges& sges, std::uint64_t len, Writable&& writable) {
  std::uint64_t room = 0;
  bool prot_ok = true;
  for (const auto& s : sges) {
    room += s.length;
    prot_ok = prot_ok && writable(s);
  }
  if (!prot_ok) return {WcStatus::loc_prot_err, WcStatus::rem_op_err};
  if (room < len) return {WcStatus::loc_len_err, WcStatus::rem_inv_req_err};
  return {};
}

// Copies a message of `len` bytes at `src` into a receive's SGEs, in order; `copy(dst, src, n)`.
template <typename Sges, typename Copy>
void scatter(const Sges& sges, const std::uint8_t* src, std::uint64_t len, Copy&& copy) {
  for (const auto& s : sges) {
    const std::uint64_t n = std::min<std::uint64_t>(len, s.length);
    copy(s.addr, src, n);
    src += n;
    len -= n;
  }
}

// The receiver's completion of a request that consumed its receive: a send's (recv, with the
// immediate of send_with_imm) or a write with immediate's (recv_rdma_with_imm).
inline Completion receive_completion(std::uint64_t wr_id, std::uint32_t qpn, SendOpcode op, std::uint32_t imm, std::uint32_t byte_len) {
  Completion wc;
  wc.wr_id = wr_id;
  wc.qp_num = qpn;
  wc.has_imm = op != SendOpcode::send;
  wc.imm = imm;
  wc.byte_len = byte_len;
  wc.opcode = op == SendOpcode::rdma_write_with_imm ? WcOpcode::recv_rdma_with_imm : WcOpcode::recv;
  return wc;
}

}  // namespace rdmalab::soft_rc
