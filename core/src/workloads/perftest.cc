// The perftest RC set. Ranks work in pairs: rank i (the client, i < n/2) with rank i + n/2 (the
// server), as ib_*_bw's client and server. Bandwidth tests keep tx_depth requests in flight per
// QP; latency tests ping-pong one message. Every payload that arrives is checked against the
// sender's pattern, and the counts of wrong bytes are summed over all ranks.
#include "rdmalab/workloads/perftest.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>

#include "rdmalab/metrics.h"
#include "rdmalab/progress.h"
#include "rdmalab/units.h"
#include "rdmalab/workloads/common.h"

namespace rdmalab::workloads {
namespace {

constexpr int kMaxQps = 16;
constexpr std::uint64_t kRegionCap = 16ull << 20;  // bytes of slots per QP and direction
// With checks off, messages are sent from and land in one slot per QP (a send's receives share
// it), as perftest reuses one buffer: the working set stays in cache (a slot per request in
// flight, 128 × 64 KiB a side, measured 1.8 % slower on Soft-RoCE; a send's 512 receives, 32 MiB
// a side, 2–3 %). With checks on, every request or receive in flight has its own slot: a write's
// or read's is checked once the run is over (a corrupted message among the last tx_depth is then
// still there to be found, not overwritten by a good one), a receive's before it is posted again.
constexpr std::uint64_t kUncheckedSlots = 1;
constexpr std::uint32_t kLastImm = 0x4C415354;     // "LAST": marks a sender's final message
constexpr int kWcBatch = 64;

enum class Op { write, read, send, atomic };

struct Params {
  std::vector<std::uint64_t> sizes;
  std::uint64_t iterations = 0;
  std::uint64_t warmup = 0;
  bool use_duration = false;
  double duration = 0;
  int qps = 1;
  std::uint32_t tx_depth = 128;
  std::uint32_t rx_depth = 512;
  std::uint32_t inline_size = 0;
  std::uint32_t cq_mod = 100;
  std::uint32_t post_list = 1;
  bool bidir = false;
  bool cmp_swap = false;
  bool verify = true;
  MemoryKind memory = MemoryKind::host;
  bool phantom = false;  // workload.payload: phantom (no bytes)
  double timeout = 30;
  std::uint64_t seed = 1;
};

Params read_params(const Scenario& sc, Op op) {
  Params p;
  if (op == Op::atomic)
    p.sizes = {8};
  else if (sc.is_set("workload.sizes"))
    p.sizes = sc.get_sizes("workload.sizes");
  else
    p.sizes = {sc.get_size("workload.size")};
  p.iterations = static_cast<std::uint64_t>(sc.get_int("workload.iterations"));
  p.warmup = static_cast<std::uint64_t>(sc.get_int("workload.warmup"));
  p.use_duration = sc.is_set("workload.duration");
  if (p.use_duration) p.duration = sc.get_time("workload.duration");
  p.qps = static_cast<int>(sc.get_int("workload.qps"));
  p.tx_depth = static_cast<std::uint32_t>(sc.get_int("workload.tx_depth"));
  p.rx_depth = static_cast<std::uint32_t>(sc.get_int("workload.rx_depth"));
  p.inline_size = static_cast<std::uint32_t>(sc.get_size("workload.inline"));
  p.cq_mod = static_cast<std::uint32_t>(sc.get_int("workload.cq_mod"));
  // perftest lowers the default moderation to the TX depth; an explicit value above it is refused
  // by check_common.
  if (!sc.is_set("workload.cq_mod")) p.cq_mod = std::min(p.cq_mod, p.tx_depth);
  p.post_list = static_cast<std::uint32_t>(sc.get_int("workload.post_list"));
  p.bidir = sc.get_bool("workload.bidirectional");
  p.cmp_swap = sc.get_string("workload.atomic") == "cmp_swap";
  p.memory = memory_kind_of(sc);
  p.phantom = phantom_payload(sc);
  // Phantom buffers hold no bytes: there is nothing to check.
  p.verify = sc.get_bool("workload.verify") && !p.phantom;
  p.timeout = sc.get_time("workload.timeout");
  p.seed = static_cast<std::uint64_t>(sc.get_int("seed"));
  return p;
}

// ------------------------------------------------------------------------------------------
// One rank's side of a connected pair.

struct Exchange {
  std::array<QpEndpoint, kMaxQps> ep{};
  RemoteBuffer rx;    // where the peer writes / sends land
  RemoteBuffer tx;    // what the peer reads
  RemoteBuffer atom;  // counters the peer's atomics target
};

struct Pair {
  RankEnv& env;
  Params p;
  Op op;
  MemoryProvider* mem = nullptr;  // for p.memory
  bool client = false;
  int peer = 0;
  std::uint64_t max_size = 0;
  std::uint64_t region = 0;    // bytes per QP in tx and in rx
  std::uint64_t size = 0;      // message size of the current phase
  std::uint64_t slots = 1;     // message slots per QP at the current size
  std::uint64_t rx_posted_depth = 0;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::vector<std::unique_ptr<QueuePair>> qps;
  Buffer tx, rx, atom;
  std::unique_ptr<MemoryRegion> tx_mr, rx_mr, atom_mr;
  Exchange remote;
  std::vector<std::uint64_t> recv_outstanding;  // posted receives per QP

