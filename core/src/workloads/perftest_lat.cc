// The perftest latency tests (ib_*_lat): one message ping-ponged; only the first QP of the
// first pair is timed, other pairs run the same loop.
#include "perftest_pair.h"

namespace rdmalab::workloads::perftest_detail {
namespace {

std::uint8_t marker(std::uint64_t i) { return static_cast<std::uint8_t>(1 + i % 254); }

}  // namespace

Status run_lat(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows, Op op, const char* name) {
  Params p = read_params(sc, op);
  p.qps = 1;
  Pair c(env, p, op);
  RDMALAB_TRY(setup(c));
  plan_work(env, c.p, c.p.warmup + c.p.iterations);
  std::array<Completion, kWcBatch> wcs;
  const double latency_divisor = (op == Op::write || op == Op::send) ? 2.0 : 1.0;  // perftest: half RTT for ping-pong

  for (std::uint64_t size : c.p.sizes) {
    TraceScope size_span(env.trace, "workload", fmt::format("{} {}", name, units::format_size(size)));
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

}  // namespace rdmalab::workloads::perftest_detail
