// The perftest bandwidth tests (ib_*_bw): tx_depth requests in flight per QP, every payload
// checked against the sender's pattern, a peak over windows that end on completions seen.
#include "perftest_pair.h"

namespace rdmalab::workloads::perftest_detail {
namespace {

// What each rank reports after a size, gathered at every rank.
struct SideReport {
  double elapsed = 0;
  std::uint64_t messages = 0;  // completed by this side as a sender
  std::uint64_t bytes = 0;
  double peak_bps = 0;
  std::uint64_t errors = 0;
  std::array<std::uint64_t, kMaxQps> sent{};  // messages per QP
  // CPU seconds from the start of the timed phase to the barrier after it (add_cpu_per_gb).
  bool initiator = false;
  CpuSpan cpu;
};

// Peak rate, as perftest reports it: the best rate over a window that starts when a message is
// posted and ends when a later one completes. Only messages posted inside the window and completed
// by its end are counted (completed(t) - posted(start)), so every byte counted crossed the wire
// inside the window and the peak can never exceed what the link or the NIC allows, however the
// completions bunch. Samples are thinned by halving when full, so memory stays bounded on long
// runs; the first sample (nothing posted) is kept, so the peak is never below the average.
class PeakTracker {
 public:
  void sample(double t, std::uint64_t posted, std::uint64_t completed) {
    if (pts_.size() == kMax) {
      std::size_t w = 1;
      for (std::size_t r = 2; r < pts_.size(); r += 2) pts_[w++] = pts_[r];
      pts_.resize(w);
      stride_ *= 2;
    }
    if (pts_.empty() || ++skipped_ >= stride_) {
      pts_.push_back({t, posted, completed});
      skipped_ = 0;
    } else {
      pts_.back() = {t, posted, completed};  // the latest state always ends a window
    }
  }
  double peak_msgs_per_s() const {
    double best = 0;
    for (std::size_t e = 1; e < pts_.size(); ++e)
      for (std::size_t s = 0; s < e; ++s)
        if (pts_[e].completed > pts_[s].posted && pts_[e].t > pts_[s].t)
          best = std::max(best, static_cast<double>(pts_[e].completed - pts_[s].posted) / (pts_[e].t - pts_[s].t));
    return best;
  }

