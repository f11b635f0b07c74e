// The simulated NIC: how a request's phases start (message-rate gate, route latency, through the
// responder's inbox or host to host), what the responder does when a request arrives (keys,
// bounds, access rights, receive queue and RNR, the bytes), and how requests complete in order.
#include <cmath>
#include <fmt/format.h>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/simix.hpp>

#include "common/soft_rc/soft_rc.h"
#include "simgrid/engine/objects.h"

namespace rdmalab::sim {

void World::abort(const std::string& why) {
  if (aborted) return;
  aborted = true;
  abort_reason = why;
  for (auto& n : nics) wake_later(n->rank);
  flush_wakes();
}

// ------------------------------------------------------------------------------------------
// The NIC: starting phases, and what happens when a phase's transfer ends.

double phase_wire_bytes(const World& w, const Op& op) {
  const NicModel& nic = w.model.nic;
  const bool atomic = op.wr.opcode == SendOpcode::atomic_fetch_add || op.wr.opcode == SendOpcode::atomic_cmp_swap;
  if (op.phase == 0) {
    if (op.wr.opcode == SendOpcode::rdma_read || atomic) return nic.control_bytes;
    return wire_bytes(nic, static_cast<double>(op.len) * op.wr.wire_factor);
  }
  if (op.wr.opcode == SendOpcode::rdma_read) return wire_bytes(nic, static_cast<double>(op.len));
  if (atomic) return wire_bytes(nic, 8);
  return nic.control_bytes;  // ACK
}

// Lists a request in its requester's transfers on the wire, once its transfer's s4u call has
// returned and set op.comm (others ran during that call: the requester's wait may have dropped it
// from the list meanwhile, while op.comm was not set).
void list_own(Nic& requester, Op& op) {
  if (op.listed) return;
  op.listed = true;
  requester.own.push_back(OpPtr(&op));
}

// Lists a request in its requester's requests waiting for a start time (op.timer_at).
void list_timed(World& w, Op& op) {
  if (op.timed) return;
  op.timed = true;
  Nic& nic = *w.nics[static_cast<std::size_t>(op.qp->rank)];
  nic.timed.push_back(OpPtr(&op));
  nic.has_timed = true;
}

// Starts, in one simcall, what was made without starting (World::batch), in the order made. The
// list is the caller's own from here on: others run before the simcall is carried out, and may
// batch too.
void World::start_batch() {
  if (batch.empty()) return;
  batch_puts = 0;
  std::vector<sg4::CommPtr> mine;
  mine.swap(spare_batch);
  mine.swap(batch);
  simgrid::kernel::actor::simcall_answered([&mine] {
    for (auto& c : mine) c->vetoable_start();
  });
  mine.clear();
  if (mine.capacity() > spare_batch.capacity()) mine.swap(spare_batch);
}

// A phase that carries no payload: a read's or an atomic's request, the ACK of a write or a send,
// a zero-length write or send (the collectives' credits). It takes its route's latency and no
// bandwidth: its few header bytes would take nanoseconds of a link, but as a transfer it would be
// one more flow in SimGrid's max-min system, and flows going back against the data join every
// link of a ring into one system that SimGrid then solves whole at each start and end (a cost
// that grew as the flows in flight, squared).
bool control_only(const Op& op) {
  const SendOpcode oc = op.wr.opcode;
  const bool read = oc == SendOpcode::rdma_read;
  const bool atomic = oc == SendOpcode::atomic_fetch_add || oc == SendOpcode::atomic_cmp_swap;
  if (op.phase == 0) return read || atomic || op.len == 0;
  return !read && !atomic;
}

// What the route between two endpoints is: its latency, and whether it crosses a link that is
// down (SimGrid computes routes on demand: kept).
const World::Route& route(World& w, sg4::Host* src, sg4::Host* dst) {
  auto [it, fresh] = w.routes.try_emplace({src, dst});
  if (fresh) {
    std::vector<sg4::Link*> links;
    src->route_to(dst, links, &it->second.latency);
    for (const sg4::Link* l : links)
      it->second.down = it->second.down || std::find(w.down_links.begin(), w.down_links.end(), l) != w.down_links.end();
  }
  return it->second;
}
double route_latency(World& w, sg4::Host* src, sg4::Host* dst) { return route(w, src, dst).latency; }

// The hosts a request runs between: the requester's and the responder's (rank), by the memory
// each side touches: GPU memory by GPUDirect or staged, host memory (the same host when there is no
// node model: then the regions are not looked up). A send's receive buffer is not known until it
// arrives: it is taken to be of the sender's kind.
struct Ends {
  sg4::Host* me;
  sg4::Host* peer;
  int peer_rank;
};
Ends request_ends(World& w, const Op& op) {
  SimgridQp* qp = op.qp;
  const SimgridQp* pq = qp->peer();
  int peer_rank = pq ? pq->rank : static_cast<int>(qp->conn.remote.rank);
  if (peer_rank < 0 || peer_rank >= static_cast<int>(w.hosts.size())) peer_rank = qp->rank;
  sg4::Host* me = w.hosts[static_cast<std::size_t>(qp->rank)];
  sg4::Host* peer = w.hosts[static_cast<std::size_t>(peer_rank)];
  if (!w.one_endpoint) {
    auto kind_of = [](const MrRec* rec, MemoryKind dflt) { return rec ? rec->kind : dflt; };
    const MemoryKind local = op.sges.empty() ? MemoryKind::host : kind_of(w.mrs.local(op.sges.front().lkey), MemoryKind::host);
    const bool rdma = op.wr.opcode != SendOpcode::send && op.wr.opcode != SendOpcode::send_with_imm;
    const MemoryKind remote = rdma ? kind_of(w.mrs.remote(op.wr.rkey), local) : local;
    auto endpoint = [&](int rank, MemoryKind k) {
      const RankEndpoints& e = w.eps[static_cast<std::size_t>(rank)];
      return k == MemoryKind::cuda ? (w.staged ? e.staged : e.gpu) : e.host;
    };
    me = endpoint(qp->rank, local);
    peer = endpoint(peer_rank, remote);
  }
  return {me, peer, peer_rank};
}

void launch_phase(World& w, Op& op) {
  SimgridQp* qp = op.qp;
  const auto [me, peer, peer_rank] = request_ends(w, op);
  // At least one byte: a zero-byte sendto never completes in SimGrid 3.32 (seen here), and one
  // byte costs 0.08 ns at 100 Gb/s.
  auto bytes = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(phase_wire_bytes(w, op)));
  sg4::Host* const src = op.phase == 0 ? me : peer;
  sg4::Host* const dst = op.phase == 0 ? peer : me;
  if (w.keep_endpoints) {
    op.src = src;
    op.dst = dst;
  }
  op.peer = peer_rank;
  ++op.gen;
  if (!w.down_links.empty() && route(w, src, dst).down) {
    // Nothing comes back: the requester's ACK timeout expires retry_cnt + 1 times, then the
    // request fails with retry_exc_err and the QP moves to ERR (launch_if_due), as RC does
    // until the subnet manager gives the pair another route (this model's routes are fixed).
    op.comm = nullptr;
    op.lost = true;
    op.timer_at = sg4::Engine::get_clock() + (qp->conn.retry_cnt + 1.0) * kAckTimeoutS;
    list_timed(w, op);
    w.set_alarm(qp->rank, op.timer_at);
    return;
  }
  if (!w.model.alpha_beta && control_only(op)) {
    // Ends after its route's latency, on the requester's timer list like a start time; the
    // requester is woken for it when it waits elsewhere (its alarm).
    op.comm = nullptr;
    op.control_end = true;
    op.timer_at = sg4::Engine::get_clock() + route_latency(w, src, dst);
    list_timed(w, op);
    w.set_alarm(qp->rank, op.timer_at);
    return;
  }
  Nic& pn = *w.nics[static_cast<std::size_t>(peer_rank)];
  Nic& rn = *w.nics[static_cast<std::size_t>(qp->rank)];
  // A request between the two ranks' own hosts goes through the responder's inbox when it has a
  // receive waiting there: the transfer starts at once, exactly as a host-to-host one would, and
  // costs SimGrid less (3.32 keeps every sendto_async transfer in one list that it searches at
  // every end). Phase 0 is always started by the requester's actor, which is on its host. The
  // receive it matches is the inbox's first without a request (the mailbox matches in order): it
  // is still in World::batch, where the request goes after it, or it is waiting in the mailbox.
  // In between — handed to a simcall not carried out yet — it is neither: host to host then. (The
  // mailbox's lines are read here rather than the receive's own: its isend reads them anyway.)
  std::size_t i = 0;
  auto receive_ready = [&] {
    i = pn.first_unmatched();
    return w.in_batch(pn.gets[i].get) || !pn.inbox->empty();
  };
  if (op.phase == 0 && peer_rank != qp->rank && src == w.hosts[static_cast<std::size_t>(qp->rank)] &&
      dst == w.hosts[static_cast<std::size_t>(peer_rank)] && pn.unmatched > 0 && !pn.exiting && receive_ready()) {
    pn.gets[i].op = OpPtr(&op);
    pn.gets[i].gen = op.gen;
    --pn.unmatched;
    if (pn.wake.blocked && i < pn.gets_waited) {  // its wait has that receive: it wakes when this transfer ends
      op.resp_epoch = pn.epoch;
      op.resp_gen = op.gen;
    }
    static char payload = 0;
    op.via_inbox = true;
    op.comm = pn.inbox->put_init(&payload, bytes);
    w.batch.push_back(op.comm);
    ++w.batch_puts;
    if (!w.batching) w.start_batch();
    list_own(rn, op);
    return;
  }
  w.start_batch();
  if (op.phase == 0 && peer_rank != qp->rank && !op.incoming) {
    op.incoming = true;
    pn.incoming.push_back(OpPtr(&op));
    pn.has_incoming = true;
  }
  op.via_inbox = false;
  op.comm = sg4::Comm::sendto_async(src, dst, bytes);
  list_own(rn, op);
  // Others ran during that call: a requester that blocked meanwhile does not wait on this transfer
  // (unless the wait it is in still has the previous one, whose end answers it anyway).
  if (rn.wake.can_fire() && !(op.req_epoch == rn.epoch && op.req_gen + 1 == op.gen)) rn.wake.fire();
}

