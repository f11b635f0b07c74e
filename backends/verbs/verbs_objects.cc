// The verbs backend's contract objects (device, PD, MR, CQ, QP) over libibverbs.
#include "verbs/verbs_internal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <random>
#include <mutex>
#include <thread>

#include "common/child_process.h"
#include "rdmalab/scenario.h"
#include "rdmalab/run.h"
#include "rdmalab/tcp_bootstrap.h"
#include "mpi_bootstrap.h"
#include "rdmalab/units.h"

namespace rdmalab::verbs::detail {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<std::uint64_t>* completion_meter = nullptr;  // set_completion_meter

// ------------------------------------------------------------------------------------------
// Objects

class VerbsDevice;

class VerbsMr final : public MemoryRegion {
 public:
  VerbsMr(ibv_mr* mr, std::uint32_t access, MemoryKind kind, std::string path = "host memory")
      : mr_(mr), access_(access), kind_(kind), path_(std::move(path)) {}
  ~VerbsMr() override { ibv_dereg_mr(mr_); }
  std::uint64_t addr() const override { return reinterpret_cast<std::uint64_t>(mr_->addr); }
  std::uint64_t length() const override { return mr_->length; }
  std::uint32_t lkey() const override { return mr_->lkey; }
  std::uint32_t rkey() const override { return mr_->rkey; }
  std::uint32_t access() const override { return access_; }
  MemoryKind kind() const override { return kind_; }
  std::string data_path() const override { return path_; }

 private:
  ibv_mr* mr_;
  std::uint32_t access_;
  MemoryKind kind_;
  std::string path_;
};


class VerbsCq final : public CompletionQueue {
 public:
  VerbsCq(VerbsDevice& dev, ibv_cq* cq, ibv_comp_channel* ch, std::uint32_t cap, WaitMode mode) : dev_(dev), cq_(cq), ch_(ch), cap_(cap), mode_(mode) {}
  ~VerbsCq() override;  // defined after VerbsDevice
  void destroy() {
    if (unacked_) ibv_ack_cq_events(cq_, unacked_);
    ibv_destroy_cq(cq_);
    if (ch_) ibv_destroy_comp_channel(ch_);
  }
  std::uint32_t capacity() const override { return cap_; }
  Result<std::size_t> poll(std::span<Completion> out) override;
  Result<std::size_t> wait(std::span<Completion> out, double timeout_s) override;
  ibv_cq* cq() const { return cq_; }
  bool overflowed = false;

 private:
  VerbsDevice& dev_;
  ibv_cq* cq_;
  ibv_comp_channel* ch_;
  std::uint32_t cap_;
  WaitMode mode_;
  unsigned unacked_ = 0;
  bool armed_ = false;
};

class VerbsQp final : public QueuePair {
 public:
  VerbsQp(VerbsDevice& dev, ibv_qp* qp, QpCaps caps);
  ~VerbsQp() override;
  std::uint32_t qpn() const override { return qp_->qp_num; }
  QpState state() const override { return state_; }
  QpCaps caps() const override { return caps_; }
  QpEndpoint endpoint() const override;
  Status to_init() override;
  Status to_rtr(const QpConnectAttr& attr) override;
  Status to_rts() override;
  Status to_error() override {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE)) return from_errno(rc, "ibv_modify_qp(ERR)");
    state_ = QpState::err;
    return Status::ok();
  }
  Status reset() override {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RESET;
    if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE)) return from_errno(rc, "ibv_modify_qp(RESET)");
    state_ = QpState::reset;
    return Status::ok();
  }
  Status post_send(std::span<const SendWr> wrs, std::size_t* bad_index) override;
  Status post_recv(std::span<const RecvWr> wrs, std::size_t* bad_index) override;
  void mark_error() { state_ = QpState::err; }
  bool uses(const ibv_cq* cq) const { return qp_->send_cq == cq || qp_->recv_cq == cq; }
  Status post_prepared(ibv_send_wr* v, std::size_t count);
  // Completions carry an internal id (a sequence number, bit 63 set for the send queue) so that
  // the wrapper can enforce the queue depths exactly (providers accept more than they report)
  // and free send slots the verbs way: a polled completion frees its slot and every unsignaled
  // one before it. Returns the caller's wr_id.
  // A successful send completion (`ok`) adds the bytes it retires to the completion meter.
  std::uint64_t complete(std::uint64_t internal_id, bool ok) {
    if (internal_id & kSendBit) {
      std::uint64_t seq = internal_id & ~kSendBit;
      sq_retired_ = std::max(sq_retired_, seq + 1);
      if (ok && completion_meter) {
        const std::uint64_t upto = sq_cum_[seq % sq_cum_.size()];
        if (upto > sq_bytes_done_) {
          completion_meter->fetch_add(upto - sq_bytes_done_, std::memory_order_relaxed);
          sq_bytes_done_ = upto;
        }
      }
      return sq_ids_[seq % sq_ids_.size()];
    }
    rq_retired_ = std::max(rq_retired_, internal_id + 1);
    return rq_ids_[internal_id % rq_ids_.size()];
  }

 private:
  Status expect(QpState from, QpState to) const {
    if (state_ != from)
      return Status(Errc::invalid_state, fmt::format("QP {:#x}: cannot move from {} to {} (only from {})", qp_->qp_num, qp_state_name(state_),
                                                     qp_state_name(to), qp_state_name(from)));
    return Status::ok();
  }
  VerbsDevice& dev_;
  ibv_qp* qp_;
  QpCaps caps_;
  QpState state_ = QpState::reset;
  std::uint32_t psn_ = 0;
  std::uint8_t retry_cnt_ = 7, rnr_retry_ = 7;
  std::uint32_t max_rd_atomic_ = 0;
  static constexpr std::uint64_t kSendBit = 1ull << 63;
  std::vector<std::uint64_t> sq_ids_, rq_ids_;  // caller's wr_id by sequence number
  std::uint64_t sq_posted_ = 0, sq_retired_ = 0, rq_posted_ = 0, rq_retired_ = 0;
  // Payload bytes posted up to and including each send sequence number (its slot), and those
  // counted as completed: the completion meter's bookkeeping.
  std::vector<std::uint64_t> sq_cum_;
  std::uint64_t sq_bytes_posted_ = 0, sq_bytes_done_ = 0;
};