  Pair(RankEnv& e, Params params, Op o) : env(e), p(std::move(params)), op(o), mem(memory_for(e, p.memory, p.phantom)) {}

  // Every fill, check and clear of the buffers goes through these: where the NIC works on a host
  // copy of the memory (the staged GPU path, staging.h), the copy is brought up to date.
  Status fill_tx(std::uint64_t off, std::uint64_t len, std::uint64_t seed) {
    RDMALAB_TRY(mem->fill(tx, off, len, seed));
    return tx_mr->sync_to_nic(off, len);  // the peer may read it (read_bw)
  }
  Result<std::uint64_t> verify_rx(std::uint64_t off, std::uint64_t len, std::uint64_t seed) {
    RDMALAB_TRY(rx_mr->sync_from_nic(off, len));
    return mem->verify(rx, off, len, seed);
  }
  Status clear_rx(std::uint64_t off, std::uint64_t len) {
    RDMALAB_TRY(mem->clear(rx, off, len));
    return rx_mr->sync_to_nic(off, len);
  }
  Result<std::uint64_t> read_atom(std::uint64_t off) {
    std::uint64_t v = 0;
    RDMALAB_TRY(atom_mr->sync_from_nic(off, 8));
    RDMALAB_TRY(mem->read(atom, off, &v, 8));
    return v;
  }
  Status zero_atom(std::uint64_t off) {
    const std::uint64_t zero = 0;
    RDMALAB_TRY(mem->write(atom, off, &zero, 8));
    return atom_mr->sync_to_nic(off, 8);
  }

