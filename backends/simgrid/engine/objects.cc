// The contract objects' operations that are more than a line: completions in and out, posting,
// memory registration and protection domains.
#include "simgrid/engine/objects.h"

#include "common/soft_rc/soft_rc.h"

#include <fmt/format.h>

#include <cstring>

#include "rdmalab/calibration.h"

namespace rdmalab::sim {

Capabilities sim_caps() {
  Capabilities c;
  c.rdma_read = true;
  c.rdma_write_imm = true;
  c.atomics = true;
  c.models_time = true;
  c.max_inline = 1024;
  c.max_sge = 16;
  c.max_qp_wr = 16384;
  c.max_cq_entries = 1u << 22;
  c.max_msg_size = 1u << 31;
  c.memory_kinds.add(MemoryKind::phantom);
  c.memory_kinds.add(MemoryKind::cuda);  // modelled: host bytes, routed through the GPU's data path
  c.models_gpu_memory = true;
  c.switch_reduction = true;  // where the node's NVSwitch reduces (fabric.node.nvswitch.reduce)
  c.in_network_reduction = true;  // where the fabric's switches reduce (fabric.sharp.tiers)
  return c;
}

bool SimgridCq::push(const Completion& wc, SimgridQp* qp, std::uint64_t seq, bool send_side) {
  if (overflowed_) return false;
  if (q_.size() >= cap_) {
    overflowed_ = true;
    w_.wake_later(rank_);
    std::vector<SimgridQp*> us(users.begin(), users.end());
    for (SimgridQp* u : us) u->enter_error();
    return false;
  }
  assert(qp && wc.qp_num == qp->qpn());
  Entry& e = q_.next();  // filled in place
  e.wr_id = wc.wr_id;
  e.qp = qp;
  e.byte_len = wc.byte_len;
  e.imm = wc.imm;
  e.seq_or_qpn = static_cast<std::uint32_t>(seq);
  e.opcode = wc.opcode;
  e.status = wc.status;
  e.has_imm = wc.has_imm;
  e.send_side = send_side;
  w_.wake_later(rank_);
  return true;
}

void SimgridCq::forget(const SimgridQp* qp) {
  for (std::size_t i = 0; i < q_.size(); ++i)
    if (Entry& e = q_[i]; e.qp == qp) {
      e.qp = nullptr;
      e.seq_or_qpn = qp->qpn();
    }
}

Result<std::size_t> SimgridCq::take(std::span<Completion> out) {
  if (overflowed_)
    return Status(Errc::cq_overflow, fmt::format("completion queue of {} entries overflowed: completions were lost (size it for every "
                                                 "outstanding request, or poll more often)", cap_));
  std::size_t n = 0;
  while (n < out.size() && !q_.empty()) {
    Entry& e = q_.front();
    Completion& wc = out[n++];
    wc.wr_id = e.wr_id;
    wc.opcode = e.opcode;
    wc.status = e.status;
    wc.byte_len = e.byte_len;
    wc.imm = e.imm;
    wc.has_imm = e.has_imm;
    if (SimgridQp* qp = e.qp) {
      wc.qp_num = qp->qpn();
      // Its request is how far behind the last posted (fewer than 2^32), and still outstanding.
      const std::uint32_t behind = static_cast<std::uint32_t>(qp->posted) - e.seq_or_qpn;
      if (e.send_side && behind >= 1 && behind <= qp->posted - qp->retired) qp->retired = qp->posted - behind + 1;
    } else {
      wc.qp_num = e.seq_or_qpn;
    }
    q_.pop_front();
  }
  return n;
}

Status SimgridQp::post_send(std::span<const SendWr> wrs, std::size_t* bad_index) {
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    const SendWr& wr = wrs[i];
    auto fail = [&](Errc code, std::string msg) {
      retire_heads(w_, this);
      w_.flush_wakes();
      if (bad_index) *bad_index = i;
      return Status(code, fmt::format("QP {:#x}: {}", qpn_, msg));
    };
    std::uint64_t len = 0;
    QpCaps limits;  // what check_send_wr reads, from the QP's first lines
    limits.max_send_sge = max_send_sge_;
    limits.max_inline = wr.inline_data ? caps_.max_inline : 0;
    if (Status bad = soft_rc::check_post_send(state_, wr, limits, posted - retired, max_send_wr_, len); !bad) return fail(bad.code(), bad.message());
    const bool atomic = is_atomic(wr.opcode);
    OpPtr op(new Op);
    op->qp = this;
    op->wr.rkey = wr.rkey;
    op->wr.imm = wr.imm;
    op->wr.opcode = wr.opcode;
    op->wr.signaled = wr.signaled;
    op->wr.wire_factor = static_cast<float>(wr.model_wire_factor);
    op->wr.host_jitter = wr.model_host_jitter;
    op->wr.wr_id = wr.wr_id;
    op->wr.remote_addr = wr.remote_addr;
    op->sges.assign(wr.sg_list);
    op->len = len;
    op->seq = posted++;
    op->needs_phase1 = wr.opcode == SendOpcode::rdma_read || atomic || !w_.model.alpha_beta;
    if (atomic) {
      op->compare_add = wr.compare_add;
      op->swap = wr.swap;
      op->atomic_old = 0;
    }
    if (wr.inline_data) {
      op->inline_bytes = new std::uint8_t[len];
      op->wr.inline_data = true;  // from here on the destructor frees inline_bytes
      std::size_t off = 0;
      for (const auto& s : wr.sg_list) {
        std::memcpy(op->inline_bytes + off, reinterpret_cast<const void*>(s.addr), s.length);
        off += s.length;
      }
    }
    Op& ref = *op;
    inflight.push_back(std::move(op));
    if (state_ == QpState::err) {
      flush_all();
      continue;
    }
    // The send queue stalls behind a read or atomic that finds the QP's reads and atomics in
    // flight at its limit (max_rd_atomic): it and every later request wait for a response.
    const bool rd = wr.opcode == SendOpcode::rdma_read || atomic;
    if (!held.empty() || (rd && rd_outstanding >= rd_atomic_limit(w_, *this))) {
      held.emplace_back(OpPtr(&ref), wr.model_min_latency_s);
      continue;
    }
    if (rd) ++rd_outstanding;
    start_op(w_, ref, wr.model_min_latency_s);  // its local keys are checked when it executes (launch_if_due)
  }
  retire_heads(w_, this);  // requests refused at once complete in order
  w_.flush_wakes();
  return Status::ok();
}

