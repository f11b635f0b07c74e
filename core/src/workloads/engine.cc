// The collectives engine: RDMA writes with immediate into the receiver's staging slots, credits
// back, chunk by chunk; several plans in flight at once. engine.h and docs/collectives.md.
#include "engine.h"

#include "rdmalab/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <cstring>

#include "rdmalab/progress.h"
#include "rdmalab/workloads/common.h"

namespace rdmalab::workloads {
namespace {

constexpr std::uint32_t kCreditBit = 1u << 31;
constexpr std::uint32_t kSeqMask = (1u << 24) - 1;
constexpr std::size_t kWcBatch = 64;
constexpr int kIdMask = (1 << 20) - 1;

// wr_id: kind (2 bits: 0 data, 1 credit, 2 receive) | connection (22) | op (20) | execution (20).
std::uint64_t make_wr_id(int kind, std::size_t conn, std::size_t op, int exec) {
  return static_cast<std::uint64_t>(kind) | (static_cast<std::uint64_t>(conn) << 2) | (static_cast<std::uint64_t>(op & 0xFFFFF) << 24) |
         (static_cast<std::uint64_t>(exec & kIdMask) << 44);
}

// What a rank publishes about one of its connections.
struct ConnInfo {
  std::int32_t peer = -1, chan = 0;
  QpEndpoint ep;
  RemoteBuffer stage;
  std::uint32_t slots = 0;
  std::uint32_t pad = 0;
  std::uint64_t slot_bytes = 0;
};

Ref shift(Ref r, std::uint64_t in, std::uint64_t out, std::uint64_t scratch) {
  r.off += r.buf == Buf::in ? in : r.buf == Buf::out ? out : scratch;
  return r;
}

}  // namespace

Plan shift_plan(Plan plan, std::uint64_t in, std::uint64_t out, std::uint64_t scratch) {
  for (auto& c : plan.pre) {
    c.dst = shift(c.dst, in, out, scratch);
    c.src = shift(c.src, in, out, scratch);
  }
  for (auto& s : plan.sends) s.src = shift(s.src, in, out, scratch);
  for (auto& r : plan.recvs) {
    r.dst = shift(r.dst, in, out, scratch);
    r.operand = shift(r.operand, in, out, scratch);
  }
  plan.in_bytes += plan.in_bytes ? in : 0;
  plan.out_bytes += out;
  plan.scratch_bytes += plan.scratch_bytes ? scratch : 0;
  return plan;
}

struct CollectiveEngine::Conn {
  int peer = 0, chan = 0;
  std::unique_ptr<QueuePair> qp;
  std::uint32_t slots_in = 0;   // my staging slots for this peer
  std::uint64_t slot_bytes_in = 0;
  std::uint64_t stage_off = 0;  // where they start in my staging buffer
  RemoteBuffer remote_stage;    // the peer's slots for me
  std::uint32_t slots_out = 0;
  std::uint64_t slot_bytes_out = 0;
  std::uint32_t credits = 0;    // free slots at the peer
  std::uint64_t send_seq = 0, recv_seq = 0;
  std::uint64_t arrived = 0;    // chunks landed in my slots, not yet processed
  std::uint32_t sq_out = 0, sq_cap = 0;
  std::uint32_t pending_credits = 0;  // credits to return once the send queue has room
  // Sends and receives of every plan in flight, in the order the plans were begun.
  std::deque<std::pair<int, int>> send_q, recv_q;  // (execution, op)
  std::uint64_t send_chunk = 0, recv_chunk = 0;
  bool same_node = false;  // the peer is on this rank's node (NodeShape): the protocol's intra-node step latency
  std::deque<std::pair<double, std::uint64_t>> posted;  // --trace: (time, bytes) of each data chunk in flight, in order
};

struct CollectiveEngine::Exec {
  Plan plan;
  std::vector<std::uint64_t> done;       // chunks processed per recv op
  std::vector<std::uint64_t> sent_done;  // chunks completed per send op
  std::vector<int> prev_in_chan;         // for SendOp::serial
  std::uint64_t sends_to_issue = 0, sends_outstanding = 0, recv_chunks_left = 0;
  double t_begin = 0;  // --trace
  bool finished() const { return sends_to_issue == 0 && sends_outstanding == 0 && recv_chunks_left == 0; }
};

CollectiveEngine::CollectiveEngine(RankEnv& env, EngineConfig config)
    : env_(env), cfg_(config), mem_(memory_for(env, config.memory, config.phantom)), wcs_(kWcBatch) {}

CollectiveEngine::~CollectiveEngine() = default;

Status CollectiveEngine::gpu_work(std::uint64_t bytes) {
  // Copies and reductions in GPU memory take the time the GPU's memory needs for the bytes they
  // touch, where the backend models it (NodeShape::gpu_memory_bw).
  if (cfg_.memory == MemoryKind::cuda && env_.shape.gpu_memory_bw > 0 && bytes > 0)
    return env_.rt.compute(static_cast<double>(bytes) / env_.shape.gpu_memory_bw);
  return Status::ok();
}

const Buffer& CollectiveEngine::buf(Buf b) const { return b == Buf::in ? in_ : b == Buf::out ? out_ : scratch_; }
const MemoryRegion& CollectiveEngine::mr(Buf b) const { return b == Buf::in ? *in_mr_ : b == Buf::out ? *out_mr_ : *scratch_mr_; }

Status CollectiveEngine::setup(const std::vector<Plan>& plans, std::uint64_t min_in, std::uint64_t min_out) {
  if (!mem_) return Status(Errc::not_supported, fmt::format("no {} memory here: {}", memory_kind_name(cfg_.memory), memory_unavailable_reason(cfg_.memory)));
  std::uint64_t in_b = std::max<std::uint64_t>(1, min_in), out_b = std::max<std::uint64_t>(1, min_out), scr_b = 1;
  struct Need {
    std::uint64_t chunks_in_plan = 0;  // most chunks from the peer in one plan
    std::uint64_t slot = 0;  // the largest chunk from the peer
  };
  std::map<std::pair<int, int>, Need> need;
  for (const Plan& pl : plans) {
    in_b = std::max(in_b, pl.in_bytes);
    out_b = std::max(out_b, pl.out_bytes);
    scr_b = std::max(scr_b, pl.scratch_bytes);
    std::map<std::pair<int, int>, std::uint64_t> per;
    for (const auto& s : pl.sends) need[{s.peer, s.chan}];
    const std::uint64_t chunk = chunk_of(pl);
    for (const auto& r : pl.recvs) {
      per[{r.peer, r.chan}] += nchunks(r.len, chunk);
      auto& n = need[{r.peer, r.chan}];
      n.slot = std::max(n.slot, std::min(chunk, r.len));
    }
    for (auto& [k, v] : per) need[k].chunks_in_plan = std::max(need[k].chunks_in_plan, v);
  }
  RDMALAB_ASSIGN(in_, mem_->allocate(in_b));
  RDMALAB_ASSIGN(out_, mem_->allocate(out_b));
  RDMALAB_ASSIGN(scratch_, mem_->allocate(scr_b));
  std::uint64_t stage_bytes = 0;
  conns_.clear();
  conn_index_.clear();
  for (auto& [key, n] : need) {
    auto c = std::make_unique<Conn>();
    c->peer = key.first;
    c->chan = key.second;
    const int g = std::max(1, env_.shape.ranks_per_node);
    c->same_node = c->peer / g == env_.rank / g;
    if (n.chunks_in_plan > 0) {
      c->slot_bytes_in = n.slot;
      c->slots_in = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(n.chunks_in_plan, 1, cfg_.slots));
    }
    c->stage_off = stage_bytes;
    stage_bytes += c->slots_in * c->slot_bytes_in;
    conn_index_[key] = conns_.size();
    conns_.push_back(std::move(c));
  }
  RDMALAB_ASSIGN(stage_, mem_->allocate(std::max<std::uint64_t>(stage_bytes, 1)));
  RDMALAB_ASSIGN(pd_, env_.dev.alloc_pd());
  RDMALAB_ASSIGN(in_mr_, pd_->register_memory(in_.data(), in_.size(), kAccessLocalWrite, in_.kind()));
  RDMALAB_ASSIGN(out_mr_, pd_->register_memory(out_.data(), out_.size(), kAccessLocalWrite, out_.kind()));
  RDMALAB_ASSIGN(scratch_mr_, pd_->register_memory(scratch_.data(), scratch_.size(), kAccessLocalWrite, scratch_.kind()));
  RDMALAB_ASSIGN(stage_mr_, pd_->register_memory(stage_.data(), stage_.size(), kAccessLocalWrite | kAccessRemoteWrite, stage_.kind()));

