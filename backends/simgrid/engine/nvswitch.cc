// NVLink SHARP (NCCL's NVLS) on a node's NVSwitch: Device::switch_collective on the model.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

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
// A host speed at or above this is the platform's "not limiting" (1e15: SHARP's ANs unless fabric.sharp.bandwidth).
constexpr double kNotLimiting = 1e15;

// The chunks of one shard (at least one, so an empty shard still has a unit to deliver).
std::uint64_t chunks_per_shard(const SwitchCollective& a, int p) {
  const std::uint64_t shard = a.bytes / static_cast<std::uint64_t>(p);
  const std::uint64_t chunk = std::max<std::uint64_t>(1, a.chunk);
  return std::max<std::uint64_t>(1, (shard + chunk - 1) / chunk);
}

// The next of `flights` (each with its activity `act`) to end, taken out of the list; `set` is
// the caller's scratch list of their activities.
template <class Flight>
Flight next_done(std::vector<Flight>& flights, std::vector<sg4::ActivityPtr>& set) {
  set.clear();
  for (const auto& f : flights) set.push_back(f.act);
  const ssize_t i = sg4::Activity::wait_any(set);
  const Flight f = flights[static_cast<std::size_t>(i)];
  flights.erase(flights.begin() + i);
  return f;
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
    const Flight f = next_done(flights, set);
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

// NVLSTree (SwitchCollective::nodes > 1), NCCL's RunWorkColl<AllReduce, NVLS_TREE, SIMPLE>: on
// each node every GPU scatters its copy of a unit up to the node's switch, the switch reduces the
// node's copies, the unit's head reads the node's sum (its channel's kernel moving at most
// head_bw), sends it up the tree to its parent node's same head once its children's sums have
// arrived, and at the root the total goes back down the tree; each head stores the total up once
// and its switch multicasts it to the node's GPUs. A unit is one chunk of one head's shard on one
// node; the node-local stages are pipelines per (node, head), two units deep (one for the head's
// kernel), as in run_switch.
// With SHARP (SwitchCollective::in_network, NCCL's NVLS with CollNet) the tree between the nodes
// is the network's: each head's NIC sends the node's sum, chunk after chunk, to the aggregation
// node of its rail's leaf switch; an AN reduces a chunk once all its children's have arrived and
// sends it to its parent's AN; the root's total comes back down the same tree to every head.
// CollNet Direct (SwitchCollective::direct) has no switch in the node: the GPUs send the head
// their copies over NVLink, the head reduces them and after the network sends the total to each.
struct TreeLayout {
  std::uint64_t base = 0, per_shard = 1;  // a head's shard (the last takes the rest), its chunks
};
TreeLayout tree_layout(const SwitchCollective& a, std::size_t heads) {
  TreeLayout t;
  const std::size_t es = dtype_size(static_cast<DataType>(a.dtype));
  t.base = a.bytes / heads / es * es;
  const std::uint64_t last = a.bytes - t.base * (heads - 1);
  const std::uint64_t chunk = std::max<std::uint64_t>(1, a.chunk);
  t.per_shard = std::max<std::uint64_t>(1, (last + chunk - 1) / chunk);
  return t;
}

void run_nvls_tree(SwitchCall& call) {
  const SwitchCollective& a = call.args;
  const int nodes = a.nodes;
  const int L = call.p / nodes;
  const std::size_t H = call.heads.size();
  const TreeLayout lay = tree_layout(a, H);
  const std::uint64_t chunk = std::max<std::uint64_t>(1, a.chunk);
  const std::uint64_t keys = H * lay.per_shard;  // (head, chunk) pairs; a unit is one on one node
  const std::uint64_t units = keys * static_cast<std::uint64_t>(nodes);
  const auto dtype = static_cast<DataType>(a.dtype);
  const auto op = static_cast<ReduceOp>(a.op);
  const std::size_t es = dtype_size(dtype);
  if (a.latency_s > 0) sg4::this_actor::sleep_for(a.latency_s);

  enum Stage { up, reduce, to_head, kernel, tree, store, mcast, done };
  constexpr int kStages = 8;
  struct Unit {
    int node = 0;
    std::uint64_t head = 0, at = 0, len = 0;  // at: offset in the buffer
    int stage = up, pending = 0;
    int have = 0;  // tree: sums arrived from children, plus its own
    bool sent_up = false;
  };
  std::vector<Unit> u(units);
  for (std::uint64_t k = 0; k < units; ++k) {
    Unit& x = u[k];
    x.node = static_cast<int>(k / keys);
    const std::uint64_t key = k % keys;
    x.head = key / lay.per_shard;
    const std::uint64_t c = key % lay.per_shard;
    const std::uint64_t shard_len = x.head + 1 < H ? lay.base : a.bytes - lay.base * (H - 1);
    const std::uint64_t off = c * chunk;
    x.at = x.head * lay.base + off;
    x.len = off < shard_len ? std::min(chunk, shard_len - off) : 0;
  }
  std::vector<std::vector<int>> children[2];
  for (int t = 0; t < 2; ++t) {
    children[t].assign(static_cast<std::size_t>(nodes), {});
    for (int i = 0; i < nodes && !a.in_network; ++i) {
      const int parent = a.tree_parent[t][static_cast<std::size_t>(i)];
      if (parent >= 0) children[t][static_cast<std::size_t>(parent)].push_back(i);
    }
  }
  // SHARP (a.in_network): the aggregation nodes of each head's rail tree. an[i] is one AN of
  // head h's tree: its parent there, its children (ANs below it, and the nodes whose head it
  // receives), and what it waits for per key.
  struct An {
    sg4::Host* host = nullptr;
    int parent = -1;
    std::vector<int> child_ans, child_nodes;
  };
  std::vector<An> an;
  std::vector<int> leaf_an(static_cast<std::size_t>(nodes) * H, -1);  // [node * H + head]
  std::vector<std::uint32_t> an_have;                                  // [an * keys + key]
  if (a.in_network) {
    std::map<std::pair<std::size_t, const sg4::Host*>, int> index;
    auto an_of = [&](std::size_t h, sg4::Host* host) {
      auto [it, fresh] = index.try_emplace({h, host}, static_cast<int>(an.size()));
      if (fresh) an.push_back({host, -1, {}, {}});
      return it->second;
    };
    for (int n = 0; n < nodes; ++n)
      for (std::size_t h = 0; h < H; ++h) {
        const auto& chain = call.sharp[static_cast<std::size_t>(n * L + call.heads[h])];
        int below = -1;
        for (std::size_t j = 0; j < chain.size(); ++j) {
          const int i = an_of(h, chain[j]);
          if (j == 0) {
            leaf_an[static_cast<std::size_t>(n) * H + h] = i;
            an[static_cast<std::size_t>(i)].child_nodes.push_back(n);
          } else if (std::find(an[static_cast<std::size_t>(i)].child_ans.begin(), an[static_cast<std::size_t>(i)].child_ans.end(), below) ==
                     an[static_cast<std::size_t>(i)].child_ans.end()) {
            an[static_cast<std::size_t>(i)].child_ans.push_back(below);
          }
          if (below >= 0) an[static_cast<std::size_t>(below)].parent = i;
          below = i;
        }
      }
    an_have.assign(an.size() * keys, 0);
  }
  auto tree_of = [&](std::uint64_t k) { return static_cast<int>((k % keys) % lay.per_shard % 2); };
  auto unit_at = [&](int node, std::uint64_t k) { return static_cast<std::uint64_t>(node) * keys + k % keys; };
  auto gpu = [&](int node, int local) { return call.gpu[static_cast<std::size_t>(node * L + local)]; };
  auto head = [&](const Unit& x) { return gpu(x.node, call.heads[x.head]); };
  auto sw = [&](int node) { return call.node_sw[static_cast<std::size_t>(node)]; };

  enum Kind { stage_flow, up_arrival, down_arrival, head_sent, an_arrival, an_reduced, an_result, head_result };
  struct Flight {
    sg4::ActivityPtr act;
    std::uint64_t unit;
    int dest;  // the rank a multicast transfer delivers to, or -1
    Kind kind;
  };
  std::vector<Flight> flights;
  auto send = [&](sg4::Host* from, sg4::Host* to, std::uint64_t k, int dest, Kind kind, double factor) {
    const double bytes = std::max(1.0, static_cast<double>(u[k].len) * factor);
    flights.push_back({sg4::Comm::sendto_async(from, to, static_cast<std::uint64_t>(bytes)), k, dest, kind});
  };
  auto exec_on = [&](sg4::Host* h, double seconds, std::uint64_t k, int dest = -1, Kind kind = stage_flow) {
    sg4::ExecPtr e = sg4::this_actor::exec_init(std::max(1.0, seconds * h->get_speed()));
    e->set_host(h);
    e->start();
    flights.push_back({e, k, dest, kind});
  };
  auto deliver = [&](std::uint64_t k, int rank) {
    const Unit& x = u[k];
    if (a.real && x.len) std::memcpy(call.out[static_cast<std::size_t>(rank)] + x.at, call.result.data() + x.at, x.len);
    std::unique_lock lock(*call.mu);
    if (++call.delivered[static_cast<std::size_t>(rank)] == call.expected[static_cast<std::size_t>(rank)]) call.cv->notify_all();
  };
  std::vector<std::uint64_t> busy(static_cast<std::size_t>(nodes) * H * kStages, 0);
  std::vector<std::deque<std::uint64_t>> waiting(busy.size());
  auto queue = [&](const Unit& x, int t) { return (static_cast<std::size_t>(x.node) * H + x.head) * kStages + static_cast<std::size_t>(t); };
  // SHARP: a head keeps at most NCCL_STEPS (8) chunks in the network at once (its proxy's slots).
  auto depth = [&](int t) -> std::uint64_t { return t == kernel ? 1 : t == tree ? 8 : kSwitchStageDepth; };
  // SHARP: a head's NIC sends its chunks to the aggregation node one after another, in order (one
  // queue pair's messages), not all at once sharing the link: chunks that shared it would all end
  // together and leave the link idle while their totals came back.
  std::vector<std::deque<std::uint64_t>> nic_queue(static_cast<std::size_t>(nodes) * H);
  std::vector<char> nic_busy(nic_queue.size(), 0);
  auto nic_next = [&](std::size_t q) {
    if (nic_busy[q] || nic_queue[q].empty()) return;
    const std::uint64_t k = nic_queue[q].front();
    nic_queue[q].pop_front();
    nic_busy[q] = 1;
    const int i = leaf_an[q];
    send(head(u[k]), an[static_cast<std::size_t>(i)].host, k, i, head_sent, 1.0);
  };
  auto post_up = [&](std::uint64_t k) {
    const std::size_t q = static_cast<std::size_t>(u[k].node) * H + u[k].head;
    nic_queue[q].push_back(k);
    nic_next(q);
  };
  auto begin = [&](std::uint64_t k) {
    Unit& x = u[k];
    switch (x.stage) {
      case up:  // every GPU's copy to the switch (CollNet Direct: to the head, over NVLink)
        x.pending = L;
        for (int l = 0; l < L; ++l) send(gpu(x.node, l), a.direct ? head(x) : sw(x.node), k, -1, stage_flow, a.wire_factor);
        break;
      case reduce:
        x.pending = 1;
        if (a.direct)  // the head adds L copies in its memory: L read, one written
          exec_on(head(x), a.gpu_memory_bw > 0 ? static_cast<double>(x.len) * (L + 1) / a.gpu_memory_bw : 0, k);
        else
          exec_on(sw(x.node), static_cast<double>(x.len) * L / sw(x.node)->get_speed(), k);
        break;
      case to_head:
        x.pending = 1;
        send(sw(x.node), head(x), k, -1, stage_flow, a.wire_factor);
        break;
      case kernel:
        x.pending = 1;
        exec_on(head(x), a.head_bw > 0 ? static_cast<double>(x.len) / a.head_bw : 0, k);
        break;
      case store:
        x.pending = 1;
        send(head(x), sw(x.node), k, -1, stage_flow, a.wire_factor);
        break;
      case tree:  // SHARP: the node's sum to its rail's leaf aggregation node; done when the total is back
        post_up(k);
        break;
      case mcast:  // the switch multicasts the total (CollNet Direct: the head sends it to each GPU)
        x.pending = L;
        for (int l = 0; l < L; ++l) send(a.direct ? head(x) : sw(x.node), gpu(x.node, l), k, x.node * L + l, stage_flow, a.wire_factor);
        break;
      default: break;
    }
  };
  std::uint64_t finished = 0;
  std::function<void(std::uint64_t, int)> enter;
  auto pump = [&](const Unit& x, int t) {
    const std::size_t q = queue(x, t);
    while (!waiting[q].empty() && busy[q] < depth(t)) {
      const std::uint64_t k = waiting[q].front();
      waiting[q].pop_front();
      ++busy[q];
      begin(k);
    }
  };
  // SHARP: the total for key k comes down from aggregation node i to the ANs and heads below it.
  auto an_down = [&](int i, std::uint64_t k) {
    const An& x = an[static_cast<std::size_t>(i)];
    for (int c : x.child_ans) send(x.host, an[static_cast<std::size_t>(c)].host, k, c, an_result, 1.0);
    for (int m : x.child_nodes) send(x.host, head(u[unit_at(m, k)]), unit_at(m, k), -1, head_result, 1.0);
  };
  // The total of key k (every node's sum), for every node's delivery.
  auto total = [&](std::uint64_t k) {
    const Unit& x = u[k];
    if (!a.real || !x.len) return;
    std::memcpy(call.result.data() + x.at, call.in[0] + x.at, x.len);
    for (std::size_t r = 1; r < call.in.size(); ++r)
      host_reduce(call.result.data() + x.at, call.result.data() + x.at, call.in[r] + x.at, x.len / es, dtype, op);
  };
  // The result goes down from unit k's node to its children, and k moves on to its store.
  std::function<void(std::uint64_t)> down = [&](std::uint64_t k) {
    const Unit& x = u[k];
    for (int child : children[tree_of(k)][static_cast<std::size_t>(x.node)]) send(head(x), head(u[unit_at(child, k)]), unit_at(child, k), -1, down_arrival, 1.0);
    enter(k, store);
  };
  // Unit k has its own sum and perhaps its children's: up to the parent once it has all.
  auto climb = [&](std::uint64_t k) {
    Unit& x = u[k];
    const int t = tree_of(k);
    if (x.sent_up || x.stage != tree || x.have < static_cast<int>(children[t][static_cast<std::size_t>(x.node)].size()) + 1) return;
    x.sent_up = true;
    const int parent = a.tree_parent[t][static_cast<std::size_t>(x.node)];
    if (parent >= 0) {
      send(head(x), head(u[unit_at(parent, k)]), unit_at(parent, k), -1, up_arrival, 1.0);
      return;
    }
    total(k);  // the root has every node's sum
    down(k);
  };
  enter = [&](std::uint64_t k, int t) {
    Unit& x = u[k];
    x.stage = t;
    if (a.direct && (t == to_head || t == store)) {  // CollNet Direct: the head already holds what a switch would give it
      enter(k, t + 1);
      return;
    }
    if (t == done) {
      ++finished;
      return;
    }
    if (t == tree && !a.in_network) {
      ++x.have;
      climb(k);
      return;
    }
    waiting[queue(x, t)].push_back(k);
    pump(x, t);
  };
  for (std::uint64_t k = 0; k < units; ++k) enter(k, up);
  std::vector<sg4::ActivityPtr> set;
  while (finished < units) {
    const Flight f = next_done(flights, set);
    Unit& x = u[f.unit];
    if (f.kind == up_arrival) {
      ++x.have;
      climb(f.unit);
      continue;
    }
    if (f.kind == down_arrival) {
      down(f.unit);
      continue;
    }
    if (f.kind == head_sent) {  // the head's NIC takes its next chunk; the input is at its leaf's AN
      const std::size_t q = static_cast<std::size_t>(x.node) * H + x.head;
      nic_busy[q] = 0;
      nic_next(q);
    }
    if (f.kind == an_arrival || f.kind == head_sent) {  // an input reached aggregation node f.dest: it reduces once it has all
      const An& n = an[static_cast<std::size_t>(f.dest)];
      const std::size_t inputs = n.child_ans.size() + n.child_nodes.size();
      if (++an_have[static_cast<std::size_t>(f.dest) * keys + f.unit % keys] != inputs) continue;
      if (n.host->get_speed() < kNotLimiting) {  // its output at its aggregation rate
        exec_on(n.host, static_cast<double>(x.len) / n.host->get_speed(), f.unit, f.dest, an_reduced);
        continue;
      }
    }
    if (f.kind == an_arrival || f.kind == head_sent || f.kind == an_reduced) {  // up to the parent's aggregation node; at the root, back down
      const An& n = an[static_cast<std::size_t>(f.dest)];
      if (n.parent >= 0) {
        send(n.host, an[static_cast<std::size_t>(n.parent)].host, f.unit, n.parent, an_arrival, 1.0);
      } else {
        total(f.unit);
        an_down(f.dest, f.unit);
      }
      continue;
    }
    if (f.kind == an_result) {
      an_down(f.dest, f.unit);
      continue;
    }
    if (f.kind == head_result) {
      --busy[queue(x, tree)];
      pump(x, tree);
      enter(f.unit, store);
      continue;
    }
    if (f.dest >= 0) deliver(f.unit, f.dest);
    if (--x.pending > 0) continue;
    const int t = x.stage;
    --busy[queue(x, t)];
    pump(x, t);
    enter(f.unit, t == kernel ? tree : t == mcast ? done : t + 1);
  }
}

}  // namespace