Status SimgridQp::post_recv(std::span<const RecvWr> wrs, std::size_t* bad_index) {
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    if (Status bad = soft_rc::check_post_recv(state_, wrs[i], max_recv_sge_, rq.size(), max_recv_wr_, qpn_); !bad) {
      if (bad_index) *bad_index = i;
      return bad;
    }
    if (state_ == QpState::err) {
      rcq.push(soft_rc::flushed_receive(wrs[i].wr_id, qpn_), this, 0, false);
      continue;
    }
    PendingRecv& r = rq.next();
    r.wr_id = wrs[i].wr_id;
    r.sges.assign(wrs[i].sg_list);
    r.ready_at = wrs[i].model_host_cost ? receive_ready_at(w_, rank) : 0;
  }
  w_.flush_wakes();
  return Status::ok();
}

class SimgridMr final : public MemoryRegion {
 public:
  SimgridMr(World& w, MrRec rec, std::uint32_t access) : w_(w), rec_(rec), access_(access) {}
  ~SimgridMr() override {
    w_.mrs.erase(rec_.lkey);
  }
  std::uint64_t addr() const override { return rec_.addr; }
  std::uint64_t length() const override { return rec_.length; }
  std::uint32_t lkey() const override { return rec_.lkey; }
  std::uint32_t rkey() const override { return rec_.rkey; }
  std::uint32_t access() const override { return access_; }
  MemoryKind kind() const override { return rec_.kind; }
  std::string data_path() const override {
    if (rec_.kind != MemoryKind::cuda) return MemoryRegion::data_path();
    return w_.staged ? "staged (host bounce buffers, modelled)" : "GPUDirect RDMA (modelled)";
  }

 private:
  World& w_;
  MrRec rec_;
  std::uint32_t access_;  // as given (the table keeps the kAccess* bits)
};

class SimgridPd final : public ProtectionDomain {
 public:
  SimgridPd(World& w, int rank) : w_(w), rank_(rank), id_(++w.pds) {}
  Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, std::uint64_t length, std::uint32_t access, MemoryKind kind) override {
    RDMALAB_TRY(check_registration(addr, length, access));
    MrRec rec;
    rec.addr = reinterpret_cast<std::uint64_t>(addr);
    rec.length = length;
    rec.pd = id_;
    rec.access = static_cast<std::uint16_t>(access & (kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic));
    rec.kind = kind;
    if (!w_.mrs.add(rec))
      return Status(Errc::no_memory, fmt::format("register_memory: {} regions are registered already (the most the model keeps)", MrTable::kMaxSlots));
    return std::unique_ptr<MemoryRegion>(new SimgridMr(w_, rec, access));
  }
  Result<std::unique_ptr<QueuePair>> create_qp(CompletionQueue& send_cq, CompletionQueue& recv_cq, const QpCaps& caps) override {
    auto* scq = dynamic_cast<SimgridCq*>(&send_cq);
    auto* rcq = dynamic_cast<SimgridCq*>(&recv_cq);
    if (!scq || !rcq) return Status(Errc::invalid_argument, "create_qp: the CQs do not belong to the simgrid backend");
    RDMALAB_TRY(check_qp_caps(caps, sim_caps()));
    return std::unique_ptr<QueuePair>(new SimgridQp(w_, id_, rank_, w_.next_qpn++, *scq, *rcq, caps));
  }

 private:
  World& w_;
  int rank_;
  std::uint32_t id_;  // what its regions and QPs are checked against (never 0)
};

Result<std::unique_ptr<ProtectionDomain>> SimgridDevice::alloc_pd() { return std::unique_ptr<ProtectionDomain>(new SimgridPd(w_, rank_)); }

Result<std::size_t> SimgridCq::wait(std::span<Completion> out, double timeout_s) {
  Status st = progress(w_, rank_, sg4::Engine::get_clock() + timeout_s, [&] { return !q_.empty() || overflowed_; });
  if (st.code() == Errc::timeout) return Status(Errc::timeout, fmt::format("no completion within {}s of simulated time", timeout_s));
  if (!st) return st;
  return take(out);
}

}  // namespace rdmalab::sim
