// The contract's objects on the model (transport.h): completion queues, queue pairs, the device, the
// bootstrap and the runtime of one rank. What they do to simulated time is in engine/nic.cc; how a
// rank waits, in engine/progress.h.
#pragma once

#include <deque>

#include <fmt/format.h>

#include <span>

#include "common/soft_rc/soft_rc.h"
#include "simgrid/engine/progress.h"
#include "simgrid/engine/world.h"

namespace rdmalab::sim {

class alignas(64) SimgridCq final : public CompletionQueue {
 public:
  SimgridCq(World& w, int rank, std::uint32_t cap) : cap_(cap), rank_(rank), w_(w) {}
  std::uint32_t capacity() const override { return cap_; }
  Result<std::size_t> poll(std::span<Completion> out) override { return take(out); }
  Result<std::size_t> wait(std::span<Completion> out, double timeout_s) override;
  bool push(const Completion& wc, SimgridQp* qp, std::uint64_t seq, bool send_side);
  // A QP being destroyed or reset: its completions still queued no longer point to it (they keep
  // its number, and free no send queue slots).
  void forget(const SimgridQp* qp);
  int rank() const { return rank_; }

 private:
  // A completion as queued: 32 bytes, two to a cache line (the ring's buffer starts on one). It
  // points to its QP while that exists: the completion's qp_num is read there when it is taken,
  // and a send completion then frees its QP's send queue slots up to its request, whose sequence
  // number it carries in its low 32 bits (a QP has at most 16384 requests outstanding). Once the
  // QP is gone the entry holds the QP's number instead.
  struct alignas(32) Entry {
    std::uint64_t wr_id;
    SimgridQp* qp;                 // null once forgotten
    std::uint32_t byte_len;
    std::uint32_t imm;
    std::uint32_t seq_or_qpn;  // qp set: the request's sequence number (low bits); else the QP's number
    WcOpcode opcode;
    WcStatus status;
    bool has_imm;
    bool send_side;
  };
  static_assert(sizeof(Entry) == 32);
  Result<std::size_t> take(std::span<Completion> out);
  Ring<Entry> q_;
  bool overflowed_ = false;
  std::uint32_t cap_;
  int rank_;
  World& w_;

 public:
  std::set<SimgridQp*> users;
};

class alignas(64) SimgridQp final : public QueuePair {
 public:
  SimgridQp(World& w, std::uint32_t pd_id, int rank_of, std::uint32_t qpn, SimgridCq& send_cq, SimgridCq& recv_cq, QpCaps caps)
      : qpn_(qpn),
        rank(rank_of),
        max_send_sge_(static_cast<std::uint8_t>(caps.max_send_sge)),
        max_recv_sge_(static_cast<std::uint8_t>(caps.max_recv_sge)),
        pd(pd_id),
        scq(send_cq),
        rcq(recv_cq),
        w_(w),
        max_send_wr_(static_cast<std::uint16_t>(caps.max_send_wr)),
        max_recv_wr_(static_cast<std::uint16_t>(caps.max_recv_wr)),
        caps_(caps) {
    w_.qps.put(qpn_, this);
    scq.users.insert(this);
    rcq.users.insert(this);
    auto& nq = w_.nics[static_cast<std::size_t>(rank)]->qps;
    nq.push_back(this);
  }
  ~SimgridQp() override {
    // Unlink first, then cancel: cancelling is an s4u call, during which the NIC actor runs.
    w_.qps.erase(qpn_);
    forget_peer();
    for (SimgridQp* q : peer_of_) q->peer_ = nullptr;
    scq.users.erase(this);
    scq.forget(this);
    rcq.forget(this);
    rcq.users.erase(this);
    auto& nq = w_.nics[static_cast<std::size_t>(rank)]->qps;
    nq.erase(std::remove(nq.begin(), nq.end(), this), nq.end());
    cancel_inflight();
  }

  void cancel_inflight() {
    w_.start_batch();  // cancelling is a simcall: what was made starts first
    Ring<OpPtr> ops;
    ops.swap(inflight);
    for (auto& op : ops) op->dead = true;
    for (auto& op : ops)
      if (op->comm && !op->done) op->comm->cancel();
  }

