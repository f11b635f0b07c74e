// NVLink SHARP (NCCL's NVLS) on a node's NVSwitch: Device::switch_collective on the model.
#include <fmt/format.h>

#include "rdmalab/reduce.h"
#include "simgrid/engine/progress.h"
#include "simgrid/engine/world.h"

namespace rdmalab::sim {
namespace {

// The switch's side of one call (SwitchCall): the data in chunks, NCCL's NVLS way. A unit is one
// chunk of one shard; shard s is owned by rank s, and every owner works on its shard at once.
// all_reduce, in stages: every GPU sends the unit up (multimem.ld_reduce reads it through the
// switch); the switch reduces the p inputs (at its reduction rate: the switch host's speed); the
// sum goes down to the owner, which stores it back up once (multimem.st); the switch multicasts it
// down to every GPU. reduce_scatter stops at the owner; all_gather starts at the owner's store.
// Each transfer crosses one GPU's NVLink in one direction. Each stage is a pipeline of its own
// per owner, at most kSwitchStageDepth units deep (NCCL's buffers: a unit moves on as soon as the
// next stage has room), so the stages of successive units overlap and both directions of every
// NVLink stay busy.
constexpr std::uint64_t kSwitchStageDepth = 2;

// The chunks of one shard (at least one, so an empty shard still has a unit to deliver).
std::uint64_t chunks_per_shard(const SwitchCollective& a, int p) {
  const std::uint64_t shard = a.bytes / static_cast<std::uint64_t>(p);
  const std::uint64_t chunk = std::max<std::uint64_t>(1, a.chunk);
  return std::max<std::uint64_t>(1, (shard + chunk - 1) / chunk);
}

void run_switch(SwitchCall& call) {
  const SwitchCollective& a = call.args;
  const int p = call.p;
  const auto up = static_cast<std::uint64_t>(p);
  const std::uint64_t shard = a.bytes / up;
  const std::uint64_t chunk = std::max<std::uint64_t>(1, a.chunk);
  const std::uint64_t units = chunks_per_shard(a, p) * up;
  const auto dtype = static_cast<DataType>(a.dtype);
  const auto op = static_cast<ReduceOp>(a.op);
  const std::size_t es = dtype_size(dtype);
  enum Stage { inputs_up, reduce, sum_down, store_up, multicast, done };
  std::vector<Stage> stages;
  if (a.kind != SwitchCollective::Kind::all_gather) stages = {inputs_up, reduce, sum_down};
  if (a.kind != SwitchCollective::Kind::reduce_scatter) stages.insert(stages.end(), {store_up, multicast});
  stages.push_back(done);
  if (a.latency_s > 0) sg4::this_actor::sleep_for(a.latency_s);

  struct Unit {
    std::uint64_t shard = 0, off = 0, len = 0;  // off, len: within the shard
    std::size_t stage = 0;                       // index into stages
    int pending = 0;
  };
  struct Flight {
    sg4::ActivityPtr act;
    std::uint64_t unit;
    int dest;  // the GPU a downward transfer delivers to, or -1
  };
  std::vector<Unit> u(units);  // unit k: chunk k / p of shard k % p
  for (std::uint64_t k = 0; k < units; ++k) {
    u[k].shard = k % up;
    u[k].off = (k / up) * chunk;
    u[k].len = u[k].off < shard ? std::min(chunk, shard - u[k].off) : 0;
  }
  std::vector<Flight> flights;
  const std::size_t nstages = stages.size();
  std::vector<std::uint64_t> busy(up * nstages, 0);             // units in a stage, per owner
  std::vector<std::deque<std::uint64_t>> waiting(up * nstages);  // units waiting for it
  auto gpu = [&](std::uint64_t h) { return call.gpu[static_cast<std::size_t>(h)]; };
  auto send = [&](sg4::Host* from, sg4::Host* to, std::uint64_t k, int dest) {
    const double bytes = std::max(1.0, static_cast<double>(u[k].len) * a.wire_factor);
    flights.push_back({sg4::Comm::sendto_async(from, to, static_cast<std::uint64_t>(bytes)), k, dest});
  };
  auto deliver = [&](std::uint64_t k, std::uint64_t h) {  // unit k has reached GPU h
    const Unit& x = u[k];
    const std::uint64_t at = x.shard * shard + x.off;
    std::uint8_t* out = call.out[static_cast<std::size_t>(h)];
    if (a.real && x.len) {
      if (a.kind == SwitchCollective::Kind::reduce_scatter) std::memcpy(out + x.off, call.result.data() + at, x.len);
      else if (a.kind == SwitchCollective::Kind::all_reduce) std::memcpy(out + at, call.result.data() + at, x.len);
      else std::memcpy(out + at, call.in[static_cast<std::size_t>(x.shard)] + x.off, x.len);
    }
    std::unique_lock lock(*call.mu);
    if (++call.delivered[static_cast<std::size_t>(h)] == call.expected[static_cast<std::size_t>(h)]) call.cv->notify_all();
  };
  auto begin = [&](std::uint64_t k) {  // unit k starts its current stage
    Unit& x = u[k];
    switch (stages[x.stage]) {
      case inputs_up:
        x.pending = p;
        for (std::uint64_t h = 0; h < up; ++h) send(gpu(h), call.sw, k, -1);
        break;
      case reduce:
        if (a.real && x.len) {  // the switch adds the p inputs
          const std::uint64_t at = x.shard * shard + x.off;
          std::memcpy(call.result.data() + at, call.in[0] + at, x.len);
          for (std::size_t h = 1; h < call.in.size(); ++h)
            host_reduce(call.result.data() + at, call.result.data() + at, call.in[h] + at, x.len / es, dtype, op);
        }
        x.pending = 1;
        flights.push_back({sg4::this_actor::exec_async(static_cast<double>(x.len) * p), k, -1});
        break;
      case sum_down:
        x.pending = 1;
        send(call.sw, gpu(x.shard), k, static_cast<int>(x.shard));
        break;
      case store_up:
        x.pending = 1;
        send(gpu(x.shard), call.sw, k, -1);
        break;
      case multicast:
        x.pending = p;
        for (std::uint64_t h = 0; h < up; ++h) send(call.sw, gpu(h), k, static_cast<int>(h));
        break;
      case done: break;
    }
  };
  auto pump = [&](std::uint64_t s, std::size_t t) {  // start what stage t of owner s has room for
    const std::size_t q = s * nstages + t;
    while (!waiting[q].empty() && busy[q] < kSwitchStageDepth) {
      const std::uint64_t k = waiting[q].front();
      waiting[q].pop_front();
      ++busy[q];
      begin(k);
    }
  };
  std::uint64_t finished = 0;
  auto enter = [&](std::uint64_t k, std::size_t t) {
    u[k].stage = t;
    if (stages[t] == done) {
      ++finished;
      return;
    }
    waiting[u[k].shard * nstages + t].push_back(k);
    pump(u[k].shard, t);
  };
  for (std::uint64_t k = 0; k < units; ++k) enter(k, 0);
  std::vector<sg4::ActivityPtr> set;
  while (finished < units) {
    set.clear();
    for (const auto& f : flights) set.push_back(f.act);
    const ssize_t i = sg4::Activity::wait_any(set);
    const Flight f = flights[static_cast<std::size_t>(i)];
    flights.erase(flights.begin() + i);
    Unit& x = u[f.unit];
    const Stage st = stages[x.stage];
    if ((st == multicast || (st == sum_down && a.kind == SwitchCollective::Kind::reduce_scatter)) && f.dest >= 0)
      deliver(f.unit, static_cast<std::uint64_t>(f.dest));
    if (--x.pending > 0) continue;
    const std::size_t t = x.stage;
    --busy[x.shard * nstages + t];
    pump(x.shard, t);
    enter(f.unit, t + 1);
  }
}

}  // namespace

Status run_switch_collective(World& w_, int rank_, const SwitchCollective& a) {
    const RankEndpoints& e = w_.eps[static_cast<std::size_t>(rank_)];
    const int p = static_cast<int>(w_.eps.size());
    if (!e.nvswitch) return Status(Errc::not_supported, "this node's NVSwitch does not reduce (fabric.node.nvswitch.reduce)");
    for (const auto& o : w_.eps)
      if (o.nvswitch != e.nvswitch) return Status(Errc::not_supported, "nvls runs inside one node: every rank must be on it");
    if (w_.switch_seq.empty()) w_.switch_seq.assign(static_cast<std::size_t>(p), 0);
    const std::uint64_t seq = w_.switch_seq[static_cast<std::size_t>(rank_)]++;
    auto& slot = w_.switch_calls[seq];
    if (!slot) {
      slot = std::make_shared<SwitchCall>();
      slot->args = a;
      slot->p = p;
      slot->in.assign(static_cast<std::size_t>(p), nullptr);
      slot->out.assign(static_cast<std::size_t>(p), nullptr);
      slot->gpu.assign(static_cast<std::size_t>(p), nullptr);
      slot->delivered.assign(static_cast<std::size_t>(p), 0);
      slot->expected.assign(static_cast<std::size_t>(p), 0);
      slot->sw = e.nvswitch;
      if (a.real && a.kind != SwitchCollective::Kind::all_gather) slot->result.assign(a.bytes, 0);
    }
    std::shared_ptr<SwitchCall> call = slot;
    if (call->args.kind != a.kind || call->args.bytes != a.bytes)
      return Status(Errc::invalid_argument, fmt::format("rank {}: switch collective {} does not match the other ranks'", rank_, seq));
    const auto me = static_cast<std::size_t>(rank_);
    call->in[me] = static_cast<const std::uint8_t*>(a.in);
    call->out[me] = static_cast<std::uint8_t*>(a.out);
    call->gpu[me] = e.gpu;
    const std::uint64_t per_shard = chunks_per_shard(a, p);
    call->expected[me] = a.kind == SwitchCollective::Kind::reduce_scatter ? per_shard : per_shard * static_cast<std::uint64_t>(p);
    if (++call->entered == p)
      sg4::Actor::create(fmt::format("nvswitch-{}", seq), call->sw, [call] { run_switch(*call); });
    {
      std::unique_lock lock(*call->mu);
      while (call->delivered[me] < call->expected[me]) call->cv->wait(lock);
    }
    if (++call->left == p) w_.switch_calls.erase(seq);
    return Status::ok();
}

}  // namespace rdmalab::sim