  // Publish my side of every connection; everyone finds the peer's side in its table. Every
  // rank's table has the same length for the allgather: padded to the longest.
  std::vector<ConnInfo> mine(conns_.size());
  for (std::size_t i = 0; i < conns_.size(); ++i) {
    mine[i].peer = conns_[i]->peer;
    mine[i].chan = conns_[i]->chan;
    mine[i].stage = stage_mr_->remote(conns_[i]->stage_off);
    mine[i].slots = conns_[i]->slots_in;
    mine[i].slot_bytes = conns_[i]->slot_bytes_in;
  }
  std::uint64_t width = 1;
  {  // (ranks entries: not kept while waiting below)
    RDMALAB_ASSIGN(auto counts, allgather_value(env_.boot, static_cast<std::uint64_t>(conns_.size())));
    width = std::max<std::uint64_t>(1, *std::max_element(counts.begin(), counts.end()));
  }
  mine.resize(width);
  // Two rounds: the peer's slots size my queues, then the QP endpoints connect them. Each rank
  // keeps only its peers' entries for it and drops the table before it waits again: the table is
  // ranks × width entries, so every rank holding one through the next round would be ranks² (GBs
  // at 8192 ranks on SimGrid, where all ranks share one process).
  std::vector<ConnInfo> theirs(conns_.size());
  std::vector<bool> found(conns_.size());
  auto exchange = [&]() -> Status {
    RDMALAB_ASSIGN(auto table, env_.boot.allgather(std::as_bytes(std::span<const ConnInfo>(mine))));
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      const std::byte* base = table.data() + static_cast<std::size_t>(conns_[i]->peer) * width * sizeof(ConnInfo);
      found[i] = false;
      for (std::uint64_t k = 0; k < width && !found[i]; ++k) {
        std::memcpy(&theirs[i], base + k * sizeof(ConnInfo), sizeof(ConnInfo));
        found[i] = theirs[i].peer == env_.rank && theirs[i].chan == conns_[i]->chan;
      }
    }
    return Status::ok();
  };
  RDMALAB_TRY(exchange());
  std::uint64_t total = 1;
  for (std::size_t i = 0; i < conns_.size(); ++i) {
    auto& c = conns_[i];
    const ConnInfo& info = theirs[i];
    if (!found[i])
      return Status(Errc::internal, fmt::format("rank {}: rank {} has no connection back on channel {} (plans disagree)", env_.rank, c->peer, c->chan));
    c->remote_stage = info.stage;
    c->slots_out = info.slots;
    c->slot_bytes_out = info.slot_bytes;
    c->credits = c->slots_out;
    c->sq_cap = c->slots_out + c->slots_in + 2;
    total += c->sq_cap + c->slots_in + c->slots_out + 1;
  }
  const auto& dcaps = env_.dev.caps();
  if (dcaps.max_cq_entries && total > dcaps.max_cq_entries)
    return Status(Errc::not_supported, fmt::format("rank {}: {} needs a completion queue of {} entries, the device allows {} (lower workload.slots)",
                                                   env_.rank, cfg_.what, total, dcaps.max_cq_entries));
  RDMALAB_ASSIGN(cq_, env_.dev.create_cq(static_cast<std::uint32_t>(total)));
  for (std::size_t i = 0; i < conns_.size(); ++i) {
    auto& c = *conns_[i];
    QpCaps caps;
    caps.max_send_wr = c.sq_cap;
    caps.max_recv_wr = c.slots_in + c.slots_out + 1;
    RDMALAB_ASSIGN(c.qp, pd_->create_qp(*cq_, *cq_, caps));
    RDMALAB_TRY(c.qp->to_init());
    mine[i].ep = c.qp->endpoint();
  }
  RDMALAB_TRY(exchange());
  for (std::size_t i = 0; i < conns_.size(); ++i) {
    auto& c = *conns_[i];
    QpConnectAttr attr;
    attr.remote = theirs[i].ep;
    RDMALAB_TRY(c.qp->to_rtr(attr));
    RDMALAB_TRY(c.qp->to_rts());
    for (std::uint32_t k = 0; k < c.slots_in + c.slots_out; ++k) RDMALAB_TRY(post_recv(i));
  }
  return env_.boot.barrier();
}