 private:
  struct Point {
    double t;
    std::uint64_t posted, completed;
  };
  static constexpr std::size_t kMax = 512;
  std::vector<Point> pts_;
  std::size_t stride_ = 1, skipped_ = 0;
};

// One timed (or warm-up) phase of a bandwidth test at one size. Sends on every QP while also
// serving receives (bidirectional send_bw), in one loop on one CQ.
Status bw_phase(Pair& c, std::uint64_t size, std::uint64_t count, bool timed, SideReport& rep) {
  RankEnv& env = c.env;
  const bool sends = c.sends();
  const bool receives = c.receives_sends();
  const auto nq = static_cast<std::size_t>(c.p.qps);
  std::vector<std::uint64_t> posted(nq, 0), completed(nq, 0), target(nq, (sends && !(timed && c.p.use_duration)) ? count : UINT64_MAX);
  std::vector<bool> last_seen(nq, !receives);
  if (!sends) target.assign(nq, 0);
  std::uint64_t errors = 0;

  if (receives)
    for (int q = 0; q < c.p.qps; ++q)
      while (c.recv_outstanding[static_cast<std::size_t>(q)] < c.rx_posted_depth)
        RDMALAB_TRY(post_recv_slot(c, q, c.recv_outstanding[static_cast<std::size_t>(q)] % c.slots));
  // Memory the peer writes into (or this side reads into) starts cleared, so a transfer that
  // did not happen cannot pass for one that did.
  if (timed && c.p.verify && c.op != Op::atomic) RDMALAB_TRY(c.clear_rx(0, c.rx.size()));

  RDMALAB_TRY(env.boot.barrier());
  const double t0 = env.rt.now();
  if (timed) rep.cpu.start(env.rt);
  PeakTracker peak;
  std::uint64_t total_posted = 0;
  if (sends) peak.sample(t0, 0, 0);
  std::vector<Sge> sges(c.p.post_list);
  std::vector<SendWr> wrs(c.p.post_list);
  std::array<Completion, kWcBatch> wcs;
  bool stopping = false;
  std::uint64_t total_completed = 0;

  auto all_done = [&] {
    for (std::size_t q = 0; q < nq; ++q)
      if (completed[q] < target[q] || !last_seen[q]) return false;
    return true;
  };

  while (true) {
    if (sends) {
      for (std::size_t q = 0; q < nq; ++q) {
        while (posted[q] < target[q] && posted[q] - completed[q] < c.p.tx_depth) {
          auto n = static_cast<std::uint32_t>(std::min<std::uint64_t>({c.p.post_list, target[q] - posted[q], c.p.tx_depth - (posted[q] - completed[q])}));
          for (std::uint32_t k = 0; k < n; ++k) {
            std::uint64_t idx = posted[q] + k;
            std::uint64_t slot = idx % c.slots;
            SendWr& wr = wrs[k];
            wr = SendWr{};
            wr.wr_id = (static_cast<std::uint64_t>(q) << 48) | idx;
            wr.signaled = (idx + 1) % c.p.cq_mod == 0 || idx + 1 == target[q];
            const bool last = idx + 1 == target[q];
            switch (c.op) {
              case Op::write:
                sges[k] = {c.tx.addr() + c.slot_off(static_cast<int>(q), slot), static_cast<std::uint32_t>(size), c.tx_mr->lkey()};
                wr.opcode = SendOpcode::rdma_write;
                wr.remote_addr = c.remote.rx.addr + c.slot_off(static_cast<int>(q), slot);
                wr.rkey = c.remote.rx.rkey;
                wr.inline_data = size <= c.p.inline_size;
                break;
              case Op::read:
                sges[k] = {c.rx.addr() + c.slot_off(static_cast<int>(q), slot), static_cast<std::uint32_t>(size), c.rx_mr->lkey()};
                wr.opcode = SendOpcode::rdma_read;
                wr.remote_addr = c.remote.tx.addr + c.slot_off(static_cast<int>(q), slot);
                wr.rkey = c.remote.tx.rkey;
                break;
              case Op::send:
                sges[k] = {c.tx.addr() + c.slot_off(static_cast<int>(q), slot), static_cast<std::uint32_t>(size), c.tx_mr->lkey()};
                wr.opcode = last ? SendOpcode::send_with_imm : SendOpcode::send;
                wr.imm = kLastImm;
                wr.inline_data = size <= c.p.inline_size;
                break;
              case Op::atomic:
                sges[k] = {c.atom.addr() + c.fetch_off(static_cast<int>(q), slot), 8, c.atom_mr->lkey()};
                wr.opcode = c.p.cmp_swap ? SendOpcode::atomic_cmp_swap : SendOpcode::atomic_fetch_add;
                wr.remote_addr = c.remote.atom.addr + c.counter_off(static_cast<int>(q));
                wr.rkey = c.remote.atom.rkey;
                wr.compare_add = c.p.cmp_swap ? idx : 1;
                wr.swap = idx + 1;
                break;
            }
            wr.sg_list = std::span<const Sge>(&sges[k], 1);
          }
          std::size_t bad = 0;
          Status st = c.qps[q]->post_send(std::span<const SendWr>(wrs.data(), n), &bad);
          if (!st) return st.with_context(fmt::format("rank {}: post_send on QP {}", env.rank, q));
          if (env.rank == 0) work_meter().sent(n * size);
          if (env.trace) env.trace->instant("post", "post_send", fmt::format(R"({{"qp":{},"requests":{},"bytes":{}}})", q, n, n * size));
          posted[q] += n;
          total_posted += n;
        }
      }
    }
    if (all_done()) break;
    RDMALAB_ASSIGN(std::size_t n, wait_ok(env, *c.cq, wcs, c.p.timeout, "running a bandwidth test"));
    if (env.trace) env.trace->instant("completion", "completions", fmt::format(R"({{"polled":{}}})", n));
    for (std::size_t i = 0; i < n; ++i) {
      const Completion& wc = wcs[i];
      auto q = static_cast<std::size_t>(wc.wr_id >> 48);
      std::uint64_t idx = wc.wr_id & ((1ull << 48) - 1);
      if (wc.opcode == WcOpcode::recv) {
        c.recv_outstanding[q]--;
        std::uint64_t got_slot = idx;  // receives carry their slot in wr_id
        if (c.p.verify) {
          if (wc.byte_len != size) {
            errors += size;
          } else {
            RDMALAB_ASSIGN(std::uint64_t wrong, c.verify_rx(c.slot_off(static_cast<int>(q), got_slot), size,
                                                               stream_seed(c.p.seed, c.peer, static_cast<int>(q))));
            errors += wrong;
          }
          RDMALAB_TRY(c.clear_rx(c.slot_off(static_cast<int>(q), got_slot), size));
        }
        if (wc.has_imm && wc.imm == kLastImm) last_seen[q] = true;
        RDMALAB_TRY(post_recv_slot(c, static_cast<int>(q), got_slot));
      } else {
        std::uint64_t before = completed[q];
        completed[q] = std::max(completed[q], idx + 1);
        total_completed += completed[q] - before;
      }
    }
    const double t = env.rt.now();
    if (sends) peak.sample(t, total_posted, total_completed);
    if (sends && timed && c.p.use_duration && !stopping && t - t0 >= c.p.duration) {
      // Time is up: one more signaled request per QP closes the stream (marked last for send).
      stopping = true;
      for (std::size_t q = 0; q < nq; ++q) target[q] = posted[q] + 1;
    }
  }
  const double t1 = env.rt.now();
  if (timed) {
    rep.elapsed = t1 - t0;
    rep.errors += errors;
    if (sends) {
      for (std::size_t q = 0; q < nq; ++q) {
        rep.sent[q] = completed[q];
        rep.messages += completed[q];
      }
      rep.bytes = rep.messages * size;
      rep.peak_bps = peak.peak_msgs_per_s() * static_cast<double>(size);
    }
  }
  return Status::ok();
}

// After a size: each side checks what landed in its memory, using its peer's per-QP counts.
Result<std::uint64_t> verify_after(Pair& c, std::uint64_t size, const SideReport& mine, const SideReport& peer) {
  std::uint64_t wrong = 0;
  for (int q = 0; q < c.p.qps; ++q) {
    const auto qi = static_cast<std::size_t>(q);
    if (c.op == Op::write && (c.p.bidir || !c.client)) {
      std::uint64_t n = std::min<std::uint64_t>(peer.sent[qi], c.slots);
      for (std::uint64_t s = 0; s < n && c.p.verify; ++s) {
        RDMALAB_ASSIGN(std::uint64_t w, c.verify_rx(c.slot_off(q, s), size, stream_seed(c.p.seed, c.peer, q)));
        wrong += w;
      }
    }
    if (c.op == Op::read && c.sends()) {
      std::uint64_t n = std::min<std::uint64_t>(mine.sent[qi], c.slots);
      for (std::uint64_t s = 0; s < n && c.p.verify; ++s) {
        RDMALAB_ASSIGN(std::uint64_t w, c.verify_rx(c.slot_off(q, s), size, stream_seed(c.p.seed, c.peer, q)));
        wrong += w;
      }
    }
    if (c.op == Op::atomic) {
      // Each op i on a QP found the counter at i (it starts at 0 and rises by one per op).
      if (c.sends()) {
        std::uint64_t total = mine.sent[qi];
        std::uint64_t first = total > c.slots ? total - c.slots : 0;
        for (std::uint64_t i = first; i < total; ++i) {
          RDMALAB_ASSIGN(std::uint64_t v, c.read_atom(c.fetch_off(q, i % c.slots)));
          wrong += v != i;
        }
      }
      if (c.p.bidir || !c.client) {
        RDMALAB_ASSIGN(std::uint64_t v, c.read_atom(c.counter_off(q)));
        wrong += v != peer.sent[qi];
        RDMALAB_TRY(c.zero_atom(c.counter_off(q)));
      }
    }
  }
  return wrong;
}

}  // namespace

Status run_bw(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows, Op op, const char* name) {
  Pair c(env, read_params(sc, op), op);
  RDMALAB_TRY(setup(c));
  plan_work(env, c.p, (c.p.warmup + c.p.iterations) * static_cast<std::uint64_t>(c.p.qps));
  for (std::uint64_t size : c.p.sizes) {
    TraceScope size_span(env.trace, "workload", fmt::format("{} {}", name, units::format_size(size)));
    RDMALAB_TRY(begin_size(c, size, size == c.p.sizes.front()));
    SideReport rep;
    if (c.p.warmup > 0) {
      TraceScope warm(env.trace, "phase", "warm-up");
      RDMALAB_TRY(bw_phase(c, size, c.p.warmup, false, rep));
    }
    if (c.p.warmup > 0 && op == Op::atomic) {
      // Warm-up moved the counters; start the timed phase from zero again.
      RDMALAB_TRY(env.boot.barrier());
      for (int q = 0; q < c.p.qps; ++q) RDMALAB_TRY(c.zero_atom(c.counter_off(q)));
    }
    RDMALAB_TRY(bw_phase(c, size, c.p.iterations, true, rep));
    RDMALAB_TRY(env.boot.barrier());  // every write has landed before anyone checks memory
    rep.initiator = c.client;
    rep.cpu.stop(env.rt);
    RDMALAB_ASSIGN(auto reports, allgather_value(env.boot, rep));
    RDMALAB_ASSIGN(std::uint64_t wrong, verify_after(c, size, rep, reports[static_cast<std::size_t>(c.peer)]));
    RDMALAB_ASSIGN(auto wrongs, allgather_value(env.boot, wrong + rep.errors));
    if (env.rank != 0) continue;
    ResultRow row = base_row(env, name, size);
    double bytes_per_s = 0, msgs_per_s = 0, peak = 0, max_elapsed = 0;
    for (const auto& r : reports) {
      if (r.messages == 0 || r.elapsed <= 0) continue;
      bytes_per_s += static_cast<double>(r.bytes) / r.elapsed;
      msgs_per_s += static_cast<double>(r.messages) / r.elapsed;
      peak += r.peak_bps;
      max_elapsed = std::max(max_elapsed, r.elapsed);
    }
    row.iterations = rep.sent[0];
    row.time_s = row.iterations ? rep.elapsed / static_cast<double>(row.iterations) : 0;
    row.bw_gbps = bytes_per_s * 8 / 1e9;
    row.bw_peak_gbps = std::max(peak * 8 / 1e9, row.bw_gbps);
    row.msg_rate_mpps = msgs_per_s / 1e6;
    for (auto w : wrongs) row.errors += w;
    // The initiators post and poll; the targets post receives for send, and otherwise only wait.
    add_cpu_per_gb(row, reports);
    row.notes["verify"] = c.p.verify ? "on" : "off";
    row.extra["pairs"] = env.size / 2;  // the figures are summed over every pair
    row.notes["data_path"] = c.tx_mr->data_path();
    rows.push_back(row);
  }
  return Status::ok();
}

}  // namespace rdmalab::workloads::perftest_detail