// Starts the current phase of a request whose start time has come, unless it was dropped or
// ended meanwhile.
void phase_ended(World& w, const OpPtr& op);
void retire_heads(World& w, SimgridQp* qp);

void launch_if_due(World& w, Op& op) {
  if (op.dead || op.done || op.timer_at < 0 || op.timer_at > sg4::Engine::get_clock()) return;
  op.timer_at = -1;
  if (op.phase == 0 && op.gen == 0) {
    // The request executes: the NIC reads (or will write) the requester's memory, and checks its
    // keys now, as hardware does (soft_rc::local_verdict), not when it was posted.
    const WcStatus local = soft_rc::local_verdict(op.wr.opcode, op.wr.inline_data, op.sges,
                                                  [&](const Sge& s, bool write) { return w.local_ok(s, op.qp->pd, write); });
    if (local != WcStatus::success) {
      op.done = true;
      op.status = local;
      retire_heads(w, op.qp);
      w.flush_wakes();
      return;
    }
  }
  if (op.lost) {  // its retries ran out
    op.lost = false;
    op.done = true;
    op.status = WcStatus::retry_exc_err;
    retire_heads(w, op.qp);
    w.flush_wakes();
    return;
  }
  if (op.control_end) {  // a payload-free phase's end: what transfer_ended does for a transfer
    op.control_end = false;
    const OpPtr hold(&op);
    phase_ended(w, hold);
    if (!op.dead) retire_heads(w, op.qp);
    w.flush_wakes();
    return;
  }
  launch_phase(w, op);
}

