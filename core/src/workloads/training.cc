// Training-step workloads.
//
// train_dp: every rank runs forward, then backward layer by layer in reverse; each layer's
// gradients join a bucket, and a full bucket is all-reduced at once (PyTorch DDP's scheme) while
// the backward pass goes on. Compute is modelled from FLOPs and a GPU rate (runtime.compute: real
// time on hardware, simulated time on SimGrid); while collectives are in flight the compute is
// cut into slices and the engine progresses between them, as NCCL runs beside the kernels.
// Options: tensor parallelism inside groups of consecutive ranks (two blocking all-reduces of the
// activations per layer forward and backward, Megatron-LM's layout) and mixture-of-experts
// (two all-to-alls per layer forward and backward).
//
// train_pp: the ranks are the stages of one pipeline; micro-batches flow with the 1F1B schedule
// (PipeDream-Flush / Megatron-LM): activations forward, gradients backward, point to point.
#include "rdmalab/workloads/training.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "engine.h"
#include "rdmalab/gpus.h"
#include "rdmalab/progress.h"
#include "rdmalab/units.h"
#include "rdmalab/workloads/common.h"
#include "rdmalab/workloads/tuning.h"

namespace rdmalab::workloads {
namespace {

// Channels keep the communicators of one rank apart (the same pair of ranks may meet in two):
// each communicator has a block of 100, room for NCCL's channels (at most 64) or the double
// binary tree's two.
constexpr int kChanDp = 0;
constexpr int kChanTp = 100;
constexpr int kChanMoe = 200;
constexpr int kChanPp = 300;

struct Params {
  std::vector<ModelLayer> layers;
  std::string model;
  std::uint64_t batch = 0;  // samples per rank per step
  double gpu_rate = 0;      // FLOP/s
  double layer_time = -1;   // forward seconds per layer when given
  double measured_rate = 0;  // samples/s of one GPU (measured_throughputs()), when compute comes from there
  double fwd_flops = 0;      // forward FLOPs per sample, all layers
  std::string compute_source;
  const GpuSpec* gpu = nullptr;  // fabric.gpu.model, if named
  std::string precision;
  std::optional<Protocol> proto;
  bool chunk_set = false;
  std::uint64_t bucket = 0;
  int tp = 1;
  std::uint64_t moe_bytes = 0;
  std::uint64_t tp_bytes = 0;  // activations all-reduced per layer in tensor parallel
  int microbatches = 8;
  std::uint64_t activation = 0;  // bytes per micro-batch across a stage boundary
  double slice = 20e-6;
  std::uint64_t steps = 3, warmup = 1;
  DataType dtype = DataType::fp32;
  std::optional<Algorithm> algo;
  std::optional<int> channels;  // workload.channels (train_dp's all-reduces); none: NCCL's (auto_channels)
  std::uint64_t chunk = 512 * 1024;
  std::uint32_t slots = 8;
  MemoryKind memory = MemoryKind::host;
  bool phantom = false;  // workload.payload: phantom (no bytes)
  bool verify = true;
  double timeout = 30;
  std::uint64_t seed = 1;
};

Params read_params(const Scenario& sc) {
  Params p;
  p.model = sc.get_string("training.model");
  if (p.model == "custom") {
    auto params = sc.get_ints("training.layers");
    auto flops = sc.is_set("training.layer_flops") ? sc.get_ints("training.layer_flops") : std::vector<std::int64_t>{};
    for (std::size_t i = 0; i < params.size(); ++i)
      p.layers.push_back({"layer" + std::to_string(i), static_cast<std::uint64_t>(params[i]),
                          flops.empty() ? 2.0 * static_cast<double>(params[i]) : static_cast<double>(flops[i])});
    p.batch = 1;
    p.activation = 0;
  } else {
    const ModelPreset* m = find_preset(p.model);
    p.layers = m->layers;
    p.batch = m->default_batch;
    p.activation = m->activation_per_sample;
  }
  if (sc.is_set("training.batch")) p.batch = static_cast<std::uint64_t>(sc.get_int("training.batch"));
  for (const auto& l : p.layers) p.fwd_flops += l.fwd_flops_per_sample;
  // Compute: a forward time per layer if given; else FLOP/s if given; else the model's measured
  // throughput on the named GPU; else the default FLOP/s, saying that it has no source.
  p.gpu = find_gpu(sc.get_string("fabric.gpu.model"));
  p.precision = sc.get_string("training.precision");
  p.gpu_rate = sc.get_number("training.gpu_flops");
  const MeasuredThroughput* m = p.gpu ? find_throughput(p.model, p.gpu->name, p.precision, p.batch) : nullptr;
  if (sc.is_set("training.layer_time")) {
    p.layer_time = sc.get_time("training.layer_time");
    p.compute_source = fmt::format("training.layer_time: {} per layer forward", units::format_time(p.layer_time));
  } else if (sc.is_set("training.gpu_flops")) {
    p.compute_source = fmt::format("training.gpu_flops: {:.4g} TFLOP/s", p.gpu_rate / 1e12);
  } else if (m && p.fwd_flops > 0) {
    p.measured_rate = m->samples_per_s;
    p.compute_source = m->source;
    if (m->batch != p.batch) p.compute_source += fmt::format(" (measured at batch {}, run at {})", m->batch, p.batch);
  } else {
    p.compute_source = fmt::format("training.gpu_flops default {:.4g} TFLOP/s: no measured throughput of {} on {} ({}); docs/training.md",
                                   p.gpu_rate / 1e12, p.model, p.gpu ? p.gpu->name : "an unnamed GPU", p.precision);
  }
  p.bucket = sc.get_size("training.bucket");
  p.tp = static_cast<int>(sc.get_int("training.tensor_parallel"));
  p.moe_bytes = sc.get_size("training.moe_alltoall");
  p.microbatches = static_cast<int>(sc.get_int("training.microbatches"));
  // Bytes of one sample's activations, times the samples of a micro-batch (pipeline) or of the
  // whole local batch (tensor parallel).
  const std::uint64_t per_sample = p.activation;
  if (sc.is_set("training.activation")) p.activation = sc.get_size("training.activation");
  else p.activation = std::max<std::uint64_t>(1, per_sample * std::max<std::uint64_t>(1, p.batch / static_cast<std::uint64_t>(p.microbatches)));
  p.tp_bytes = sc.is_set("training.activation") ? p.activation : std::max<std::uint64_t>(1, per_sample * p.batch);
  p.slice = sc.get_time("training.progress_interval");
  p.steps = sc.is_set("workload.iterations") ? static_cast<std::uint64_t>(sc.get_int("workload.iterations")) : 3;
  p.warmup = sc.is_set("workload.warmup") ? static_cast<std::uint64_t>(sc.get_int("workload.warmup")) : 1;
  p.dtype = *parse_dtype(sc.get_string("workload.dtype"));
  p.proto = parse_protocol(sc.get_string("workload.protocol"));
  p.chunk_set = sc.is_set("workload.chunk");
  bool channels_ok = true;
  p.channels = parse_channels(sc.get_string("workload.channels"), channels_ok);
  const std::string alg = sc.get_string("workload.algorithm");
  if (alg != "auto")
    for (Algorithm a : algorithms_for(Collective::all_reduce))
      if (alg == algorithm_name(a)) p.algo = a;
  p.chunk = std::max<std::uint64_t>(sc.get_size("workload.chunk") / dtype_size(p.dtype) * dtype_size(p.dtype), dtype_size(p.dtype));
  p.slots = static_cast<std::uint32_t>(sc.get_int("workload.slots"));
  p.memory = memory_kind_of(sc);
  p.phantom = phantom_payload(sc);
  p.verify = sc.get_bool("workload.verify") && !p.phantom;
  p.timeout = sc.get_time("workload.timeout");
  p.seed = static_cast<std::uint64_t>(sc.get_int("seed"));
  return p;
}

// A straggler (training.stragglers) computes training.straggler_factor times slower: its rate
// falls, or its given layer time grows, by the factor. Everyone else waits for it in the
// collectives, as a data-parallel job waits for its slowest GPU.
Params params_for_rank(const Scenario& sc, int rank) {
  Params p = read_params(sc);
  if (!sc.is_set("training.stragglers")) return p;
  const auto ranks = sc.get_ints("training.stragglers");
  if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) return p;
  const double f = sc.get_number("training.straggler_factor");
  p.gpu_rate /= f;
  p.measured_rate /= f;
  if (p.layer_time >= 0) p.layer_time *= f;
  return p;
}

// What a row says of the stragglers: "ranks 3, 7 compute 1.2x slower".
void add_straggler_note(ResultRow& row, const Scenario& sc) {
  if (!sc.is_set("training.stragglers")) return;
  std::string list;
  for (auto r : sc.get_ints("training.stragglers")) list += (list.empty() ? "" : ", ") + std::to_string(r);
  row.notes["stragglers"] = fmt::format("rank{} {} compute {:.3g}x slower", sc.get_ints("training.stragglers").size() > 1 ? "s" : "", list,
                                        sc.get_number("training.straggler_factor"));
}

// Forward seconds of layer l for `samples` samples. From a measured throughput: the step's
// compute (batch / rate) split over the layers by their FLOPs, a third forward and two thirds
// backward (the backward computes gradients of both inputs and weights: twice the forward).
double fwd_time(const Params& p, const ModelLayer& l, double samples) {
  if (p.layer_time >= 0) return p.layer_time * samples / static_cast<double>(p.batch);
  if (p.measured_rate > 0) return l.fwd_flops_per_sample / p.fwd_flops * samples / p.measured_rate / 3;
  return l.fwd_flops_per_sample * samples / p.gpu_rate;
}

// A plan built in group ranks, mapped to the group's global ranks and its block of channels.
Plan to_group(Plan plan, const std::vector<int>& members, int chan_base) {
  for (auto& s : plan.sends) {
    s.peer = members[static_cast<std::size_t>(s.peer)];
    s.chan += chan_base;
  }
  for (auto& r : plan.recvs) {
    r.peer = members[static_cast<std::size_t>(r.peer)];
    r.chan += chan_base;
  }
  return plan;
}

// The plan of an all-reduce over a group (`members`, this rank `me` in it), with NCCL's algorithm
// and protocol for the size (tuning.h) unless the scenario names them, and NCCL's channels unless
// workload.channels names a count (each communicator's block has room for NCCL's 64).
// NVLink SHARP is left out: a step's collectives run on the engine.
Plan tuned_all_reduce(RankEnv& env, const Params& p, const std::vector<int>& members, int me, std::uint64_t count, std::size_t es,
                      int chan_base, std::string* what = nullptr) {
  const int n = static_cast<int>(members.size());
  NodeShape shape = env.shape;
  shape.nvls = false;
  // The group's ranks per node: how many members share the first one's node (the groups are
  // laid out evenly: a tensor-parallel group inside a node, a data-parallel group one member
  // per tensor-parallel group).
  const int rpn = std::max(1, env.shape.ranks_per_node);
  shape.ranks_per_node = static_cast<int>(std::count_if(members.begin(), members.end(), [&](int r) { return r / rpn == members[0] / rpn; }));
  if (n % shape.ranks_per_node != 0) shape.ranks_per_node = 1;
  const bool modelled = env.dev.caps().models_time && env.shape.protocol_costs;
  const TunedRequest r{Collective::all_reduce, me, n, 0, count, es, true, p.algo, p.proto, p.channels, p.chunk_set ? p.chunk : 0, modelled};
  TunedPlan t = tuned_plan(r, shape);
  if (what)
    *what = fmt::format("{}/{}, {} channel{}", algorithm_name(t.choice.algo), protocol_name(t.choice.proto), t.channels, t.channels == 1 ? "" : "s");
  Plan plan = std::move(t.plan);
  return to_group(std::move(plan), members, chan_base);
}

// A plan over a group of ranks.
Plan group_plan(Collective coll, Algorithm algo, const std::vector<int>& members, int me, std::uint64_t count, std::size_t es, bool in_place,
                int chan_base) {
  CollectiveArgs a{coll, algo, me, static_cast<int>(members.size()), 0, count, es, in_place};
  Plan plan = build_plan(a);
  return to_group(std::move(plan), members, chan_base);
}

// Adds the seconds a compute phase takes, progressing the engine between slices while anything
// is in flight, so communication overlaps compute.
Status compute_overlapped(RankEnv& env, CollectiveEngine& eng, const Params& p, double seconds, const std::function<void()>& after_slice = {}) {
  while (seconds > 0) {
    if (eng.idle()) return env.rt.compute(seconds);
    const double s = std::min(seconds, p.slice);
    RDMALAB_TRY(env.rt.compute(s));
    seconds -= s;
    RDMALAB_TRY(eng.progress(false));
    if (after_slice) after_slice();
  }
  return Status::ok();
}

// A step's timeline (rank 0's last timed step, for the dashboard): "name start end" in ms from
// the step's start, ';' between phases. Names: forward, backward, bucket <i>, exposed.
struct Phase {
  std::string name;
  double start = 0, end = 0;
};
std::string timeline_text(const std::vector<Phase>& phases) {
  std::string out;
  for (const auto& ph : phases) out += fmt::format("{}{} {:.6f} {:.6f}", out.empty() ? "" : ";", ph.name, ph.start * 1e3, ph.end * 1e3);
  return out;
}

// What a row says of the compute: where it comes from, and the model FLOP/s each GPU reaches
// over the whole step (Megatron-LM's "model TFLOP/s per GPU": forward and backward FLOPs of the
// model, no recomputation) with, on a named GPU, its share of the peak (MFU).
void add_compute_figures(ResultRow& row, const Params& p, double flops_per_gpu) {
  row.notes["compute"] = p.compute_source;
  if (row.time_s <= 0 || p.fwd_flops <= 0) return;
  const double rate = flops_per_gpu / row.time_s;
  row.extra["model_tflops"] = rate / 1e12;
  if (p.gpu) row.extra["mfu"] = rate / p.gpu->peak_flops(p.precision);
}

struct Bucket {
  std::uint64_t offset = 0, bytes = 0;  // in the gradient buffer
  std::size_t last_layer = 0;           // the backward pass fills it up to this layer (reverse order)
  Plan plan;
  std::string how;  // algorithm/protocol, channels
};

std::uint64_t round_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

// ------------------------------------------------------------------------------------------

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