  std::uint64_t slot_off(int q, std::uint64_t slot) const { return static_cast<std::uint64_t>(q) * region + slot * size; }
  bool sends() const { return client || p.bidir; }
  bool receives_sends() const { return op == Op::send && (!client || p.bidir); }
  std::uint64_t counter_off(int q) const { return static_cast<std::uint64_t>(q) * 8; }
  std::uint64_t fetch_off(int q, std::uint64_t slot) const { return static_cast<std::uint64_t>(p.qps) * 8 + (static_cast<std::uint64_t>(q) * slots + slot) * 8; }
};

std::uint64_t queue_depth(const Pair& c) {
  return std::max<std::uint64_t>(c.p.tx_depth, c.op == Op::send ? c.p.rx_depth : 1);
}

// Creates this rank's QPs, exchanges endpoints with every rank and connects to the peer.
Status connect(Pair& c) {
  RankEnv& env = c.env;
  c.qps.clear();
  QpCaps caps;
  caps.max_send_wr = c.p.tx_depth;
  caps.max_recv_wr = c.p.rx_depth;
  caps.max_inline = c.p.inline_size;
  Exchange mine;
  for (int q = 0; q < c.p.qps; ++q) {
    RDMALAB_ASSIGN(auto qp, c.pd->create_qp(*c.cq, *c.cq, caps));
    RDMALAB_TRY(qp->to_init());
    mine.ep[static_cast<std::size_t>(q)] = qp->endpoint();
    c.qps.push_back(std::move(qp));
  }
  mine.rx = c.rx_mr->remote();
  mine.tx = c.tx_mr->remote();
  mine.atom = c.atom_mr->remote();
  RDMALAB_ASSIGN(auto all_ex, allgather_value(env.boot, mine));
  c.remote = all_ex[static_cast<std::size_t>(c.peer)];
  for (int q = 0; q < c.p.qps; ++q) {
    QpConnectAttr attr;
    attr.remote = c.remote.ep[static_cast<std::size_t>(q)];
    RDMALAB_TRY(c.qps[static_cast<std::size_t>(q)]->to_rtr(attr));
    RDMALAB_TRY(c.qps[static_cast<std::size_t>(q)]->to_rts());
  }
  c.recv_outstanding.assign(static_cast<std::size_t>(c.p.qps), 0);
  return env.boot.barrier();
}

Status setup(Pair& c) {
  RankEnv& env = c.env;
  int half = env.size / 2;
  c.client = env.rank < half;
  c.peer = c.client ? env.rank + half : env.rank - half;
  c.max_size = *std::max_element(c.p.sizes.begin(), c.p.sizes.end());
  // Up to queue-depth slots per QP (without checks: kUncheckedSlots), within kRegionCap (but
  // always room for one message).
  const std::uint64_t depth = c.p.verify ? queue_depth(c) : std::min(queue_depth(c), kUncheckedSlots);
  c.region = std::clamp<std::uint64_t>(depth * c.max_size, c.max_size, std::max(kRegionCap, c.max_size));
  std::uint64_t bytes = static_cast<std::uint64_t>(c.p.qps) * c.region;
  std::uint64_t max_slots = c.region / *std::min_element(c.p.sizes.begin(), c.p.sizes.end());

  RDMALAB_ASSIGN(c.tx, c.mem->allocate(bytes));
  RDMALAB_ASSIGN(c.rx, c.mem->allocate(bytes));
  RDMALAB_ASSIGN(c.atom, c.mem->allocate(static_cast<std::size_t>(c.p.qps) * 8 * (1 + std::min(max_slots, queue_depth(c)))));
  const std::uint32_t all = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
  RDMALAB_ASSIGN(c.pd, env.dev.alloc_pd());
  RDMALAB_ASSIGN(c.tx_mr, c.pd->register_memory(c.tx.data(), c.tx.size(), all, c.tx.kind()));
  RDMALAB_ASSIGN(c.rx_mr, c.pd->register_memory(c.rx.data(), c.rx.size(), all, c.rx.kind()));
  RDMALAB_ASSIGN(c.atom_mr, c.pd->register_memory(c.atom.data(), c.atom.size(), all, c.atom.kind()));
  auto cq_entries = static_cast<std::uint32_t>(c.p.qps) * (c.p.tx_depth + c.p.rx_depth) + 1;
  RDMALAB_ASSIGN(c.cq, env.dev.create_cq(cq_entries));
  return connect(c);
}

// Lays out the slots for a message size and writes the source pattern into each. For send
// workloads the QPs are connected afresh at every size after the first: receives posted for the
// old layout cannot be taken back (verbs has no way to cancel a receive), so new QPs start clean.
Status begin_size(Pair& c, std::uint64_t size, bool first) {
  if (!first && c.op == Op::send) RDMALAB_TRY(connect(c));
  c.size = size;
  c.slots = std::clamp<std::uint64_t>(c.region / size, 1, queue_depth(c));
  // A checked receive needs a slot of its own until it is checked; unchecked ones share slots.
  c.rx_posted_depth = c.p.verify ? std::min<std::uint64_t>(c.p.rx_depth, c.slots) : c.p.rx_depth;
  for (int q = 0; q < c.p.qps; ++q)
    for (std::uint64_t s = 0; s < c.slots; ++s)
      RDMALAB_TRY(c.fill_tx(c.slot_off(q, s), size, stream_seed(c.p.seed, c.env.rank, q)));
  return Status::ok();
}

Status post_recv_slot(Pair& c, int q, std::uint64_t slot) {
  Sge sge{c.rx.addr() + c.slot_off(q, slot), static_cast<std::uint32_t>(c.size), c.rx_mr->lkey()};
  RecvWr wr{(static_cast<std::uint64_t>(q) << 48) | slot, std::span<const Sge>(&sge, 1)};
  c.recv_outstanding[static_cast<std::size_t>(q)]++;
  return c.qps[static_cast<std::size_t>(q)]->post_recv(std::span<const RecvWr>(&wr, 1));
}

// What each rank reports after a size, gathered at every rank.
struct SideReport {
  double elapsed = 0;
  std::uint64_t messages = 0;  // completed by this side as a sender
  std::uint64_t bytes = 0;
  double peak_bps = 0;
  std::uint64_t errors = 0;
  std::array<std::uint64_t, kMaxQps> sent{};  // messages per QP
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
          posted[q] += n;
          total_posted += n;
        }
      }
    }
    if (all_done()) break;
    RDMALAB_ASSIGN(std::size_t n, wait_ok(env, *c.cq, wcs, c.p.timeout, "running a bandwidth test"));
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

