// train_pp: the ranks are the stages of one pipeline; micro-batches flow with the 1F1B schedule.
#include "training_step.h"

namespace rdmalab::workloads::training_detail {

Status run_pp(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows) {
  const Params p = params_for_rank(sc, env.rank);
  const int S = env.size, s = env.rank, m = p.microbatches;
  const std::uint64_t A = p.activation;
  // This stage's layers: an even split.
  const std::size_t L = p.layers.size();
  const std::size_t lo = L * static_cast<std::size_t>(s) / static_cast<std::size_t>(S), hi = L * static_cast<std::size_t>(s + 1) / static_cast<std::size_t>(S);
  const double mb_samples = static_cast<double>(p.batch) / m;
  double fwd = 0, bwd = 0;
  for (std::size_t k = lo; k < hi; ++k) {
    fwd += fwd_time(p, p.layers[k], mb_samples);
    bwd += bwd_time(p, p.layers[k], mb_samples);
  }
  // Buffers: micro-batch i's activation in `out` at i*A (received from s-1, sent on from the
  // same place), its gradient at (m+i)*A; what this stage sends comes from `in`.
  auto p2p = [&](bool send, int peer, Buf buf, std::uint64_t off) {
    Plan plan;
    if (send) plan.sends.push_back(SendOp{peer, kChanPp, Ref{buf, off}, A, -1, false, false});
    else plan.recvs.push_back(RecvOp{peer, kChanPp, Ref{Buf::out, off}, A, false, Ref{}, -1, false});
    plan.in_bytes = 2 * static_cast<std::uint64_t>(m) * A;
    plan.out_bytes = 2 * static_cast<std::uint64_t>(m) * A;
    return plan;
  };
  std::vector<Plan> setup_plans;
  if (s > 0) setup_plans.push_back(p2p(false, s - 1, Buf::out, 0)), setup_plans.push_back(p2p(true, s - 1, Buf::in, 0));
  if (s + 1 < S) setup_plans.push_back(p2p(true, s + 1, Buf::in, 0)), setup_plans.push_back(p2p(false, s + 1, Buf::out, 0));
  EngineConfig cfg;
  cfg.chunk = p.chunk;
  cfg.slots = p.slots;
  cfg.memory = p.memory;
  cfg.phantom = p.phantom;
  cfg.timeout = p.timeout;
  cfg.what = "train_pp";
  CollectiveEngine eng(env, cfg);
  RDMALAB_TRY(eng.setup(setup_plans));
  auto seed_of = [&](int from, int mb, bool grad) { return stream_seed(p.seed, from, (grad ? 1000 : 0) + mb); };

  std::vector<double> steps, busy_v;
  std::uint64_t wrong = 0;
  if (env.rank == 0) {
    work_meter().reset();
    work_meter().plan_steps(p.warmup + p.steps);
  }
  for (std::uint64_t it = 0; it < p.warmup + p.steps; ++it) {
    TraceScope step_span(env.trace, "workload", it < p.warmup ? fmt::format("warm-up step {}", it) : fmt::format("step {}", it - p.warmup));
    RDMALAB_TRY(env.boot.barrier());
    const double t0 = env.rt.now();
    double busy = 0;
    std::vector<int> pending_sends;
    auto forward = [&](int i) -> Status {
      const std::uint64_t off = static_cast<std::uint64_t>(i) * A;
      if (s > 0) {
        RDMALAB_TRY(eng.execute(p2p(false, s - 1, Buf::out, off)));
        if (p.verify) {
          RDMALAB_ASSIGN(std::uint64_t w, eng.mem().verify(eng.out(), off, A, seed_of(s - 1, i, false)));
          wrong += w;
        }
      }
      RDMALAB_TRY(compute_overlapped(env, eng, p, fwd));
      busy += fwd;
      if (s + 1 < S) {
        if (p.verify) RDMALAB_TRY(eng.mem().fill(eng.in(), off, A, seed_of(s, i, false)));
        RDMALAB_ASSIGN(int id, eng.begin(p2p(true, s + 1, Buf::in, off)));
        pending_sends.push_back(id);
      }
      return Status::ok();
    };
    auto backward = [&](int i) -> Status {
      const std::uint64_t off = static_cast<std::uint64_t>(m + i) * A;
      if (s + 1 < S) {
        RDMALAB_TRY(eng.execute(p2p(false, s + 1, Buf::out, off)));
        if (p.verify) {
          RDMALAB_ASSIGN(std::uint64_t w, eng.mem().verify(eng.out(), off, A, seed_of(s + 1, i, true)));
          wrong += w;
        }
      }
      RDMALAB_TRY(compute_overlapped(env, eng, p, bwd));
      busy += bwd;
      if (s > 0) {
        if (p.verify) RDMALAB_TRY(eng.mem().fill(eng.in(), off, A, seed_of(s, i, true)));
        RDMALAB_ASSIGN(int id, eng.begin(p2p(true, s - 1, Buf::in, off)));
        pending_sends.push_back(id);
      }
      return Status::ok();
    };
    // 1F1B: warm-up forwards, then one forward and one backward alternately, then the remaining
    // backwards.
    const int warm = std::min(S - s - 1, m);
    int f = 0, b = 0;
    for (; f < warm; ++f) RDMALAB_TRY(forward(f));
    for (; f < m; ++f, ++b) {
      RDMALAB_TRY(forward(f));
      RDMALAB_TRY(backward(b));
    }
    for (; b < m; ++b) RDMALAB_TRY(backward(b));
    RDMALAB_TRY(eng.wait_all());
    const double t = env.rt.now() - t0;
    if (it >= p.warmup) {
      steps.push_back(t);
      busy_v.push_back(busy);
    }
    if (env.rank == 0) work_meter().step_done();
  }
  double step = 0, busy = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    step += steps[i] / static_cast<double>(steps.size());
    busy += busy_v[i] / static_cast<double>(steps.size());
  }
  struct Report {
    double step, busy;
    std::uint64_t wrong;
  };
  RDMALAB_ASSIGN(auto reports, allgather_value(env.boot, Report{step, busy, wrong}));
  RDMALAB_TRY(eng.drain());
  if (env.rank != 0) return Status::ok();
  ResultRow row;
  row.workload = "train_pp";
  row.bytes = A;
  row.iterations = p.steps;
  row.ranks = env.size;
  double bubble = 0, busy_max = 0;
  for (const auto& r : reports) row.time_s = std::max(row.time_s, r.step);
  for (const auto& r : reports) {
    bubble += (row.time_s - r.busy) / static_cast<double>(reports.size());
    busy_max = std::max(busy_max, r.busy);
    row.errors += r.wrong;
  }
  row.bw_gbps = row.time_s > 0 ? static_cast<double>(A) * 2 * m * 8 / row.time_s / 1e9 : 0;
  row.bw_peak_gbps = row.bw_gbps;
  row.extra["step_ms"] = row.time_s * 1e3;
  row.extra["compute_ms"] = busy_max * 1e3;
  row.extra["bubble_ms"] = bubble * 1e3;
  row.extra["bubble_fraction"] = row.time_s > 0 ? bubble / row.time_s : 0;
  row.extra["ideal_bubble_fraction"] = static_cast<double>(S - 1) / (m + S - 1);
  row.extra["microbatches"] = m;
  row.extra["samples_per_s"] = row.time_s > 0 ? static_cast<double>(p.batch) / row.time_s : 0;
  add_compute_figures(row, p, 3 * p.fwd_flops * static_cast<double>(p.batch) / S);
  row.notes["model"] = p.model;
  row.notes["parallelism"] = fmt::format("pp {} (1F1B, {} micro-batches)", S, m);
  add_straggler_note(row, sc);
  row.notes["verify"] = p.verify ? "on" : "off";
  rows.push_back(std::move(row));
  return Status::ok();
}

}  // namespace rdmalab::workloads::training_detail
