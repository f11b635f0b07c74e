// Loopback: the reference implementation of the transport contract.
//
// One Fabric per launch holds every rank's regions and QPs. Posting only queues a request; an
// engine thread executes requests in posting order per QP (RC ordering), checks keys, bounds and
// access rights exactly as a responder NIC would, copies the bytes, and delivers completions to
// the CQs, where rank threads wait on a condition variable. One big lock keeps the engine simple:
// this backend is about semantics, not speed.
#include "loopback/loopback_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/soft_rc/soft_rc.h"
#include "rdmalab/scenario.h"
#include "rdmalab/run.h"

namespace rdmalab::loopback {
namespace {

using Clock = std::chrono::steady_clock;

class Fabric;
class LoopbackQp;
class LoopbackCq;

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

struct MrRec {
  std::uint64_t addr = 0, length = 0;
  std::uint32_t access = 0;
  const void* pd = nullptr;
  MemoryKind kind = MemoryKind::host;
};

struct PendingSend {
  SendWr wr;
  std::vector<Sge> sges;
  std::vector<std::uint8_t> inline_bytes;
  std::uint64_t seq = 0;
  int rnr_attempts = 0;
};

struct PendingRecv {
  std::uint64_t wr_id = 0;
  std::vector<Sge> sges;
};

// Internal completion: the public one plus what poll needs to retire send-queue slots.
struct Cqe {
  Completion wc;
  LoopbackQp* qp = nullptr;
  std::uint64_t seq = 0;  // send side: the request's sequence number
  bool send_side = false;
};

class Fabric {
 public:
  Fabric(int ranks, std::uint64_t corrupt_every) : corrupt_every_(corrupt_every), ranks_(ranks) {
    engine_ = std::thread([this] { engine_loop(); });
  }
  ~Fabric() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    engine_.join();
  }

  std::mutex mu_;  // guards everything below, QP and CQ state included
  std::condition_variable cv_;  // engine wake-up
  bool stop_ = false;
  std::atomic<bool> aborted_{false};
  std::string abort_reason_;

  std::uint32_t next_key_ = 0x1000;
  std::uint32_t next_qpn_ = 0x100;
  std::unordered_map<std::uint32_t, MrRec> lkeys_, rkeys_;
  std::unordered_map<std::uint32_t, LoopbackQp*> qps_;
  std::deque<LoopbackQp*> runnable_;  // QPs with queued sends (may hold stale entries)
  // Fault injection (loopback.corrupt_every): flip a byte of every Nth payload delivered.
  std::uint64_t corrupt_every_ = 0;
  std::uint64_t deliveries_ = 0;
  void maybe_corrupt(std::uint64_t addr, std::uint64_t len) {
    if (corrupt_every_ == 0 || len == 0) return;
    if (++deliveries_ % corrupt_every_ == 0) {
      std::uint8_t b = 0;
      move(&b, reinterpret_cast<const void*>(addr + len / 2), 1);
      b ^= 0x5a;
      move(reinterpret_cast<void*>(addr + len / 2), &b, 1);
    }
  }
  // Moves payload bytes: memcpy, or the GPU provider's copy (host or device pointers alike) once
  // GPU memory is registered. A "DMA" that fails is a fatal fabric error.
  int gpu_mrs_ = 0;
  void move(void* dst, const void* src, std::size_t n) {
    if (!n) return;
    if (gpu_mrs_ > 0) {
      Status st = memory_provider(MemoryKind::cuda)->copy_bytes(dst, src, n);
      if (!st) abort(fmt::format("a GPU copy failed: {}", st.message()));
      return;
    }
    std::memcpy(dst, src, n);
  }
  bool on_gpu(std::uint32_t rkey) const {
    auto it = rkeys_.find(rkey);
    return it != rkeys_.end() && it->second.kind == MemoryKind::cuda;
  }

  void abort(const std::string& why);
  void schedule(LoopbackQp* qp);

  // Checks an SGE against the local key table. Caller holds mu_.
  bool local_ok(const Sge& s, const void* pd, bool need_write) const {
    auto it = lkeys_.find(s.lkey);
    if (it == lkeys_.end() || it->second.pd != pd) return false;
    const MrRec& m = it->second;
    if (s.addr < m.addr || s.addr + s.length > m.addr + m.length) return false;
    return !need_write || (m.access & kAccessLocalWrite);
  }
  bool remote_ok(std::uint32_t rkey, std::uint64_t addr, std::uint64_t len, const void* pd, std::uint32_t need) const {
    auto it = rkeys_.find(rkey);
    if (it == rkeys_.end() || it->second.pd != pd) return false;
    const MrRec& m = it->second;
    if (addr < m.addr || addr + len > m.addr + m.length || addr + len < addr) return false;
    return (m.access & need) == need;
  }

