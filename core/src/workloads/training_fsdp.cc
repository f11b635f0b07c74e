// train_fsdp: fully sharded data parallel, as PyTorch FSDP (and DeepSpeed ZeRO-3) run a step.
//
// Every layer is one FSDP unit (a wrapped module: a transformer block under the transformer
// auto-wrap policy) whose parameters are sharded over all ranks, 1/n each. A step:
//  - forward, unit by unit: the unit's parameters are all-gathered before its forward; the next
//    unit's all-gather is issued as this one's forward starts (FSDP's limit_all_gathers lets two
//    be in flight, so each gather hides behind the previous unit's compute);
//  - backward, in reverse: with training.sharding full (FULL_SHARD, ZeRO-3) the parameters were
//    sharded again after the forward and are all-gathered again, the next unit's before this
//    one's gradients are computed (BackwardPrefetch.BACKWARD_PRE, FSDP's default); the last unit
//    of the forward is not resharded (its backward comes first). With grad_op (SHARD_GRAD_OP,
//    ZeRO-2) the gathered parameters stay from forward to backward: no backward all-gather;
//  - each unit's gradients are reduce-scattered as soon as its backward is done, on their own
//    stream, while the backward pass goes on; the step ends when the last reduce-scatter is done
//    (the optimizer then updates each rank's shard: local).
// All-gathers and reduce-scatters run on separate connections (FSDP's unshard and post-backward
// streams), with NCCL's algorithm, protocol and channels for their size (tuned_collective).
#include "training_step.h"

