// The loopback fabric (loopback_fabric.h): the objects' methods and the engine thread, which
// executes requests in posting order per QP (RC ordering), checks keys, bounds and access rights
// as a responder NIC would, copies the bytes and delivers the completions.
#include "loopback/loopback_fabric.h"

namespace rdmalab::loopback::detail {

Capabilities loopback_caps() {
  Capabilities c;
  c.rdma_read = true;
  c.rdma_write_imm = true;
  c.atomics = true;
  c.models_time = false;
  c.max_inline = 256;
  c.max_sge = 16;
  c.max_qp_wr = 16384;
  c.max_cq_entries = 1u << 22;
  c.max_msg_size = 1u << 31;
  // GPU memory when a GPU provider is installed: payloads then move with CUDA copies.
  if (memory_provider(MemoryKind::cuda)) c.memory_kinds.add(MemoryKind::cuda);
  return c;
}

bool LoopbackCq::push(const Cqe& e) {
  if (overflowed_) return false;
  if (q_.size() >= cap_) {
    // As verbs: the CQ is in error (IBV_EVENT_CQ_ERR) and the QPs that use it cannot go on.
    overflowed_ = true;
    cv_.notify_all();
    std::vector<LoopbackQp*> users(users_.begin(), users_.end());
    for (LoopbackQp* qp : users) qp->enter_error();
    return false;
  }
  q_.push_back(e);
  cv_.notify_all();
  return true;
}

Result<std::size_t> LoopbackCq::take(std::span<Completion> out) {
  if (overflowed_)
    return Status(Errc::cq_overflow, fmt::format("completion queue of {} entries overflowed: completions were lost (size it for every "
                                                 "outstanding request, or poll more often)", cap_));
  std::size_t n = 0;
  while (n < out.size() && !q_.empty()) {
    Cqe& e = q_.front();
    out[n++] = e.wc;
    // A polled send completion frees its slot and every unsignaled slot before it.
    if (e.send_side && e.qp && f_.qps_.count(e.wc.qp_num)) e.qp->retired_ = std::max(e.qp->retired_, e.seq + 1);
    q_.pop_front();
  }
  return n;
}

Status LoopbackQp::post_send(std::span<const SendWr> wrs, std::size_t* bad_index) {
  std::lock_guard<std::mutex> lock(f_.mu_);
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    const SendWr& wr = wrs[i];
    auto fail = [&](Errc code, std::string msg) {
      if (i > 0) f_.schedule(this);  // the ones before this were accepted and must run
      if (bad_index) *bad_index = i;
      return Status(code, fmt::format("QP {:#x}: {}", qpn_, msg));
    };
    std::uint64_t len = 0;
    if (Status bad = soft_rc::check_post_send(state_, wr, caps_, posted_ - retired_, caps_.max_send_wr, len); !bad) return fail(bad.code(), bad.message());
    PendingSend p;
    p.wr = wr;
    p.sges.assign(wr.sg_list.begin(), wr.sg_list.end());
    p.wr.sg_list = {};
    p.seq = posted_++;
    if (wr.inline_data) {
      p.inline_bytes.resize(len);
      std::size_t off = 0;
      for (const auto& s : wr.sg_list) {
        std::memcpy(p.inline_bytes.data() + off, reinterpret_cast<const void*>(s.addr), s.length);
        off += s.length;
      }
    }
    sq_.push_back(std::move(p));
  }
  f_.schedule(this);
  return Status::ok();
}

Status LoopbackQp::post_recv(std::span<const RecvWr> wrs, std::size_t* bad_index) {
  std::lock_guard<std::mutex> lock(f_.mu_);
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    if (Status bad = soft_rc::check_post_recv(state_, wrs[i], caps_.max_recv_sge, rq_.size(), caps_.max_recv_wr, qpn_); !bad) {
      if (bad_index) *bad_index = i;
      return bad;
    }
    PendingRecv r{wrs[i].wr_id, {wrs[i].sg_list.begin(), wrs[i].sg_list.end()}};
    if (state_ == QpState::err) {
      rcq_.push(Cqe{soft_rc::flushed_receive(r.wr_id, qpn_), this, 0, false});
      continue;
    }
    rq_.push_back(std::move(r));
  }
  f_.schedule(this);  // a send waiting for a receive (RNR) may go on now
  return Status::ok();
}