ResultRow base_row(const RankEnv& env, const char* name, std::uint64_t size) {
  ResultRow row;
  row.workload = name;
  row.bytes = size;
  row.ranks = env.size;
  // The device measured, where it is real: its name and port rate (compare checks the fabric).
  if (env.dev.caps().port_gbps > 0) {
    row.notes["device"] = env.dev.name();
    row.extra["port_gbps"] = env.dev.caps().port_gbps;
  }
  return row;
}

// The progress line's 100 % (progress.h): the bytes rank 0 will post, every size's warm-up and
// timed messages (not known ahead for a run of a given duration).
void plan_work(RankEnv& env, const Params& p, std::uint64_t messages_per_size) {
  if (env.rank != 0 || p.use_duration) return;
  work_meter().reset();
  for (std::uint64_t size : p.sizes) work_meter().plan(size * messages_per_size);
}

Status run_bw(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows, Op op, const char* name) {
  Pair c(env, read_params(sc, op), op);
  RDMALAB_TRY(setup(c));
  plan_work(env, c.p, (c.p.warmup + c.p.iterations) * static_cast<std::uint64_t>(c.p.qps));
  for (std::uint64_t size : c.p.sizes) {
    RDMALAB_TRY(begin_size(c, size, size == c.p.sizes.front()));
    SideReport rep;
    if (c.p.warmup > 0) RDMALAB_TRY(bw_phase(c, size, c.p.warmup, false, rep));
    if (c.p.warmup > 0 && op == Op::atomic) {
      // Warm-up moved the counters; start the timed phase from zero again.
      RDMALAB_TRY(env.boot.barrier());
      for (int q = 0; q < c.p.qps; ++q) RDMALAB_TRY(c.zero_atom(c.counter_off(q)));
    }
    RDMALAB_TRY(bw_phase(c, size, c.p.iterations, true, rep));
    RDMALAB_TRY(env.boot.barrier());  // every write has landed before anyone checks memory
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
    row.notes["verify"] = c.p.verify ? "on" : "off";
    row.extra["pairs"] = env.size / 2;  // the figures are summed over every pair
    row.notes["data_path"] = c.tx_mr->data_path();
    rows.push_back(row);
  }
  return Status::ok();
}

// ------------------------------------------------------------------------------------------
// Latency tests. Only the first QP of the first pair is timed; other pairs run the same loop.

std::uint8_t marker(std::uint64_t i) { return static_cast<std::uint8_t>(1 + i % 254); }