Status CollectiveEngine::post_recv(std::size_t ci) {
  RecvWr wr{make_wr_id(2, ci, 0, 0), {}};
  wr.model_host_cost = false;  // posted ahead of the credit that lets the data come
  return conns_[ci]->qp->post_recv(std::span<const RecvWr>(&wr, 1));
}

Status CollectiveEngine::post_credit(std::size_t ci) {
  Conn& c = *conns_[ci];
  if (c.pending_credits == 0 || c.sq_out >= c.sq_cap) return Status::ok();
  SendWr wr;
  wr.wr_id = make_wr_id(1, ci, 0, 0);
  wr.opcode = SendOpcode::rdma_write_with_imm;
  wr.imm = kCreditBit | c.pending_credits;
  wr.remote_addr = c.remote_stage.addr;
  wr.rkey = c.remote_stage.rkey;
  wr.model_host_jitter = false;  // the protocol's flow control: its cost is in the step latency
  RDMALAB_TRY(c.qp->post_send(std::span<const SendWr>(&wr, 1)));
  c.sq_out++;
  c.pending_credits = 0;
  return Status::ok();
}

Result<int> CollectiveEngine::begin(Plan plan) {
  for (const auto& cp : plan.pre) {
    RDMALAB_TRY(mem_->copy(buf(cp.dst.buf), cp.dst.off, buf(cp.src.buf), cp.src.off, cp.len));
    RDMALAB_TRY(gpu_work(2 * cp.len));
  }
  auto e = std::make_unique<Exec>();
  const int id = next_id_;
  next_id_ = (next_id_ + 1) & kIdMask;
  e->done.assign(plan.recvs.size(), 0);
  e->sent_done.assign(plan.sends.size(), 0);
  e->prev_in_chan.assign(plan.sends.size(), -1);
  std::map<int, int> last_in_chan;
  for (std::size_t i = 0; i < plan.sends.size(); ++i) {
    const SendOp& s = plan.sends[i];
    auto it = conn_index_.find({s.peer, s.chan});
    if (it == conn_index_.end())
      return Status(Errc::internal, fmt::format("rank {}: a plan sends to rank {} channel {}, which setup() did not connect", env_.rank, s.peer, s.chan));
    conns_[it->second]->send_q.emplace_back(id, static_cast<int>(i));
    auto lc = last_in_chan.find(s.chan);
    if (lc != last_in_chan.end()) e->prev_in_chan[i] = lc->second;
    last_in_chan[s.chan] = static_cast<int>(i);
    e->sends_to_issue += nchunks(s.len, chunk_of(plan));
  }
  for (std::size_t i = 0; i < plan.recvs.size(); ++i) {
    const RecvOp& r = plan.recvs[i];
    auto it = conn_index_.find({r.peer, r.chan});
    if (it == conn_index_.end() || conns_[it->second]->slots_in == 0)
      return Status(Errc::internal, fmt::format("rank {}: a plan receives from rank {} channel {}, which setup() did not prepare", env_.rank, r.peer, r.chan));
    conns_[it->second]->recv_q.emplace_back(id, static_cast<int>(i));
    e->recv_chunks_left += nchunks(r.len, chunk_of(plan));
  }
  e->plan = std::move(plan);
  if (env_.trace) e->t_begin = env_.trace->now();
  execs_[id] = std::move(e);
  // Whatever can leave now does (a pipeline stage's send goes out before its next compute).
  RDMALAB_TRY(progress(false));
  return id;
}