// Schedules phase 0 of a new request through the NIC's message-rate gate and latency.
// min_latency (SendWr::model_min_latency_s): the request starts late enough that its route's
// latency brings it to the responder no sooner than that after now.
std::uint32_t rd_atomic_limit(const World& w, SimgridQp& qp) {
  const std::uint32_t nic = w.model.nic.max_rd_atomic;
  if (nic == 0) return std::numeric_limits<std::uint32_t>::max();
  auto ask = [nic](std::uint32_t a) { return a == 0 ? nic : std::min(a, nic); };
  std::uint32_t limit = ask(qp.conn.max_rd_atomic);
  if (const SimgridQp* peer = qp.peer()) limit = std::min(limit, ask(peer->conn.max_rd_atomic));
  return limit;
}

// A read's or an atomic's response is back: its slot is free, and the requests held behind the
// limit start, in order, up to the next that finds the limit reached. Whichever actor sees the
// response ends here, so they start from the requester's timer list (its alarm wakes it).
void release_held(World& w, SimgridQp* qp) {
  if (qp->rd_outstanding > 0) --qp->rd_outstanding;
  while (!qp->held.empty()) {
    auto& [op, min_latency] = qp->held.front();
    if (!op->dead) {
      const bool rd = op->wr.opcode == SendOpcode::rdma_read || is_atomic(op->wr.opcode);
      if (rd && qp->rd_outstanding >= rd_atomic_limit(w, *qp)) return;
      if (rd) ++qp->rd_outstanding;
      start_op(w, *op, min_latency, true);
    }
    qp->held.pop_front();
  }
}