Status run_lat(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows, Op op, const char* name) {
  Params p = read_params(sc, op);
  p.qps = 1;
  Pair c(env, p, op);
  RDMALAB_TRY(setup(c));
  plan_work(env, c.p, c.p.warmup + c.p.iterations);
  std::array<Completion, kWcBatch> wcs;
  const double latency_divisor = (op == Op::write || op == Op::send) ? 2.0 : 1.0;  // perftest: half RTT for ping-pong

  for (std::uint64_t size : c.p.sizes) {
    RDMALAB_TRY(begin_size(c, size, size == c.p.sizes.front()));
    QueuePair& qp = *c.qps[0];
    std::vector<double> samples;
    std::uint64_t errors = 0;
    std::uint64_t outstanding_sends = 0;
    const std::uint64_t total = c.p.warmup + c.p.iterations;
    Sge sge{};
    SendWr wr{};
    wr.sg_list = std::span<const Sge>(&sge, 1);

    if (op == Op::send)
      while (c.recv_outstanding[0] < c.rx_posted_depth) RDMALAB_TRY(post_recv_slot(c, 0, c.recv_outstanding[0] % c.slots));
    // Clear what the peer writes into, so neither stale markers nor stale payload can pass for
    // this size's (begin_size restored the source pattern that write_lat marks).
    RDMALAB_TRY(c.clear_rx(0, c.rx.size()));
    RDMALAB_TRY(env.boot.barrier());
    const double run_t0 = env.rt.now();

    std::uint64_t arrived = 0;  // peer messages received, not yet consumed
    // Every completion goes through here, whoever waits: send completions free send slots;
    // a receive counts as arrived at once, and is checked, cleared and posted again by
    // settle_receives() once this side's reply is on its way — off the round trip (the slot is
    // not reused before that; the other posted receives take the peer's next messages).
    std::uint64_t sends_posted = 0, sends_retired = 0;
    std::vector<std::pair<std::uint64_t, std::uint32_t>> unsettled;  // (slot, byte_len)
    unsettled.reserve(4);
    auto settle_receives = [&]() -> Status {
      for (auto [slot, byte_len] : unsettled) {
        if (c.p.verify) {
          if (byte_len != size) {
            errors += size;
          } else {
            RDMALAB_ASSIGN(std::uint64_t w, c.verify_rx(c.slot_off(0, slot), size, stream_seed(c.p.seed, c.peer, 0)));
            errors += w;
          }
          RDMALAB_TRY(c.clear_rx(c.slot_off(0, slot), size));
        }
        RDMALAB_TRY(post_recv_slot(c, 0, slot));
      }
      unsettled.clear();
      return Status::ok();
    };
    auto process = [&](const Completion& wc) -> Status {
      if (wc.opcode != WcOpcode::recv) {
        // A signaled send retires itself and every unsignaled one before it.
        sends_retired = std::max(sends_retired, wc.wr_id + 1);
        outstanding_sends = sends_posted - sends_retired;
        return Status::ok();
      }
      c.recv_outstanding[0]--;
      unsettled.emplace_back(wc.wr_id & 0xffff, wc.byte_len);
      ++arrived;
      // With a single receive posted, the next message needs it back before the reply leaves
      // (else the peer would meet receiver-not-ready).
      return c.rx_posted_depth > 1 ? Status::ok() : settle_receives();
    };
    // Handles completions until `done()`; blocks in the CQ when nothing is ready.
    auto progress_until = [&](auto done, const char* what) -> Status {
      while (!done()) {
        RDMALAB_ASSIGN(std::size_t n, wait_ok(env, *c.cq, wcs, c.p.timeout, what));
        for (std::size_t k = 0; k < n; ++k) RDMALAB_TRY(process(wcs[k]));
      }
      return Status::ok();
    };
    auto send_one = [&](std::uint64_t i) -> Status {
      if (op == Op::write) {
        std::uint8_t m = marker(i);
        RDMALAB_TRY(c.mem->write(c.tx, size - 1, &m, 1));
        sge = {c.tx.addr(), static_cast<std::uint32_t>(size), c.tx_mr->lkey()};
        wr.opcode = SendOpcode::rdma_write;
        wr.remote_addr = c.remote.rx.addr;
        wr.rkey = c.remote.rx.rkey;
      } else {
        sge = {c.tx.addr(), static_cast<std::uint32_t>(size), c.tx_mr->lkey()};
        wr.opcode = SendOpcode::send;
      }
      wr.wr_id = i;
      wr.inline_data = size <= c.p.inline_size;
      // As perftest: only every cq_mod-th send (and the last) asks for a completion, so the
      // timed loop handles one completion per round trip, not two.
      wr.signaled = (i + 1) % c.p.cq_mod == 0 || i + 1 == total;
      RDMALAB_TRY(qp.post_send(std::span<const SendWr>(&wr, 1)));
      if (env.rank == 0) work_meter().sent(size);
      outstanding_sends = ++sends_posted - sends_retired;
      RDMALAB_TRY(settle_receives());
      // Keep the send queue from filling: block only when it is nearly full.
      return progress_until([&] { return outstanding_sends + 1 < c.p.tx_depth; }, "waiting for send completions");
    };
    // Waits for the peer's message number i.
    auto receive_one = [&](std::uint64_t i) -> Status {
      if (op == Op::write) {
        const auto* last = reinterpret_cast<const volatile std::uint8_t*>(c.rx.bytes() + size - 1);
        Status st = env.rt.wait_for_byte(last, marker(i), c.p.timeout);
        if (!st) return st.with_context(fmt::format("rank {}: waiting for write {} of the peer", env.rank, i));
        return Status::ok();
      }
      RDMALAB_TRY(progress_until([&] { return arrived > 0; }, "waiting for the peer's message"));
      --arrived;
      return Status::ok();
    };

    if (op == Op::write || op == Op::send) {
      // One clock read per round trip, as perftest stamps each iteration: a sample is the time
      // from one iteration's start to the next's.
      double stamp = env.rt.now();
      for (std::uint64_t i = 0; i < total; ++i) {
        if (c.client) {
          RDMALAB_TRY(send_one(i));
          RDMALAB_TRY(receive_one(i));
          const double next = env.rt.now();
          if (i >= c.p.warmup) samples.push_back((next - stamp) * 1e6 / latency_divisor);
          stamp = next;
        } else {
          RDMALAB_TRY(receive_one(i));
          RDMALAB_TRY(send_one(i));
        }
      }
      RDMALAB_TRY(progress_until([&] { return outstanding_sends == 0; }, "waiting for send completions"));
      RDMALAB_TRY(settle_receives());
      if (op == Op::write && c.p.verify && size > 1) {
        // The payload before the marker byte must be the peer's pattern.
        RDMALAB_ASSIGN(std::uint64_t w, c.verify_rx(0, size - 1, stream_seed(c.p.seed, c.peer, 0)));
        errors += w;
      }
    } else if (c.client) {
      // read_lat / atomic_lat: one outstanding request at a time; the full round trip counts.
      for (std::uint64_t i = 0; i < total && !(c.p.use_duration && i >= c.p.warmup && env.rt.now() - run_t0 >= c.p.duration); ++i) {
        if (op == Op::read) {
          sge = {c.rx.addr(), static_cast<std::uint32_t>(size), c.rx_mr->lkey()};
          wr.opcode = SendOpcode::rdma_read;
          wr.remote_addr = c.remote.tx.addr;
          wr.rkey = c.remote.tx.rkey;
        } else {
          sge = {c.atom.addr() + c.fetch_off(0, 0), 8, c.atom_mr->lkey()};
          wr.opcode = c.p.cmp_swap ? SendOpcode::atomic_cmp_swap : SendOpcode::atomic_fetch_add;
          wr.remote_addr = c.remote.atom.addr + c.counter_off(0);
          wr.rkey = c.remote.atom.rkey;
          wr.compare_add = c.p.cmp_swap ? i : 1;
          wr.swap = i + 1;
        }
        wr.wr_id = i;
        const double t0 = env.rt.now();
        RDMALAB_TRY(qp.post_send(std::span<const SendWr>(&wr, 1)));
        if (env.rank == 0) work_meter().sent(size);
        RDMALAB_TRY(wait_ok(env, *c.cq, std::span<Completion>(wcs.data(), 1), c.p.timeout, "waiting for a read/atomic").status());
        const double t1 = env.rt.now();
        if (i >= c.p.warmup) samples.push_back((t1 - t0) * 1e6);
        if (op == Op::read && c.p.verify) {
          // Every read is checked (outside the timed window), then cleared for the next one.
          RDMALAB_ASSIGN(std::uint64_t w, c.verify_rx(0, size, stream_seed(c.p.seed, c.peer, 0)));
          errors += w;
          RDMALAB_TRY(c.clear_rx(0, size));
        }
        if (op == Op::atomic) {
          RDMALAB_ASSIGN(std::uint64_t v, c.read_atom(c.fetch_off(0, 0)));
          errors += v != i;
        }
      }
    }
    RDMALAB_TRY(env.boot.barrier());
    if (op == Op::atomic && !c.client) {
      RDMALAB_TRY(c.zero_atom(c.counter_off(0)));
    }
    RDMALAB_ASSIGN(auto wrongs, allgather_value(env.boot, errors));
    if (env.rank != 0) continue;
    ResultRow row = base_row(env, name, size);
    row.iterations = samples.size();
    LatencyStats st = latency_stats(samples);
    row.lat = st;
    row.time_s = st.avg_us * 1e-6;
    row.msg_rate_mpps = st.avg_us > 0 ? 1.0 / st.avg_us : 0;
    for (auto w : wrongs) row.errors += w;
    row.notes["verify"] = c.p.verify ? "on" : "off";
    row.notes["data_path"] = c.tx_mr->data_path();
    rows.push_back(row);
  }
  return Status::ok();
}

