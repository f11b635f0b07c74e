// train_3d: a step of Megatron-LM's 3D parallelism (tensor x pipeline x data parallel), as
// Megatron-LM and NeMo run a large transformer:
//  - ranks are laid out as Megatron's default order (tp-dp-pp): rank = tp_rank + tp * (dp_rank +
//    dp * pp_rank), so a tensor-parallel group sits inside a node on NVLink, and each rank has its
//    own NIC to its pipeline and data-parallel peers;
//  - the model's decoder layers are split evenly over pp * v virtual stages; rank s of the pipeline
//    holds chunks c = 0..v-1 (virtual stage c * pp + s), the embedding is in the first, the
//    output layer in the last;
//  - micro-batches run Megatron's interleaved 1F1B schedule (forward_backward_pipelining_with_
//    interleaving; the plain 1F1B when v is 1): activations and their gradients go point to point
//    between neighbouring stages, each tensor-parallel rank sending its 1/tp (sequence parallel);
//  - within every decoder layer, sequence-parallel tensor parallelism: an all-gather before and a
//    reduce-scatter after attention and the MLP, forward (and their conjugates in backward), on
//    the critical path (Megatron without tp_comm_overlap). Their time is measured once on the
//    tensor-parallel group, a real all-gather and reduce-scatter of the layer's activation, and
//    replayed at every layer: thousands of identical collectives on an otherwise idle NVLink
//    domain take the same time, and simulating each one would cost hours;
//  - the distributed optimizer (ZeRO-1): each chunk's gradients are reduce-scattered over the
//    data-parallel group as soon as its last micro-batch's backward is done (overlap_grad_reduce),
//    the optimizer updates this rank's shard (Adam: memory-bound), and the parameters are
//    all-gathered again one chunk ahead of the next step's forwards, each waited for before its
//    chunk's first forward (overlap_param_gather).
#include <cstring>

#include "training_step.h"