namespace {

// SplitMix64 (Steele, Lea and Flood 2014): a small, fast generator whose stream is the same on
// every machine and library, so a seed gives the same run anywhere.
std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double uniform01(std::uint64_t& state) { return static_cast<double>(mix64(state += 0x9E3779B97F4A7C15ull) >> 11) * 0x1.0p-53; }

// When a request due at `at` really starts, with the host's timing noise (NicModel::jitter_mean_s,
// stall_*): a short exponential delay, then the wait for the end of a stall of the core it falls in.
// Stalls come as a Poisson process in time, drawn as the rank's requests reach them.
double with_host_noise(const NicModel& m, Nic& nic, double at) {
  if (m.jitter_mean_s > 0) at -= m.jitter_mean_s * std::log1p(-uniform01(nic.jitter_state));
  if (m.stall_rate <= 0 || m.stall_s <= 0) return at;
  while (nic.stall_to < at) {
    nic.stall_from = nic.stall_to - std::log1p(-uniform01(nic.jitter_state)) / m.stall_rate;
    nic.stall_to = nic.stall_from + m.stall_s * uniform01(nic.jitter_state);
  }
  return at >= nic.stall_from ? nic.stall_to : at;
}

}  // namespace

std::uint64_t jitter_seed(std::uint64_t seed, int rank) { return mix64(mix64(seed) + static_cast<std::uint64_t>(rank) + 1); }

double receive_ready_at(World& w, int rank) {
  if (w.model.alpha_beta) return 0;  // at once
  const double now = sg4::Engine::get_clock();
  // The CPU that saw the last completion posts the next receive (the host's noise, as a request's
  // post), and the NIC takes in the new receive WQE (its processing of a request, nic_latency_s:
  // the per-NIC figure the sends pay on their way out).
  const NicModel& m = w.model.nic;
  Nic& nic = *w.nics[static_cast<std::size_t>(rank)];
  return with_host_noise(m, nic, now) + m.nic_latency_s;
}