void Fabric::schedule(LoopbackQp* qp) {
  if (!qp->queued_) {
    qp->queued_ = true;
    runnable_.push_back(qp);
  }
  cv_.notify_all();
}

void Fabric::abort(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) return;
  abort_reason_ = why;
  aborted_ = true;
  cv_.notify_all();
}

void Fabric::engine_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  Clock::time_point idle_since{};
  while (!stop_) {
    auto now = Clock::now();
    Clock::time_point next_deadline = Clock::time_point::max();
    std::size_t n = runnable_.size();
    bool progressed = false;
    for (std::size_t i = 0; i < n && !runnable_.empty(); ++i) {
      LoopbackQp* qp = runnable_.front();
      runnable_.pop_front();
      if (!qp) continue;
      qp->queued_ = false;
      if (qp->sq_.empty()) continue;
      std::size_t before = qp->sq_.size();
      execute(qp, now, next_deadline);
      progressed |= qp->sq_.size() != before;
      if (!qp->sq_.empty()) schedule(qp);
    }
    if (progressed) {
      idle_since = Clock::time_point{};
      continue;
    }
    // Nothing could move. Stay awake briefly (a post usually follows a completion within
    // microseconds, and a condition-variable wake-up costs more than that), then sleep until a
    // post, or until the earliest RNR retry is due.
    if (idle_since == Clock::time_point{}) idle_since = now;
    if (now - idle_since < std::chrono::microseconds(50)) {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
      continue;
    }
    if (next_deadline == Clock::time_point::max())
      cv_.wait(lock, [&] {
        return stop_ || std::any_of(runnable_.begin(), runnable_.end(),
                                    [&](LoopbackQp* q) { return q && !q->sq_.empty() && q->rnr_until_ <= Clock::now(); });
      });
    else
      cv_.wait_until(lock, next_deadline);
  }
}