  // Gradients of this rank (its 1/tp share of every layer), in backward order, cut into buckets.
  std::vector<Bucket> buckets;
  std::uint64_t grad_bytes = 0;
  {
    Bucket cur;
    for (std::size_t k = p.layers.size(); k-- > 0;) {
      std::uint64_t b = round_up(p.layers[k].params / static_cast<std::uint64_t>(tp) * es, es * static_cast<std::uint64_t>(dp));
      cur.bytes += b;
      cur.last_layer = k;
      if (cur.bytes >= p.bucket || k == 0) {
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
    b.plan = shift_plan(tuned_all_reduce(env, p, dp_members, dp_rank, count, es, kChanDp, &b.how), 0, b.offset, 0);
    plans.push_back(b.plan);
  }
  // Tensor-parallel activations and MoE all-to-alls live after the gradients in the same buffer.
  const std::uint64_t tp_off = grad_bytes;
  const std::uint64_t tp_count = round_up(p.tp_bytes, es) / es;
  Plan tp_plan, moe_plan;
  if (tp > 1) {
    tp_plan = shift_plan(tuned_all_reduce(env, p, tp_members, tp_rank, tp_count, es, kChanTp), 0, tp_off, 0);
    plans.push_back(tp_plan);
  }
  const std::uint64_t moe_count = round_up(p.moe_bytes, es * static_cast<std::uint64_t>(env.size)) / es;
  const std::uint64_t moe_off = tp_off + tp_count * es;  // after the gradients and the activations
  if (p.moe_bytes > 0) {
    moe_plan = shift_plan(group_plan(Collective::all_to_all, Algorithm::pairwise, all, env.rank, moe_count, es, false, kChanMoe), 0, moe_off, 0);
    plans.push_back(moe_plan);
  }
  EngineConfig cfg;
  cfg.chunk = p.chunk;
  cfg.slots = p.slots;
  cfg.dtype = p.dtype;
  cfg.op = ReduceOp::sum;
  cfg.memory = p.memory;
  cfg.phantom = p.phantom;
  cfg.timeout = p.timeout;
  cfg.what = "train_dp";
  CollectiveEngine eng(env, cfg);
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

  struct Step {
    double step = 0, compute = 0, comm = 0;
  };
  std::vector<Step> timed;
  std::uint64_t wrong = 0;
  std::string last_timeline;
  if (env.rank == 0) {  // the progress line: steps, and within one the bytes rank 0 has sent
    work_meter().reset();
    work_meter().plan_steps(p.warmup + p.steps);
  }
  for (std::uint64_t it = 0; it < p.warmup + p.steps; ++it) {
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
      const double t = fwd_time(p, l, static_cast<double>(p.batch)) / tp;
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
      const double t = 2 * fwd_time(p, p.layers[k], static_cast<double>(p.batch)) / tp;
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
  Step mean;
  for (const auto& s : timed) {
    mean.step += s.step / static_cast<double>(timed.size());
    mean.compute += s.compute / static_cast<double>(timed.size());
    mean.comm += s.comm / static_cast<double>(timed.size());
  }
  struct Report {
    double step, compute, comm;
    std::uint64_t wrong;
  };
  RDMALAB_ASSIGN(auto reports, allgather_value(env.boot, Report{mean.step, mean.compute, mean.comm, wrong}));
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

// ------------------------------------------------------------------------------------------

Status run_pp(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows) {
  const Params p = params_for_rank(sc, env.rank);
  const int S = env.size, s = env.rank, m = p.microbatches;
  const std::uint64_t A = p.activation;
  // This stage's layers: an even split.
  const std::size_t L = p.layers.size();
  const std::size_t lo = L * static_cast<std::size_t>(s) / static_cast<std::size_t>(S), hi = L * static_cast<std::size_t>(s + 1) / static_cast<std::size_t>(S);
  const double mb_samples = static_cast<double>(p.batch) / m;
  double fwd = 0;
  for (std::size_t k = lo; k < hi; ++k) fwd += fwd_time(p, p.layers[k], mb_samples);
  const double bwd = 2 * fwd;
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

Status check_training(const Scenario& sc, const Capabilities& caps, int ranks, bool pipeline) {
  if (!caps.rdma_write_imm) return sc.error("workload.type", "training steps move data as RDMA writes with immediate, which this backend does not offer");
  const std::string model = sc.get_string("training.model");
  if (model == "custom") {
    if (!sc.is_set("training.layers")) return sc.error("training.model", "custom needs training.layers: parameters per layer, e.g. [1000000, 4000000]");
    if (sc.is_set("training.layer_flops") && sc.get_ints("training.layer_flops").size() != sc.get_ints("training.layers").size())
      return sc.error("training.layer_flops", "give one FLOP count per layer of training.layers");
  } else if (sc.is_set("training.layers")) {
    return sc.error("training.layers", fmt::format("training.model is the preset '{}': set training.model: custom to give layers", model));
  }
  if (const GpuSpec* g = find_gpu(sc.get_string("fabric.gpu.model"))) {
    const std::string precision = sc.get_string("training.precision");
    const double peak = g->peak_flops(precision);
    if (sc.is_set("training.gpu_flops") && sc.get_number("training.gpu_flops") > peak)
      return sc.error("training.gpu_flops", fmt::format("{:.4g} TFLOP/s is above the {}'s dense {} peak of {:.4g} TFLOP/s ({})",
                                                        sc.get_number("training.gpu_flops") / 1e12, g->product,
                                                        precision == "tf32" ? "TF32" : "FP16/BF16", peak / 1e12, g->source));
    // No measured throughput of the model on this GPU (at any batch: the nearest is used) and no
    // rate given: no default rate could claim to be this GPU's (400 TFLOP/s is above an A100's
    // peak), so the scenario says it.
    if (model != "custom" && !sc.is_set("training.gpu_flops") && !sc.is_set("training.layer_time") &&
        !find_throughput(model, g->name, precision, 0)) {
      std::string known;
      for (const auto& m : measured_throughputs())
        known += fmt::format("{}{} on {} ({})", known.empty() ? "" : ", ", m.model, m.gpu, m.precision);
      return sc.error("training.model", fmt::format("rdmalab has no measured throughput of {} on the {} in {}: give training.gpu_flops "
                                                    "(at most {:.4g} TFLOP/s) or training.layer_time; measured: {} (docs/training.md)",
                                                    model, g->product, precision, peak / 1e12, known));
    }
  }
  const int tp = static_cast<int>(sc.get_int("training.tensor_parallel"));
  if (pipeline) {
    if (ranks < 2) return sc.error("fabric.nodes", "a pipeline needs at least 2 stages (ranks)");
    if (tp != 1) return sc.error("training.tensor_parallel", "train_pp runs one pipeline over the ranks: tensor parallelism is a train_dp option");
    if (sc.get_size("training.moe_alltoall") != 0) return sc.error("training.moe_alltoall", "MoE all-to-all is a train_dp option");
    std::size_t layers = model == "custom" ? sc.get_ints("training.layers").size() : find_preset(model)->layers.size();
    if (layers < static_cast<std::size_t>(ranks))
      return sc.error("fabric.nodes", fmt::format("{} stages but the model has {} layers: at most one stage per layer", ranks, layers));
  } else {
    if (ranks % tp != 0)
      return sc.error("training.tensor_parallel", fmt::format("tensor-parallel groups of {} do not divide {} ranks", tp, ranks));
    if (sc.is_set("training.microbatches")) return sc.error("training.microbatches", "micro-batches are for train_pp");
  }
  bool channels_ok = true;
  parse_channels(sc.get_string("workload.channels"), channels_ok);
  if (!channels_ok)
    return sc.error("workload.channels", fmt::format("'{}' is not a channel count: auto, or a whole number from 1 to 64 (NCCL's "
                                                     "MAXCHANNELS)", sc.get_string("workload.channels")));
  const std::string alg = sc.get_string("workload.algorithm");
  if (alg != "auto" && alg != "ring" && alg != "tree" && alg != "rhd")
    return sc.error("workload.algorithm", fmt::format("the gradient all-reduce has no algorithm '{}'; allowed: auto, ring, tree, rhd", alg));
  if (sc.is_set("workload.duration")) return sc.error("workload.duration", "training runs a number of steps: give workload.iterations");
  if (sc.is_set("training.stragglers") != sc.is_set("training.straggler_factor"))
    return sc.is_set("training.stragglers")
               ? sc.error("training.stragglers", "how much slower? set training.straggler_factor too, e.g. 1.2 for 20 % slower")
               : sc.error("training.straggler_factor", "which ranks? set training.stragglers too, e.g. [3]");
  if (sc.is_set("training.stragglers"))
    for (auto r : sc.get_ints("training.stragglers"))
      if (r >= ranks) return sc.error("training.stragglers", fmt::format("rank {} is not in the job: ranks 0 to {}", r, ranks - 1));
  return check_memory(sc, caps);
}

// The keys a training step reads: the model's, and the collective's that carry its gradients.
std::vector<std::string> training_reads(bool pipeline) {
  std::vector<std::string> keys = {"training.model",      "training.layers",   "training.layer_flops", "training.batch",
                                   "training.precision",  "training.gpu_flops", "training.layer_time", "training.tensor_parallel",
                                   "training.moe_alltoall", "training.activation", "training.progress_interval",
                                   "training.stragglers", "training.straggler_factor",
                                   "workload.iterations", "workload.warmup",    "workload.dtype",      "workload.protocol",
                                   "workload.algorithm",  "workload.chunk",     "workload.slots",      "workload.verify",
                                   "workload.memory",     "workload.payload",   "workload.gpu_path",   "workload.timeout"};
  if (pipeline) {
    keys.push_back("training.microbatches");
  } else {
    keys.push_back("training.bucket");
    keys.push_back("workload.channels");  // the gradient and tensor-parallel all-reduces' rings
  }
  return keys;
}

}  // namespace

void register_training(WorkloadRegistry& reg) {
  WorkloadInfo dp;
  dp.name = "train_dp";
  dp.description = "data-parallel training step: bucketed gradient all-reduce overlapping backward (+ tensor parallel, MoE)";
  dp.kind = WorkloadKind::training;
  dp.check = [](const Scenario& sc, const Capabilities& caps, int ranks) { return check_training(sc, caps, ranks, false); };
  dp.run = run_dp;
  dp.reads = training_reads(false);
  reg.add(std::move(dp));
  WorkloadInfo pp;
  pp.name = "train_pp";
  pp.description = "pipeline-parallel training step: 1F1B micro-batches stage to stage, bubble reported";
  pp.kind = WorkloadKind::training;
  pp.check = [](const Scenario& sc, const Capabilities& caps, int ranks) { return check_training(sc, caps, ranks, true); };
  pp.run = run_pp;
  pp.reads = training_reads(true);
  reg.add(std::move(pp));
}

}  // namespace rdmalab::workloads