void start_op(World& w, Op& op, double min_latency, bool any_actor) {
  Nic& nic = *w.nics[static_cast<std::size_t>(op.qp->rank)];
  const double now = sg4::Engine::get_clock();
  const double issue = std::max(now, nic.next_issue);
  nic.next_issue = issue + w.model.nic.message_overhead_s;
  const double start_delay = w.model.nic_latency_in_routes ? 0.0 : 2 * w.model.nic.nic_latency_s;
  double at = issue + start_delay;
  if (op.wr.host_jitter && (w.model.nic.jitter_mean_s > 0 || w.model.nic.stall_rate > 0)) at = with_host_noise(w.model.nic, nic, at);
  if (min_latency > 0) {
    const Ends e = request_ends(w, op);
    at = std::max(at, now + min_latency - route_latency(w, e.me, e.peer));
  }
  at = std::max(at, op.qp->next_start);
  op.qp->next_start = at;
  op.timer_at = std::max(at, now);
  // Due now: started by the rank's next wait, before anything else it does there (no simulated
  // time passes until it waits). Starting a transfer is an s4u call, after which the rank's state
  // is cold (every other rank ran meanwhile): from the wait, the rank goes on to its other s4u
  // calls and its wait at once instead of first walking back through the post and its caller.
  if (any_actor) {
    list_timed(w, op);
    w.set_alarm(op.qp->rank, op.timer_at);
  } else if (at <= now) {
    nic.launch_now.push_back(OpPtr(&op));
  } else {
    list_timed(w, op);
  }
}

void deliver_recv(SimgridQp* peer, const Completion& wc) { peer->rcq.push(wc, peer, 0, false); }

// Phase 0 ended: the request is at the responder. Does the responder's part.
void at_responder(World& w, Op& op) {
  SimgridQp* qp = op.qp;
  SimgridQp* peer = qp->peer();
  auto fail = [&](WcStatus st) {
    op.done = true;
    op.status = st;
  };
  if (!peer || !soft_rc::responds(peer->state())) return fail(WcStatus::retry_exc_err);
  const SendOpcode oc = op.wr.opcode;
  const WcStatus verdict = soft_rc::remote_verdict(oc, op.wr.remote_addr, op.len, [&](std::uint32_t need) {
    return w.remote_ok(op.wr.rkey, op.wr.remote_addr, op.len, peer->pd, need);
  });
  if (verdict != WcStatus::success) return fail(verdict);
  const bool consumes_recv = soft_rc::consumes_receive(oc);
  // A message takes its receive when its first packet arrives, as a NIC does. The model's
  // transfers of one QP share the link and end together; on the wire they follow one another, so
  // the receive is checked against the arrival the QP's messages would have in sequence at the
  // port's rate (rx_last, the last packet of the one before) rather than against the bunched end.
  // A receive not yet the NIC's then (receive_ready_at: a CPU's repost) was not there: RNR.
  bool rnr = consumes_recv && peer->rq.empty();
  double last_packet = 0;
  if (consumes_recv && !rnr && peer->rq.front().ready_at > 0) {
    const NicModel& m = w.model.nic;
    const double len = static_cast<double>(op.len) * op.wr.wire_factor;
    const double wire = m.port_bw > 0 ? wire_bytes(m, len) / m.port_bw : 0;
    const double first = m.port_bw > 0 ? wire_bytes(m, std::min(len, m.mtu)) / m.port_bw : 0;
    last_packet = std::max(sg4::Engine::get_clock(), peer->rx_last + wire);
    rnr = peer->rq.front().ready_at > last_packet - wire + first;
  }
  if (rnr) {
    if (!soft_rc::rnr_retries(op.rnr_attempts, qp->conn.rnr_retry)) return fail(WcStatus::rnr_retry_exc_err);
    // RNR NAK: the requester waits the responder's timer and sends again.
    op.rnr_attempts++;
    op.timer_at = sg4::Engine::get_clock() + peer->conn.min_rnr_timer_s;
    op.comm = nullptr;
    list_timed(w, op);
    return;
  }
  auto gather = [&](std::uint8_t* dst) {
    if (phantom(reinterpret_cast<std::uint64_t>(dst))) return;
    if (op.wr.inline_data) {
      std::memcpy(dst, op.inline_bytes, op.len);
      return;
    }
    for (const auto& s : op.sges) {
      copy_bytes(reinterpret_cast<std::uint64_t>(dst), s.addr, s.length);
      dst += s.length;
    }
  };
  switch (oc) {
    case SendOpcode::rdma_write:
    case SendOpcode::rdma_write_with_imm:
      if (op.len) gather(reinterpret_cast<std::uint8_t*>(op.wr.remote_addr));
      w.wake_later(peer->rank);  // it may be waiting for a byte to change
      break;
    case SendOpcode::atomic_fetch_add:
    case SendOpcode::atomic_cmp_swap: {
      if (phantom(op.wr.remote_addr)) break;
      auto* target = reinterpret_cast<std::uint64_t*>(op.wr.remote_addr);
      op.atomic_old = *target;
      *target = soft_rc::atomic_result(oc, op.atomic_old, op.compare_add, op.swap);
      break;
    }
    default: break;
  }
  if (consumes_recv) {
    if (last_packet > 0) peer->rx_last = last_packet;
    PendingRecv r = std::move(peer->rq.front());
    peer->rq.pop_front();
    Completion wc = soft_rc::receive_completion(r.wr_id, peer->qpn(), oc, op.wr.imm, static_cast<std::uint32_t>(op.len));
    if (oc != SendOpcode::rdma_write_with_imm) {
      const soft_rc::Placement at = soft_rc::place(r.sges, op.len, [&](const Sge& s) { return w.local_ok(s, peer->pd, true); });
      if (!at.ok()) {
        wc.status = at.receiver;
        wc.byte_len = 0;
        deliver_recv(peer, wc);
        peer->enter_error();
        return fail(at.requester);
      }
      std::vector<std::uint8_t> tmp(op.len);
      gather(tmp.data());
      soft_rc::scatter(r.sges, tmp.data(), op.len,
                       [](std::uint64_t dst, const std::uint8_t* src, std::uint64_t n) { copy_bytes(dst, reinterpret_cast<std::uint64_t>(src), n); });
    }
    deliver_recv(peer, wc);
  }
  if (op.needs_phase1) {
    op.phase = 1;
    launch_phase(w, op);
  } else {
    op.done = true;
  }
}