// Executes the oldest request of `qp`. Caller holds mu_.
void Fabric::execute(LoopbackQp* qp, Clock::time_point now, Clock::time_point& next_deadline) {
  if (qp->state_ == QpState::err) {
    qp->flush_all();
    return;
  }
  if (qp->rnr_until_ > now) {
    next_deadline = std::min(next_deadline, qp->rnr_until_);
    return;
  }
  // Take the request out of the queue first: delivering a completion can overflow a CQ, which
  // flushes the queues of every QP that uses it, this one included.
  PendingSend p = std::move(qp->sq_.front());
  qp->sq_.pop_front();
  auto fail = [&](WcStatus st) {
    qp->complete_send(p, st, 0, true);
    qp->enter_error();
  };
  auto rit = qps_.find(qp->conn_.remote.qpn);
  LoopbackQp* peer = rit == qps_.end() ? nullptr : rit->second;
  if (!peer || !soft_rc::responds(peer->state_)) {
    // The responder is gone or not ready: a real NIC retries retry_cnt times, then gives up.
    fail(WcStatus::retry_exc_err);
    return;
  }
  const SendOpcode oc = p.wr.opcode;
  if (const WcStatus local = soft_rc::local_verdict(oc, p.wr.inline_data, p.sges, [&](const Sge& s, bool write) { return local_ok(s, qp->pd_, write); });
      local != WcStatus::success) {
    fail(local);
    return;
  }
  std::uint64_t len = 0;
  if (p.wr.inline_data)
    len = p.inline_bytes.size();
  else
    for (const auto& s : p.sges) len += s.length;
  // Gathers the local payload (inline copy or SGEs).
  auto gather = [&](std::uint8_t* dst) {
    if (p.wr.inline_data) {
      move(dst, p.inline_bytes.data(), p.inline_bytes.size());
      return;
    }
    for (const auto& s : p.sges) {
      move(dst, reinterpret_cast<const void*>(s.addr), s.length);
      dst += s.length;
    }
  };
  const WcStatus verdict =
      soft_rc::remote_verdict(oc, p.wr.remote_addr, len, [&](std::uint32_t need) { return remote_ok(p.wr.rkey, p.wr.remote_addr, len, peer->pd_, need); });
  if (verdict != WcStatus::success) {
    fail(verdict);
    return;
  }

  const bool consumes_recv = soft_rc::consumes_receive(oc);
  if (consumes_recv && peer->rq_.empty()) {
    // Receiver not ready: NAK, wait the RNR timer, retry; rnr_retry 7 means forever.
    if (!soft_rc::rnr_retries(p.rnr_attempts, qp->conn_.rnr_retry)) {
      fail(WcStatus::rnr_retry_exc_err);
      return;
    }
    p.rnr_attempts++;
    qp->rnr_until_ = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(peer->conn_.min_rnr_timer_s));
    next_deadline = std::min(next_deadline, qp->rnr_until_);
    qp->sq_.push_front(std::move(p));
    return;
  }

  std::uint32_t byte_len = static_cast<std::uint32_t>(len);
  switch (oc) {
    case SendOpcode::rdma_write:
    case SendOpcode::rdma_write_with_imm:
      if (len) gather(reinterpret_cast<std::uint8_t*>(p.wr.remote_addr));
      maybe_corrupt(p.wr.remote_addr, len);
      break;
    case SendOpcode::rdma_read: {
      auto* src = reinterpret_cast<const std::uint8_t*>(p.wr.remote_addr);
      for (const auto& s : p.sges) {
        move(reinterpret_cast<void*>(s.addr), src, s.length);
        src += s.length;
      }
      if (!p.sges.empty()) maybe_corrupt(p.sges[0].addr, p.sges[0].length);
      break;
    }
    case SendOpcode::atomic_fetch_add:
    case SendOpcode::atomic_cmp_swap: {
      // The NIC reads the target, applies the operation and writes it back, as a ConnectX does over
      // PCIe (GPU memory included: move() is the GPU's copy there); the engine thread holds mu_,
      // so no other request of the fabric runs in between.
      auto* target = reinterpret_cast<std::uint64_t*>(p.wr.remote_addr);
      std::uint64_t old = 0;
      if (on_gpu(p.wr.rkey)) {
        move(&old, target, 8);
        const std::uint64_t now_value = soft_rc::atomic_result(oc, old, p.wr.compare_add, p.wr.swap);
        move(target, &now_value, 8);
      } else {
        old = __atomic_load_n(target, __ATOMIC_SEQ_CST);
        __atomic_store_n(target, soft_rc::atomic_result(oc, old, p.wr.compare_add, p.wr.swap), __ATOMIC_SEQ_CST);
      }
      move(reinterpret_cast<void*>(p.sges[0].addr), &old, 8);
      break;
    }
    default: break;
  }

  if (consumes_recv) {
    PendingRecv r = std::move(peer->rq_.front());
    peer->rq_.pop_front();
    Completion wc = soft_rc::receive_completion(r.wr_id, peer->qpn_, oc, p.wr.imm, byte_len);
    if (oc != SendOpcode::rdma_write_with_imm) {
      const soft_rc::Placement at = soft_rc::place(r.sges, len, [&](const Sge& s) { return local_ok(s, peer->pd_, true); });
      if (!at.ok()) {
        // The responder cannot place the message: it fails its receive and the requester sees
        // the NAK; both QPs go to ERR.
        wc.status = at.receiver;
        wc.byte_len = 0;
        peer->rcq_.push(Cqe{wc, peer, 0, false});
        peer->enter_error();
        fail(at.requester);
        return;
      }
      std::vector<std::uint8_t> tmp(len);
      gather(tmp.data());
      soft_rc::scatter(r.sges, tmp.data(), len,
                       [&](std::uint64_t dst, const std::uint8_t* src, std::uint64_t n) { move(reinterpret_cast<void*>(dst), src, n); });
      if (!r.sges.empty()) maybe_corrupt(r.sges[0].addr, std::min<std::uint64_t>(len, r.sges[0].length));
    }
    peer->rcq_.push(Cqe{wc, peer, 0, false});
  }

  qp->complete_send(p, WcStatus::success, byte_len, false);
}