class VerbsPd final : public ProtectionDomain {
 public:
  VerbsPd(VerbsDevice& dev, ibv_pd* pd) : dev_(dev), pd_(pd) {}
  ~VerbsPd() override { ibv_dealloc_pd(pd_); }
  Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, std::uint64_t length, std::uint32_t access, MemoryKind kind) override;
  Result<std::unique_ptr<QueuePair>> create_qp(CompletionQueue& send_cq, CompletionQueue& recv_cq, const QpCaps& caps) override;

 private:
  VerbsDevice& dev_;
  ibv_pd* pd_;
};

class VerbsDevice final : public Device {
 public:
  VerbsDevice(Selected s, int rank, WaitMode mode, Capabilities caps) : s_(std::move(s)), rank_(rank), mode_(mode), caps_(caps) {
    // Asynchronous events (a CQ that overflowed, a QP that hit a fatal error) are read without
    // blocking whenever a CQ is polled.
    int flags = fcntl(s_.ctx->async_fd, F_GETFL);
    fcntl(s_.ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
  }
  ~VerbsDevice() override { ibv_close_device(s_.ctx); }
  std::string name() const override { return s_.name; }
  const Capabilities& caps() const override { return caps_; }
  Result<std::unique_ptr<ProtectionDomain>> alloc_pd() override {
    ibv_pd* pd = ibv_alloc_pd(s_.ctx);
    if (!pd) return from_errno(errno, "ibv_alloc_pd");
    return std::unique_ptr<ProtectionDomain>(new VerbsPd(*this, pd));
  }
  Result<std::unique_ptr<CompletionQueue>> create_cq(std::uint32_t entries) override {
    RDMALAB_TRY(check_cq_entries(entries, caps_));
    ibv_comp_channel* ch = nullptr;
    if (mode_ == WaitMode::event) {
      ch = ibv_create_comp_channel(s_.ctx);
      if (!ch) return from_errno(errno, "ibv_create_comp_channel");
    }
    ibv_cq* cq = ibv_create_cq(s_.ctx, static_cast<int>(entries), nullptr, ch, 0);
    if (!cq) {
      int err = errno;
      if (ch) ibv_destroy_comp_channel(ch);
      return from_errno(err, fmt::format("ibv_create_cq({} entries)", entries));
    }
    auto out = std::make_unique<VerbsCq>(*this, cq, ch, entries, mode_);
    cqs_.push_back(out.get());
    return std::unique_ptr<CompletionQueue>(std::move(out));
  }
  // Reads pending asynchronous events every 4096th call (each read is a system call, which a
  // busy-polling loop cannot afford on every poll) or at once when `now` is set.
  void drain_async_events(bool now = false) {
    if (!now && (++async_calls_ & 4095) != 0) return;
    ibv_async_event ev{};
    while (ibv_get_async_event(s_.ctx, &ev) == 0) {
      if (ev.event_type == IBV_EVENT_CQ_ERR) {
        for (VerbsCq* cq : cqs_)
          if (cq->cq() == ev.element.cq) cq->overflowed = true;
        // The QPs that complete into it stop (the contract: CompletionQueue in transport.h).
        for (auto& [qpn, qp] : qps_)
          if (qp->uses(ev.element.cq)) qp->mark_error();
      }
      ibv_ack_async_event(&ev);
    }
  }
  void forget(VerbsCq* cq) { cqs_.erase(std::remove(cqs_.begin(), cqs_.end(), cq), cqs_.end()); }
  // A completion in error moves its QP to ERR in the hardware; the wrapper's state follows.
  void add_qp(std::uint32_t qpn, VerbsQp* qp) { qps_[qpn] = qp; }
  void remove_qp(std::uint32_t qpn) { qps_.erase(qpn); }
  void qp_failed(std::uint32_t qpn);
  std::uint64_t complete(std::uint32_t qpn, std::uint64_t internal_id, bool ok);
  const Selected& sel() const { return s_; }
  int rank() const { return rank_; }
  Bootstrap* boot = nullptr;  // for peer-health checks while waiting
  std::string gpu_path = "auto";  // workload.gpu_path: how GPU memory is registered

 private:
  Selected s_;
  int rank_;
  WaitMode mode_;
  Capabilities caps_;
  std::vector<VerbsCq*> cqs_;
  std::unordered_map<std::uint32_t, VerbsQp*> qps_;
  std::uint32_t async_calls_ = 0;
};

void VerbsDevice::qp_failed(std::uint32_t qpn) {
  auto it = qps_.find(qpn);
  if (it != qps_.end()) it->second->mark_error();
}

std::uint64_t VerbsDevice::complete(std::uint32_t qpn, std::uint64_t internal_id, bool ok) {
  auto it = qps_.find(qpn);
  return it == qps_.end() ? internal_id : it->second->complete(internal_id, ok);
}

VerbsCq::~VerbsCq() {
  dev_.forget(this);
  destroy();
}

VerbsQp::VerbsQp(VerbsDevice& dev, ibv_qp* qp, QpCaps caps)
    : dev_(dev), qp_(qp), caps_(caps), sq_ids_(std::max<std::uint32_t>(caps.max_send_wr, 1)), rq_ids_(std::max<std::uint32_t>(caps.max_recv_wr, 1)),
      sq_cum_(sq_ids_.size()) {
  dev_.add_qp(qp_->qp_num, this);
}
VerbsQp::~VerbsQp() {
  dev_.remove_qp(qp_->qp_num);
  ibv_destroy_qp(qp_);
}

Result<std::size_t> VerbsCq::poll(std::span<Completion> out) {
  dev_.drain_async_events();
  if (overflowed)
    return Status(Errc::cq_overflow, fmt::format("completion queue of {} entries overflowed (IBV_EVENT_CQ_ERR): completions were lost "
                                                 "(size it for every outstanding request, or poll more often)", cap_));
  ibv_wc wc[32];
  std::size_t n = 0;
  while (n < out.size()) {
    int want = static_cast<int>(std::min<std::size_t>(32, out.size() - n));
    int got = ibv_poll_cq(cq_, want, wc);
    if (got < 0) return Status(Errc::transport, "ibv_poll_cq failed");
    for (int i = 0; i < got; ++i) {
      Completion& c = out[n++];
      c.wr_id = wc[i].wr_id;
      c.status = from_ibv(wc[i].status);
      c.opcode = wc[i].status == IBV_WC_SUCCESS ? from_ibv(wc[i].opcode) : WcOpcode::send;
      c.byte_len = wc[i].byte_len;
      c.has_imm = (wc[i].wc_flags & IBV_WC_WITH_IMM) != 0;
      c.imm = c.has_imm ? ntohl(wc[i].imm_data) : 0;
      c.qp_num = wc[i].qp_num;
      c.wr_id = dev_.complete(c.qp_num, wc[i].wr_id, wc[i].status == IBV_WC_SUCCESS);
      if (c.status != WcStatus::success) {
        dev_.qp_failed(c.qp_num);
        dev_.drain_async_events(true);  // an error may come with a CQ or QP event
      }
    }
    if (got < want) break;
  }
  // A poll that emptied a full CQ may have followed an overflow: look at the events now.
  if (n >= cap_) {
    dev_.drain_async_events(true);
    if (overflowed) return Status(Errc::cq_overflow, fmt::format("completion queue of {} entries overflowed (IBV_EVENT_CQ_ERR): completions "
                                                                 "were lost (size it for every outstanding request, or poll more often)", cap_));
  }
  return n;
}

Result<std::size_t> VerbsCq::wait(std::span<Completion> out, double timeout_s) {
  // The clock is read only when nothing came: a busy loop on the CQ between reads, as perftest
  // polls (reading the clock costs more than a poll under emulation, and delays the completion).
  // The first clock read comes after 256 empty polls (busy mode): a completion that is a few
  // microseconds away is then seen without any clock read, and the deadline starts that much
  // later, which a timeout of seconds does not notice.
  RDMALAB_ASSIGN(std::size_t first, poll(out));
  if (first > 0) return first;
  Clock::time_point deadline{}, last_health{};
  for (unsigned spins = 1;; ++spins) {
    RDMALAB_ASSIGN(std::size_t n, poll(out));
    if (n > 0) return n;
    if (mode_ == WaitMode::poll && spins % 256 != 0) continue;
    auto now = Clock::now();
    if (deadline == Clock::time_point{}) {
      deadline = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
      last_health = now;
    }
    if (now >= deadline) return Status(Errc::timeout, fmt::format("no completion within {}s", timeout_s));
    // A peer that died would never complete our requests: notice it through the bootstrap.
    if (dev_.boot && now - last_health > std::chrono::milliseconds(200)) {
      last_health = now;
      RDMALAB_TRY(dev_.boot->health());
    }
    if (mode_ == WaitMode::event) {
      if (!armed_) {
        if (ibv_req_notify_cq(cq_, 0) != 0) return Status(Errc::transport, "ibv_req_notify_cq failed");
        armed_ = true;
        continue;  // a completion may have arrived before the CQ was armed
      }
      pollfd pfd{ch_->fd, POLLIN, 0};
      int ms = static_cast<int>(std::min<long long>(200, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1));
      if (::poll(&pfd, 1, ms) > 0) {
        ibv_cq* ev_cq = nullptr;
        void* ctx = nullptr;
        if (ibv_get_cq_event(ch_, &ev_cq, &ctx) == 0) {
          ++unacked_;
          armed_ = false;
          if (unacked_ >= 64) {
            ibv_ack_cq_events(cq_, unacked_);
            unacked_ = 0;
          }
        }
      }
    }
  }
}

QpEndpoint VerbsQp::endpoint() const {
  QpEndpoint ep;
  ep.qpn = qp_->qp_num;
  ep.psn = psn_;
  ep.lid = dev_.sel().port_attr.lid;
  std::memcpy(ep.gid.data(), dev_.sel().gid.raw, 16);
  ep.rank = static_cast<std::uint32_t>(dev_.rank());
  ep.mtu = mtu_bytes(dev_.sel().port_attr.active_mtu);
  return ep;
}

Status VerbsQp::to_init() {
  RDMALAB_TRY(expect(QpState::reset, QpState::init));
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = dev_.sel().port;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return from_errno(rc, "ibv_modify_qp(INIT)");
  state_ = QpState::init;
  return Status::ok();
}

Status VerbsQp::to_rtr(const QpConnectAttr& c) {
  RDMALAB_TRY(expect(QpState::init, QpState::rtr));
  if (c.rnr_retry > 7 || c.retry_cnt > 7) return Status(Errc::invalid_argument, "retry_cnt and rnr_retry are 3-bit counters (0..7)");
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  std::uint32_t mtu = mtu_bytes(dev_.sel().port_attr.active_mtu);
  if (c.remote.mtu) mtu = std::min(mtu, c.remote.mtu);
  a.path_mtu = to_ibv_mtu(mtu);
  a.dest_qp_num = c.remote.qpn;
  a.rq_psn = c.remote.psn;
  a.max_dest_rd_atomic = rd_atomic_depth(c.max_rd_atomic, dev_.sel().max_rd_atom);
  a.min_rnr_timer = rnr_timer_code(c.min_rnr_timer_s);
  a.ah_attr.port_num = dev_.sel().port;
  a.ah_attr.dlid = static_cast<std::uint16_t>(c.remote.lid);
  if (dev_.sel().roce || dev_.sel().gid_index >= 0) {
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, c.remote.gid.data(), 16);
    a.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(std::max(0, dev_.sel().gid_index));
    a.ah_attr.grh.hop_limit = 64;
  }
  if (int rc = ibv_modify_qp(qp_, &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                 IBV_QP_MIN_RNR_TIMER))
    return from_errno(rc, "ibv_modify_qp(RTR)");
  retry_cnt_ = c.retry_cnt;
  rnr_retry_ = c.rnr_retry;
  max_rd_atomic_ = c.max_rd_atomic;
  state_ = QpState::rtr;
  return Status::ok();
}