// ------------------------------------------------------------------------------------------
// Checks before a run.

Status check_common(const Scenario& sc, const Capabilities& caps, int ranks, Op op, bool latency, const char* name) {
  if (ranks < 2 || ranks % 2 != 0)
    return sc.error("fabric.nodes", fmt::format("{} runs between pairs of ranks: needs an even number of ranks, 2 or more (is {})", name, ranks));
  if (sc.is_set("workload.size") && sc.is_set("workload.sizes"))
    return sc.error("workload.sizes", "give either workload.size or workload.sizes, not both");
  if (sc.is_set("workload.iterations") && sc.is_set("workload.duration"))
    return sc.error("workload.duration", "give either workload.iterations or workload.duration, not both");
  if (latency && (op == Op::write || op == Op::send) && sc.is_set("workload.duration"))
    return sc.error("workload.duration", fmt::format("{} is a ping-pong: give workload.iterations, not a duration", name));
  if (latency && sc.get_int("workload.qps") != 1)
    return sc.error("workload.qps", fmt::format("{} measures one QP, as perftest's latency tests do: qps must be 1", name));
  if (latency && sc.get_bool("workload.bidirectional"))
    return sc.error("workload.bidirectional", fmt::format("{} is already a round trip: bidirectional applies to *_bw workloads", name));
  auto tx = sc.get_int("workload.tx_depth");
  if (sc.is_set("workload.cq_mod") && sc.get_int("workload.cq_mod") > tx)
    return sc.error("workload.cq_mod", fmt::format("cq_mod ({}) must not exceed tx_depth ({}): the send queue would fill before a completion is asked for",
                                                   sc.get_int("workload.cq_mod"), tx));
  if (sc.get_int("workload.post_list") > tx)
    return sc.error("workload.post_list", fmt::format("post_list ({}) must not exceed tx_depth ({})", sc.get_int("workload.post_list"), tx));
  if (op == Op::atomic && ((sc.is_set("workload.size") && sc.get_size("workload.size") != 8) || sc.is_set("workload.sizes")))
    return sc.error(sc.is_set("workload.sizes") ? "workload.sizes" : "workload.size", "atomics always move 8 bytes: leave size out");
  if (op == Op::read && !caps.rdma_read) return sc.error("workload.type", fmt::format("{} needs RDMA read, which this backend does not offer", name));
  if (op == Op::atomic && !caps.atomics) return sc.error("workload.type", fmt::format("{} needs atomics, which this backend does not offer", name));
  auto inl = sc.get_size("workload.inline");
  if (inl > caps.max_inline)
    return sc.error("workload.inline", fmt::format("this backend sends at most {} inline (asked {})", units::format_size(caps.max_inline), units::format_size(inl)));
  if (inl > 0 && memory_kind_of(sc) == MemoryKind::cuda)
    return sc.error("workload.inline", "inline payloads are read by the CPU when posted: not from GPU memory (set inline: 0B)");
  if ((op == Op::read || op == Op::atomic) && sc.is_set("workload.inline") && inl > 0)
    return sc.error("workload.inline", "reads and atomics carry no inline payload");
  std::uint64_t max_size = 8;
  if (op != Op::atomic) {
    auto sizes = sc.is_set("workload.sizes") ? sc.get_sizes("workload.sizes") : std::vector<std::uint64_t>{sc.get_size("workload.size")};
    max_size = *std::max_element(sizes.begin(), sizes.end());
  }
  if (caps.max_msg_size && max_size > caps.max_msg_size)
    return sc.error(sc.is_set("workload.sizes") ? "workload.sizes" : "workload.size",
                    fmt::format("this backend moves at most {} per message", units::format_size(caps.max_msg_size)));
  if (static_cast<std::uint64_t>(tx) > caps.max_qp_wr)
    return sc.error("workload.tx_depth", fmt::format("this backend allows at most {} requests per queue", caps.max_qp_wr));
  if (static_cast<std::uint64_t>(sc.get_int("workload.rx_depth")) > caps.max_qp_wr)
    return sc.error("workload.rx_depth", fmt::format("this backend allows at most {} requests per queue", caps.max_qp_wr));
  RDMALAB_TRY(check_memory(sc, caps));
  const MemoryKind kind = memory_kind_of(sc);
  if (kind == MemoryKind::cuda && latency && op == Op::write)
    return sc.error("workload.memory", fmt::format("{} sees a message arrive by polling its last byte from the CPU, which cannot read GPU memory "
                                                   "(perftest's write latency test has the same limit): use host memory, or send_lat", name));
  if (phantom_payload(sc) && (op == Op::atomic || (latency && op == Op::write)))
    return sc.error(kind == MemoryKind::phantom ? "workload.memory" : "workload.payload", fmt::format("{} needs bytes that really change (counters, arrival markers): use host memory", name));
  return Status::ok();
}

