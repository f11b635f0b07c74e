// train_dp: forward, then backward layer by layer in reverse; each layer's gradients join a
// bucket, and a full bucket is all-reduced at once (PyTorch DDP) while the backward pass goes on;
// tensor parallelism and mixture-of-experts as options (training.cc says more).
#include "training_step.h"

namespace rdmalab::workloads::training_detail {
namespace {

struct Bucket {
  std::uint64_t offset = 0, bytes = 0;  // in the gradient buffer
  std::size_t last_layer = 0;           // the backward pass fills it up to this layer (reverse order)
  Plan plan;
  std::string how;  // algorithm/protocol, channels
};

std::uint64_t round_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

Status run_dp(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows) {
  const Params p = params_for_rank(sc, env.rank);
  const std::size_t es = dtype_size(p.dtype);
  const int tp = p.tp;
  const int dp = env.size / tp;
  const int tp_rank = env.rank % tp, dp_rank = env.rank / tp;
  std::vector<int> dp_members, tp_members, all(static_cast<std::size_t>(env.size));
  for (int i = 0; i < dp; ++i) dp_members.push_back(i * tp + tp_rank);
  for (int i = 0; i < tp; ++i) tp_members.push_back(dp_rank * tp + i);
  std::iota(all.begin(), all.end(), 0);

  // Gradients of this rank (its 1/tp share of every layer), in backward order, cut into buckets:
  // the first (the last layers', produced first) at training.first_bucket, the rest at
  // training.bucket, as DDP's Reducer does (a bucket closes once it reaches its cap).
  std::vector<Bucket> buckets;
  std::uint64_t grad_bytes = 0;
  {
    Bucket cur;
    for (std::size_t k = p.layers.size(); k-- > 0;) {
      std::uint64_t b = round_up(p.layers[k].params / static_cast<std::uint64_t>(tp) * es, es * static_cast<std::uint64_t>(dp));
      cur.bytes += b;
      cur.last_layer = k;
      if (cur.bytes >= (buckets.empty() ? p.first_bucket : p.bucket) || k == 0) {
        cur.offset = grad_bytes;
        grad_bytes += cur.bytes;
        buckets.push_back(cur);
        cur = Bucket{};
      }
    }
  }
  std::vector<Plan> plans;
  for (auto& b : buckets) {
    const std::uint64_t count = b.bytes / es;
    b.plan = shift_plan(tuned_collective(env, p, Collective::all_reduce, dp_members, dp_rank, count, es, kChanDp, &b.how), 0, b.offset, 0);
    b.plan.label = fmt::format("gradient bucket {}: all_reduce {}", plans.size(), units::format_size(b.bytes));
    plans.push_back(b.plan);
  }
  // Tensor-parallel activations and MoE all-to-alls live after the gradients in the same buffer.
  const std::uint64_t tp_off = grad_bytes;
  const std::uint64_t tp_count = round_up(p.tp_bytes, es) / es;
  Plan tp_plan, moe_plan;
  if (tp > 1) {
    tp_plan = shift_plan(tuned_collective(env, p, Collective::all_reduce, tp_members, tp_rank, tp_count, es, kChanTp), 0, tp_off, 0);
    tp_plan.label = fmt::format("tensor-parallel all_reduce {}", units::format_size(tp_count * es));
    plans.push_back(tp_plan);
  }
  const std::uint64_t moe_count = round_up(p.moe_bytes, es * static_cast<std::uint64_t>(env.size)) / es;
  const std::uint64_t moe_off = tp_off + tp_count * es;  // after the gradients and the activations
  if (p.moe_bytes > 0) {
    moe_plan = shift_plan(group_plan(Collective::all_to_all, Algorithm::pairwise, all, env.rank, moe_count, es, false, kChanMoe), 0, moe_off, 0);
    moe_plan.label = fmt::format("MoE all_to_all {}", units::format_size(moe_count * es));
    plans.push_back(moe_plan);
  }
  CollectiveEngine eng(env, reducing_engine(p, "train_dp"));
  RDMALAB_TRY(eng.setup(plans, 0, moe_off + moe_count * es));

  // Known gradients: the collectives' exact inputs (by position in the data-parallel group), so
  // the all-reduced sum is exact in every type and any order.
  const std::uint64_t grad_count = grad_bytes / es;
  auto grads_of = [&](int member) {
    std::vector<std::uint8_t> v(grad_bytes);
    for (std::uint64_t i = 0; i < grad_count; ++i)
      set_element(v.data(), i, p.dtype, exact_input(p.dtype, ReduceOp::sum, true, dp, member, i, p.seed));
    return v;
  };
  auto load_grads = [&]() -> Status {
    if (!p.verify) return Status::ok();
    auto v = grads_of(dp_rank);
    return eng.mem().write(eng.out(), 0, v.data(), v.size());
  };

  std::vector<StepTimes> timed;
  std::uint64_t wrong = 0;
  std::string last_timeline;
  if (env.rank == 0) {  // the progress line: steps, and within one the bytes rank 0 has sent
    work_meter().reset();
    work_meter().plan_steps(p.warmup + p.steps);
  }
  for (std::uint64_t it = 0; it < p.warmup + p.steps; ++it) {
    TraceScope step_span(env.trace, "workload", it < p.warmup ? fmt::format("warm-up step {}", it) : fmt::format("step {}", it - p.warmup));
    const bool last = it + 1 == p.warmup + p.steps;
    if (last) RDMALAB_TRY(load_grads());
    RDMALAB_TRY(env.boot.barrier());
    const double t0 = env.rt.now();
    double compute = 0, comm = 0;
    auto blocking = [&](const Plan& plan) -> Status {
      const double c0 = env.rt.now();
      RDMALAB_TRY(eng.execute(plan));
      comm += env.rt.now() - c0;
      return Status::ok();
    };
    // Per layer and pass: two tensor-parallel all-reduces, two MoE all-to-alls (dispatch, combine).
    auto layer_comm = [&]() -> Status {
      for (int k = 0; k < 2; ++k) {
        if (tp > 1) RDMALAB_TRY(blocking(tp_plan));
        if (p.moe_bytes) RDMALAB_TRY(blocking(moe_plan));
      }
      return Status::ok();
    };
    // Forward.
    for (const auto& l : p.layers) {
      const double t = fwd_time(p, l, static_cast<double>(p.batch));
      RDMALAB_TRY(env.rt.compute(t));
      compute += t;
      RDMALAB_TRY(layer_comm());
    }
    // Backward, launching each bucket's all-reduce when its last layer is done. Each bucket's end
    // is seen after a compute slice (training.progress_interval) or in the final wait.
    const double fwd_end = env.rt.now();
    std::size_t next_bucket = 0;
    double first_launch = -1;
    std::vector<std::pair<int, std::size_t>> open;  // (engine id, phase index)
    std::vector<Phase> phases{{"forward", 0, fwd_end - t0}, {"backward", fwd_end - t0, -1}};  // the backward's end: below
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
    for (std::size_t k = p.layers.size(); k-- > 0;) {
      const double t = bwd_time(p, p.layers[k], static_cast<double>(p.batch));
      RDMALAB_TRY(compute_overlapped(env, eng, p, t, note_done));
      compute += t;
      RDMALAB_TRY(layer_comm());
      while (next_bucket < buckets.size() && buckets[next_bucket].last_layer == k) {
        if (first_launch < 0) first_launch = env.rt.now();
        RDMALAB_ASSIGN(const int id, eng.begin(buckets[next_bucket].plan));
        phases.push_back({fmt::format("bucket {}", next_bucket), env.rt.now() - t0, -1});
        open.emplace_back(id, phases.size() - 1);
        ++next_bucket;
      }
    }
    const double bwd_end = env.rt.now();
    phases[1].end = bwd_end - t0;
    // Whatever is left of the gradient all-reduces is exposed.
    for (const auto& [id, ph] : open) {
      RDMALAB_TRY(eng.wait(id));
      phases[ph].end = env.rt.now() - t0;
    }
    RDMALAB_TRY(eng.wait_all());
    const double t1 = env.rt.now();
    if (t1 > bwd_end) phases.push_back({"exposed", bwd_end - t0, t1 - t0});
    if (it + 1 == p.warmup + p.steps) last_timeline = timeline_text(phases);
    if (first_launch >= 0) comm += t1 - first_launch;
    if (it >= p.warmup) timed.push_back({t1 - t0, compute, comm});
    if (env.rank == 0) work_meter().step_done();
    if (last && p.verify) {
      std::vector<std::uint8_t> got(grad_bytes), want = grads_of(0);
      for (int m = 1; m < dp; ++m) {
        auto v = grads_of(m);
        host_reduce(want.data(), want.data(), v.data(), grad_count, p.dtype, ReduceOp::sum);
      }
      RDMALAB_TRY(eng.mem().read(eng.out(), 0, got.data(), got.size()));
      for (std::uint64_t i = 0; i < grad_count; ++i) wrong += std::memcmp(want.data() + i * es, got.data() + i * es, es) != 0;
    }
  }
  RDMALAB_ASSIGN(auto reports, gather_means(env, timed, wrong));
  RDMALAB_TRY(eng.drain());
  if (env.rank != 0) return Status::ok();
  ResultRow row;
  row.workload = "train_dp";
  row.bytes = grad_bytes;
  row.iterations = p.steps;
  row.ranks = env.size;
  double compute = 0, comm = 0;
  for (const auto& r : reports) {
    row.time_s = std::max(row.time_s, r.step);
    compute = std::max(compute, r.compute);
    comm = std::max(comm, r.comm);
    row.errors += r.wrong;
  }
  const double exposed = std::max(0.0, row.time_s - compute);
  row.bw_gbps = row.time_s > 0 ? static_cast<double>(grad_bytes) * 8 / row.time_s / 1e9 : 0;
  row.bw_peak_gbps = row.bw_gbps;
  row.extra["step_ms"] = row.time_s * 1e3;
  row.extra["compute_ms"] = compute * 1e3;
  row.extra["comm_ms"] = comm * 1e3;
  row.extra["exposed_ms"] = exposed * 1e3;
  row.extra["buckets"] = static_cast<double>(buckets.size());
  row.extra["params"] = static_cast<double>(std::accumulate(p.layers.begin(), p.layers.end(), std::uint64_t{0},
                                                            [](std::uint64_t s, const ModelLayer& l) { return s + l.params; }));
  row.extra["samples_per_s"] = row.time_s > 0 ? static_cast<double>(p.batch) * dp / row.time_s : 0;
  add_compute_figures(row, p, 3 * p.fwd_flops * static_cast<double>(p.batch) / tp);
  row.notes["model"] = p.model;
  row.notes["parallelism"] = fmt::format("dp {} x tp {}{}", dp, tp, p.moe_bytes ? " + moe" : "");
  add_straggler_note(row, sc);
  row.notes["timeline"] = last_timeline;
  // The largest bucket's all-reduce, as NCCL's tuning picks it for that size (the others may differ).
  const auto largest = std::max_element(buckets.begin(), buckets.end(), [](const Bucket& a, const Bucket& b) { return a.bytes < b.bytes; });
  if (largest != buckets.end()) row.notes["gradient_all_reduce"] = fmt::format("{} ({})", largest->how, units::format_size(largest->bytes));
  row.notes["verify"] = p.verify ? "on" : "off";
  rows.push_back(std::move(row));
  return Status::ok();
}

}  // namespace rdmalab::workloads::training_detail