namespace rdmalab::workloads::training_detail {
namespace {

// Point-to-point connections, one direction each: activations to the next stage, gradients to the
// previous one, and the same two around the wrap from the last stage to the first (with two
// stages, both neighbours are one rank).
constexpr int kChanAct = kChanPp, kChanGrad = kChanPp + 1, kChanActWrap = kChanPp + 2, kChanGradWrap = kChanPp + 3;
constexpr int kChanParams = kChanGather;  // the distributed optimizer's parameter all-gathers

// Adam's update of one parameter in the distributed optimizer touches the fp32 main parameter,
// gradient and two moments (read 16 bytes), writes the parameter and moments back (12) and the
// bf16 copy the model computes with (2): memory-bound, so its time is bytes / HBM bandwidth.
constexpr double kAdamBytesPerParam = 30;

struct Chunk {
  std::vector<std::size_t> layers;  // indices into Params::layers
  int decoder = 0;                  // decoder layers: each pays the tensor-parallel collectives
  double fwd = 0, bwd = 0;          // compute seconds per micro-batch
  double tp_fwd = 0, tp_bwd = 0;    // tensor-parallel collectives' exposed seconds per micro-batch
  std::uint64_t count = 0;          // this rank's gradient elements (1/tp of the chunk's), a multiple of dp
  std::uint64_t shard_off = 0, grad_off = 0;    // in `in`: this rank's parameter shard, the chunk's gradients
  std::uint64_t full_off = 0, reduced_off = 0;  // in `out`: the gathered parameters, this rank's reduced shard
  Plan scatter, gather;
};

// Megatron's interleaved schedule: virtual micro-batch k is micro-batch (k / (S v)) S + k % S of
// chunk (k % (S v)) / S, counted from the last chunk going backward.
int chunk_of(int k, int S, int v, bool forward) {
  const int c = (k % (S * v)) / S;
  return forward ? c : v - 1 - c;
}
int microbatch_of(int k, int S, int v) { return (k / (S * v)) * S + k % S; }

}  // namespace

Status run_3d(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows) {
  const Params p = params_for_rank(sc, env.rank);
  const std::size_t es = dtype_size(p.dtype);
  const int tp = p.tp, S = static_cast<int>(sc.get_int("training.pipeline_parallel")), v = static_cast<int>(sc.get_int("training.virtual_stages"));
  const int dp = env.size / (tp * S);
  const int tp_rank = env.rank % tp, dp_rank = (env.rank / tp) % dp, s = env.rank / (tp * dp);
  const int m = p.microbatches;
  auto rank_of = [&](int t, int d, int stage) { return t + tp * (d + dp * stage); };
  std::vector<int> tp_members, dp_members;
  for (int t = 0; t < tp; ++t) tp_members.push_back(rank_of(t, dp_rank, s));
  for (int d = 0; d < dp; ++d) dp_members.push_back(rank_of(tp_rank, d, s));

  // Layers over the pp * v virtual stages: decoder layers evenly, the embedding with the first,
  // the output layer with the last.
  const int V = S * v;
  std::vector<std::size_t> decoder, first, last;
  for (std::size_t k = 0; k < p.layers.size(); ++k) {
    const std::string& name = p.layers[k].name;
    if (name == "embedding") first.push_back(k);
    else if (name == "lm_head") last.push_back(k);
    else decoder.push_back(k);
  }
  const std::size_t D = decoder.size();
  const double mb_samples = static_cast<double>(p.batch) / m;
  std::vector<Chunk> chunks(static_cast<std::size_t>(v));
  for (int c = 0; c < v; ++c) {
    Chunk& ch = chunks[static_cast<std::size_t>(c)];
    const int vs = c * S + s;
    if (vs == 0) ch.layers = first;
    for (std::size_t j = D * static_cast<std::size_t>(vs) / V; j < D * static_cast<std::size_t>(vs + 1) / V; ++j) {
      ch.layers.push_back(decoder[j]);
      ++ch.decoder;
    }
    if (vs == V - 1) ch.layers.insert(ch.layers.end(), last.begin(), last.end());
    std::uint64_t params = 0;
    for (std::size_t k : ch.layers) {
      ch.fwd += fwd_time(p, p.layers[k], mb_samples);
      ch.bwd += bwd_time(p, p.layers[k], mb_samples);
      params += p.layers[k].params;
    }
    const auto udp = static_cast<std::uint64_t>(dp);
    ch.count = std::max<std::uint64_t>(1, (params / static_cast<std::uint64_t>(tp) + udp - 1) / udp) * udp;
  }

  // Buffers. `in`: what this rank sends point to point (a slot per chunk and micro-batch, forward
  // then backward), the tensor-parallel samples' inputs, then per chunk the parameter shard and
  // the gradients. `out`: what it receives, the samples' outputs, then per chunk the gathered
  // parameters and the reduced gradient shard. Every plan has its own scratch.
  const std::uint64_t A = std::max<std::uint64_t>(es, p.activation / static_cast<std::uint64_t>(tp) / es * es);
  const std::uint64_t slots = 2 * static_cast<std::uint64_t>(v) * static_cast<std::uint64_t>(m);
  auto slot = [&](int c, int i, bool grad) { return ((grad ? static_cast<std::uint64_t>(v) : 0) + static_cast<std::uint64_t>(c)) * m * A + static_cast<std::uint64_t>(i) * A; };
  std::uint64_t in_off = slots * A, out_off = slots * A, scratch = 0;
  std::vector<Plan> plans;
  auto place = [&](Plan plan, std::uint64_t i, std::uint64_t o) {
    const std::uint64_t sb = plan.scratch_bytes;
    Plan placed = shift_plan(std::move(plan), i, o, scratch);
    scratch += sb;
    plans.push_back(placed);
    return placed;
  };
  // The tensor-parallel samples: the layer's activation (all tp ranks' pieces) gathered, and
  // reduce-scattered.
  const auto utp = static_cast<std::uint64_t>(tp);
  const std::uint64_t tp_count = std::max<std::uint64_t>(1, (p.activation / es + utp - 1) / utp) * utp;
  Plan tp_gather, tp_scatter;
  std::string tp_how;
  std::uint64_t ag_in = 0, ag_out = 0, rs_in = 0, rs_out = 0;
  if (tp > 1) {
    // With NCCL's own chunk for their protocol: workload.chunk sizes the point-to-point and
    // data-parallel transfers (a knob for the simulation's speed), not these samples.
    Params nccl = p;
    nccl.chunk_set = false;
    ag_in = in_off, ag_out = out_off;
    tp_gather = place(tuned_collective(env, nccl, Collective::all_gather, tp_members, tp_rank, tp_count, es, kChanTp, &tp_how), ag_in, ag_out);
    in_off += tp_count / utp * es, out_off += tp_count * es;
    rs_in = in_off, rs_out = out_off;
    tp_scatter = place(tuned_collective(env, nccl, Collective::reduce_scatter, tp_members, tp_rank, tp_count, es, kChanTp), rs_in, rs_out);
    in_off += tp_count * es, out_off += tp_count / utp * es;
  }
  std::string dp_how;
  const auto udp = static_cast<std::uint64_t>(dp);
  for (auto& ch : chunks) {
    ch.shard_off = in_off, in_off += ch.count / udp * es;
    ch.grad_off = in_off, in_off += ch.count * es;
    ch.full_off = out_off, out_off += ch.count * es;
    ch.reduced_off = out_off, out_off += ch.count / udp * es;
    if (dp > 1) {
      ch.scatter = place(tuned_collective(env, p, Collective::reduce_scatter, dp_members, dp_rank, ch.count, es, kChanDp, &dp_how), ch.grad_off,
                         ch.reduced_off);
      ch.gather = place(tuned_collective(env, p, Collective::all_gather, dp_members, dp_rank, ch.count, es, kChanParams), ch.shard_off, ch.full_off);
    }
  }
  // Point to point: to the next virtual stage (forward) and the previous one (backward); the
  // last rank's chunk c feeds rank 0's chunk c+1.
  const int next = s + 1 < S ? rank_of(tp_rank, dp_rank, s + 1) : rank_of(tp_rank, dp_rank, 0);
  const int prev = s > 0 ? rank_of(tp_rank, dp_rank, s - 1) : rank_of(tp_rank, dp_rank, S - 1);
  auto p2p = [&](bool send, int peer, int chan, std::uint64_t off) {
    Plan plan;
    if (send) plan.sends.push_back(SendOp{peer, chan, Ref{Buf::in, off}, A, -1, false, false});
    else plan.recvs.push_back(RecvOp{peer, chan, Ref{Buf::out, off}, A, false, Ref{}, -1, false});
    return plan;
  };
  const int to_next = s + 1 < S ? kChanAct : kChanActWrap, from_next = s + 1 < S ? kChanGrad : kChanGradWrap;
  const int from_prev = s > 0 ? kChanAct : kChanActWrap, to_prev = s > 0 ? kChanGrad : kChanGradWrap;
  const bool has_next = s + 1 < S || v > 1;
  const bool has_prev = s > 0 || v > 1;
  if (has_next) plans.push_back(p2p(true, next, to_next, 0)), plans.push_back(p2p(false, next, from_next, 0));
  if (has_prev) plans.push_back(p2p(false, prev, from_prev, 0)), plans.push_back(p2p(true, prev, to_prev, 0));
  CollectiveEngine eng(env, reducing_engine(p, "train_3d"));
  RDMALAB_TRY(eng.setup(plans, in_off, out_off));
  std::uint64_t wrong = 0;

  // Known values, checked exactly: element i of a group's full buffer belongs to member i / piece
  // (gathers); every member's input to a reduce-scatter is exact_input (sums exact in any order).
  auto gathered_value = [&](int n, std::uint64_t count, std::uint64_t base, std::uint64_t i) {
    return exact_input(p.dtype, ReduceOp::sum, false, n, static_cast<int>(i / (count / static_cast<std::uint64_t>(n))), base + i, p.seed);
  };
  auto load_gather = [&](int n, int me, std::uint64_t count, std::uint64_t base, std::uint64_t off) -> Status {
    const std::uint64_t piece = count / static_cast<std::uint64_t>(n);
    std::vector<std::uint8_t> b(piece * es);
    for (std::uint64_t j = 0; j < piece; ++j) set_element(b.data(), j, p.dtype, gathered_value(n, count, base, static_cast<std::uint64_t>(me) * piece + j));
    return eng.mem().write(eng.in(), off, b.data(), b.size());
  };
  auto load_scatter = [&](int n, int me, std::uint64_t count, std::uint64_t base, std::uint64_t off) -> Status {
    std::vector<std::uint8_t> b(count * es);
    for (std::uint64_t i = 0; i < count; ++i) set_element(b.data(), i, p.dtype, exact_input(p.dtype, ReduceOp::sum, true, n, me, base + i, p.seed));
    return eng.mem().write(eng.in(), off, b.data(), b.size());
  };
  auto check_gather = [&](int n, std::uint64_t count, std::uint64_t base, std::uint64_t off) -> Result<std::uint64_t> {
    std::vector<std::uint8_t> got(count * es), want(count * es);
    RDMALAB_TRY(eng.mem().read(eng.out(), off, got.data(), got.size()));
    for (std::uint64_t i = 0; i < count; ++i) set_element(want.data(), i, p.dtype, gathered_value(n, count, base, i));
    std::uint64_t w = 0;
    for (std::uint64_t i = 0; i < count; ++i) w += std::memcmp(want.data() + i * es, got.data() + i * es, es) != 0;
    return w;
  };
  auto check_scatter = [&](int n, int me, std::uint64_t count, std::uint64_t base, std::uint64_t off) -> Result<std::uint64_t> {
    const std::uint64_t piece = count / static_cast<std::uint64_t>(n);
    std::vector<std::uint8_t> got(piece * es), want(piece * es), one(es);
    RDMALAB_TRY(eng.mem().read(eng.out(), off, got.data(), got.size()));
    std::uint64_t w = 0;
    for (std::uint64_t j = 0; j < piece; ++j) {
      const std::uint64_t i = static_cast<std::uint64_t>(me) * piece + j;
      set_element(want.data(), j, p.dtype, exact_input(p.dtype, ReduceOp::sum, true, n, 0, base + i, p.seed));
      for (int r = 1; r < n; ++r) {
        set_element(one.data(), 0, p.dtype, exact_input(p.dtype, ReduceOp::sum, true, n, r, base + i, p.seed));
        host_reduce(want.data() + j * es, want.data() + j * es, one.data(), 1, p.dtype, ReduceOp::sum);
      }
      w += std::memcmp(want.data() + j * es, got.data() + j * es, es) != 0;
    }
    return w;
  };

  // The tensor-parallel collectives' time, measured on the group (the second of two runs, after
  // the connections have carried data once), the data checked.
  double t_gather = 0, t_scatter = 0;
  if (tp > 1) {
    for (int rep = 0; rep < 2; ++rep) {
      if (p.verify) RDMALAB_TRY(load_gather(tp, tp_rank, tp_count, 0, ag_in));
      if (p.verify) RDMALAB_TRY(load_scatter(tp, tp_rank, tp_count, 0, rs_in));
      RDMALAB_TRY(env.boot.barrier());
      double t = env.rt.now();
      RDMALAB_TRY(eng.execute(tp_gather));
      t_gather = env.rt.now() - t;
      RDMALAB_TRY(env.boot.barrier());
      t = env.rt.now();
      RDMALAB_TRY(eng.execute(tp_scatter));
      t_scatter = env.rt.now() - t;
      if (p.verify) {
        RDMALAB_ASSIGN(std::uint64_t w1, check_gather(tp, tp_count, 0, ag_out));
        RDMALAB_ASSIGN(std::uint64_t w2, check_scatter(tp, tp_rank, tp_count, 0, rs_out));
        wrong += w1 + w2;
      }
    }
  }
  // Per decoder layer and pass: two all-gathers and two reduce-scatters (backward: their
  // conjugates), each beside one of the layer's four linear layers: the all-gather before the
  // query/key/value and the MLP-up products, the reduce-scatter after the attention-output and the
  // MLP-down ones. Without overlap they wait for each other. With training.tp_overlap (NeMo's
  // tp_comm_overlap: Transformer Engine's userbuffers) each collective and its product are cut
  // into tp pieces and pipelined: the product hides the collective but for one piece, and a
  // collective longer than its product shows the difference.
  const bool overlap = sc.get_bool("training.tp_overlap");
  auto tp_cost = [&](const ModelLayer& l, double pass_time) {
    if (tp == 1) return 0.0;
    if (!overlap) return 2 * (t_gather + t_scatter);
    double t = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      const double comm = j % 2 == 0 ? t_gather : t_scatter;
      const double gemm = pass_time * 2 * static_cast<double>(l.linear[j]) / l.fwd_flops_per_sample;
      t += std::max(0.0, comm - gemm) + comm / tp;
    }
    return t;
  };
  for (auto& ch : chunks)
    for (std::size_t k : ch.layers) {
      if (!is_decoder_layer(p.layers[k])) continue;
      ch.tp_fwd += tp_cost(p.layers[k], fwd_time(p, p.layers[k], mb_samples));
      ch.tp_bwd += tp_cost(p.layers[k], bwd_time(p, p.layers[k], mb_samples));
    }
  double optimizer = 0;
  std::uint64_t shard_params = 0;
  for (const auto& ch : chunks) shard_params += ch.count / udp;
  if (p.gpu) optimizer = static_cast<double>(shard_params) * kAdamBytesPerParam / p.gpu->memory_bw;