Status CollectiveEngine::issue(bool& progressed) {
  for (std::size_t ci = 0; ci < conns_.size(); ++ci) {
    Conn& c = *conns_[ci];
    while (!c.send_q.empty()) {
      auto [id, oi] = c.send_q.front();
      Exec& e = *execs_.at(id);
      const SendOp& s = e.plan.sends[static_cast<std::size_t>(oi)];
      const std::uint64_t chunk = chunk_of(e.plan);
      if (c.credits == 0 || c.sq_out + 1 >= c.sq_cap) break;
      if (s.dep >= 0) {
        const auto d = static_cast<std::size_t>(s.dep);
        if (s.chunkwise ? e.done[d] <= c.send_chunk : e.done[d] < nchunks(e.plan.recvs[d].len, chunk)) break;
      }
      if (s.serial && e.prev_in_chan[static_cast<std::size_t>(oi)] >= 0) {
        const auto prev = static_cast<std::size_t>(e.prev_in_chan[static_cast<std::size_t>(oi)]);
        if (e.sent_done[prev] < nchunks(e.plan.sends[prev].len, chunk)) break;
      }
      const std::uint64_t off = c.send_chunk * chunk;
      const std::uint64_t len = std::min(chunk, s.len - off);
      Sge sge{buf(s.src.buf).addr() + s.src.off + off, static_cast<std::uint32_t>(len), mr(s.src.buf).lkey()};
      SendWr wr;
      wr.wr_id = make_wr_id(0, ci, static_cast<std::size_t>(oi), id);
      wr.opcode = SendOpcode::rdma_write_with_imm;
      wr.sg_list = std::span<const Sge>(&sge, 1);
      wr.imm = static_cast<std::uint32_t>(c.send_seq & kSeqMask);
      wr.remote_addr = c.remote_stage.addr + (c.send_seq % c.slots_out) * c.slot_bytes_out;
      wr.rkey = c.remote_stage.rkey;
      wr.model_wire_factor = e.plan.wire_factor;
      wr.model_min_latency_s = c.same_node ? e.plan.step_latency_intra : e.plan.step_latency_inter;
      wr.model_host_jitter = false;  // NCCL's step latency is an average: it holds the host's noise
      RDMALAB_TRY(c.qp->post_send(std::span<const SendWr>(&wr, 1)));
      if (env_.rank == 0) work_meter().sent(len);
      if (env_.trace) c.posted.emplace_back(env_.trace->now(), len);
      c.send_seq++;
      c.credits--;
      c.sq_out++;
      e.sends_to_issue--;
      e.sends_outstanding++;
      progressed = true;
      if (++c.send_chunk == nchunks(s.len, chunk)) {
        c.send_chunk = 0;
        c.send_q.pop_front();
      }
    }
  }
  return Status::ok();
}