class LoopbackPd final : public ProtectionDomain {
 public:
  LoopbackPd(Fabric& f, int rank) : f_(f), rank_(rank) {}
  Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, std::uint64_t length, std::uint32_t access,
                                                        MemoryKind kind) override {
    if (kind == MemoryKind::cuda && !memory_provider(MemoryKind::cuda))
      return Status(Errc::not_supported, fmt::format("no cuda memory here: {}", memory_unavailable_reason(MemoryKind::cuda)));
    if (kind != MemoryKind::host && kind != MemoryKind::cuda)
      return Status(Errc::not_supported, fmt::format("loopback registers host and GPU memory only (asked {})", memory_kind_name(kind)));
    RDMALAB_TRY(check_registration(addr, length, access));
    std::lock_guard<std::mutex> lock(f_.mu_);
    MrRec rec{reinterpret_cast<std::uint64_t>(addr), length, access, this, kind};
    if (kind == MemoryKind::cuda) f_.gpu_mrs_++;
    std::uint32_t lkey = f_.next_key_++;
    std::uint32_t rkey = f_.next_key_++ | 0x80000000u;
    f_.lkeys_[lkey] = rec;
    f_.rkeys_[rkey] = rec;
    return std::unique_ptr<MemoryRegion>(new LoopbackMr(f_, rec, lkey, rkey));
  }

  Result<std::unique_ptr<QueuePair>> create_qp(CompletionQueue& send_cq, CompletionQueue& recv_cq, const QpCaps& caps) override {
    auto* scq = dynamic_cast<LoopbackCq*>(&send_cq);
    auto* rcq = dynamic_cast<LoopbackCq*>(&recv_cq);
    if (!scq || !rcq) return Status(Errc::invalid_argument, "create_qp: the CQs do not belong to the loopback backend");
    RDMALAB_TRY(check_qp_caps(caps, loopback_caps()));
    std::lock_guard<std::mutex> lock(f_.mu_);
    auto qp = std::make_unique<LoopbackQp>(f_, this, rank_, f_.next_qpn_++, *scq, *rcq, caps);
    f_.qps_[qp->qpn()] = qp.get();
    scq->users_.insert(qp.get());
    rcq->users_.insert(qp.get());
    return std::unique_ptr<QueuePair>(std::move(qp));
  }

 private:
  Fabric& f_;
  int rank_;
};

class LoopbackDevice final : public Device {
 public:
  LoopbackDevice(Fabric& f, int rank) : f_(f), rank_(rank), caps_(loopback_caps()) {}
  std::string name() const override { return fmt::format("loopback{}", rank_); }
  const Capabilities& caps() const override { return caps_; }
  Result<std::unique_ptr<ProtectionDomain>> alloc_pd() override { return std::unique_ptr<ProtectionDomain>(new LoopbackPd(f_, rank_)); }
  Result<std::unique_ptr<CompletionQueue>> create_cq(std::uint32_t entries) override {
    RDMALAB_TRY(check_cq_entries(entries, caps_));
    return std::unique_ptr<CompletionQueue>(new LoopbackCq(f_, entries));
  }

 private:
  Fabric& f_;
  int rank_;
  Capabilities caps_;
};

std::unique_ptr<Device> make_device(Fabric& f, int rank) { return std::make_unique<LoopbackDevice>(f, rank); }

}  // namespace rdmalab::loopback::detail
