// The collectives engine and the nccl-tests-style workloads on top of it.
//
// Transport: per (peer, channel) one RC QP and, at the receiver, `slots` staging slots. A chunk
// travels as an RDMA write with immediate into the next slot of the peer's staging area; the
// immediate carries a sequence number that the receiver checks. The receiver reduces or copies
// the slot into its destination and returns a credit (a zero-byte write with immediate), which
// frees the slot for the sender. Every message consumes one posted receive, reposted at once.
// Chunks of one connection arrive in order (RC), so both sides know which chunk is which from
// their plans alone.
#include "rdmalab/workloads/collectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "rdmalab/units.h"
#include "rdmalab/workloads/common.h"

namespace rdmalab::workloads {
namespace {

constexpr std::uint32_t kCreditBit = 1u << 31;
constexpr std::uint32_t kSeqMask = (1u << 24) - 1;
constexpr int kWcBatch = 64;

// ------------------------------------------------------------------------------------------
// Scenario parameters.

struct Params {
  Collective coll = Collective::all_reduce;
  std::optional<Algorithm> algo;  // none: default_algorithm per size
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
  for (Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::rhd, Algorithm::chain, Algorithm::binomial, Algorithm::pairwise})
    if (s == algorithm_name(a)) return a;
  return std::nullopt;
}

MemoryKind memory_kind_of(const Scenario& sc) {
  const std::string m = sc.get_string("workload.memory");
  return m == "cuda" ? MemoryKind::cuda : m == "phantom" ? MemoryKind::phantom : MemoryKind::host;
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
  p.verify = sc.get_bool("workload.verify") && p.memory != MemoryKind::phantom;
  p.timeout = sc.get_time("workload.timeout");
  p.seed = static_cast<std::uint64_t>(sc.get_int("seed"));
  p.chunk = std::max<std::uint64_t>(p.chunk / dtype_size(p.dtype) * dtype_size(p.dtype), dtype_size(p.dtype));
  return p;
}

// ------------------------------------------------------------------------------------------
// Inputs whose exact result is known: small integers, so every partial sum or product in any
// order is exactly representable in every type (fp16 holds integers up to 2048, bf16 up to 256).

std::uint64_t mix(std::uint64_t seed, int rank, std::uint64_t i) { return pattern_word(seed * 7919 + static_cast<std::uint64_t>(rank), i); }

double input_value(const Params& p, int ranks, int rank, std::uint64_t i) {
  const std::uint64_t h = mix(p.seed, rank, i);
  if (!reduces(p.coll) || p.op == ReduceOp::max || p.op == ReduceOp::min) return static_cast<double>(h % 201) - 100.0;
  if (p.op == ReduceOp::prod) {
    if (i % static_cast<std::uint64_t>(ranks) == static_cast<std::uint64_t>(rank) && (h >> 20) % 5 == 0) return 2.0;
    return h % 3 == 0 ? -1.0 : 1.0;
  }
  // sum
  std::uint64_t limit = 0;
  switch (p.dtype) {
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
// The engine.

struct Conn {
  int peer = 0, chan = 0;
  std::unique_ptr<QueuePair> qp;
  std::uint32_t slots_in = 1;   // my staging slots for this peer
  std::uint64_t slot_bytes_in = 0;
  std::uint64_t stage_off = 0;  // where they start in my staging buffer
  RemoteBuffer remote_stage;    // the peer's slots for me
  std::uint32_t slots_out = 1;
  std::uint64_t slot_bytes_out = 0;
  std::uint32_t credits = 0;    // free slots at the peer
  std::uint64_t send_seq = 0, recv_seq = 0;
  std::uint64_t arrived = 0;    // chunks landed in my slots, not yet processed
  std::uint32_t sq_out = 0, sq_cap = 0;
  std::uint32_t pending_credits = 0;  // credits to return once the send queue has room
};

// What a rank publishes about one of its connections.
struct ConnInfo {
  std::int32_t peer = -1, chan = 0;
  QpEndpoint ep;
  RemoteBuffer stage;
  std::uint32_t slots = 0;
  std::uint32_t pad = 0;
  std::uint64_t slot_bytes = 0;
};

struct Engine {
  RankEnv& env;
  const Params& p;
  MemoryProvider* mem;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  Buffer in, out, scratch, stage;
  std::unique_ptr<MemoryRegion> in_mr, out_mr, scratch_mr, stage_mr;
  std::vector<Conn> conns;
  std::map<std::pair<int, int>, std::size_t> conn_index;  // (peer, chan) -> conns
  std::vector<Completion> wcs = std::vector<Completion>(kWcBatch);

  Engine(RankEnv& e, const Params& params) : env(e), p(params), mem(memory_provider(params.memory)) {}

  const Buffer& buf(Buf b) const { return b == Buf::in ? in : b == Buf::out ? out : scratch; }
  const MemoryRegion& mr(Buf b) const { return b == Buf::in ? *in_mr : b == Buf::out ? *out_mr : *scratch_mr; }

  // Sets up buffers and connections for every plan this run will execute.
  Status setup(const std::vector<Plan>& plans) {
    std::uint64_t in_b = 1, out_b = 1, scr_b = 1;
    struct Need {
      std::uint64_t max_in_plan = 0;  // chunks from the peer in one plan
      std::uint64_t max_op = 0;
    };
    std::map<std::pair<int, int>, Need> need;
    for (const Plan& pl : plans) {
      in_b = std::max(in_b, pl.in_bytes);
      out_b = std::max(out_b, pl.out_bytes);
      scr_b = std::max(scr_b, pl.scratch_bytes);
      std::map<std::pair<int, int>, std::uint64_t> per;  // chunks from the peer in this plan
      for (const auto& s : pl.sends) need[{s.peer, s.chan}];
      for (const auto& r : pl.recvs) {
        per[{r.peer, r.chan}] += (r.len + p.chunk - 1) / p.chunk;
        auto& n = need[{r.peer, r.chan}];
        n.max_op = std::max(n.max_op, r.len);
      }
      for (auto& [k, v] : per) need[k].max_in_plan = std::max(need[k].max_in_plan, v);
    }
    RDMALAB_ASSIGN(in, mem->allocate(in_b));
    RDMALAB_ASSIGN(out, mem->allocate(out_b));
    RDMALAB_ASSIGN(scratch, mem->allocate(scr_b));
    std::uint64_t stage_bytes = 0;
    conns.clear();
    for (auto& [key, n] : need) {
      Conn c;
      c.peer = key.first;
      c.chan = key.second;
      if (n.max_in_plan > 0) {
        c.slot_bytes_in = std::min(p.chunk, n.max_op);
        c.slots_in = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(n.max_in_plan, 1, p.slots));
      } else {
        c.slots_in = 0;
      }
      c.stage_off = stage_bytes;
      stage_bytes += c.slots_in * c.slot_bytes_in;
      conn_index[key] = conns.size();
      conns.push_back(std::move(c));
    }
    RDMALAB_ASSIGN(stage, mem->allocate(std::max<std::uint64_t>(stage_bytes, 1)));
    RDMALAB_ASSIGN(pd, env.dev.alloc_pd());
    const std::uint32_t local = kAccessLocalWrite;
    RDMALAB_ASSIGN(in_mr, pd->register_memory(in.data(), in.size(), local, in.kind()));
    RDMALAB_ASSIGN(out_mr, pd->register_memory(out.data(), out.size(), local, out.kind()));
    RDMALAB_ASSIGN(scratch_mr, pd->register_memory(scratch.data(), scratch.size(), local, scratch.kind()));
    RDMALAB_ASSIGN(stage_mr, pd->register_memory(stage.data(), stage.size(), kAccessLocalWrite | kAccessRemoteWrite, stage.kind()));

    // Publish my side of every connection; everyone finds the peer's side in its table.
    std::vector<ConnInfo> mine(conns.size());
    for (std::size_t i = 0; i < conns.size(); ++i) {
      mine[i].peer = conns[i].peer;
      mine[i].chan = conns[i].chan;
      mine[i].stage = stage_mr->remote(conns[i].stage_off);
      mine[i].slots = conns[i].slots_in;
      mine[i].slot_bytes = conns[i].slot_bytes_in;
    }
    // Every rank's table must have the same length for the allgather: pad to the longest.
    RDMALAB_ASSIGN(auto counts, allgather_value(env.boot, static_cast<std::uint64_t>(conns.size())));
    const std::uint64_t width = std::max<std::uint64_t>(1, *std::max_element(counts.begin(), counts.end()));
    // Exchange twice: first what sizes the queues (the peer's slots), then the QP endpoints.
    const auto& dcaps = env.dev.caps();
    mine.resize(width);
    RDMALAB_ASSIGN(auto table, env.boot.allgather(std::as_bytes(std::span<const ConnInfo>(mine))));
    auto peer_entry = [&](int peer, int chan) -> const ConnInfo* {
      const auto* base = reinterpret_cast<const ConnInfo*>(table.data()) + static_cast<std::size_t>(peer) * width;
      for (std::uint64_t k = 0; k < width; ++k) {
        ConnInfo e;
        std::memcpy(&e, base + k, sizeof e);
        if (e.peer == env.rank && e.chan == chan) return base + k;
      }
      return nullptr;
    };
    std::uint64_t total = 1;
    for (auto& c : conns) {
      const ConnInfo* e = peer_entry(c.peer, c.chan);
      if (!e) return Status(Errc::internal, fmt::format("rank {}: rank {} has no connection back on channel {} (plans disagree)", env.rank, c.peer, c.chan));
      ConnInfo info;
      std::memcpy(&info, e, sizeof info);
      c.remote_stage = info.stage;
      c.slots_out = info.slots;
      c.slot_bytes_out = info.slot_bytes;
      c.credits = c.slots_out;
      c.sq_cap = c.slots_out + c.slots_in + 2;
      total += c.sq_cap + c.slots_in + c.slots_out;
    }
    if (dcaps.max_cq_entries && total > dcaps.max_cq_entries)
      return Status(Errc::not_supported, fmt::format("rank {}: this collective needs a completion queue of {} entries, the device allows {} "
                                                     "(lower workload.slots)", env.rank, total, dcaps.max_cq_entries));
    RDMALAB_ASSIGN(cq, env.dev.create_cq(static_cast<std::uint32_t>(total)));
    for (std::size_t i = 0; i < conns.size(); ++i) {
      auto& c = conns[i];
      QpCaps caps;
      caps.max_send_wr = c.sq_cap;
      caps.max_recv_wr = c.slots_in + c.slots_out + 1;
      RDMALAB_ASSIGN(c.qp, pd->create_qp(*cq, *cq, caps));
      RDMALAB_TRY(c.qp->to_init());
      mine[i].ep = c.qp->endpoint();
    }
    RDMALAB_ASSIGN(table, env.boot.allgather(std::as_bytes(std::span<const ConnInfo>(mine))));
    for (std::size_t i = 0; i < conns.size(); ++i) {
      auto& c = conns[i];
      ConnInfo info;
      std::memcpy(&info, peer_entry(c.peer, c.chan), sizeof info);
      QpConnectAttr attr;
      attr.remote = info.ep;
      RDMALAB_TRY(c.qp->to_rtr(attr));
      RDMALAB_TRY(c.qp->to_rts());
      for (std::uint32_t k = 0; k < c.slots_in + c.slots_out; ++k) RDMALAB_TRY(post_recv(i));
    }
    return env.boot.barrier();
  }

  // Waits for every request this rank posted (the last credits) to complete, then for every
  // rank to have done the same: after that no message is in flight and the QPs can go.
  Status drain() {
    auto busy = [&] {
      for (const auto& c : conns)
        if (c.sq_out) return true;
      return false;
    };
    while (busy()) {
      auto w = cq->wait(wcs, p.timeout);
      if (!w) return w.status().with_context(fmt::format("rank {}: waiting for the last credits to complete", env.rank));
      for (std::size_t k = 0; k < *w; ++k) {
        const Completion& wc = wcs[k];
        const std::size_t ci = static_cast<std::size_t>((wc.wr_id & 0xffffffffu) >> 2);
        if (wc.status != WcStatus::success && ci < conns.size())
          return Status(Errc::transport, describe_failed_completion(env.rank, wc));
        if ((wc.wr_id & 3) != 2 && ci < conns.size()) conns[ci].sq_out--;
      }
    }
    return env.boot.barrier();
  }

  Status post_recv(std::size_t ci) {
    RecvWr wr{(static_cast<std::uint64_t>(ci) << 2) | 2, {}};
    return conns[ci].qp->post_recv(std::span<const RecvWr>(&wr, 1));
  }

  Status post_credit(std::size_t ci) {
    Conn& c = conns[ci];
    while (c.pending_credits > 0 && c.sq_out < c.sq_cap) {
      SendWr wr;
      wr.wr_id = (static_cast<std::uint64_t>(ci) << 2) | 1;
      wr.opcode = SendOpcode::rdma_write_with_imm;
      wr.imm = kCreditBit | c.pending_credits;
      wr.remote_addr = c.remote_stage.addr;
      wr.rkey = c.remote_stage.rkey;
      RDMALAB_TRY(c.qp->post_send(std::span<const SendWr>(&wr, 1)));
      c.sq_out++;
      c.pending_credits = 0;
    }
    return Status::ok();
  }

  // Runs one plan to completion: every chunk sent and acknowledged, every chunk received processed.
  Status execute(const Plan& plan) {
    for (const auto& cp : plan.pre) RDMALAB_TRY(mem->copy(buf(cp.dst.buf), cp.dst.off, buf(cp.src.buf), cp.src.off, cp.len));
    auto nchunks = [&](std::uint64_t len) { return (len + p.chunk - 1) / p.chunk; };
    std::vector<std::uint64_t> done(plan.recvs.size(), 0);  // chunks processed per recv op
    // Per connection: the recv ops it feeds, in order, and a cursor.
    struct RecvCursor {
      std::vector<int> ops;
      std::size_t pos = 0;
      std::uint64_t chunk = 0;
    };
    std::vector<RecvCursor> rcur(conns.size());
    std::uint64_t recv_chunks_left = 0;
    for (std::size_t i = 0; i < plan.recvs.size(); ++i) {
      rcur[conn_index.at({plan.recvs[i].peer, plan.recvs[i].chan})].ops.push_back(static_cast<int>(i));
      recv_chunks_left += nchunks(plan.recvs[i].len);
    }
    // Per connection: the sends, in order, and a cursor. Connections progress independently (a
    // tree node feeds both children chunk by chunk); order across peers comes from dependencies.
    struct SendCursor {
      std::vector<int> ops;
      std::size_t pos = 0;
      std::uint64_t chunk = 0;
    };
    std::map<std::pair<int, int>, SendCursor> scur;
    std::vector<int> prev_in_chan(plan.sends.size(), -1);  // for SendOp::serial
    std::map<int, int> last_in_chan;
    for (std::size_t i = 0; i < plan.sends.size(); ++i) {
      const SendOp& s = plan.sends[i];
      scur[{s.peer, s.chan}].ops.push_back(static_cast<int>(i));
      auto it = last_in_chan.find(s.chan);
      if (it != last_in_chan.end()) prev_in_chan[i] = it->second;
      last_in_chan[s.chan] = static_cast<int>(i);
    }
    std::uint64_t sends_outstanding = 0;
    std::vector<std::uint64_t> sent_done(plan.sends.size(), 0);  // chunks completed per send op
    const double deadline_step = p.timeout;

    auto dep_met = [&](const SendOp& s, std::uint64_t j) {
      if (s.dep < 0) return true;
      const std::uint64_t have = done[static_cast<std::size_t>(s.dep)];
      return s.chunkwise ? have > j : have == nchunks(plan.recvs[static_cast<std::size_t>(s.dep)].len);
    };

    auto issue = [&](bool& progressed) -> Status {
      for (auto& [key, sc] : scur) {
        while (sc.pos < sc.ops.size()) {
          const SendOp& s = plan.sends[static_cast<std::size_t>(sc.ops[sc.pos])];
          const std::size_t ci = conn_index.at({s.peer, s.chan});
          Conn& c = conns[ci];
          if (c.credits == 0 || c.sq_out + 1 >= c.sq_cap || !dep_met(s, sc.chunk)) break;
          if (s.serial && prev_in_chan[static_cast<std::size_t>(sc.ops[sc.pos])] >= 0) {
            const auto prev = static_cast<std::size_t>(prev_in_chan[static_cast<std::size_t>(sc.ops[sc.pos])]);
            if (sent_done[prev] < nchunks(plan.sends[prev].len)) break;
          }
          const std::uint64_t off = sc.chunk * p.chunk;
          const std::uint64_t len = std::min(p.chunk, s.len - off);
          Sge sge{buf(s.src.buf).addr() + s.src.off + off, static_cast<std::uint32_t>(len), mr(s.src.buf).lkey()};
          SendWr wr;
          wr.wr_id = (static_cast<std::uint64_t>(sc.ops[sc.pos] + 1) << 32) | (static_cast<std::uint64_t>(ci) << 2) | 0;
          wr.opcode = SendOpcode::rdma_write_with_imm;
          wr.sg_list = std::span<const Sge>(&sge, 1);
          wr.imm = static_cast<std::uint32_t>(c.send_seq & kSeqMask);
          wr.remote_addr = c.remote_stage.addr + (c.send_seq % c.slots_out) * c.slot_bytes_out;
          wr.rkey = c.remote_stage.rkey;
          RDMALAB_TRY(c.qp->post_send(std::span<const SendWr>(&wr, 1)));
          c.send_seq++;
          c.credits--;
          c.sq_out++;
          sends_outstanding++;
          progressed = true;
          if (++sc.chunk == nchunks(s.len)) {
            sc.chunk = 0;
            sc.pos++;
          }
        }
      }
      return Status::ok();
    };

    auto process = [&](bool& progressed) -> Status {
      for (std::size_t ci = 0; ci < conns.size(); ++ci) {
        Conn& c = conns[ci];
        RecvCursor& rc = rcur[ci];
        while (c.arrived > 0 && rc.pos < rc.ops.size()) {
          const int oi = rc.ops[rc.pos];
          const RecvOp& r = plan.recvs[static_cast<std::size_t>(oi)];
          if (r.after >= 0) {
            const auto a = static_cast<std::size_t>(r.after);
            if (r.after_whole ? done[a] < nchunks(plan.recvs[a].len) : done[a] <= rc.chunk) break;
          }
          const std::uint64_t off = rc.chunk * p.chunk;
          const std::uint64_t len = std::min(p.chunk, r.len - off);
          const std::uint64_t slot = c.stage_off + (c.recv_seq % c.slots_in) * c.slot_bytes_in;
          if (r.reduce)
            RDMALAB_TRY(mem->reduce(buf(r.dst.buf), r.dst.off + off, buf(r.operand.buf), r.operand.off + off, stage, slot,
                                    len / dtype_size(p.dtype), p.dtype, p.op));
          else
            RDMALAB_TRY(mem->copy(buf(r.dst.buf), r.dst.off + off, stage, slot, len));
          c.recv_seq++;
          c.arrived--;
          c.pending_credits++;
          RDMALAB_TRY(post_credit(ci));
          done[static_cast<std::size_t>(oi)]++;
          recv_chunks_left--;
          progressed = true;
          if (++rc.chunk == nchunks(r.len)) {
            rc.chunk = 0;
            rc.pos++;
          }
        }
        if (c.pending_credits) RDMALAB_TRY(post_credit(ci));
      }
      return Status::ok();
    };

    auto handle = [&](std::size_t n) -> Status {
      for (std::size_t k = 0; k < n; ++k) {
        const Completion& wc = wcs[k];
        const std::size_t ci = static_cast<std::size_t>((wc.wr_id & 0xffffffffu) >> 2);
        const int kind = static_cast<int>(wc.wr_id & 3);
        if (ci >= conns.size()) return Status(Errc::internal, fmt::format("rank {}: completion with unknown wr_id {:#x}", env.rank, wc.wr_id));
        if (wc.status != WcStatus::success)
          return Status(Errc::transport, fmt::format("{} (connection to rank {}, channel {})", describe_failed_completion(env.rank, wc),
                                                     conns[ci].peer, conns[ci].chan));
        Conn& c = conns[ci];
        if (kind == 2) {
          RDMALAB_TRY(post_recv(ci));
          if (!wc.has_imm)
            return Status(Errc::data, fmt::format("rank {}: a message from rank {} carried no immediate", env.rank, c.peer));
          if (wc.imm & kCreditBit) {
            c.credits += wc.imm & ~kCreditBit;
            if (c.credits > c.slots_out)
              return Status(Errc::data, fmt::format("rank {}: rank {} returned more credits than slots ({} > {})", env.rank, c.peer, c.credits, c.slots_out));
          } else {
            const std::uint64_t expect = (c.recv_seq + c.arrived) & kSeqMask;
            if (wc.imm != expect)
              return Status(Errc::data, fmt::format("rank {}: chunk {} from rank {} (channel {}) arrived where chunk {} was due: the "
                                                    "transport reordered or lost a message", env.rank, wc.imm, c.peer, c.chan, expect));
            if (c.arrived >= c.slots_in)
              return Status(Errc::data, fmt::format("rank {}: rank {} wrote past its credits", env.rank, c.peer));
            c.arrived++;
          }
        } else {
          c.sq_out--;
          if (kind == 0) {
            sends_outstanding--;
            const std::uint64_t op = (wc.wr_id >> 32) - 1;
            if (op < sent_done.size()) sent_done[op]++;
          }
        }
      }
      return Status::ok();
    };

    auto finished = [&] {
      if (recv_chunks_left || sends_outstanding) return false;
      for (auto& [key, sc] : scur)
        if (sc.pos < sc.ops.size()) return false;
      // Credits still in flight need not be waited for: their completions are taken by the
      // next execution (or never, at the end), and nothing reuses what they carried.
      for (const auto& c : conns)
        if (c.pending_credits) return false;
      return true;
    };

    while (!finished()) {
      bool progressed = false;
      RDMALAB_TRY(issue(progressed));
      RDMALAB_TRY(process(progressed));
      RDMALAB_ASSIGN(std::size_t n, cq->poll(wcs));
      if (n) {
        progressed = true;
        RDMALAB_TRY(handle(n));
      }
      if (!progressed && !finished()) {
        auto w = cq->wait(wcs, deadline_step);
        if (!w) {
          if (w.status().code() == Errc::timeout)
            return Status(Errc::timeout, fmt::format("rank {}: no progress within {}s in {} ({} chunks still to receive, {} sends in flight); "
                                                     "is a peer dead or stuck? raise workload.timeout for slow fabrics",
                                                     env.rank, deadline_step, collective_name(p.coll), recv_chunks_left, sends_outstanding));
          return w.status().with_context(fmt::format("rank {}", env.rank));
        }
        RDMALAB_TRY(handle(*w));
      }
    }
    return Status::ok();
  }
};

// ------------------------------------------------------------------------------------------
// The workload.

struct SizePlan {
  std::uint64_t bytes = 0, count = 0;
  Algorithm algo = Algorithm::ring;
  Plan out_of_place, in_place;
};

Status run_collective(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows, Collective coll) {
  const Params p = read_params(sc, coll);
  const std::size_t es = dtype_size(p.dtype);
  std::vector<SizePlan> sizes;
  std::vector<Plan> all;
  for (std::uint64_t req : p.sizes) {
    SizePlan s;
    s.count = count_for(req, coll, p.dtype, env.size);
    s.bytes = s.count * es;
    s.algo = p.algo ? *p.algo : default_algorithm(coll, s.bytes, env.size);
    CollectiveArgs a{coll, s.algo, env.rank, env.size, p.root, s.count, es, false};
    s.out_of_place = build_plan(a);
    a.in_place = true;
    if (p.in_place) s.in_place = build_plan(a);
    all.push_back(s.out_of_place);
    if (p.in_place) all.push_back(s.in_place);
    sizes.push_back(std::move(s));
  }
  Engine eng(env, p);
  RDMALAB_TRY(eng.setup(all));

  auto load_inputs = [&](const SizePlan& s, bool in_place) -> Status {
    auto v = make_input(p, env.size, env.rank, per_rank_blocks(coll) && coll == Collective::all_gather ? s.count / static_cast<std::uint64_t>(env.size) : s.count);
    if (v.empty()) return Status::ok();
    if (!in_place) return eng.mem->write(eng.in, 0, v.data(), v.size());
    // In place: the input sits where nccl-tests puts it inside the output buffer.
    const std::uint64_t off = coll == Collective::all_gather ? static_cast<std::uint64_t>(env.rank) * v.size() : 0;
    return eng.mem->write(eng.out, off, v.data(), v.size());
  };

  for (const SizePlan& s : sizes) {
    for (int place = 0; place < 2; ++place) {
      const bool in_place = place == 1;
      if (in_place ? !p.in_place : !p.out_of_place) continue;
      const Plan& plan = in_place ? s.in_place : s.out_of_place;
      if (p.memory != MemoryKind::phantom) RDMALAB_TRY(load_inputs(s, in_place));
      RDMALAB_TRY(env.boot.barrier());
      for (std::uint64_t i = 0; i < p.warmup; ++i) RDMALAB_TRY(eng.execute(plan));
      RDMALAB_TRY(env.boot.barrier());
      const double t0 = env.rt.now();
      for (std::uint64_t i = 0; i < p.iterations; ++i) RDMALAB_TRY(eng.execute(plan));
      const double t = (env.rt.now() - t0) / static_cast<double>(p.iterations);
      // The check run: fresh inputs, one more execution, every element compared.
      std::uint64_t wrong = 0;
      if (p.verify) {
        RDMALAB_TRY(load_inputs(s, in_place));
        RDMALAB_TRY(env.boot.barrier());
        RDMALAB_TRY(eng.execute(plan));
        auto expect = expected_output(p, env.size, env.rank, s.count);
        if (!expect.empty()) {
          std::vector<std::uint8_t> got(expect.size());
          const std::uint64_t off = in_place && coll == Collective::reduce_scatter ? static_cast<std::uint64_t>(env.rank) * expect.size() : 0;
          RDMALAB_TRY(eng.mem->read(eng.out, off, got.data(), got.size()));
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
      row.notes["verify"] = p.verify ? "on" : "off";
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
  const MemoryKind kind = memory_kind_of(sc);
  if (!memory_provider(kind)) return sc.error("workload.memory", fmt::format("no {} memory here: {}", memory_kind_name(kind), memory_unavailable_reason(kind)));
  if (!caps.memory_kinds.has(kind))
    return sc.error("workload.memory", fmt::format("this backend cannot register {} memory", memory_kind_name(kind)));
  (void)max_bytes;
  return Status::ok();
}

void add(WorkloadRegistry& reg, Collective coll, const char* desc) {
  WorkloadInfo w;
  w.name = collective_name(coll);
  w.description = desc;
  w.kind = WorkloadKind::collective;
  w.check = [coll](const Scenario& sc, const Capabilities& caps, int ranks) { return check_collective(sc, caps, ranks, coll); };
  w.run = [coll](RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows) { return run_collective(env, sc, rows, coll); };
  reg.add(std::move(w));
}

}  // namespace

void register_collectives(WorkloadRegistry& reg) {
  add(reg, Collective::all_reduce, "all-reduce: ring, double binary tree or halving-doubling (nccl-tests all_reduce_perf)");
  add(reg, Collective::all_gather, "all-gather, ring (all_gather_perf)");
  add(reg, Collective::reduce_scatter, "reduce-scatter, ring (reduce_scatter_perf)");
  add(reg, Collective::broadcast, "broadcast from a root: pipelined chain or binomial tree (broadcast_perf)");
  add(reg, Collective::reduce, "reduce to a root: pipelined chain or binomial tree (reduce_perf)");
  add(reg, Collective::all_to_all, "all-to-all, pairwise exchange (alltoall_perf)");
  add(reg, Collective::sendrecv, "each rank sends to the next and receives from the previous (sendrecv_perf)");
}

}  // namespace rdmalab::workloads
