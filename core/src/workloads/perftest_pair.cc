// One rank's side of a perftest pair: parameters, buffers, QPs and the connection.
#include "perftest_pair.h"

namespace rdmalab::workloads::perftest_detail {

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
    attr.min_rnr_timer_s = rnr_timer_seconds(12);  // perftest's MIN_RNR_TIMER: code 12, 0.64 ms
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

}  // namespace rdmalab::workloads::perftest_detail
