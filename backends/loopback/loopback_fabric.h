// The loopback backend's fabric: every rank's regions, QPs and CQs, and the engine thread that
// executes requests as a responder NIC would (loopback_fabric.cc). Internal to the backend.
#pragma once

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

namespace rdmalab::loopback::detail {

using Clock = std::chrono::steady_clock;

class Fabric;
class LoopbackQp;
class LoopbackCq;

// What this backend can do (with a GPU provider installed, GPU memory too).
Capabilities loopback_caps();

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
  explicit Fabric(std::uint64_t corrupt_every) : corrupt_every_(corrupt_every) {
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
    if (soft_rc::enter_error(state_)) flush_all();
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

// The contract's Device of rank `rank` on the fabric.
std::unique_ptr<Device> make_device(Fabric& f, int rank);

}  // namespace rdmalab::loopback::detail
