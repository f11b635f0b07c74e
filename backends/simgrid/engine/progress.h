// How a rank's actor waits (progress), and the engine's entry points that the contract objects and
// the launcher call (engine/nic.cc).
#pragma once

#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "rdmalab/status.h"
#include "rdmalab/transport.h"
#include "simgrid/engine/world.h"

namespace rdmalab::sim {

// What the model offers (the capabilities every device reports).
Capabilities sim_caps();
// The bytes a request's current phase puts on the wire (payload and headers, or a control packet).
double phase_wire_bytes(const World& w, const Op& op);
// The first state of a rank's draws of the host's timing noise (NicModel::jitter_*) for a seed.
std::uint64_t jitter_seed(std::uint64_t seed, int rank);
// When a receive a rank's CPU posts now is the NIC's: after the host's timing noise and the NIC's
// processing of a request (NicModel); 0 (at once) on alpha_beta.
double receive_ready_at(World& w, int rank);
// Schedules phase 0 of a request just posted (message-rate gate, latency, RC order).
void start_op(World& w, Op& op, double min_latency, bool any_actor = false);
// Starts the current phase of a request whose start time has come.
void launch_if_due(World& w, Op& op);
// Completes a QP's finished requests in posting order.
void retire_heads(World& w, SimgridQp* qp);
// Reads and atomics a QP may have in flight: the least of its own max_rd_atomic, its peer's and
// the modelled NIC's (fabric.nic.max_rd_atomic); unlimited on the alpha_beta model.
std::uint32_t rd_atomic_limit(const World& w, SimgridQp& qp);
// The end of a request's transfer, seen by the requester's or the responder's wait.
void transfer_ended(World& w, const OpPtr& op, const sg4::Activity* comm);
// The timekeeper actor's body (World::alarms).
void keep_time(World& w);
// NVLink SHARP on the node's NVSwitch (engine/nvswitch.cc).
Status run_switch_collective(World& w, int rank, const SwitchCollective& a);

// How a rank's actor waits until done() holds, the deadline passes (simulated seconds, infinity
// for none) or the run is aborted: it starts its requests whose timers are due, then waits on its
// transfers in flight, the transfers coming to it, its next timer and its wake-up Exec, and
// handles the transfer that ends. Returns ok when done() holds, timeout at the deadline.
template <typename Done>
Status progress(World& w, int rank, double deadline, Done done) {
  Nic& nic = *w.nics[static_cast<std::size_t>(rank)];
  while (true) {
    if (!nic.launch_now.empty()) {
      // s4u calls, as below; only this rank's actor adds to the list (its posts), and it keeps
      // its capacity from step to step.
      w.batching = true;
      for (std::size_t i = 0; i < nic.launch_now.size(); ++i) launch_if_due(w, *nic.launch_now[i]);
      nic.launch_now.clear();
    }
    w.batching = true;
    while (nic.unmatched < Nic::kInboxDepth && !nic.exiting) {
      // Receives for the inbox, started with the transfers above in one simcall (others run
      // meanwhile; everything is looked at after).
      Nic::InboxRecv& g = nic.gets.emplace_back();
      ++nic.unmatched;
      // Where SimGrid writes the (unused) payload pointer when a transfer ends: one place for all
      // receives, never inside `gets`, whose elements move.
      static void* sink = nullptr;
      g.get = nic.inbox->get_init()->set_dst_data(&sink, sizeof(void*));
      w.batch.push_back(g.get);
    }
    w.batching = false;
    // They start with this rank's next simcall (start_batch), as a rule its wait, where a refill
    // made now joins the next step's transfer (World::batch). A request to a rank whose receive is
    // still unstarted after the list was handed to a simcall finds its inbox empty and goes host
    // to host.
    if (nic.has_unreaped) w.start_batch();
    while (nic.has_unreaped) {  // s4u calls, as above
      if (nic.unreaped.empty()) {
        nic.has_unreaped = false;
        break;
      }
      sg4::CommPtr c = std::move(nic.unreaped.back());
      nic.unreaped.pop_back();
      try {
        c->wait();
      } catch (const simgrid::Exception&) {
        // It ended; how does not matter here.
      }
    }
    // Requests are retired as they end (transfer_ended, post_send): nothing to walk here.
    w.flush_wakes();
    if (done()) return Status::ok();
    if (w.aborted) return Status(Errc::bootstrap, w.abort_reason);
    // A receive alone can wait for the next rank's start_batch: a rank that blocks with one not
    // yet started is woken through its Exec if a transfer to that receive ends meanwhile (rare: a
    // rank refills its inbox when its last receive is matched, and then blocks for another
    // transfer, which as a rule ends first).
    if (w.batch_puts > 0) {  // others run meanwhile: look again before waiting
      w.start_batch();
      continue;
    }
    if (!nic.wake.exec) {  // others run while it is armed: look again before waiting
      w.start_batch();  // arming is two simcalls: a refill made now starts in the same round
      nic.wake.arm();
      continue;
    }
    const double now = sg4::Engine::get_clock();
    double next_timer = deadline;
    if (nic.has_timed) {
      // Requests whose start time has come are started (s4u calls, after the walk); the others
      // give the next timer.
      std::vector<OpPtr> due;
      std::erase_if(nic.timed, [&](const OpPtr& op) {
        if (op->dead || op->done || op->timer_at < 0) {
          op->timed = false;
          return true;
        }
        if (op->timer_at <= now) {
          op->timed = false;
          due.push_back(op);
          return true;
        }
        next_timer = std::min(next_timer, op->timer_at);
        return false;
      });
      nic.has_timed = !nic.timed.empty();
      if (!due.empty()) {
        for (auto& op : due) launch_if_due(w, *op);
        continue;
      }
    }
    if (now >= deadline) return Status(Errc::timeout, "deadline");
    nic.own.remove_if([](const OpPtr& op) {
      const bool gone = op->dead || op->done || !op->comm || op->timer_at >= 0;
      if (gone) op->listed = false;
      return gone;
    });
    if (nic.has_incoming) {
      std::erase_if(nic.incoming, [](const OpPtr& op) {
        const bool gone = op->dead || op->done || !op->comm || op->phase != 0;
        if (gone) op->incoming = false;
        return gone;
      });
      nic.has_incoming = !nic.incoming.empty();
    }
    // The set: its transfers, those coming to it, its inbox's receives, its wake-up. Others only
    // append to `own` and `incoming` while it waits, so set[i] stays own[i], then incoming[i - own].
    // The set keeps its references from one wait to the next and only those that changed are
    // replaced: an activity still in the set was not touched since the last wait, and taking or
    // dropping a reference to it would cost a cache line that SimGrid itself does not need.
    const std::size_t own = nic.own.size();
    const std::size_t gets_at = own + (nic.has_incoming ? nic.incoming.size() : 0);
    std::size_t k = 0;
    auto put = [&nic, &k](const auto& activity) {
      if (k == nic.set.size())
        nic.set.emplace_back(activity);
      else if (nic.set[k] != activity)
        nic.set[k] = activity;
      ++k;
    };
    ++nic.epoch;
    for (auto& op : nic.own) {
      put(op->comm);
      op->req_epoch = nic.epoch;
      op->req_gen = op->gen;
    }
    for (std::size_t i = own; i < gets_at; ++i) {
      Op* op = nic.incoming[i - own].get();
      put(op->comm);
      op->resp_epoch = nic.epoch;
      op->resp_gen = op->gen;
    }
    // Of the inbox's receives, those matched to a request (the first ones: the mailbox matches in
    // order), or else the first one; each activity in a wait costs SimGrid cache lines at every
    // wait. A request that matches a receive left out wakes the rank through its Exec.
    auto started = [](const Nic::InboxRecv& g) { return g.get->get_impl() != nullptr; };
    std::size_t waited = 0;
    while (waited < nic.gets.size() && nic.gets[waited].op && started(nic.gets[waited])) ++waited;
    if (waited == 0 && !nic.gets.empty() && started(nic.gets[0])) waited = 1;
    nic.gets_waited = static_cast<std::uint16_t>(waited);
    for (std::size_t i = 0; i < waited; ++i) {
      Nic::InboxRecv& g = nic.gets[i];
      put(g.get);
      if (g.op && g.op->gen == g.gen) {
        g.op->resp_epoch = nic.epoch;
        g.op->resp_gen = g.gen;
      }
    }
    if (k == 0 && !nic.gets.empty() && !started(nic.gets[0])) {
      // Nothing else would wake it but the Exec: its receive starts now, or it lets the simcall
      // that starts it be carried out (others run meanwhile).
      if (!w.batch.empty()) {
        w.start_batch();
      } else {
        sg4::this_actor::yield();
      }
      continue;
    }
    put(nic.wake.exec);
    if (nic.set.size() > k) nic.set.resize(k);
    nic.wake.blocked = true;
    ssize_t idx = -1;
    if (!std::isinf(next_timer)) w.set_alarm(rank, next_timer);
    try {
      idx = sg4::Activity::wait_any_for(nic.set, -1.0);
    } catch (const simgrid::CancelException&) {
      // A transfer cancelled by its QP's destruction; when it had matched the inbox's receive,
      // that receive ended with it.
      nic.wake.blocked = false;
      nic.set.clear();
      nic.gets.remove_if([](const Nic::InboxRecv& g) { return g.op && g.op->dead; });
      continue;
    }
    nic.wake.blocked = false;
    if (idx < 0) continue;
    // The set's reference to what ended is dropped now, while SimGrid has just touched it.
    const std::size_t n = nic.set.size();
    const sg4::ActivityPtr comm = std::move(nic.set[static_cast<std::size_t>(idx)]);
    const auto at = static_cast<std::size_t>(idx);
    if (at == n - 1) {
      nic.wake.exec = nullptr;  // woken: a new Exec for the next wait
      continue;
    }
    if (at >= gets_at) {
      // A receive of the inbox ended: the matched request's transfer did.
      Nic::InboxRecv g = std::move(nic.gets[at - gets_at]);
      nic.gets.erase_at(at - gets_at);
      if (!g.op) --nic.unmatched;  // cancelled before anything matched it
      if (g.op && g.op->gen == g.gen) transfer_ended(w, g.op, g.op->comm.get());
      continue;
    }
    OpPtr op = at < own ? nic.own[at] : nic.incoming[at - own];
    transfer_ended(w, op, comm.get());
  }
}


}  // namespace rdmalab::sim