Status CollectiveEngine::process(bool& progressed) {
  for (std::size_t ci = 0; ci < conns_.size(); ++ci) {
    Conn& c = *conns_[ci];
    while (c.arrived > 0 && !c.recv_q.empty()) {
      auto [id, oi] = c.recv_q.front();
      Exec& e = *execs_.at(id);
      const RecvOp& r = e.plan.recvs[static_cast<std::size_t>(oi)];
      const std::uint64_t chunk = chunk_of(e.plan);
      if (r.after >= 0) {
        const auto a = static_cast<std::size_t>(r.after);
        if (r.after_whole ? e.done[a] < nchunks(e.plan.recvs[a].len, chunk) : e.done[a] <= c.recv_chunk) break;
      }
      const std::uint64_t off = c.recv_chunk * chunk;
      const std::uint64_t len = std::min(chunk, r.len - off);
      const std::uint64_t slot = c.stage_off + (c.recv_seq % c.slots_in) * c.slot_bytes_in;
      // Named only when traced: this runs for every chunk that arrives.
      std::optional<TraceScope> step;
      if (env_.trace) step.emplace(env_.trace, "step", fmt::format("{} from rank {}", r.reduce ? "reduce" : "copy", c.peer));
      RDMALAB_TRY(stage_mr_->sync_from_nic(slot, len));  // staged memory: the NIC wrote a host copy
      if (r.reduce)
        RDMALAB_TRY(mem_->reduce(buf(r.dst.buf), r.dst.off + off, buf(r.operand.buf), r.operand.off + off, stage_, slot,
                                 len / dtype_size(cfg_.dtype), cfg_.dtype, cfg_.op));
      else
        RDMALAB_TRY(mem_->copy(buf(r.dst.buf), r.dst.off + off, stage_, slot, len));
      RDMALAB_TRY(gpu_work((r.reduce ? 3 : 2) * len));  // a reduction reads two operands and writes one
      c.recv_seq++;
      c.arrived--;
      c.pending_credits++;
      RDMALAB_TRY(post_credit(ci));
      e.done[static_cast<std::size_t>(oi)]++;
      e.recv_chunks_left--;
      progressed = true;
      if (++c.recv_chunk == nchunks(r.len, chunk)) {
        c.recv_chunk = 0;
        c.recv_q.pop_front();
      }
    }
    if (c.pending_credits) RDMALAB_TRY(post_credit(ci));
  }
  return Status::ok();
}