 private:
  void engine_loop();
  void execute(LoopbackQp* qp, Clock::time_point now, Clock::time_point& next_deadline);

  int ranks_;
  std::thread engine_;
};

class LoopbackCq final : public CompletionQueue {
 public:
  LoopbackCq(Fabric& f, std::uint32_t cap) : f_(f), cap_(cap) {}
  std::uint32_t capacity() const override { return cap_; }

  Result<std::size_t> poll(std::span<Completion> out) override {
    std::lock_guard<std::mutex> lock(f_.mu_);
    return take(out);
  }

  Result<std::size_t> wait(std::span<Completion> out, double timeout_s) override {
    std::unique_lock<std::mutex> lock(f_.mu_);
    auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    // Spin briefly first: completions usually arrive within microseconds, sooner than a
    // condition-variable wake-up. Then wait in slices so that another rank's failure
    // (Fabric::abort) is noticed promptly.
    for (int spin = 0; spin < 200 && q_.empty() && !overflowed_ && !f_.aborted_; ++spin) {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
    }
    while (q_.empty() && !overflowed_) {
      if (f_.aborted_) return Status(Errc::bootstrap, f_.abort_reason_);
      auto now = Clock::now();
      if (now >= deadline) return Status(Errc::timeout, fmt::format("no completion within {}s", timeout_s));
      cv_.wait_until(lock, std::min(deadline, now + std::chrono::milliseconds(20)));
    }
    return take(out);
  }

  // Caller holds f_.mu_. Returns false when the CQ overflowed (the entry is lost).
  bool push(const Cqe& e);
  std::set<LoopbackQp*> users_;  // QPs that complete into this CQ

 private:
  Result<std::size_t> take(std::span<Completion> out);

  Fabric& f_;
  std::uint32_t cap_;
  std::deque<Cqe> q_;
  bool overflowed_ = false;
  std::condition_variable cv_;
};

class LoopbackMr final : public MemoryRegion {
 public:
  LoopbackMr(Fabric& f, MrRec rec, std::uint32_t lkey, std::uint32_t rkey) : f_(f), rec_(rec), lkey_(lkey), rkey_(rkey) {}
  ~LoopbackMr() override {
    std::lock_guard<std::mutex> lock(f_.mu_);
    f_.lkeys_.erase(lkey_);
    if (rec_.kind == MemoryKind::cuda) f_.gpu_mrs_--;
    f_.rkeys_.erase(rkey_);
  }
  std::uint64_t addr() const override { return rec_.addr; }
  std::uint64_t length() const override { return rec_.length; }
  std::uint32_t lkey() const override { return lkey_; }
  std::uint32_t rkey() const override { return rkey_; }
  std::uint32_t access() const override { return rec_.access; }
  MemoryKind kind() const override { return rec_.kind; }
  // No NIC: GPU memory moves by the GPU's own copies.
  std::string data_path() const override { return rec_.kind == MemoryKind::cuda ? "GPU copies (loopback, no NIC)" : "host memory"; }

 private:
  Fabric& f_;
  MrRec rec_;
  std::uint32_t lkey_, rkey_;
};

class LoopbackQp final : public QueuePair {
 public:
  LoopbackQp(Fabric& f, const void* pd, int rank, std::uint32_t qpn, LoopbackCq& scq, LoopbackCq& rcq, QpCaps caps)
      : f_(f), pd_(pd), rank_(rank), qpn_(qpn), scq_(scq), rcq_(rcq), caps_(caps) {}
  ~LoopbackQp() override {
    std::lock_guard<std::mutex> lock(f_.mu_);
    f_.qps_.erase(qpn_);
    scq_.users_.erase(this);
    rcq_.users_.erase(this);
    for (auto& p : f_.runnable_)
      if (p == this) p = nullptr;
  }

  std::uint32_t qpn() const override { return qpn_; }
  QpState state() const override {
    std::lock_guard<std::mutex> lock(f_.mu_);
    return state_;
  }
  QpEndpoint endpoint() const override { return soft_rc::endpoint(qpn_, rank_); }