Status VerbsQp::to_rts() {
  RDMALAB_TRY(expect(QpState::rtr, QpState::rts));
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = kAckTimeoutCode;  // transport.h: 67 ms, perftest's default
  a.retry_cnt = retry_cnt_;
  a.rnr_retry = rnr_retry_;
  a.sq_psn = psn_;
  a.max_rd_atomic = rd_atomic_depth(max_rd_atomic_, dev_.sel().max_init_rd_atom);
  if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
    return from_errno(rc, "ibv_modify_qp(RTS)");
  state_ = QpState::rts;
  return Status::ok();
}

Status VerbsQp::post_send(std::span<const SendWr> wrs, std::size_t* bad_index) {
  if (state_ != QpState::rts && state_ != QpState::err) {
    if (bad_index) *bad_index = 0;
    return Status(Errc::invalid_state, fmt::format("QP {:#x}: post_send needs the QP in RTS (it is in {})", qp_->qp_num, qp_state_name(state_)));
  }
  // Small lists (the common case: one request) are built on the stack: no allocation per post.
  std::array<ibv_send_wr, 8> v_small;
  std::array<ibv_sge, 16> s_small;
  std::vector<ibv_send_wr> v_big;
  std::vector<ibv_sge> s_big;
  std::size_t total_sge = 0;
  for (const auto& w : wrs) total_sge += w.sg_list.size();
  if (wrs.size() > v_small.size()) v_big.resize(wrs.size());
  if (total_sge > s_small.size()) s_big.resize(total_sge);
  ibv_send_wr* v = wrs.size() > v_small.size() ? v_big.data() : v_small.data();
  ibv_sge* sges = total_sge > s_small.size() ? s_big.data() : s_small.data();
  std::size_t nsge = 0;
  std::uint64_t cum = sq_bytes_posted_;
  // Request i is refused: the ones before it are posted, as ibv_post_send does with a bad request
  // in a list (and with ENOMEM when the queue is full).
  auto refuse_at = [&](std::size_t i, Errc code, const std::string& why) {
    if (i) {
      v[i - 1].next = nullptr;
      if (Status st = post_prepared(v, i); !st) return st;
    }
    if (bad_index) *bad_index = i;
    return Status(code, fmt::format("QP {:#x}: {}", qp_->qp_num, why));
  };
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    const SendWr& w = wrs[i];
    std::uint64_t len = 0;
    const bool atomic = is_atomic(w.opcode);
    if (Status bad = check_send_wr(w, caps_, len); !bad) return refuse_at(i, Errc::invalid_argument, bad.message());
    if (sq_posted_ + i - sq_retired_ >= caps_.max_send_wr)
      return refuse_at(i, Errc::queue_full,
                       fmt::format("send queue full ({} outstanding): poll completions before posting more", caps_.max_send_wr));
    ibv_send_wr& r = v[i];
    r = ibv_send_wr{};
    sq_ids_[(sq_posted_ + i) % sq_ids_.size()] = w.wr_id;
    cum += len;
    sq_cum_[(sq_posted_ + i) % sq_cum_.size()] = cum;
    r.wr_id = kSendBit | (sq_posted_ + i);
    r.sg_list = sges + nsge;
    r.num_sge = static_cast<int>(w.sg_list.size());
    for (const auto& s : w.sg_list) sges[nsge++] = ibv_sge{s.addr, s.length, s.lkey};
    r.send_flags = (w.signaled ? static_cast<unsigned>(IBV_SEND_SIGNALED) : 0u) | (w.inline_data ? static_cast<unsigned>(IBV_SEND_INLINE) : 0u);
    r.next = i + 1 < wrs.size() ? &v[i + 1] : nullptr;
    switch (w.opcode) {
      case SendOpcode::rdma_write: r.opcode = IBV_WR_RDMA_WRITE; break;
      case SendOpcode::rdma_write_with_imm: r.opcode = IBV_WR_RDMA_WRITE_WITH_IMM; break;
      case SendOpcode::send: r.opcode = IBV_WR_SEND; break;
      case SendOpcode::send_with_imm: r.opcode = IBV_WR_SEND_WITH_IMM; break;
      case SendOpcode::rdma_read: r.opcode = IBV_WR_RDMA_READ; break;
      case SendOpcode::atomic_fetch_add: r.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD; break;
      case SendOpcode::atomic_cmp_swap: r.opcode = IBV_WR_ATOMIC_CMP_AND_SWP; break;
    }
    if (w.opcode == SendOpcode::rdma_write_with_imm || w.opcode == SendOpcode::send_with_imm) r.imm_data = htonl(w.imm);
    if (atomic) {
      r.wr.atomic.remote_addr = w.remote_addr;
      r.wr.atomic.rkey = w.rkey;
      r.wr.atomic.compare_add = w.compare_add;
      r.wr.atomic.swap = w.swap;
    } else {
      r.wr.rdma.remote_addr = w.remote_addr;
      r.wr.rdma.rkey = w.rkey;
    }
  }
  if (wrs.empty()) return Status::ok();
  Status st = post_prepared(v, wrs.size());
  if (!st && bad_index) *bad_index = 0;
  return st;
}