// Phase 1 ended: the response is back at the requester.
void at_requester(Op& op) {
  if (op.wr.opcode == SendOpcode::rdma_read) {
    // The responder's bytes as they are when the response arrives.
    std::uint64_t src = op.wr.remote_addr;
    for (const auto& s : op.sges) {
      copy_bytes(s.addr, src, s.length);
      src += s.length;
    }
  } else if (op.wr.opcode == SendOpcode::atomic_fetch_add || op.wr.opcode == SendOpcode::atomic_cmp_swap) {
    copy_bytes(op.sges[0].addr, reinterpret_cast<std::uint64_t>(&op.atomic_old), 8);
  }
  op.done = true;
}

// A transfer ended. Requests reach the responder in any order when they share a link (they
// finish together), but an RC responder executes them in posting order: a request waits until
// every earlier one on its QP was handled.
void phase_ended(World& w, const OpPtr& op) {
  op->comm = nullptr;
  ++w.transfers;
  const bool read = op->wr.opcode == SendOpcode::rdma_read;
  if (op->phase == 1) {
    if (read) {
      if (const SimgridQp* peer = op->qp->peer()) w.nics[static_cast<std::size_t>(peer->rank)]->tx_bytes += op->len;
    }
    at_requester(*op);
    if (read || is_atomic(op->wr.opcode)) release_held(w, op->qp);
    return;
  }
  if (!read) w.nics[static_cast<std::size_t>(op->qp->rank)]->tx_bytes += op->len;
  op->arrived = true;
  // The requests of a QP in flight are numbered in sequence from its oldest: walk them by number,
  // as at_responder may make s4u calls (a response's transfer), during which others run and may
  // retire, flush or destroy the QP. A request that is not dead is in its QP's list, so its QP
  // exists: destroying, resetting or flushing a QP marks every request it had dead.
  SimgridQp* qp = op->qp;
  std::uint64_t seq = 0;
  while (true) {
    auto& q = qp->inflight;
    if (q.empty()) return;
    const std::uint64_t first = q.front()->seq;
    seq = std::max(seq, first);
    if (seq - first >= q.size()) return;
    Op& o = *q[static_cast<std::size_t>(seq - first)];
    if (o.dead) return;
    if (!o.responded && !o.done) {
      if (!o.arrived) return;
      o.arrived = false;
      const OpPtr hold = OpPtr(&o);
      at_responder(w, o);
      if (o.dead) return;  // flushed, or its QP destroyed meanwhile
      if (o.phase == 0 && o.timer_at >= 0 && !o.done) return;  // RNR: later requests wait for its retry
      o.responded = true;
      if (o.done && o.status != WcStatus::success) return;
    }
    ++seq;
  }
}