Status CollectiveEngine::handle(std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) {
    const Completion& wc = wcs_[k];
    const int kind = static_cast<int>(wc.wr_id & 3);
    const std::size_t ci = static_cast<std::size_t>((wc.wr_id >> 2) & ((1u << 22) - 1));
    if (ci >= conns_.size()) return Status(Errc::internal, fmt::format("rank {}: completion with unknown wr_id {:#x}", env_.rank, wc.wr_id));
    Conn& c = *conns_[ci];
    if (wc.status != WcStatus::success)
      return Status(Errc::transport, fmt::format("{} (connection to rank {}, channel {})", describe_failed_completion(env_.rank, wc), c.peer, c.chan));
    if (kind == 2) {
      RDMALAB_TRY(post_recv(ci));
      if (!wc.has_imm) return Status(Errc::data, fmt::format("rank {}: a message from rank {} carried no immediate", env_.rank, c.peer));
      if (wc.imm & kCreditBit) {
        c.credits += wc.imm & ~kCreditBit;
        if (c.credits > c.slots_out)
          return Status(Errc::data, fmt::format("rank {}: rank {} returned more credits than slots ({} > {})", env_.rank, c.peer, c.credits, c.slots_out));
      } else {
        const std::uint64_t expect = (c.recv_seq + c.arrived) & kSeqMask;
        if (wc.imm != expect)
          return Status(Errc::data, fmt::format("rank {}: chunk {} from rank {} (channel {}) arrived where chunk {} was due: the transport "
                                                "reordered or lost a message", env_.rank, wc.imm, c.peer, c.chan, expect));
        if (c.arrived >= c.slots_in) return Status(Errc::data, fmt::format("rank {}: rank {} wrote past its credits", env_.rank, c.peer));
        c.arrived++;
      }
    } else {
      c.sq_out--;
      if (kind == 0) {
        const int id = static_cast<int>((wc.wr_id >> 44) & kIdMask);
        const std::size_t op = static_cast<std::size_t>((wc.wr_id >> 24) & 0xFFFFF);
        auto it = execs_.find(id);
        if (it == execs_.end()) return Status(Errc::internal, fmt::format("rank {}: completion of a finished plan", env_.rank));
        it->second->sends_outstanding--;
        it->second->sent_done[op]++;
        if (env_.trace && !c.posted.empty()) {
          env_.trace->span("transfer", fmt::format("chunk to rank {}", c.peer), c.posted.front().first,
                           fmt::format(R"({{"bytes":{},"channel":{}}})", c.posted.front().second, c.chan));
          c.posted.pop_front();
        }
      }
    }
  }
  return Status::ok();
}