Status VerbsQp::post_prepared(ibv_send_wr* v, std::size_t count) {
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(qp_, v, &bad);
  std::size_t accepted = rc && bad ? static_cast<std::size_t>(bad - v) : (rc ? 0 : count);
  sq_posted_ += accepted;
  if (accepted) sq_bytes_posted_ = sq_cum_[(sq_posted_ - 1) % sq_cum_.size()];
  if (rc) return from_errno(rc, fmt::format("QP {:#x}: ibv_post_send (request {} of the list)", qp_->qp_num, accepted));
  return Status::ok();
}

Status VerbsQp::post_recv(std::span<const RecvWr> wrs, std::size_t* bad_index) {
  if (state_ == QpState::reset) {
    if (bad_index) *bad_index = 0;
    return Status(Errc::invalid_state, fmt::format("QP {:#x}: post_recv needs the QP in INIT or later (it is in RESET)", qp_->qp_num));
  }
  // As post_send: small lists on the stack; requests before a refused one are posted.
  std::array<ibv_recv_wr, 8> v_small;
  std::array<ibv_sge, 16> s_small;
  std::vector<ibv_recv_wr> v_big;
  std::vector<ibv_sge> s_big;
  std::size_t total = 0;
  for (const auto& w : wrs) total += w.sg_list.size();
  if (wrs.size() > v_small.size()) v_big.resize(wrs.size());
  if (total > s_small.size()) s_big.resize(total);
  ibv_recv_wr* v = wrs.size() > v_small.size() ? v_big.data() : v_small.data();
  ibv_sge* sges = total > s_small.size() ? s_big.data() : s_small.data();
  std::size_t nsge = 0, count = wrs.size();
  Status refused = Status::ok();
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    if (rq_posted_ + i - rq_retired_ >= caps_.max_recv_wr || wrs[i].sg_list.size() > caps_.max_recv_sge) {
      if (bad_index) *bad_index = i;
      refused = Status(wrs[i].sg_list.size() > caps_.max_recv_sge ? Errc::invalid_argument : Errc::queue_full,
                       fmt::format("QP {:#x}: receive queue full or too many SGEs", qp_->qp_num));
      count = i;
      break;
    }
    v[i] = ibv_recv_wr{};
    rq_ids_[(rq_posted_ + i) % rq_ids_.size()] = wrs[i].wr_id;
    v[i].wr_id = rq_posted_ + i;
    v[i].sg_list = sges + nsge;
    v[i].num_sge = static_cast<int>(wrs[i].sg_list.size());
    for (const auto& s : wrs[i].sg_list) sges[nsge++] = ibv_sge{s.addr, s.length, s.lkey};
    v[i].next = i + 1 < wrs.size() ? &v[i + 1] : nullptr;
  }
  if (count == 0) return refused;
  v[count - 1].next = nullptr;
  ibv_recv_wr* bad = nullptr;
  int rc = ibv_post_recv(qp_, v, &bad);
  rq_posted_ += rc && bad ? static_cast<std::size_t>(bad - v) : (rc ? 0 : count);
  if (rc) {
    if (bad_index && bad) *bad_index = static_cast<std::size_t>(bad - v);
    return from_errno(rc, fmt::format("QP {:#x}: ibv_post_recv", qp_->qp_num));
  }
  return refused;
}