Status run_switch_collective(World& w_, int rank_, const SwitchCollective& a) {
    const RankEndpoints& e = w_.eps[static_cast<std::size_t>(rank_)];
    const int p = static_cast<int>(w_.eps.size());
    if (!e.nvswitch && !a.direct) return Status(Errc::not_supported, "this node's NVSwitch does not reduce (fabric.node.nvswitch.reduce)");
    if (a.direct && !a.in_network) return Status(Errc::invalid_argument, "CollNet Direct reduces in the network (in_network)");
    const int nodes = std::max(1, a.nodes);
    if (p % nodes != 0) return Status(Errc::invalid_argument, fmt::format("{} ranks do not fill {} nodes", p, nodes));
    const int L = p / nodes;
    for (int r = 0; r < p && !a.direct; ++r) {
      const sg4::Host* mine = w_.eps[static_cast<std::size_t>(r / L * L)].nvswitch;
      if (w_.eps[static_cast<std::size_t>(r)].nvswitch != mine)
        return Status(Errc::not_supported, nodes == 1 ? std::string("nvls runs inside one node: every rank must be on it")
                                                      : fmt::format("rank {} is not on the NVSwitch of node {}'s other ranks", r, r / L));
      if (nodes > 1 && r >= L && r % L == 0 && mine == w_.eps[static_cast<std::size_t>(r - L)].nvswitch)
        return Status(Errc::invalid_argument, fmt::format("ranks {} and {} share an NVSwitch: not {} nodes", r - L, r, nodes));
    }
    if (nodes > 1 && !a.in_network && (a.kind != SwitchCollective::Kind::all_reduce || a.tree_parent[0].size() != static_cast<std::size_t>(nodes) ||
                                       a.tree_parent[1].size() != static_cast<std::size_t>(nodes)))
      return Status(Errc::invalid_argument, "NVLSTree is an all_reduce with a parent per node in each of its two trees");
    if (a.in_network && (nodes < 2 || a.kind != SwitchCollective::Kind::all_reduce))
      return Status(Errc::invalid_argument, "NVLS with SHARP is an all_reduce across nodes");
    if (a.in_network)
      for (int r = 0; r < p; ++r)
        if (w_.eps[static_cast<std::size_t>(r)].sharp.empty())
          return Status(Errc::not_supported, fmt::format("rank {}'s rail has no switch that reduces (fabric.sharp.tiers)", r));
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
      slot->sw = a.direct ? w_.eps[0].gpu : e.nvswitch;  // where the call's actor runs
      if (nodes > 1) {
        for (int n = 0; n < nodes; ++n) slot->node_sw.push_back(w_.eps[static_cast<std::size_t>(n * L)].nvswitch);
        // NCCL's NVLS heads: one GPU per NIC (the first GPU attached to it; on rails, every GPU).
        const auto& gpu_nic = w_.model.node.gpu_nic;
        const bool rails = w_.model.rail.gpus > 0;
        std::vector<int> seen;
        for (int l = 0; l < L; ++l) {
          const int nic = rails ? l : static_cast<std::size_t>(l) < gpu_nic.size() ? gpu_nic[static_cast<std::size_t>(l)] : 0;
          if (std::find(seen.begin(), seen.end(), nic) == seen.end()) {
            seen.push_back(nic);
            slot->heads.push_back(l);
          }
        }
      }
      if (a.in_network)
        for (int r = 0; r < p; ++r) slot->sharp.push_back(w_.eps[static_cast<std::size_t>(r)].sharp);
      if (a.real && a.kind != SwitchCollective::Kind::all_gather) slot->result.assign(a.bytes, 0);
    }
    std::shared_ptr<SwitchCall> call = slot;
    if (call->args.kind != a.kind || call->args.bytes != a.bytes || call->args.nodes != a.nodes || call->args.in_network != a.in_network || call->args.direct != a.direct)
      return Status(Errc::invalid_argument, fmt::format("rank {}: switch collective {} does not match the other ranks'", rank_, seq));
    const auto me = static_cast<std::size_t>(rank_);
    call->in[me] = static_cast<const std::uint8_t*>(a.in);
    call->out[me] = static_cast<std::uint8_t*>(a.out);
    call->gpu[me] = e.gpu;
    if (nodes > 1) {
      call->expected[me] = tree_layout(a, call->heads.size()).per_shard * call->heads.size();
    } else {
      const std::uint64_t per_shard = chunks_per_shard(a, p);
      call->expected[me] = a.kind == SwitchCollective::Kind::reduce_scatter ? per_shard : per_shard * static_cast<std::uint64_t>(p);
    }
    if (++call->entered == p)
      sg4::Actor::create(fmt::format("nvswitch-{}", seq), call->sw, [call, nodes] {
        if (nodes > 1) run_nvls_tree(*call);
        else run_switch(*call);
      });
    {
      std::unique_lock lock(*call->mu);
      while (call->delivered[me] < call->expected[me]) call->cv->wait(lock);
    }
    if (++call->left == p) w_.switch_calls.erase(seq);
    return Status::ok();
}

}  // namespace rdmalab::sim