Status CollectiveEngine::progress(bool block) {
  bool progressed = false;
  RDMALAB_TRY(issue(progressed));
  RDMALAB_TRY(process(progressed));
  RDMALAB_ASSIGN(std::size_t n, cq_->poll(wcs_));
  if (n) {
    progressed = true;
    RDMALAB_TRY(handle(n));
  }
  for (auto it = execs_.begin(); it != execs_.end();) {
    if (!it->second->finished()) {
      ++it;
      continue;
    }
    if (env_.trace) env_.trace->span("collective", it->second->plan.label.empty() ? cfg_.what : it->second->plan.label, it->second->t_begin);
    it = execs_.erase(it);
  }
  if (!progressed && block && !execs_.empty()) {
    auto w = cq_->wait(wcs_, cfg_.timeout);
    if (!w) {
      if (w.status().code() == Errc::timeout) {
        std::uint64_t left = 0, flying = 0;
        for (const auto& [id, e] : execs_) {
          left += e->recv_chunks_left;
          flying += e->sends_outstanding;
        }
        return Status(Errc::timeout, fmt::format("rank {}: no progress within {}s in {} ({} chunks still to receive, {} sends in flight); "
                                                 "is a peer dead or stuck? raise workload.timeout for slow fabrics",
                                                 env_.rank, cfg_.timeout, cfg_.what, left, flying));
      }
      return w.status().with_context(fmt::format("rank {}", env_.rank));
    }
    RDMALAB_TRY(handle(*w));
  }
  return Status::ok();
}

bool CollectiveEngine::done(int id) const { return execs_.find(id) == execs_.end(); }

Status CollectiveEngine::wait(int id) {
  while (!done(id)) RDMALAB_TRY(progress(true));
  return Status::ok();
}

Status CollectiveEngine::wait_all() {
  while (!execs_.empty()) RDMALAB_TRY(progress(true));
  return Status::ok();
}

Status CollectiveEngine::execute(Plan plan) {
  RDMALAB_ASSIGN(int id, begin(std::move(plan)));
  return wait(id);
}

Status CollectiveEngine::drain() {
  RDMALAB_TRY(wait_all());
  // Credits still in flight were not waited for by the plans (nothing reuses what they carry).
  auto busy = [&] {
    for (const auto& c : conns_)
      if (c->sq_out || c->pending_credits) return true;
    return false;
  };
  while (busy()) {
    for (std::size_t ci = 0; ci < conns_.size(); ++ci) RDMALAB_TRY(post_credit(ci));
    auto w = cq_->wait(wcs_, cfg_.timeout);
    if (!w) return w.status().with_context(fmt::format("rank {}: waiting for the last credits to complete", env_.rank));
    for (std::size_t k = 0; k < *w; ++k) {
      const Completion& wc = wcs_[k];
      const std::size_t ci = static_cast<std::size_t>((wc.wr_id >> 2) & ((1u << 22) - 1));
      if (ci >= conns_.size()) continue;
      if (wc.status != WcStatus::success) return Status(Errc::transport, describe_failed_completion(env_.rank, wc));
      if ((wc.wr_id & 3) != 2) conns_[ci]->sq_out--;
    }
  }
  return env_.boot.barrier();
}

}  // namespace rdmalab::workloads
