// The nccl-tests-style collective workloads: parameters, inputs whose result is exact, the timed
// loop and the check run. The transfers themselves are the engine's (engine.h): per (peer,
// channel) one RC QP; chunks travel as RDMA writes with immediate into the receiver's staging
// slots, which returns credits as it reduces or copies them.
#include "rdmalab/workloads/collectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "rdmalab/progress.h"
#include "rdmalab/units.h"
#include "rdmalab/workloads/common.h"
#include "rdmalab/workloads/tuning.h"
#include "engine.h"
#include "rdmalab/trace.h"

namespace rdmalab::workloads {
namespace {

// ------------------------------------------------------------------------------------------
// Scenario parameters.

struct Params {
  Collective coll = Collective::all_reduce;
  std::optional<Algorithm> algo;  // none: NCCL's tuning model per size (choose_collective)
  std::optional<Protocol> proto;  // none: likewise
  bool chunk_set = false;         // workload.chunk given: every protocol uses it
  DataType dtype = DataType::fp32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  std::vector<std::uint64_t> sizes;
  std::uint64_t iterations = 20;
  std::uint64_t warmup = 5;
  std::uint64_t chunk = 512 * 1024;
  std::uint32_t slots = 8;
  bool out_of_place = true, in_place = true;
  bool verify = true;
  MemoryKind memory = MemoryKind::host;
  bool phantom = false;
  std::optional<int> channels;  // none: auto_channels for the node shape
  double timeout = 30;
  std::uint64_t seed = 1;
};

bool reduces(Collective c) { return c == Collective::all_reduce || c == Collective::reduce_scatter || c == Collective::reduce; }
bool per_rank_blocks(Collective c) {
  return c == Collective::all_gather || c == Collective::reduce_scatter || c == Collective::all_to_all;
}
bool has_in_place(Collective c) { return c != Collective::all_to_all && c != Collective::sendrecv; }
bool has_root(Collective c) { return c == Collective::broadcast || c == Collective::reduce; }

std::optional<Algorithm> parse_algorithm(const std::string& s) {
  for (Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::rhd, Algorithm::chain, Algorithm::binomial, Algorithm::pairwise, Algorithm::nvls,
                      Algorithm::nvls_tree, Algorithm::collnet})
    if (s == algorithm_name(a)) return a;
  return std::nullopt;
}

// The candidates of NCCL's model for a row (notes.tuning): "Ring/LL 15.01 us; ..." in NCCL's
// order, each enabled one with its predicted time, the others with why not.
std::string tuning_text(const CollectiveChoice& ch) {
  std::string out;
  for (const auto& c : ch.table) {
    if (!out.empty()) out += "; ";
    out += fmt::format("{}/{} ", tuned_algo_name(c.algo), protocol_name(c.proto));
    out += c.enabled ? fmt::format("{:.2f} us", c.time_us) : fmt::format("off ({})", c.why);
  }
  return out;
}

std::vector<std::uint64_t> requested_sizes(const Scenario& sc) {
  return sc.is_set("workload.sizes") ? sc.get_sizes("workload.sizes") : std::vector<std::uint64_t>{sc.get_size("workload.size")};
}

// nccl-tests' rounding: whole elements, and a multiple of the rank count where every rank owns
// a block.
std::uint64_t count_for(std::uint64_t bytes, Collective c, DataType t, int ranks) {
  std::uint64_t count = bytes / dtype_size(t);
  if (per_rank_blocks(c)) count = count / static_cast<std::uint64_t>(ranks) * static_cast<std::uint64_t>(ranks);
  return count;
}

Params read_params(const Scenario& sc, Collective coll) {
  Params p;
  p.coll = coll;
  std::string alg = sc.get_string("workload.algorithm");
  if (alg != "auto") p.algo = parse_algorithm(alg);
  p.proto = parse_protocol(sc.get_string("workload.protocol"));
  p.chunk_set = sc.is_set("workload.chunk");
  p.dtype = *parse_dtype(sc.get_string("workload.dtype"));
  p.op = *parse_reduce_op(sc.get_string("workload.op"));
  p.root = static_cast<int>(sc.get_int("workload.root"));
  p.sizes = requested_sizes(sc);
  // nccl-tests' defaults (-n 20 -w 5) unless the scenario says otherwise.
  if (sc.is_set("workload.iterations")) p.iterations = static_cast<std::uint64_t>(sc.get_int("workload.iterations"));
  if (sc.is_set("workload.warmup")) p.warmup = static_cast<std::uint64_t>(sc.get_int("workload.warmup"));
  p.chunk = sc.get_size("workload.chunk");
  p.slots = static_cast<std::uint32_t>(sc.get_int("workload.slots"));
  const std::string place = sc.get_string("workload.placement");
  p.out_of_place = place != "in_place";
  p.in_place = place != "out_of_place" && has_in_place(coll);
  p.memory = memory_kind_of(sc);
  p.phantom = phantom_payload(sc);
  p.verify = sc.get_bool("workload.verify") && !p.phantom;
  bool ok = true;
  p.channels = parse_channels(sc.get_string("workload.channels"), ok);
  p.timeout = sc.get_time("workload.timeout");
  p.seed = static_cast<std::uint64_t>(sc.get_int("seed"));
  p.chunk = std::max<std::uint64_t>(p.chunk / dtype_size(p.dtype) * dtype_size(p.dtype), dtype_size(p.dtype));
  return p;
}

// ------------------------------------------------------------------------------------------
// Inputs whose exact result is known: small integers, so every partial sum or product in any
// order is exactly representable in every type (fp16 holds integers up to 2048, bf16 up to 256).

double input_value(const Params& p, int ranks, int rank, std::uint64_t i) {
  return exact_input(p.dtype, p.op, reduces(p.coll), ranks, rank, i, p.seed);
}

std::vector<std::uint8_t> make_input(const Params& p, int ranks, int rank, std::uint64_t count) {
  std::vector<std::uint8_t> v(count * dtype_size(p.dtype));
  for (std::uint64_t i = 0; i < count; ++i) set_element(v.data(), i, p.dtype, input_value(p, ranks, rank, i));
  return v;
}

// The reduction of every rank's input, element by element. It costs count x ranks, so ranks
// that share a process (threads, simulated actors) compute it once: the last result is kept.
std::vector<std::uint8_t> reduced_all(const Params& p, int ranks, std::uint64_t count) {
  struct Key {
    std::uint64_t seed, count;
    int ranks;
    DataType t;
    ReduceOp op;
    Collective coll;
    bool operator==(const Key&) const = default;
  };
  static std::mutex mu;
  static std::optional<Key> cached_key;
  static std::vector<std::uint8_t> cached;
  const Key key{p.seed, count, ranks, p.dtype, p.op, p.coll};
  std::lock_guard<std::mutex> lock(mu);
  if (cached_key && *cached_key == key) return cached;
  std::vector<std::uint8_t> acc = make_input(p, ranks, 0, count);
  for (int r = 1; r < ranks; ++r) {
    auto v = make_input(p, ranks, r, count);
    host_reduce(acc.data(), acc.data(), v.data(), count, p.dtype, p.op);
  }
  cached_key = key;
  cached = acc;
  return acc;
}

// What this rank's output must hold after the collective (empty: nothing to check here).
std::vector<std::uint8_t> expected_output(const Params& p, int ranks, int rank, std::uint64_t count) {
  const std::size_t es = dtype_size(p.dtype);
  const std::uint64_t c = per_rank_blocks(p.coll) ? count / static_cast<std::uint64_t>(ranks) : count;
  switch (p.coll) {
    case Collective::all_reduce: return reduced_all(p, ranks, count);
    case Collective::reduce:
      if (rank != p.root) return {};
      return reduced_all(p, ranks, count);
    case Collective::reduce_scatter: {
      auto all = reduced_all(p, ranks, count);
      return {all.begin() + static_cast<std::ptrdiff_t>(static_cast<std::uint64_t>(rank) * c * es),
              all.begin() + static_cast<std::ptrdiff_t>(static_cast<std::uint64_t>(rank + 1) * c * es)};
    }
    case Collective::all_gather: {
      std::vector<std::uint8_t> out;
      for (int b = 0; b < ranks; ++b) {
        auto v = make_input(p, ranks, b, c);
        out.insert(out.end(), v.begin(), v.end());
      }
      return out;
    }
    case Collective::broadcast: return make_input(p, ranks, p.root, count);
    case Collective::all_to_all: {
      std::vector<std::uint8_t> out;
      for (int b = 0; b < ranks; ++b) {
        auto v = make_input(p, ranks, b, count);
        out.insert(out.end(), v.begin() + static_cast<std::ptrdiff_t>(static_cast<std::uint64_t>(rank) * c * es),
                   v.begin() + static_cast<std::ptrdiff_t>(static_cast<std::uint64_t>(rank + 1) * c * es));
      }
      return out;
    }
    case Collective::sendrecv: return make_input(p, ranks, (rank - 1 + ranks) % ranks, count);
  }
  return {};
}

// ------------------------------------------------------------------------------------------
// The workload.

struct SizePlan {
  std::uint64_t bytes = 0, count = 0;
  Algorithm algo = Algorithm::ring;
  CollectiveChoice choice;
  int channels = 1;
  Plan out_of_place, in_place;
};

Status run_collective(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows, Collective coll) {
  const Params p = read_params(sc, coll);
  const std::size_t es = dtype_size(p.dtype);
  std::vector<SizePlan> sizes;
  std::vector<Plan> all;
  // Where NCCL's protocol costs are modelled (NodeShape::protocol_costs); elsewhere the chunks
  // move as they are (Simple).
  const bool modelled = env.dev.caps().models_time && env.shape.protocol_costs;
  for (std::uint64_t req : p.sizes) {
    SizePlan s;
    s.count = count_for(req, coll, p.dtype, env.size);
    s.bytes = s.count * es;
    // The protocol: its chunk (unless workload.chunk says), and where time is modelled its
    // framing and step latencies (tuning.h).
    TunedRequest r{coll, env.rank, env.size, p.root, s.count, es, false, p.algo, p.proto, p.channels, p.chunk_set ? p.chunk : 0, modelled};
    if (env.dev.caps().models_time) r.min_chunk = simulated_chunk_floor(s.bytes, es);
    TunedPlan t = tuned_plan(r, env.shape);
    s.choice = std::move(t.choice);
    s.algo = s.choice.algo;
    s.channels = t.channels;
    s.out_of_place = std::move(t.plan);
    r.in_place = true;
    if (p.in_place) s.in_place = tuned_plan(r, env.shape).plan;
    const std::string label = fmt::format("{} {}, {} {}", collective_name(coll), units::format_size(s.bytes), algorithm_name(s.algo),
                                          protocol_name(s.choice.proto));
    s.out_of_place.label = label;
    s.in_place.label = label + ", in place";
    all.push_back(s.out_of_place);
    if (p.in_place) all.push_back(s.in_place);
    sizes.push_back(std::move(s));
  }
  EngineConfig cfg;
  cfg.chunk = p.chunk;
  cfg.slots = p.slots;
  cfg.dtype = p.dtype;
  cfg.op = p.op;
  cfg.memory = p.memory;
  cfg.phantom = p.phantom;
  cfg.timeout = p.timeout;
  cfg.what = collective_name(coll);
  CollectiveEngine eng(env, cfg);
  RDMALAB_TRY(eng.setup(all));

  // NVLSTree's nodes and heads per node (one per NIC): the ranks are packed on the nodes.
  const int node_ranks = std::max(1, env.shape.ranks_per_node);
  const int job_nodes = env.size / node_ranks;
  const int node_heads = std::max(1, std::min(env.shape.nics, node_ranks));
  // The chunk NVLS and NVLSTree run with, and NCCL's for the size (tuning.h): workload.chunk, or
  // NCCL's, on a simulation at least simulated_chunk_floor's.
  auto switch_chunk = [&](const SizePlan& s) -> std::pair<std::uint64_t, std::uint64_t> {
    const bool tree = s.algo == Algorithm::nvls_tree || s.algo == Algorithm::collnet, heads = tree || job_nodes > 1;  // across nodes: NCCL's NVLS heads
    const std::uint64_t nccl = nvls_chunk_bytes(tree, s.bytes, heads ? job_nodes : 1, heads ? node_heads : env.size, env.shape.gpu);
    if (p.chunk_set) return {p.chunk, nccl};
    return {env.dev.caps().models_time ? std::max(nccl, simulated_chunk_floor(s.bytes, es)) : nccl, nccl};
  };
  // NVLS: the node's NVSwitch moves and reduces the data (Device::switch_collective), with the
  // buffers where nccl-tests has them.
  auto switch_run = [&](const SizePlan& s, bool in_place) -> Status {
    SwitchCollective sw;
    const std::uint64_t shard = s.bytes / static_cast<std::uint64_t>(env.size);
    const std::uint64_t me = static_cast<std::uint64_t>(env.rank) * shard;
    auto* out = static_cast<std::uint8_t*>(eng.out().data());
    const auto* in = static_cast<const std::uint8_t*>(in_place ? eng.out().data() : eng.in().data());
    sw.kind = coll == Collective::all_reduce       ? SwitchCollective::Kind::all_reduce
              : coll == Collective::reduce_scatter ? SwitchCollective::Kind::reduce_scatter
                                                   : SwitchCollective::Kind::all_gather;
    sw.bytes = s.bytes;
    sw.in = coll == Collective::all_gather && in_place ? in + me : in;
    sw.out = coll == Collective::reduce_scatter && in_place ? out + me : out;
    sw.chunk = switch_chunk(s).first;
    sw.real = !p.phantom;
    sw.dtype = static_cast<std::uint8_t>(p.dtype);
    sw.op = static_cast<std::uint8_t>(p.op);
    if (modelled) {
      sw.wire_factor = nvls_wire_factor(env.shape.gpu);
      sw.latency_s = s.choice.costs.base_us * 1e-6 + s.choice.costs.intra_step_us * 1e-6;
    }
    if (s.algo == Algorithm::collnet) {
      // NCCL's CollNet Direct: the heads gather and reduce their shares over NVLink (no switch
      // reduces in the node), then as NVLS with SHARP; its latency (NCCL's model): 2 × (one NVLink
      // step + 0.4 µs per local GPU beyond the first) + one network step.
      sw.nodes = job_nodes;
      sw.in_network = true;
      sw.direct = true;
      sw.wire_factor = 1;
      sw.gpu_memory_bw = env.shape.gpu_memory_bw;
      if (modelled)
        sw.latency_s = s.choice.costs.base_us * 1e-6 +
                       (2 * (std::min(1, node_ranks - 1) * s.choice.costs.intra_step_us + (node_ranks - 1) * 0.4) + s.choice.costs.inter_step_us) * 1e-6;
    }
    if (s.algo == Algorithm::nvls && job_nodes > 1) {
      // NCCL's NVLS across nodes with CollNet: the heads' sums go up their rails' SHARP trees;
      // its latency is one NVLS step and one network step (NCCL's model).
      sw.nodes = job_nodes;
      sw.in_network = true;
      if (modelled) sw.latency_s += s.choice.costs.inter_step_us * 1e-6;
    }
    if (s.algo == Algorithm::nvls_tree) {
      // NCCL's NVLSTree: NCCL's double binary tree between the nodes (btree_node), its latency
      // (one NVLS step, then 2 log2(nodes) network steps: NCCL's model), and its kernel's rate
      // per channel, which is one head's (tuning.h).
      sw.nodes = job_nodes;
      for (int t = 0; t < 2; ++t)
        for (int node = 0; node < sw.nodes; ++node) sw.tree_parent[t].push_back(btree_node(node, sw.nodes, t).parent);
      if (modelled) {
        const int log2n = std::bit_width(static_cast<unsigned>(sw.nodes)) - 1;  // floor(log2 nodes), NCCL's log2i
        sw.latency_s += 2.0 * log2n * s.choice.costs.inter_step_us * 1e-6;
        sw.head_bw = nvls_tree_head_bytes_per_s(env.shape.gpu, sw.nodes, env.size);
      }
    }
    return env.dev.switch_collective(sw);
  };

  auto load_inputs = [&](const SizePlan& s, bool in_place) -> Status {
    auto v = make_input(p, env.size, env.rank, per_rank_blocks(coll) && coll == Collective::all_gather ? s.count / static_cast<std::uint64_t>(env.size) : s.count);
    if (v.empty()) return Status::ok();
    if (!in_place) return eng.mem().write(eng.in(), 0, v.data(), v.size());
    // In place: the input sits where nccl-tests puts it inside the output buffer.
    const std::uint64_t off = coll == Collective::all_gather ? static_cast<std::uint64_t>(env.rank) * v.size() : 0;
    return eng.mem().write(eng.out(), off, v.data(), v.size());
  };

  // The whole run's bytes this rank will send (the progress line's 100 %): every size and
  // placement, its warm-up, timed and check executions.
  if (env.rank == 0) {
    work_meter().reset();
    const std::uint64_t runs = p.warmup + p.iterations + (p.verify ? 1 : 0);
    for (const SizePlan& s : sizes)
      for (const Plan* plan : {p.out_of_place ? &s.out_of_place : nullptr, p.in_place ? &s.in_place : nullptr}) {
        if (!plan) continue;
        std::uint64_t bytes = 0;
        for (const auto& op : plan->sends) bytes += op.len;
        work_meter().plan(runs * (switched(s.algo) ? s.bytes : bytes));
      }
  }
  for (const SizePlan& s : sizes) {
    for (int place = 0; place < 2; ++place) {
      const bool in_place = place == 1;
      if (in_place ? !p.in_place : !p.out_of_place) continue;
      const Plan& plan = in_place ? s.in_place : s.out_of_place;
      if (!p.phantom) RDMALAB_TRY(load_inputs(s, in_place));
      RDMALAB_TRY(env.boot.barrier());
      // NCCL's base latency (launch and set-up), once per collective, where time is modelled.
      const double base = modelled ? s.choice.costs.base_us * 1e-6 : 0;
      auto once = [&]() -> Status {
        if (switched(s.algo)) {
          RDMALAB_TRY(switch_run(s, in_place));
          if (env.rank == 0) work_meter().sent(s.bytes);
          return Status::ok();
        }
        if (base > 0) RDMALAB_TRY(env.rt.compute(base));
        return eng.execute(plan);
      };
      TraceScope size_span(env.trace, "workload", fmt::format("{} {}{}", collective_name(coll), units::format_size(s.bytes), in_place ? ", in place" : ""));
      {
        TraceScope warm(env.trace, "phase", "warm-up");
        for (std::uint64_t i = 0; i < p.warmup; ++i) RDMALAB_TRY(once());
      }
      RDMALAB_TRY(env.boot.barrier());
      const double t0 = env.rt.now();
      {
        TraceScope timed(env.trace, "phase", "timed");
        for (std::uint64_t i = 0; i < p.iterations; ++i) RDMALAB_TRY(once());
      }
      const double t = (env.rt.now() - t0) / static_cast<double>(p.iterations);
      // The check run: fresh inputs, one more execution, every element compared.
      std::uint64_t wrong = 0;
      if (p.verify) {
        // Out of place, the output is cleared first, so what the timed runs left there cannot pass
        // for the check run's result.
        if (!in_place) RDMALAB_TRY(eng.mem().clear(eng.out(), 0, eng.out().size()));
        RDMALAB_TRY(load_inputs(s, in_place));
        RDMALAB_TRY(env.boot.barrier());
        RDMALAB_TRY(once());
        auto expect = expected_output(p, env.size, env.rank, s.count);
        if (!expect.empty()) {
          std::vector<std::uint8_t> got(expect.size());
          const std::uint64_t off = in_place && coll == Collective::reduce_scatter ? static_cast<std::uint64_t>(env.rank) * expect.size() : 0;
          RDMALAB_TRY(eng.mem().read(eng.out(), off, got.data(), got.size()));
          for (std::size_t i = 0; i < expect.size(); i += es) wrong += std::memcmp(&got[i], &expect[i], es) != 0;
        }
      }
      struct Report {
        double t;
        std::uint64_t wrong;
      };
      RDMALAB_ASSIGN(auto reports, allgather_value(env.boot, Report{t, wrong}));
      if (env.rank != 0) continue;
      ResultRow row;
      row.workload = collective_name(coll);
      row.bytes = s.bytes;
      row.iterations = p.iterations;
      row.ranks = env.size;
      for (const auto& r : reports) {
        row.time_s = std::max(row.time_s, r.t);  // the slowest rank's time, as the collective ends there
        row.errors += r.wrong;
      }
      const double algbw = row.time_s > 0 ? static_cast<double>(s.bytes) / row.time_s / 1e9 : 0;  // GB/s, as nccl-tests
      const double busbw = algbw * busbw_factor(coll, env.size);
      row.bw_gbps = busbw * 8;  // the perftest-style column, in Gb/s
      row.bw_peak_gbps = row.bw_gbps;
      row.msg_rate_mpps = row.time_s > 0 ? 1e-6 / row.time_s : 0;
      row.extra["count"] = static_cast<double>(s.count);
      row.extra["algbw_gbps"] = algbw;
      row.extra["busbw_gbps"] = busbw;
      row.extra["time_us"] = row.time_s * 1e6;
      row.notes["type"] = dtype_name(p.dtype);
      row.notes["redop"] = reduces(coll) ? reduce_op_name(p.op) : "none";
      row.notes["root"] = has_root(coll) ? std::to_string(p.root) : "-1";
      row.notes["placement"] = in_place ? "in-place" : "out-of-place";
      row.notes["algorithm"] = algorithm_name(s.algo);
      row.notes["channels"] = std::to_string(s.channels);
      row.notes["protocol"] = protocol_name(s.choice.proto);
      const auto [used, nccl] = switched(s.algo) ? switch_chunk(s) : std::pair{plan.chunk, protocol_step_bytes(s.choice.proto)};
      if (!p.chunk_set && used > nccl)
        row.notes["chunk"] = fmt::format("{} (NCCL's is {}: a simulated buffer moves in at most {} chunks)", units::format_size(used),
                                         units::format_size(nccl), kSimulatedChunksPerBuffer);
      if (!modelled && p.proto && *p.proto != Protocol::simple)
        row.notes["protocol"] = fmt::format("Simple ({}'s costs are modelled by simgrid's calibrated model only)", protocol_name(*p.proto));
      if (!s.choice.table.empty()) {
        row.notes["tuning"] = tuning_text(s.choice);
        row.notes["nccl_choice"] = s.choice.nccl;
      }
      row.notes["verify"] = p.verify ? "on" : "off";
      row.notes["data_path"] = eng.data_path();
      rows.push_back(std::move(row));
    }
  }
  return eng.drain();
}

Status check_collective(const Scenario& sc, const Capabilities& caps, int ranks, Collective coll) {
  const char* name = collective_name(coll);
  if (!caps.rdma_write_imm) return sc.error("workload.type", fmt::format("{} moves data as RDMA writes with immediate, which this backend does not offer", name));
  if (sc.is_set("workload.size") && sc.is_set("workload.sizes"))
    return sc.error("workload.sizes", "give either workload.size or workload.sizes, not both");
  if (sc.is_set("workload.duration"))
    return sc.error("workload.duration", fmt::format("{} runs a fixed number of iterations per size (nccl-tests -n): give workload.iterations", name));
  bool channels_ok = true;
  parse_channels(sc.get_string("workload.channels"), channels_ok);
  if (!channels_ok)
    return sc.error("workload.channels", fmt::format("'{}' is not a channel count: auto, or a whole number from 1 to 64 (NCCL's "
                                                     "MAXCHANNELS)", sc.get_string("workload.channels")));
  const std::string alg = sc.get_string("workload.algorithm");
  if (alg != "auto") {
    auto a = parse_algorithm(alg);
    auto offered = algorithms_for(coll);
    if (!a || std::find(offered.begin(), offered.end(), *a) == offered.end()) {
      std::string list = "auto";
      for (auto o : offered) list += std::string(", ") + algorithm_name(o);
      return sc.error("workload.algorithm", fmt::format("{} has no algorithm '{}'; allowed: {}", name, alg, list));
    }
  }
  if (alg == "nvls") {
    if (!caps.switch_reduction)
      return sc.error("workload.algorithm", "nvls (NVLink SHARP: the NVSwitch reduces) is modelled on simgrid only; this backend has no switch "
                                            "that reduces: use ring or tree here");
    if (sc.get_int("fabric.nodes") != 1 && coll != Collective::all_reduce)
      return sc.error("workload.algorithm", fmt::format("{} with nvls runs inside one node's NVSwitch, and this run spans {} nodes: "
                                                        "use ring", name, sc.get_int("fabric.nodes")));
    if (sc.get_int("fabric.nodes") != 1 && !caps.in_network_reduction)
      return sc.error("workload.algorithm", fmt::format("nvls across nodes ({} here) needs switches in the network that reduce "
                                                        "(InfiniBand SHARP, NCCL's CollNet), modelled on simgrid only: use nvls_tree, "
                                                        "ring or tree here", sc.get_int("fabric.nodes")));
  }
  if (alg == "nvls_tree") {
    if (!caps.switch_reduction)
      return sc.error("workload.algorithm", "nvls_tree (NVLink SHARP in each node, a tree between the nodes) is modelled on simgrid only; "
                                            "this backend has no switch that reduces: use ring or tree here");
    if (sc.get_int("fabric.nodes") < 2)
      return sc.error("workload.algorithm", "nvls_tree is NCCL's NVLSTree, for several nodes (fabric.nodes is 1): use nvls inside one node");
  }
  if (alg == "collnet") {
    if (!caps.in_network_reduction)
      return sc.error("workload.algorithm", "collnet (NCCL's CollNet Direct: the network's switches reduce, InfiniBand SHARP) is modelled on "
                                            "simgrid only: use ring or tree here");
    if (sc.get_int("fabric.nodes") < 2)
      return sc.error("workload.algorithm", "collnet reduces in the network between nodes (fabric.nodes is 1): use ring, tree or nvls");
  }
  if ((alg == "nvls" || alg == "nvls_tree" || alg == "collnet") && sc.is_set("workload.protocol") && sc.get_string("workload.protocol") != "simple" &&
      sc.get_string("workload.protocol") != "auto")
    return sc.error("workload.protocol", fmt::format("{} runs the Simple protocol only (as in NCCL): use simple or auto", alg));
  const DataType dt = *parse_dtype(sc.get_string("workload.dtype"));
  const std::size_t es = dtype_size(dt);
  const std::string sizes_key = sc.is_set("workload.sizes") ? "workload.sizes" : "workload.size";
  std::uint64_t max_bytes = 0;
  for (std::uint64_t b : requested_sizes(sc)) {
    std::uint64_t count = count_for(b, coll, dt, ranks);
    if (count == 0)
      return sc.error(sizes_key, fmt::format("{} of {} holds no whole {}{}: the smallest size here is {}", units::format_size(b), dtype_name(dt),
                                             per_rank_blocks(coll) ? "element per rank" : "element", "",
                                             units::format_size(es * (per_rank_blocks(coll) ? static_cast<std::uint64_t>(ranks) : 1))));
    max_bytes = std::max(max_bytes, count * es);
  }
  if (has_root(coll) && sc.get_int("workload.root") >= ranks)
    return sc.error("workload.root", fmt::format("root {} does not exist: ranks are 0..{}", sc.get_int("workload.root"), ranks - 1));
  if (sc.get_string("workload.placement") == "in_place" && !has_in_place(coll))
    return sc.error("workload.placement", fmt::format("{} has no in-place form (as in NCCL); use out_of_place or both", name));
  const std::uint64_t chunk = sc.get_size("workload.chunk");
  if (chunk < es) return sc.error("workload.chunk", fmt::format("a chunk must hold at least one {} ({} B)", dtype_name(dt), es));
  if (caps.max_msg_size && chunk > caps.max_msg_size)
    return sc.error("workload.chunk", fmt::format("this backend moves at most {} per message", units::format_size(caps.max_msg_size)));
  if (caps.max_qp_wr && 2 * static_cast<std::uint64_t>(sc.get_int("workload.slots")) + 2 > caps.max_qp_wr)
    return sc.error("workload.slots", fmt::format("this backend allows {} requests per queue: at most {} slots", caps.max_qp_wr, (caps.max_qp_wr - 2) / 2));
  (void)max_bytes;
  return check_memory(sc, caps);
}

void add(WorkloadRegistry& reg, Collective coll, const char* desc) {
  WorkloadInfo w;
  w.name = collective_name(coll);
  w.description = desc;
  w.kind = WorkloadKind::collective;
  w.check = [coll](const Scenario& sc, const Capabilities& caps, int ranks) { return check_collective(sc, caps, ranks, coll); };
  w.run = [coll](RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows) { return run_collective(env, sc, rows, coll); };
  w.reads = {"workload.size",    "workload.sizes",   "workload.iterations", "workload.warmup",  "workload.duration",
             "workload.dtype",   "workload.algorithm", "workload.protocol", "workload.chunk",   "workload.channels",
             "workload.slots",   "workload.placement", "workload.verify",   "workload.memory",  "workload.payload",
             "workload.gpu_path", "workload.timeout"};
  if (coll == Collective::all_reduce || coll == Collective::reduce_scatter || coll == Collective::reduce) w.reads.push_back("workload.op");
  if (has_root(coll)) w.reads.push_back("workload.root");
  // Every collective's output (or input) buffer holds the whole size, rounded down to whole
  // elements and blocks (a sixty-fourth is more than that rounding takes).
  w.min_buffer_bytes = [](const Scenario& sc) -> std::uint64_t {
    const auto sizes = requested_sizes(sc);
    const std::uint64_t n = *std::max_element(sizes.begin(), sizes.end());
    return n - n / 64;
  };
  reg.add(std::move(w));
}

}  // namespace