Result<std::unique_ptr<MemoryRegion>> VerbsPd::register_memory(void* addr, std::uint64_t length, std::uint32_t access, MemoryKind kind) {
  if (kind != MemoryKind::host && kind != MemoryKind::cuda)
    return Status(Errc::not_supported, fmt::format("verbs registers host and GPU memory (asked {})", memory_kind_name(kind)));
  RDMALAB_TRY(check_registration(addr, length, access));
  if (kind == MemoryKind::cuda) {
    std::string taken;
    RDMALAB_ASSIGN(ibv_mr * gmr, register_gpu(pd_, addr, length, static_cast<int>(to_ibv_access(access)), dev_.gpu_path, taken));
    return std::unique_ptr<MemoryRegion>(new VerbsMr(gmr, access, kind, taken));
  }
  ibv_mr* mr = ibv_reg_mr(pd_, addr, length, static_cast<int>(to_ibv_access(access)));
  if (!mr) {
    int err = errno;
    rlimit rl{};
    getrlimit(RLIMIT_MEMLOCK, &rl);
    if ((err == ENOMEM || err == EPERM || err == EAGAIN) && rl.rlim_cur != RLIM_INFINITY)
      return Status(Errc::permission,
                    fmt::format("ibv_reg_mr of {} failed ({}): the locked-memory limit (ulimit -l) is {}; raise it: `ulimit -l unlimited` in the "
                                "shell, or `* - memlock unlimited` in /etc/security/limits.conf, or LimitMEMLOCK=infinity for a service",
                                units::format_size(length), std::strerror(err), units::format_size(rl.rlim_cur)));
    return from_errno(err, fmt::format("ibv_reg_mr({})", units::format_size(length)));
  }
  return std::unique_ptr<MemoryRegion>(new VerbsMr(mr, access, kind));
}