  QpCaps caps() const override { return caps_; }
  Status to_init() override { return transition(QpState::reset, QpState::init, nullptr); }
  Status to_rtr(const QpConnectAttr& attr) override {
    RDMALAB_TRY(soft_rc::check_connect(attr));
    return transition(QpState::init, QpState::rtr, &attr);
  }
  Status to_rts() override { return transition(QpState::rtr, QpState::rts, nullptr); }
  Status to_error() override {
    std::lock_guard<std::mutex> lock(f_.mu_);
    enter_error();
    return Status::ok();
  }
  Status reset() override {
    std::lock_guard<std::mutex> lock(f_.mu_);
    sq_.clear();
    rq_.clear();
    state_ = QpState::reset;
    posted_ = retired_ = 0;
    return Status::ok();
  }

  Status post_send(std::span<const SendWr> wrs, std::size_t* bad_index) override;
  Status post_recv(std::span<const RecvWr> wrs, std::size_t* bad_index) override;

  // --- engine side; caller holds f_.mu_ ---
  void enter_error() {
    if (state_ == QpState::err) return;
    state_ = QpState::err;
    flush_all();
  }
  void flush_all() {
    while (!sq_.empty()) {
      complete_send(sq_.front(), WcStatus::wr_flush_err, 0, true);
      sq_.pop_front();
    }
    while (!rq_.empty()) {
      rcq_.push(Cqe{soft_rc::flushed_receive(rq_.front().wr_id, qpn_), this, 0, false});
      rq_.pop_front();
    }
  }
  void complete_send(const PendingSend& p, WcStatus st, std::uint32_t byte_len, bool force) {
    if (!p.wr.signaled && st == WcStatus::success && !force) return;
    scq_.push(Cqe{soft_rc::send_completion(p.wr.wr_id, p.wr.opcode, st, byte_len, qpn_), this, p.seq, true});
  }

  Fabric& f_;
  const void* pd_;
  int rank_;
  std::uint32_t qpn_;
  LoopbackCq& scq_;
  LoopbackCq& rcq_;
  QpCaps caps_;
  QpState state_ = QpState::reset;
  QpConnectAttr conn_;
  std::deque<PendingSend> sq_;
  std::deque<PendingRecv> rq_;
  std::uint64_t posted_ = 0;   // send requests accepted
  std::uint64_t retired_ = 0;  // send-queue slots freed by polled completions
  Clock::time_point rnr_until_{};
  bool queued_ = false;  // in Fabric::runnable_

 private:
  Status transition(QpState from, QpState to, const QpConnectAttr* attr) {
    std::lock_guard<std::mutex> lock(f_.mu_);
    RDMALAB_TRY(soft_rc::transition(state_, from, to, qpn_));
    if (attr) conn_ = *attr;
    return Status::ok();
  }
};

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

// Bootstrap among threads: generation-counted rendezvous.
class SharedBootstrap {
 public:
  explicit SharedBootstrap(int size) : size_(size), slots_(static_cast<std::size_t>(size)) {}

  Result<std::vector<std::byte>> allgather(int rank, std::span<const std::byte> mine) {
    std::unique_lock<std::mutex> lock(mu_);
    if (aborted_) return Status(Errc::bootstrap, reason_);
    std::uint64_t gen = generation_;
    slots_[static_cast<std::size_t>(rank)].assign(mine.begin(), mine.end());
    if (++arrived_ == size_) {
      bool same = true;
      for (const auto& s : slots_) same = same && s.size() == mine.size();
      result_.clear();
      mismatch_ = !same;
      if (same)
        for (const auto& s : slots_) result_.insert(result_.end(), s.begin(), s.end());
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != gen || aborted_; });
      if (generation_ == gen) return Status(Errc::bootstrap, reason_);
    }
    if (mismatch_) return Status(Errc::invalid_argument, "allgather: ranks contributed different lengths");
    return result_;
  }

  void abort(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return;
    aborted_ = true;
    reason_ = why;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int size_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  bool aborted_ = false;
  bool mismatch_ = false;
  std::string reason_;
  std::vector<std::vector<std::byte>> slots_;
  std::vector<std::byte> result_;
};

class RankBootstrap final : public Bootstrap {
 public:
  RankBootstrap(SharedBootstrap& s, int rank, int size) : s_(s), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status barrier() override { return s_.allgather(rank_, {}).status(); }
  Result<std::vector<std::byte>> allgather(std::span<const std::byte> mine) override { return s_.allgather(rank_, mine); }

 private:
  SharedBootstrap& s_;
  int rank_, size_;
};