void add(WorkloadRegistry& reg, const char* name, const char* desc, Op op, bool latency) {
  WorkloadInfo w;
  w.name = name;
  w.description = desc;
  w.kind = latency ? WorkloadKind::latency : WorkloadKind::bandwidth;
  w.check = [op, latency, name](const Scenario& sc, const Capabilities& caps, int ranks) {
    return check_common(sc, caps, ranks, op, latency, name);
  };
  // Every QP has a send and a receive region of at least the largest message (setup()).
  w.min_buffer_bytes = [op](const Scenario& sc) -> std::uint64_t {
    if (op == Op::atomic) return 0;
    auto sizes = sc.is_set("workload.sizes") ? sc.get_sizes("workload.sizes") : std::vector<std::uint64_t>{sc.get_size("workload.size")};
    return 2 * static_cast<std::uint64_t>(sc.get_int("workload.qps")) * *std::max_element(sizes.begin(), sizes.end());
  };
  w.reads = {"workload.size", "workload.sizes", "workload.iterations", "workload.warmup", "workload.duration", "workload.qps",
             "workload.tx_depth", "workload.cq_mod", "workload.bidirectional", "workload.verify", "workload.memory", "workload.payload",
             "workload.gpu_path", "workload.timeout"};
  if (!latency) w.reads.push_back("workload.post_list");
  if (op == Op::send) w.reads.push_back("workload.rx_depth");
  if (op == Op::write || op == Op::send) w.reads.push_back("workload.inline");
  if (op == Op::atomic) w.reads.push_back("workload.atomic");
  if (latency)
    w.run = [op, name](RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows) { return run_lat(env, sc, rows, op, name); };
  else
    w.run = [op, name](RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows) { return run_bw(env, sc, rows, op, name); };
  reg.add(std::move(w));
}

}  // namespace

void register_perftest(WorkloadRegistry& reg) {
  add(reg, "write_bw", "RDMA write bandwidth (ib_write_bw)", Op::write, false);
  add(reg, "read_bw", "RDMA read bandwidth (ib_read_bw)", Op::read, false);
  add(reg, "send_bw", "send/receive bandwidth (ib_send_bw)", Op::send, false);
  add(reg, "atomic_bw", "8-byte atomic operation rate (ib_atomic_bw)", Op::atomic, false);
  add(reg, "write_lat", "RDMA write ping-pong latency, half round trip (ib_write_lat)", Op::write, true);
  add(reg, "read_lat", "RDMA read latency, full round trip (ib_read_lat)", Op::read, true);
  add(reg, "send_lat", "send/receive ping-pong latency, half round trip (ib_send_lat)", Op::send, true);
  add(reg, "atomic_lat", "8-byte atomic latency, full round trip (ib_atomic_lat)", Op::atomic, true);
}

}  // namespace rdmalab::workloads