Result<std::unique_ptr<QueuePair>> VerbsPd::create_qp(CompletionQueue& send_cq, CompletionQueue& recv_cq, const QpCaps& caps) {
  auto* scq = dynamic_cast<VerbsCq*>(&send_cq);
  auto* rcq = dynamic_cast<VerbsCq*>(&recv_cq);
  if (!scq || !rcq) return Status(Errc::invalid_argument, "create_qp: the CQs do not belong to the verbs backend");
  ibv_qp_init_attr ia{};
  ia.send_cq = scq->cq();
  ia.recv_cq = rcq->cq();
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = caps.max_send_wr;
  ia.cap.max_recv_wr = std::max<std::uint32_t>(caps.max_recv_wr, 1);
  ia.cap.max_send_sge = caps.max_send_sge;
  ia.cap.max_recv_sge = caps.max_recv_sge;
  ia.cap.max_inline_data = caps.max_inline;
  ibv_qp* qp = ibv_create_qp(pd_, &ia);
  if (!qp) return from_errno(errno, "ibv_create_qp");
  // The device may grant more than asked (queue depths rounded up): the QP has what it got.
  QpCaps got = caps;
  got.max_send_wr = ia.cap.max_send_wr;
  got.max_recv_wr = ia.cap.max_recv_wr;
  got.max_send_sge = ia.cap.max_send_sge;
  got.max_recv_sge = ia.cap.max_recv_sge;
  got.max_inline = ia.cap.max_inline_data;
  return std::unique_ptr<QueuePair>(new VerbsQp(dev_, qp, got));
}

}  // namespace

void set_completion_meter(std::atomic<std::uint64_t>* bytes) { completion_meter = bytes; }

std::unique_ptr<Device> make_device(Selected s, int rank, WaitMode mode, Capabilities caps, Bootstrap* boot, std::string gpu_path) {
  auto dev = std::make_unique<VerbsDevice>(std::move(s), rank, mode, caps);
  dev->boot = boot;
  dev->gpu_path = std::move(gpu_path);
  return dev;
}

}  // namespace rdmalab::verbs::detail