class WallRuntime final : public Runtime {
 public:
  WallRuntime(Clock::time_point t0, Fabric& f) : t0_(t0), f_(f) {}
  double now() override { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  Status compute(double seconds) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return Status::ok();
  }
  Status wait_for_byte(const volatile std::uint8_t* addr, std::uint8_t value, double timeout_s) override {
    auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    for (std::uint64_t spins = 0;; ++spins) {
      if (*addr == value) {
        std::atomic_thread_fence(std::memory_order_acquire);
        return Status::ok();
      }
      if ((spins & 1023) == 0) {
        if (f_.aborted_) return Status(Errc::bootstrap, f_.abort_reason_);
        if (Clock::now() > deadline) return Status(Errc::timeout, fmt::format("byte not written within {}s", timeout_s));
        std::this_thread::yield();
      }
    }
  }

 private:
  Clock::time_point t0_;
  Fabric& f_;
};

class LoopbackBackend final : public Backend {
 public:
  std::string name() const override { return "loopback"; }
  std::string description() const override { return "ranks as threads of one process, real copies; the reference for the contract"; }
  Availability availability() const override { return {true, ""}; }
  Capabilities capabilities() const override { return loopback_caps(); }

  void add_keys(Schema& schema) const override {
    schema.add(KeySpec{"loopback.corrupt_every", ValueType::integer, "0",
                       "fault injection: flip one byte in every Nth payload delivered (0 = off), to watch payload checks catch it",
                       {}, 0, 1e12});
  }

  Status check(const Scenario& sc) const override {
    if (sc.get_int("fabric.nodes") * sc.get_int("fabric.gpus_per_node") > kMaxRanks)
      return sc.error("fabric.nodes", fmt::format("loopback runs every rank as a thread: at most {} ranks (use simgrid for more)", kMaxRanks));
    // dmabuf and peermem are how a NIC reaches GPU memory; loopback has no NIC: its ranks copy
    // GPU memory with the GPU's own copies, which is what auto does here.
    const std::string path = sc.get_string("workload.gpu_path");
    if (sc.is_set("workload.gpu_path") && (path == "dmabuf" || path == "peermem"))
      return sc.error("workload.gpu_path", fmt::format("{} is how a NIC reaches GPU memory; the loopback backend has no NIC and copies GPU "
                                                       "memory directly: use auto (direct copies) or staged (host bounce buffers)", path));
    return Status::ok();
  }

  // A stop request wakes every rank's wait (see launch).
  bool can_cancel() const override { return true; }

  Status launch(const LaunchSpec& spec, const RankMain& main) override {
    if (spec.ranks < 1 || spec.ranks > kMaxRanks)
      return Status(Errc::invalid_argument, fmt::format("loopback runs 1..{} ranks (asked {})", kMaxRanks, spec.ranks));
    std::uint64_t corrupt = spec.scenario && spec.scenario->has("loopback.corrupt_every")
                                ? static_cast<std::uint64_t>(spec.scenario->get_int("loopback.corrupt_every"))
                                : 0;
    Fabric fabric(spec.ranks, corrupt);
    SharedBootstrap shared(spec.ranks);
    const auto t0 = Clock::now();
    std::vector<Status> results(static_cast<std::size_t>(spec.ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < spec.ranks; ++r) {
      threads.emplace_back([&, r] {
        LoopbackDevice dev(fabric, r);
        RankBootstrap boot(shared, r, spec.ranks);
        WallRuntime rt(t0, fabric);
        RankEnv env{r, spec.ranks, boot, rt, dev, host_memory(), scenario_node_shape(spec.scenario, spec.ranks)};
        Status st;
        try {
          st = main(env);
        } catch (const std::exception& e) {
          st = Status(Errc::internal, fmt::format("uncaught exception: {}", e.what()));
        }
        if (!st) {
          // Wake every other rank: they must not wait for one that has stopped.
          std::string why = fmt::format("rank {} stopped: {}", r, st.message());
          shared.abort(why);
          fabric.abort(why);
        }
        results[static_cast<std::size_t>(r)] = st;
      });
    }
    // A stop request (LaunchSpec::cancel) wakes every rank the way a failed rank does: their
    // waits return, and the run ends cancelled.
    std::atomic<bool> ended{false};
    std::atomic<bool> stopped{false};
    std::thread watcher;
    if (spec.cancel)
      watcher = std::thread([&] {
        while (!ended.load()) {
          if (spec.cancel->load()) {
            stopped = true;
            shared.abort("stopped by the user");
            fabric.abort("stopped by the user");
            return;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      });
    for (auto& t : threads) t.join();
    ended = true;
    if (watcher.joinable()) watcher.join();
    if (stopped) return Status(Errc::cancelled, "stopped by the user");
    return first_failure(results);
  }

 private:
  static constexpr int kMaxRanks = 1024;
};

}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<LoopbackBackend>(); }

}  // namespace rdmalab::loopback