  std::uint32_t qpn() const override { return qpn_; }
  QpState state() const override { return state_; }
  QpEndpoint endpoint() const override { return soft_rc::endpoint(qpn_, rank); }
  QpCaps caps() const override { return caps_; }
  Status to_init() override { return transition(QpState::reset, QpState::init, nullptr); }
  Status to_rtr(const QpConnectAttr& attr) override {
    RDMALAB_TRY(soft_rc::check_connect(attr));
    return transition(QpState::init, QpState::rtr, &attr);
  }
  Status to_rts() override { return transition(QpState::rtr, QpState::rts, nullptr); }
  Status to_error() override {
    enter_error();
    w_.flush_wakes();
    return Status::ok();
  }
  Status reset() override {
    rq.clear();
    cancel_inflight();
    scq.forget(this);  // its queued completions no longer free slots of the new numbering
    rcq.forget(this);
    state_ = QpState::reset;
    posted = retired = 0;
    rd_outstanding = 0;
    rx_last = 0;
    held.clear();
    return Status::ok();
  }
  Status post_send(std::span<const SendWr> wrs, std::size_t* bad_index) override;
  Status post_recv(std::span<const RecvWr> wrs, std::size_t* bad_index) override;

  void enter_error() {
    if (soft_rc::enter_error(state_)) flush_all();
  }
  void flush_all() {
    Ring<OpPtr> ops;
    ops.swap(inflight);
    held.clear();
    rd_outstanding = 0;
    rx_last = 0;
    for (auto& op : ops) {
      op->dead = true;
      complete_send(*op, op->done ? op->status : WcStatus::wr_flush_err, true);
    }
    // Transfers still on the wire are left to end on their own: cancelling is an s4u call, and
    // the caller may be walking state. The NIC ignores them (their requests are dead).
    while (!rq.empty()) {
      rcq.push(soft_rc::flushed_receive(rq.front().wr_id, qpn_), this, 0, false);
      rq.pop_front();
    }
  }
  void complete_send(const Op& op, WcStatus st, bool force) {
    if (!op.wr.signaled && st == WcStatus::success && !force) return;
    scq.push(soft_rc::send_completion(op.wr.wr_id, op.wr.opcode, st, static_cast<std::uint32_t>(op.len), qpn_), this, op.seq, true);
  }

  // The QP it is connected to, while that one exists (looked up once, not at every transfer).
  SimgridQp* peer() {
    if (!peer_ && (peer_ = w_.qps.find(conn.remote.qpn))) peer_->peer_of_.push_back(this);
    return peer_;
  }
  void forget_peer() {
    if (!peer_) return;
    std::erase(peer_->peer_of_, this);
    peer_ = nullptr;
  }

  // What posts and transfers touch, in the QP's first two cache lines (at scale each is a cache
  // miss per transfer): the limits checked at every post are kept here in the widths the model's
  // capabilities allow (sim_caps: 16384 requests, 16 SGEs); caps_ and conn follow, cold. The
  // members without an underscore are the NIC's to work on (engine/nic.cc: the requests in
  // flight, the receive queue, the connection); the others are the QP's own. The order is the
  // layout, so the access labels interleave.
 private:
  std::uint32_t qpn_;

 public:
  int rank;
  std::uint64_t posted = 0, retired = 0;
  Ring<OpPtr> inflight;

 private:
  QpState state_ = QpState::reset;
  std::uint8_t max_send_sge_, max_recv_sge_;

 public:
  std::uint32_t pd;
  Ring<PendingRecv> rq;
  SimgridCq& scq;
  SimgridCq& rcq;

 private:
  World& w_;
  std::uint16_t max_send_wr_, max_recv_wr_;
  SimgridQp* peer_ = nullptr;
  QpCaps caps_;

 public:
  QpConnectAttr conn;

 private:
  std::vector<SimgridQp*> peer_of_;  // the QPs whose peer_ this is