  auto seed_of = [&](int vstage, int mb, bool grad) { return stream_seed(p.seed, vstage, (grad ? 100000 : 0) + mb); };
  const int N = m * v;
  std::vector<int> param_gather(static_cast<std::size_t>(v), -1);
  std::vector<StepTimes> timed;
  if (env.rank == 0) {
    work_meter().reset();
    work_meter().plan_steps(p.warmup + p.steps);
  }
  for (std::uint64_t it = 0; it < p.warmup + p.steps; ++it) {
    TraceScope step_span(env.trace, "workload", it < p.warmup ? fmt::format("warm-up step {}", it) : fmt::format("step {}", it - p.warmup));
    const bool final_step = it + 1 == p.warmup + p.steps;
    if (final_step && p.verify)
      for (int c = 0; c < v; ++c) {
        const Chunk& ch = chunks[static_cast<std::size_t>(c)];
        const std::uint64_t base = static_cast<std::uint64_t>(c * S + s) << 32;
        RDMALAB_TRY(load_gather(dp, dp_rank, ch.count, base, ch.shard_off));
        RDMALAB_TRY(load_scatter(dp, dp_rank, ch.count, base, ch.grad_off));
      }
    // The parameters' all-gathers run one chunk ahead, as Megatron's overlap_param_gather
    // dispatches the next bucket's as the current one's forward begins: the first chunk's is
    // launched after the optimizer, each next one at its predecessor's first forward. Every step
    // starts as a steady-state one does, the first too: with the first chunk's in flight.
    std::vector<bool> requested(static_cast<std::size_t>(v), false);
    auto prefetch = [&](int c) -> Status {
      if (dp == 1 || c >= v || requested[static_cast<std::size_t>(c)]) return Status::ok();
      requested[static_cast<std::size_t>(c)] = true;
      if (param_gather[static_cast<std::size_t>(c)] < 0) {
        RDMALAB_ASSIGN(param_gather[static_cast<std::size_t>(c)], eng.begin(chunks[static_cast<std::size_t>(c)].gather));
      }
      return Status::ok();
    };
    if (it == 0) RDMALAB_TRY(prefetch(0));
    RDMALAB_TRY(env.boot.barrier());
    const double t0 = env.rt.now();
    double compute = 0, tp_time = 0;
    std::vector<int> grads_done(static_cast<std::size_t>(v), 0);
    std::vector<int> scatters, sends;
    auto forward = [&](int k) -> Status {
      const int c = chunk_of(k, S, v, true), i = microbatch_of(k, S, v), vs = c * S + s;
      const Chunk& ch = chunks[static_cast<std::size_t>(c)];
      RDMALAB_TRY(prefetch(c));
      RDMALAB_TRY(prefetch(c + 1));
      if (param_gather[static_cast<std::size_t>(c)] >= 0) {
        RDMALAB_TRY(eng.wait(param_gather[static_cast<std::size_t>(c)]));
        param_gather[static_cast<std::size_t>(c)] = -1;
      }
      if (vs > 0) {
        RDMALAB_TRY(eng.execute(p2p(false, prev, from_prev, slot(c, i, false))));
        if (p.verify) {
          RDMALAB_ASSIGN(std::uint64_t w, eng.mem().verify(eng.out(), slot(c, i, false), A, seed_of(vs - 1, i, false)));
          wrong += w;
        }
      }
      RDMALAB_TRY(compute_overlapped(env, eng, p, ch.fwd + ch.tp_fwd));
      compute += ch.fwd;
      tp_time += ch.tp_fwd;
      if (vs + 1 < V) {
        if (p.verify) RDMALAB_TRY(eng.mem().fill(eng.in(), slot(c, i, false), A, seed_of(vs, i, false)));
        RDMALAB_ASSIGN(const int id, eng.begin(p2p(true, next, to_next, slot(c, i, false))));
        sends.push_back(id);
      }
      return Status::ok();
    };
    auto backward = [&](int k) -> Status {
      const int c = chunk_of(k, S, v, false), i = microbatch_of(k, S, v), vs = c * S + s;
      Chunk& ch = chunks[static_cast<std::size_t>(c)];
      if (vs + 1 < V) {
        RDMALAB_TRY(eng.execute(p2p(false, next, from_next, slot(c, i, true))));
        if (p.verify) {
          RDMALAB_ASSIGN(std::uint64_t w, eng.mem().verify(eng.out(), slot(c, i, true), A, seed_of(vs + 1, i, true)));
          wrong += w;
        }
      }
      RDMALAB_TRY(compute_overlapped(env, eng, p, ch.bwd + ch.tp_bwd));
      compute += ch.bwd;
      tp_time += ch.tp_bwd;
      if (vs > 0) {
        if (p.verify) RDMALAB_TRY(eng.mem().fill(eng.in(), slot(c, i, true), A, seed_of(vs, i, true)));
        RDMALAB_ASSIGN(const int id, eng.begin(p2p(true, prev, to_prev, slot(c, i, true))));
        sends.push_back(id);
      }
      // The chunk's gradients are complete after its last micro-batch: reduce-scatter them now.
      if (++grads_done[static_cast<std::size_t>(c)] == m && dp > 1) {
        RDMALAB_ASSIGN(const int id, eng.begin(ch.scatter));
        scatters.push_back(id);
      }
      return Status::ok();
    };
    // Megatron's warm-up: (S - s - 1) * 2 + (v - 1) * S forwards (all of them when m == S with
    // interleaving, S - s - 1 without), then one forward and one backward alternately, then the
    // remaining backwards.
    int warm = v == 1 ? S - s - 1 : (m == S ? N : (S - s - 1) * 2 + (v - 1) * S);
    warm = std::min(warm, N);
    int f = 0, b = 0;
    for (; f < warm; ++f) RDMALAB_TRY(forward(f));
    for (; f < N; ++f, ++b) {
      RDMALAB_TRY(forward(f));
      RDMALAB_TRY(backward(b));
    }
    for (; b < N; ++b) RDMALAB_TRY(backward(b));
    // The last sends go out (the engine moves only while this rank waits or computes), the
    // optimizer needs the reduced gradients; then the first chunk's parameters are gathered for
    // the next step (after the last step: every chunk's, when they are to be checked).
    for (int id : sends) RDMALAB_TRY(eng.wait(id));
    for (int id : scatters) RDMALAB_TRY(eng.wait(id));
    RDMALAB_TRY(env.rt.compute(optimizer));
    compute += optimizer;
    if (dp > 1 && (!final_step || p.verify))
      for (int c = 0; c < (final_step ? v : 1); ++c) {
        RDMALAB_ASSIGN(param_gather[static_cast<std::size_t>(c)], eng.begin(chunks[static_cast<std::size_t>(c)].gather));
      }
    const double t1 = env.rt.now();
    if (it >= p.warmup) timed.push_back({t1 - t0, compute, tp_time});
    if (env.rank == 0) work_meter().step_done();
  }
  RDMALAB_TRY(eng.wait_all());
  if (p.verify && dp > 1)
    for (int c = 0; c < v; ++c) {
      const Chunk& ch = chunks[static_cast<std::size_t>(c)];
      const std::uint64_t base = static_cast<std::uint64_t>(c * S + s) << 32;
      RDMALAB_ASSIGN(std::uint64_t w1, check_scatter(dp, dp_rank, ch.count, base, ch.reduced_off));
      RDMALAB_ASSIGN(std::uint64_t w2, check_gather(dp, ch.count, base, ch.full_off));
      wrong += w1 + w2;
    }
  RDMALAB_ASSIGN(auto reports, gather_means(env, timed, wrong));
  RDMALAB_TRY(eng.drain());
  if (env.rank != 0) return Status::ok();
  ResultRow row;
  row.workload = "train_3d";
  row.bytes = A;
  row.iterations = p.steps;
  row.ranks = env.size;
  double compute = 0, tp_exposed = 0, idle = 0;
  for (const auto& r : reports) row.time_s = std::max(row.time_s, r.step);
  for (const auto& r : reports) {
    compute = std::max(compute, r.compute);
    tp_exposed = std::max(tp_exposed, r.comm);
    idle += (row.time_s - r.compute - r.comm) / static_cast<double>(reports.size());
    row.errors += r.wrong;
  }
  const double tokens = static_cast<double>(p.batch) * dp;  // per step, all replicas
  row.bw_gbps = row.time_s > 0 ? static_cast<double>(A) * 2 * N * 8 / row.time_s / 1e9 : 0;
  row.bw_peak_gbps = row.bw_gbps;
  row.extra["step_ms"] = row.time_s * 1e3;
  row.extra["compute_ms"] = compute * 1e3;
  row.extra["tp_comm_ms"] = tp_exposed * 1e3;
  row.extra["idle_ms"] = idle * 1e3;  // waiting for other stages: the pipeline bubble, exposed data-parallel traffic
  row.extra["optimizer_ms"] = optimizer * 1e3;
  row.extra["ideal_bubble_fraction"] = static_cast<double>(S - 1) / (static_cast<double>(v) * m + S - 1);
  row.extra["microbatches"] = m;
  row.extra["samples_per_s"] = row.time_s > 0 ? tokens / row.time_s : 0;
  row.extra["samples_per_s_per_gpu"] = row.time_s > 0 ? tokens / row.time_s / env.size : 0;
  add_compute_figures(row, p, 3 * p.fwd_flops * tokens / env.size);
  row.notes["model"] = p.model;
  row.notes["parallelism"] = fmt::format("tp {} x pp {}{} x dp {} ({} micro-batches)", tp, S, v > 1 ? fmt::format(" (v {})", v) : "", dp, m);
  if (tp > 1)
    row.notes["tensor_parallel"] = fmt::format("{}: all-gather {} and reduce-scatter {} of {}, two of each per layer and pass, {}", tp_how,
                                               units::format_time(t_gather), units::format_time(t_scatter), units::format_size(tp_count * es),
                                               overlap ? "overlapped with the linear layers (tp_overlap)" : "on the critical path");
  if (dp > 1) row.notes["data_parallel"] = fmt::format("{} (distributed optimizer: gradients reduce-scattered, parameters all-gathered)", dp_how);
  row.notes["optimizer"] = p.gpu ? fmt::format("Adam on {} parameters per GPU: {} bytes each at {:.3g} TB/s", shard_params, kAdamBytesPerParam,
                                               p.gpu->memory_bw / 1e12)
                                 : std::string("not timed: no GPU named (fabric.gpu.model)");
  add_straggler_note(row, sc);
  row.notes["verify"] = p.verify ? "on" : "off";
  rows.push_back(std::move(row));
  return Status::ok();
}

}  // namespace rdmalab::workloads::training_detail