double exact_input(DataType t, ReduceOp op, bool reduction, int ranks, int rank, std::uint64_t i, std::uint64_t seed) {
  const std::uint64_t h = pattern_word(seed * 7919 + static_cast<std::uint64_t>(rank), i);
  if (!reduction || op == ReduceOp::max || op == ReduceOp::min) return static_cast<double>(h % 201) - 100.0;
  if (op == ReduceOp::prod) {
    if (i % static_cast<std::uint64_t>(ranks) == static_cast<std::uint64_t>(rank) && (h >> 20) % 5 == 0) return 2.0;
    return h % 3 == 0 ? -1.0 : 1.0;
  }
  // sum
  std::uint64_t limit = 0;
  switch (t) {
    case DataType::fp32: limit = 1u << 24; break;
    case DataType::fp16: limit = 2048; break;
    case DataType::bf16: limit = 256; break;
    case DataType::int32:
    case DataType::int8: return static_cast<double>(h % 255) - 127.0;  // wraps, exactly, in both
  }
  const auto n = static_cast<std::uint64_t>(ranks);
  const std::uint64_t m = limit / n;
  if (m >= 1) return static_cast<double>(h % (m + 1));
  const std::uint64_t g = (n + limit - 1) / limit;  // at most `limit` ranks contribute a 1
  return (static_cast<std::uint64_t>(rank) + i) % g == 0 ? 1.0 : 0.0;
}

void register_collectives(WorkloadRegistry& reg) {
  add(reg, Collective::all_reduce, "all-reduce: ring, double binary tree, halving-doubling or NVLink SHARP (nccl-tests all_reduce_perf)");
  add(reg, Collective::all_gather, "all-gather: ring or NVLink SHARP (all_gather_perf)");
  add(reg, Collective::reduce_scatter, "reduce-scatter: ring or NVLink SHARP (reduce_scatter_perf)");
  add(reg, Collective::broadcast, "broadcast from a root: pipelined chain or binomial tree (broadcast_perf)");
  add(reg, Collective::reduce, "reduce to a root: pipelined chain or binomial tree (reduce_perf)");
  add(reg, Collective::all_to_all, "all-to-all, pairwise exchange (alltoall_perf)");
  add(reg, Collective::sendrecv, "each rank sends to the next and receives from the previous (sendrecv_perf)");
}

}  // namespace rdmalab::workloads