 public:
  double next_start = 0;  // no request of this QP starts before its predecessor (RC order)
  // Reads and atomics in flight, and the requests held behind one that found them at the QP's
  // limit (the send queue stalls there, as a NIC's does), each with its model_min_latency_s.
  std::uint32_t rd_outstanding = 0;
  double rx_last = 0;  // as responder: when the last message that took a CPU-posted receive ended, in sequence (at_responder)
  std::deque<std::pair<OpPtr, double>> held;

 private:
  Status transition(QpState from, QpState to, const QpConnectAttr* attr) {
    RDMALAB_TRY(soft_rc::transition(state_, from, to, qpn_));
    if (attr) {
      conn = *attr;
      forget_peer();
    }
    return Status::ok();
  }
};

class SimgridDevice final : public Device {
 public:
  SimgridDevice(World& w, int rank) : w_(w), rank_(rank), caps_(sim_caps()) {}

  Status switch_collective(const SwitchCollective& a) override { return run_switch_collective(w_, rank_, a); }
  std::string name() const override { return fmt::format("sim-nic{}", rank_); }
  const Capabilities& caps() const override { return caps_; }
  Result<std::unique_ptr<ProtectionDomain>> alloc_pd() override;
  Result<std::unique_ptr<CompletionQueue>> create_cq(std::uint32_t entries) override {
    RDMALAB_TRY(check_cq_entries(entries, caps_));
    return std::unique_ptr<CompletionQueue>(new SimgridCq(w_, rank_, entries));
  }

 private:
  World& w_;
  int rank_;
  Capabilities caps_;
};

class SimgridBootstrap final : public Bootstrap {
 public:
  SimgridBootstrap(World& w, int rank, int size) : w_(w), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status barrier() override { return allgather({}).status(); }
  Result<std::vector<std::byte>> allgather(std::span<const std::byte> mine) override {
    // Out of band: takes no simulated time. Ranks wait in progress(), so their transfers go on.
    if (w_.aborted) return Status(Errc::bootstrap, w_.abort_reason);
    std::uint64_t gen = w_.generation;
    w_.slots[static_cast<std::size_t>(rank_)].assign(mine.begin(), mine.end());
    if (++w_.arrived == size_) {
      bool same = true;
      for (const auto& s : w_.slots) same = same && s.size() == mine.size();
      w_.mismatch = !same;
      w_.gathered.clear();
      if (same)
        for (const auto& s : w_.slots) w_.gathered.insert(w_.gathered.end(), s.begin(), s.end());
      w_.arrived = 0;
      ++w_.generation;
      for (auto& n : w_.nics) w_.wake_later(n->rank);
      w_.flush_wakes();
    } else {
      Status st = progress(w_, rank_, std::numeric_limits<double>::infinity(), [&] { return w_.generation != gen; });
      if (!st) return st;
    }
    if (w_.mismatch) return Status(Errc::invalid_argument, "allgather: ranks contributed different lengths");
    return w_.gathered;
  }

 private:
  World& w_;
  int rank_, size_;
};

class SimgridRuntime final : public Runtime {
 public:
  SimgridRuntime(World& w, int rank) : w_(w), rank_(rank) {}
  double now() override { return sg4::Engine::get_clock(); }
  Status compute(double seconds) override {
    // Transfers go on meanwhile; an aborted run stops computing and says why.
    if (seconds <= 0) return Status::ok();
    Status st = progress(w_, rank_, sg4::Engine::get_clock() + seconds, [] { return false; });
    return st.code() == Errc::timeout ? Status::ok() : st;  // the deadline is the phase's end
  }
  Status wait_for_byte(const volatile std::uint8_t* addr, std::uint8_t value, double timeout_s) override {
    Status st = progress(w_, rank_, sg4::Engine::get_clock() + timeout_s, [&] { return *addr == value; });
    if (st.code() == Errc::timeout) return Status(Errc::timeout, fmt::format("byte not written within {}s of simulated time", timeout_s));
    return st;
  }

 private:
  World& w_;
  int rank_;
};

}  // namespace rdmalab::sim