// Completes finished requests in posting order (RC ordering).
void retire_heads(World& w, SimgridQp* qp) {
  while (!qp->inflight.empty() && qp->inflight.front()->done) {
    auto op = std::move(qp->inflight.front());
    qp->inflight.pop_front();
    op->dead = true;
    if (op->wr.opcode == SendOpcode::rdma_read) w.wake_later(qp->rank);
    if (op->status != WcStatus::success) {
      qp->complete_send(*op, op->status, true);
      qp->enter_error();
      return;
    }
    qp->complete_send(*op, WcStatus::success, false);
  }
}

// The end of a request's transfer, seen by the requester's or the responder's wait (both may see
// it; the first handles it).
void transfer_ended(World& w, const OpPtr& op, const sg4::Activity* comm) {
  // Already handled: the transfer's other side saw its end first (and may have dropped the comm,
  // for an RNR retry).
  if (!comm || op->dead || op->done || static_cast<sg4::Activity*>(op->comm.get()) != comm) return;
  const std::uint32_t gen = op->gen;
  const int requester = op->qp->rank;
  if (op->via_inbox && op->comm->get_state() != sg4::Activity::State::FINISHED) {
    Nic& rn = *w.nics[static_cast<std::size_t>(requester)];
    rn.unreaped.push_back(op->comm);
    rn.has_unreaped = true;
  }
  phase_ended(w, op);
  if (!op->dead) retire_heads(w, op->qp);  // not dead: still in its QP's list, so the QP exists
  w.ending = op.get();
  w.ending_requester = requester;
  w.ending_gen = gen;
  w.flush_wakes();
  w.ending = nullptr;
}

// The timekeeper's actor: wakes each rank whose alarm is due, then sleeps until the next one or
// until a rank files an earlier one. It returns once every rank has.
void keep_time(World& w) {
  while (w.ranks_running > 0) {
    const double now = sg4::Engine::get_clock();
    while (!w.alarms.empty() && w.alarms.front().at <= now) {
      std::pop_heap(w.alarms.begin(), w.alarms.end());
      const World::Alarm a = w.alarms.back();
      w.alarms.pop_back();
      Nic& n = *w.nics[static_cast<std::size_t>(a.rank)];
      if (n.alarm_at != a.at) continue;
      n.alarm_at = std::numeric_limits<double>::infinity();
      w.wake_later(a.rank);
    }
    w.flush_wakes();
    if (!w.keeper.exec) {  // ranks run while it is armed: look again before sleeping
      w.keeper.arm();
      continue;
    }
    w.keeper_armed = w.alarms.empty() ? std::numeric_limits<double>::infinity() : w.alarms.front().at;
    w.keeper.blocked = true;
    const ssize_t idx = sg4::Activity::wait_any_for({w.keeper.exec}, std::isinf(w.keeper_armed) ? -1.0 : w.keeper_armed - now);
    w.keeper.blocked = false;
    if (idx == 0) w.keeper.exec = nullptr;
  }
}

}  // namespace rdmalab::sim