namespace rdmalab::workloads::training_detail {
namespace {

struct Unit {
  std::uint64_t count = 0;  // elements, a multiple of the ranks
  std::uint64_t shard_off = 0, full_off = 0;  // this rank's shard in `in`; the gathered parameters in `out`
  std::uint64_t grad_off = 0, reduced_off = 0;  // the unit's full gradients in `in`; this rank's reduced shard in `out`
  Plan gather, scatter;
};

// The time in [start, end) covered by at least one of the intervals.
double covered(std::vector<std::pair<double, double>> iv) {
  std::sort(iv.begin(), iv.end());
  double total = 0, cs = 0, ce = -1;
  for (const auto& [s, e] : iv) {
    if (s > ce) {
      total += std::max(0.0, ce - cs);
      cs = s;
      ce = e;
    } else {
      ce = std::max(ce, e);
    }
  }
  return total + std::max(0.0, ce - cs);
}

}  // namespace

Status run_fsdp(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows) {
  const Params p = params_for_rank(sc, env.rank);
  const std::size_t es = dtype_size(p.dtype);
  const int n = env.size;
  const auto un = static_cast<std::uint64_t>(n);
  std::vector<int> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  const std::size_t L = p.layers.size();

  // Buffers: `in` holds this rank's parameter shards, then the full gradients of every unit;
  // `out` the gathered parameters of every unit, then this rank's reduced gradient shards. Each
  // plan has its own scratch, so that any of them may be in flight together.
  std::vector<Unit> units(L);
  std::uint64_t shard_bytes = 0, full_bytes = 0;
  for (std::size_t k = 0; k < L; ++k) {
    Unit& u = units[k];
    u.count = std::max<std::uint64_t>(1, (p.layers[k].params + un - 1) / un) * un;
    u.shard_off = shard_bytes;
    u.full_off = full_bytes;
    shard_bytes += u.count / un * es;
    full_bytes += u.count * es;
  }
  std::vector<Plan> plans;
  std::uint64_t scratch = 0;
  std::string gather_how, scatter_how;
  std::size_t largest = 0;
  for (std::size_t k = 0; k < L; ++k) {
    Unit& u = units[k];
    u.grad_off = shard_bytes + u.full_off;
    u.reduced_off = full_bytes + u.shard_off;
    if (u.count > units[largest].count) largest = k;
  }
  for (std::size_t k = 0; k < L; ++k) {
    Unit& u = units[k];
    std::string g_how, s_how;
    Plan g = tuned_collective(env, p, Collective::all_gather, all, env.rank, u.count, es, kChanGather, &g_how);
    const std::uint64_t g_scratch = g.scratch_bytes;
    u.gather = shift_plan(std::move(g), u.shard_off, u.full_off, scratch);
    u.gather.label = fmt::format("unit {}: all_gather {}", k, units::format_size(u.count * es));
    scratch += g_scratch;
    Plan s = tuned_collective(env, p, Collective::reduce_scatter, all, env.rank, u.count, es, kChanDp, &s_how);
    const std::uint64_t s_scratch = s.scratch_bytes;
    u.scatter = shift_plan(std::move(s), u.grad_off, u.reduced_off, scratch);
    u.scatter.label = fmt::format("unit {}: reduce_scatter {}", k, units::format_size(u.count * es));
    scratch += s_scratch;
    if (k == largest) {
      gather_how = fmt::format("{} ({})", g_how, units::format_size(u.count * es));
      scatter_how = fmt::format("{} ({})", s_how, units::format_size(u.count * es));
    }
    plans.push_back(u.gather);
    plans.push_back(u.scatter);
  }
  CollectiveEngine eng(env, reducing_engine(p, "train_fsdp"));
  RDMALAB_TRY(eng.setup(plans, shard_bytes + full_bytes, full_bytes + shard_bytes));

  // Known values, so that the gathered parameters and the reduced gradients are checked exactly:
  // element i of the full (unsharded) buffers is owned by rank (i within its unit) / shard.
  auto param_value = [&](const Unit& u, std::uint64_t i) {
    const int owner = static_cast<int>(i / (u.count / un));
    return exact_input(p.dtype, ReduceOp::sum, false, n, owner, u.full_off / es + i, p.seed);
  };
  auto grad_value = [&](const Unit& u, int member, std::uint64_t i) {
    return exact_input(p.dtype, ReduceOp::sum, true, n, member, u.full_off / es + i, p.seed);
  };
  auto load = [&]() -> Status {
    std::vector<std::uint8_t> v(shard_bytes + full_bytes);
    for (const Unit& u : units) {
      const std::uint64_t shard = u.count / un, first = static_cast<std::uint64_t>(env.rank) * shard;
      for (std::uint64_t j = 0; j < shard; ++j) set_element(v.data() + u.shard_off, j, p.dtype, param_value(u, first + j));
      for (std::uint64_t i = 0; i < u.count; ++i) set_element(v.data() + u.grad_off, i, p.dtype, grad_value(u, env.rank, i));
    }
    return eng.mem().write(eng.in(), 0, v.data(), v.size());
  };
  auto check = [&]() -> Result<std::uint64_t> {
    std::vector<std::uint8_t> got(full_bytes + shard_bytes), want(full_bytes + shard_bytes), one(es);
    RDMALAB_TRY(eng.mem().read(eng.out(), 0, got.data(), got.size()));
    for (const Unit& u : units) {
      const std::uint64_t shard = u.count / un, first = static_cast<std::uint64_t>(env.rank) * shard;
      for (std::uint64_t i = 0; i < u.count; ++i) set_element(want.data() + u.full_off, i, p.dtype, param_value(u, i));
      for (std::uint64_t j = 0; j < shard; ++j) {
        std::uint8_t* w = want.data() + u.reduced_off + j * es;
        set_element(w, 0, p.dtype, grad_value(u, 0, first + j));
        for (int m = 1; m < n; ++m) {
          set_element(one.data(), 0, p.dtype, grad_value(u, m, first + j));
          host_reduce(w, w, one.data(), 1, p.dtype, ReduceOp::sum);
        }
      }
    }
    std::uint64_t wrong = 0;
    for (std::uint64_t i = 0; i < got.size() / es; ++i) wrong += std::memcmp(want.data() + i * es, got.data() + i * es, es) != 0;
    return wrong;
  };

  std::vector<StepTimes> timed;
  std::uint64_t wrong = 0;
  std::string last_timeline;
  if (env.rank == 0) {
    work_meter().reset();
    work_meter().plan_steps(p.warmup + p.steps);
  }
  for (std::uint64_t it = 0; it < p.warmup + p.steps; ++it) {
    TraceScope step_span(env.trace, "workload", it < p.warmup ? fmt::format("warm-up step {}", it) : fmt::format("step {}", it - p.warmup));
    const bool last = it + 1 == p.warmup + p.steps;
    if (last && p.verify) RDMALAB_TRY(load());
    RDMALAB_TRY(env.boot.barrier());
    const double t0 = env.rt.now();
    double compute = 0;
    std::vector<Phase> phases{{"forward", 0, -1}, {"backward", -1, -1}};
    std::vector<std::pair<int, std::size_t>> open;  // (engine id, phase index)
    auto note_done = [&] {
      for (auto o = open.begin(); o != open.end();) {
        if (!eng.done(o->first)) {
          ++o;
          continue;
        }
        phases[o->second].end = env.rt.now() - t0;
        o = open.erase(o);
      }
    };
    auto launch = [&](const Plan& plan, std::string name) -> Result<int> {
      RDMALAB_ASSIGN(const int id, eng.begin(plan));
      phases.push_back({std::move(name), env.rt.now() - t0, -1});
      open.emplace_back(id, phases.size() - 1);
      return id;
    };
    // A unit's compute waits for its parameters.
    auto need = [&](int id) -> Status {
      RDMALAB_TRY(eng.wait(id));
      note_done();
      return Status::ok();
    };
    std::vector<int> gathered(L, -1);
    auto gather = [&](std::size_t k) -> Status {
      RDMALAB_ASSIGN(gathered[k], launch(units[k].gather, fmt::format("gather {}", k)));
      return Status::ok();
    };
    // Forward: unit k's all-gather was issued as unit k-1's forward began.
    RDMALAB_TRY(gather(0));
    for (std::size_t k = 0; k < L; ++k) {
      if (k + 1 < L) RDMALAB_TRY(gather(k + 1));
      RDMALAB_TRY(need(gathered[k]));
      const double t = fwd_time(p, p.layers[k], static_cast<double>(p.batch));
      RDMALAB_TRY(compute_overlapped(env, eng, p, t, note_done));
      compute += t;
    }
    phases[0].end = phases[1].start = env.rt.now() - t0;
    // Backward: with FULL_SHARD, unit k-1's all-gather is issued before unit k's gradients are
    // computed; the last unit kept its parameters from the forward.
    for (std::size_t k = L; k-- > 0;) {
      if (p.reshard_after_forward && k >= 1) RDMALAB_TRY(gather(k - 1));
      if (p.reshard_after_forward && k + 1 < L) RDMALAB_TRY(need(gathered[k]));
      const double t = bwd_time(p, p.layers[k], static_cast<double>(p.batch));
      RDMALAB_TRY(compute_overlapped(env, eng, p, t, note_done));
      compute += t;
      RDMALAB_TRY(launch(units[k].scatter, fmt::format("scatter {}", k)).status());
    }
    const double bwd_end = env.rt.now();
    phases[1].end = bwd_end - t0;
    for (const auto& [id, ph] : open) {
      RDMALAB_TRY(eng.wait(id));
      phases[ph].end = env.rt.now() - t0;
    }
    open.clear();
    RDMALAB_TRY(eng.wait_all());
    const double t1 = env.rt.now();
    if (t1 > bwd_end) phases.push_back({"exposed", bwd_end - t0, t1 - t0});
    std::vector<std::pair<double, double>> comm;
    for (std::size_t i = 2; i < phases.size(); ++i)
      if (phases[i].name != "exposed") comm.emplace_back(phases[i].start, phases[i].end);
    if (last) last_timeline = timeline_text(phases);
    if (it >= p.warmup) timed.push_back({t1 - t0, compute, covered(comm)});
    if (env.rank == 0) work_meter().step_done();
    if (last && p.verify) {
      RDMALAB_ASSIGN(wrong, check());
    }
  }
  RDMALAB_ASSIGN(auto reports, gather_means(env, timed, wrong));
  RDMALAB_TRY(eng.drain());
  if (env.rank != 0) return Status::ok();
  ResultRow row;
  row.workload = "train_fsdp";
  row.bytes = full_bytes;
  row.iterations = p.steps;
  row.ranks = n;
  double compute = 0, comm = 0;
  for (const auto& r : reports) {
    row.time_s = std::max(row.time_s, r.step);
    compute = std::max(compute, r.compute);
    comm = std::max(comm, r.comm);
    row.errors += r.wrong;
  }
  row.bw_gbps = row.time_s > 0 ? static_cast<double>(full_bytes) * 8 / row.time_s / 1e9 : 0;
  row.bw_peak_gbps = row.bw_gbps;
  row.extra["step_ms"] = row.time_s * 1e3;
  row.extra["compute_ms"] = compute * 1e3;
  row.extra["comm_ms"] = comm * 1e3;
  row.extra["exposed_ms"] = std::max(0.0, row.time_s - compute) * 1e3;
  row.extra["units"] = static_cast<double>(L);
  row.extra["params"] = static_cast<double>(std::accumulate(p.layers.begin(), p.layers.end(), std::uint64_t{0},
                                                            [](std::uint64_t s, const ModelLayer& l) { return s + l.params; }));
  row.extra["samples_per_s"] = row.time_s > 0 ? static_cast<double>(p.batch) * n / row.time_s : 0;
  add_compute_figures(row, p, 3 * p.fwd_flops * static_cast<double>(p.batch));
  row.notes["model"] = p.model;
  row.notes["parallelism"] = fmt::format("fsdp {} ({})", n, p.reshard_after_forward ? "full_shard" : "shard_grad_op");
  add_straggler_note(row, sc);
  row.notes["timeline"] = last_timeline;
  row.notes["all_gather"] = gather_how;
  row.notes["reduce_scatter"] = scatter_how;
  row.notes["verify"] = p.verify ? "on" : "off";
  rows.push_back(std::move(row));
  return Status::ok();
}

}  // namespace rdmalab::workloads::training_detail
