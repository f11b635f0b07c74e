// The training steps' shared part (training_step.h).
#include "training_step.h"

namespace rdmalab::workloads::training_detail {

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
    p.sequence = m->sequence;
  }
  if (sc.is_set("training.batch")) p.batch = static_cast<std::uint64_t>(sc.get_int("training.batch"));
  for (const auto& l : p.layers) p.fwd_flops += l.fwd_flops_per_sample;
  // Compute: a forward time per layer if given; else FLOP/s if given; else the model's measured
  // throughput on the named GPU; else the default FLOP/s, saying that it has no source.
  p.gpu = find_gpu(sc.get_string("fabric.gpu.model"));
  p.precision = sc.get_string("training.precision");
  p.gpu_rate = sc.get_number("training.gpu_flops");
  const MeasuredThroughput* m = p.gpu ? find_throughput(p.model, p.gpu->name, p.precision, p.batch) : nullptr;
  // (The parallelism the measured layer must match is read here too: below.)
  p.tp = static_cast<int>(sc.get_int("training.tensor_parallel"));
  p.microbatches = static_cast<int>(sc.get_int("training.microbatches"));
  const bool pipeline = sc.get_string("workload.type") == "train_pp" || sc.get_string("workload.type") == "train_3d";
  const MeasuredLayer* ml = p.gpu && p.sequence ? find_layer(p.model, p.gpu->name, p.precision, p.tp, micro_batch_sequences(p, pipeline)) : nullptr;
  if (sc.is_set("training.layer_time")) {
    p.layer_time = sc.get_time("training.layer_time");
    p.compute_source = fmt::format("training.layer_time: {} per layer forward", units::format_time(p.layer_time));
  } else if (sc.is_set("training.gpu_flops")) {
    p.compute_source = fmt::format("training.gpu_flops: {:.4g} TFLOP/s", p.gpu_rate / 1e12);
  } else if (m && p.fwd_flops > 0) {
    p.measured_rate = m->samples_per_s;
    p.compute_source = m->source;
    if (m->batch != p.batch) p.compute_source += fmt::format(" (measured at batch {}, run at {})", m->batch, p.batch);
  } else if (ml) {
    p.measured_layer = ml;
    p.compute_source = ml->source;
    const std::uint64_t mb_tokens = micro_batch_sequences(p, pipeline) * p.sequence;
    const std::uint64_t run_tokens = pipeline ? p.batch / static_cast<std::uint64_t>(std::max(1, p.microbatches)) : p.batch;
    if (ml->micro_batch * p.sequence != run_tokens || mb_tokens != run_tokens)
      p.compute_source += fmt::format(" (measured at micro-batch {} x {} tokens, run at {} tokens: scaled by the tokens)", ml->micro_batch,
                                      p.sequence, run_tokens);
  } else {
    p.compute_source = fmt::format("training.gpu_flops default {:.4g} TFLOP/s: no measured throughput of {} on {} ({}); docs/training.md",
                                   p.gpu_rate / 1e12, p.model, p.gpu ? p.gpu->name : "an unnamed GPU", p.precision);
  }
  p.bucket = sc.get_size("training.bucket");
  p.first_bucket = sc.get_size("training.first_bucket");
  p.reshard_after_forward = sc.get_string("training.sharding") == "full";
  p.moe_bytes = sc.get_size("training.moe_alltoall");
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

std::uint64_t micro_batch_sequences(const Params& p, bool pipeline) {
  if (p.sequence == 0) return 0;
  const std::uint64_t tokens = pipeline ? p.batch / static_cast<std::uint64_t>(std::max(1, p.microbatches)) : p.batch;
  return std::max<std::uint64_t>(1, (tokens + p.sequence / 2) / p.sequence);
}

namespace {

// A measured layer's seconds for `samples` tokens: the measurement scaled by the tokens. Decoder
// layers ("layer<i>") take the decoder layer's time, the output layer ("lm_head") the head's; the
// embedding is a lookup (no matrix product).
double measured_time(const Params& p, const ModelLayer& l, double samples, bool backward) {
  const MeasuredLayer& m = *p.measured_layer;
  const double scale = samples / static_cast<double>(m.micro_batch * p.sequence);
  if (l.name == "lm_head") return (backward ? m.head_bwd_s : m.head_fwd_s) * scale;
  if (l.name.rfind("layer", 0) == 0) return (backward ? m.bwd_s : m.fwd_s) * scale;
  return 0;
}

}  // namespace

// Forward seconds of layer l for `samples` samples on one rank. From a measured throughput: the
// step's compute (batch / rate) split over the layers by their FLOPs, a third forward and two
// thirds backward (the backward computes gradients of both inputs and weights: twice the
// forward). A measured layer is already one tensor-parallel rank's share; the others are divided
// over the tensor-parallel group.
double fwd_time(const Params& p, const ModelLayer& l, double samples) {
  const double tp = p.tp;
  if (p.layer_time >= 0) return p.layer_time * samples / static_cast<double>(p.batch) / tp;
  if (p.measured_layer) return measured_time(p, l, samples, false);
  if (p.measured_rate > 0) return l.fwd_flops_per_sample / p.fwd_flops * samples / p.measured_rate / 3 / tp;
  return l.fwd_flops_per_sample * samples / p.gpu_rate / tp;
}

double bwd_time(const Params& p, const ModelLayer& l, double samples) {
  if (p.measured_layer) return measured_time(p, l, samples, true);
  return 2 * fwd_time(p, l, samples);
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

// The plan of a collective over a group (`members`, this rank `me` in it), with NCCL's algorithm
// and protocol for the size (tuning.h) unless the scenario names them (workload.algorithm names
// the all-reduce's; the others run NCCL's ring), and NCCL's channels unless workload.channels
// names a count (each communicator's block has room for NCCL's 64). An all-reduce runs in place,
// an all-gather and a reduce-scatter out of place. NVLink SHARP is left out: a step's
// collectives run on the engine.
Plan tuned_collective(RankEnv& env, const Params& p, Collective coll, const std::vector<int>& members, int me, std::uint64_t count,
                      std::size_t es, int chan_base, std::string* what) {
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
  const bool ar = coll == Collective::all_reduce;
  const TunedRequest r{coll, me, n, 0, count, es, ar, ar ? p.algo : std::nullopt, p.proto, p.channels, p.chunk_set ? p.chunk : 0, modelled};
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

EngineConfig reducing_engine(const Params& p, const char* what) {
  EngineConfig cfg;
  cfg.chunk = p.chunk;
  cfg.slots = p.slots;
  cfg.dtype = p.dtype;
  cfg.op = ReduceOp::sum;
  cfg.memory = p.memory;
  cfg.phantom = p.phantom;
  cfg.timeout = p.timeout;
  cfg.what = what;
  return cfg;
}

// Adds the seconds a compute phase takes, progressing the engine between slices while anything
// is in flight, so communication overlaps compute.
Status compute_overlapped(RankEnv& env, CollectiveEngine& eng, const Params& p, double seconds, const std::function<void()>& after_slice) {
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

Result<std::vector<RankReport>> gather_means(RankEnv& env, const std::vector<StepTimes>& timed, std::uint64_t wrong) {
  RankReport mine;
  mine.wrong = wrong;
  for (const auto& t : timed) {
    mine.step += t.step / static_cast<double>(timed.size());
    mine.compute += t.compute / static_cast<double>(timed.size());
    mine.comm += t.comm / static_cast<double>(timed.size());
  }
  return allgather_value(env.boot, mine);
}

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

}  // namespace rdmalab::workloads::training_detail
