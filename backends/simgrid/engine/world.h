// The SimGrid backend's engine: every rank is an s4u actor on a host of a modelled cluster.
//
// How a request becomes simulated time: post_send validates the request, and its first transfer
// starts at that simulated instant (when the rank next waits: no time passes before it does), or
// when the NIC's message-rate gate allows: through the responder's inbox (a
// mailbox where every rank keeps receives waiting) when it goes between the two ranks' own hosts,
// otherwise as a host-to-host communication (Comm::sendto_async). There is no actor per NIC: a rank that blocks (waiting on a CQ or a
// byte, computing, in a barrier) waits on its own transfers in flight and on those coming to it
// (Activity::wait_any), and whichever of the two ends of a transfer wakes first does what the
// NIC would: checks keys, bounds and access rights, copies the bytes between the ranks' buffers,
// starts the response of a read or an atomic, and delivers completions in order per QP. Simulated
// time only advances while every rank is blocked, so every transfer's end is handled at the
// instant it happens. A rank whose wait cannot see the transfer that concerns it (one posted after
// it blocked) is woken by a suspended zero-flop Exec in its wait set, resumed by whoever handled
// the transfer: no message, no exception, no simulated time.
//
// This header holds the engine's state: a request (Op), a rank's NIC (Nic) and the world of all
// ranks (World). engine/objects.h has the contract objects, engine/progress.h how a rank waits,
// engine/nic.cc what happens when a transfer starts and ends.
#pragma once

#include <boost/intrusive_ptr.hpp>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "simgrid/engine/containers.h"
#include "rdmalab/scenario.h"
#include "rdmalab/transport.h"
#include "simgrid/platform.h"

namespace rdmalab::sim {

namespace sg4 = simgrid::s4u;


// One send request on its way. Phase 0 carries the request (and a write's or send's data) to
// the responder; phase 1 carries a read's data or an atomic's old value back, or the ACK of a
// write/send in the calibrated model.
//
// A request is touched by its requester's posts and waits and by whichever rank handles the end of
// its transfer, cold each time at scale: what those read comes first, in the block's first lines
// (the block is cache-line aligned), and its references are counted in the request itself.
struct alignas(64) Op {
  // Line 0: what waits and the ends of transfers read first.
  std::uint32_t refs = 0;  // OpPtr references (one thread: the simulation's)
  std::uint32_t gen = 0;   // transfers started so far (phases and RNR retries)
  SimgridQp* qp = nullptr;
  sg4::CommPtr comm;
  double timer_at = -1;  // start (or restart after RNR) of the current phase at this time
  std::uint64_t len = 0;
  std::uint64_t seq = 0;
  // The requester's and the responder's wait that included this request's transfer number gen:
  // a rank blocked in that wait wakes when the transfer ends and needs no other wake-up.
  std::uint32_t req_epoch = 0, req_gen = 0, resp_epoch = 0, resp_gen = 0;
  // Line 1: the rest of its state, and the request as posted with its first SGE.
  int peer = -1;  // the responder's rank
  WcStatus status = WcStatus::success;
  bool done : 1 = false;
  bool dead : 1 = false;          // flushed or retired: the NIC must not touch it again
  bool arrived : 1 = false;       // phase 0 reached the responder, which has not handled it yet
  bool responded : 1 = false;     // the responder handled it (RC: strictly in posting order)
  bool needs_phase1 : 1 = false;
  bool incoming : 1 = false;      // listed in the responder's incoming transfers
  bool listed : 1 = false;        // listed in its requester's NIC's transfers on the wire (Nic::own)
  bool timed : 1 = false;         // listed in its requester's NIC's requests waiting for a start time
  bool via_inbox : 1 = false;     // the current transfer went through the responder's inbox (not detached)
  bool control_end : 1 = false;   // timer_at is when the current phase, payload-free, ends (no transfer)
  bool lost : 1 = false;          // its route is down: timer_at is when its retries run out (retry_exc_err)
  std::uint8_t phase : 1 = 0;
  std::uint8_t rnr_attempts : 4 = 0;  // counted up to rnr_retry (at most 6; 7 retries forever)
  struct Wr {  // the request as posted, less its SGEs (sges) and an atomic's operands (below)
    std::uint32_t rkey = 0;
    std::uint32_t imm = 0;
    SendOpcode opcode = SendOpcode::rdma_write;
    bool signaled = true;
    bool inline_data = false;
    bool host_jitter = true;  // SendWr::model_host_jitter
    float wire_factor = 1;  // SendWr::model_wire_factor
    std::uint64_t wr_id = 0;
    std::uint64_t remote_addr = 0;
  } wr;
  SgeList sges;  // its count and first entry in line 1
  // Line 2, touched only by what needs it (and not by the constructor): set by the post for
  // inline data (len bytes, owned) and atomics, by launch_phase while a record is written.
  std::uint8_t* inline_bytes;
  std::uint64_t compare_add, swap, atomic_old;
  sg4::Host* src;  // the endpoints of the current phase's transfer
  sg4::Host* dst;

  Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;
  ~Op() {
    if (wr.inline_data) delete[] inline_bytes;
  }

  // Requests are made and dropped at every post: their blocks are recycled through a free list
  // instead of going back to malloc. The simulation runs on one thread, in a child process; the
  // list is never given back.
  static inline std::vector<void*> free_blocks;
  static void* operator new(std::size_t bytes) {
    if (bytes == sizeof(Op) && !free_blocks.empty()) {
      void* p = free_blocks.back();
      free_blocks.pop_back();
      return p;
    }
    return ::operator new(bytes, std::align_val_t{alignof(Op)});
  }
  static void operator delete(void* p, std::size_t bytes) {
    if (bytes == sizeof(Op)) {
      free_blocks.push_back(p);
      return;
    }
    ::operator delete(p, std::align_val_t{alignof(Op)});
  }
};
static_assert(sizeof(Op) == 192);
inline void intrusive_ptr_add_ref(Op* op) { ++op->refs; }
inline void intrusive_ptr_release(Op* op) {
  if (--op->refs == 0) delete op;
}
using OpPtr = boost::intrusive_ptr<Op>;

// How an actor blocked in a wait is woken by another: a suspended zero-flop Exec sits in every
// wait, and resuming it ends it at this instant — no simcall, no message, no simulated time.
struct WakeUp {
  sg4::ExecPtr exec;     // null once it ended: arm() a new one before the next wait
  bool blocked = false;  // the actor is in its wait (or was answered and has not run yet)
  bool fired = false;
  bool can_fire() const { return blocked && !fired; }
  void fire() {
    if (!can_fire()) return;
    fired = true;
    exec->resume();
  }
  void arm() {  // s4u calls, during which other actors run
    exec = sg4::this_actor::exec_init(0);
    exec->start();
    exec->suspend();
    fired = false;
  }
};

// A rank's NIC, and how its actor waits. At thousands of ranks every line a rank touches in a step
// is cold (the other ranks ran in between), so the NIC keeps what a wait needs in a few lines: the
// first is what another rank touches when it starts or ends a transfer with this one; the lists
// after it are the wait's set, kept up to date as transfers start instead of found by walking every
// QP's requests at each wait.
struct alignas(64) Nic {
  // The rank's inbox: receives it keeps waiting there (in posting order, which is the order the
  // mailbox matches them in), each with the request whose transfer matched it.
  struct InboxRecv {
    sg4::CommPtr get;
    OpPtr op;
    std::uint32_t gen = 0;
  };
  static constexpr int kInboxDepth = 1;  // unmatched receives kept waiting
  // First line: what every wait and every transfer to or from this rank touch.
  WakeUp wake;                   // in every wait of the rank's actor (wait_any)
  sg4::Mailbox* inbox = nullptr;
  std::uint64_t tx_bytes = 0;    // payload bytes this rank has sent (for samples)
  double alarm_at = std::numeric_limits<double>::infinity();  // its live entry in World::alarms
  std::uint32_t epoch = 0;       // which wait it is in
  int unmatched = 0;
  int rank = 0;
  bool exiting = false;          // the rank's code has returned: nothing new comes to its inbox
  // Whether the lists kept further down, rarely in use, hold anything (so that a wait does not
  // read them otherwise); set by whoever adds to them, cleared by the rank's wait once empty.
  bool has_timed = false, has_incoming = false, has_unreaped = false;
  // How many of the inbox's receives (the first ones) its wait has in its set, while blocked.
  std::uint16_t gets_waited = 0;
  // Then what each wait uses, in the next three lines (the short lists hold their elements).
  SmallList<InboxRecv, 2> gets;
  std::size_t first_unmatched() {  // while unmatched > 0
    std::size_t i = 0;
    while (i + 1 < gets.size() && gets[i].op) ++i;
    return i;
  }
  // Its requests whose current transfer is on the wire (added by launch_phase, whichever actor
  // starts it; dropped by the rank's own wait once over), and those waiting for a start time
  // (start_op, an RNR retry). Only the rank's own actor removes entries, so a wait's indices into
  // them hold while others run.
  SmallList<OpPtr, 2> own;
  std::vector<sg4::ActivityPtr> set;  // reused by each wait
  SmallList<OpPtr, 2> launch_now;  // its requests posted since its last wait, due at once (start_op)
  double next_issue = 0;         // message-rate gate
  std::uint64_t jitter_state = 0;  // the host's timing noise: this rank's draws (seeded by `seed` and the rank)
  double stall_from = 0, stall_to = 0;  // its core's current or next stall (NicModel::stall_*)
  std::vector<OpPtr> timed;
  std::vector<OpPtr> incoming;   // requests of other ranks whose phase 0 is on its way here (host to host)
  // Its inbox transfers that ended while its wait was not on them (the responder saw the end, or
  // another end at the same instant answered the wait). SimGrid 3.32 keeps a transfer in its
  // sender's list of activities until the sender waits on it, and searches that list linearly at
  // every end: unreaped, the list grew by about one entry per step and made each transfer cost
  // O(ranks) in a ring. The rank waits on them (they are over: no blocking) before its next wait.
  std::vector<sg4::CommPtr> unreaped;
  std::vector<SimgridQp*> qps;
};

// NVLink SHARP on a node's NVSwitch (Device::switch_collective, NCCL's NVLS): one call's state,
// shared by the node's ranks. The last rank to arrive starts an actor on the switch that moves
// every chunk; each rank waits until its own deliveries are done, and the last to leave drops it.
struct SwitchCall {
  SwitchCollective args;
  int p = 0, entered = 0, left = 0;
  std::vector<const std::uint8_t*> in;
  std::vector<std::uint8_t*> out;
  std::vector<sg4::Host*> gpu;
  sg4::Host* sw = nullptr;          // the (first) node's switch: where the call's actor runs
  std::vector<sg4::Host*> node_sw;  // NVLSTree: each node's switch
  std::vector<int> heads;           // NVLSTree: the local ranks that are heads (one per NIC)
  std::vector<std::vector<sg4::Host*>> sharp;  // NVLS with SHARP: each rank's aggregation nodes, leaf first
  std::vector<std::uint64_t> delivered, expected;
  std::vector<std::uint8_t> result;  // the reduced bytes, for real payloads
  sg4::MutexPtr mu = sg4::Mutex::create();
  sg4::ConditionVariablePtr cv = sg4::ConditionVariable::create();
};

struct World {
  const Scenario* sc = nullptr;
  FabricModel model;
  std::vector<sg4::Host*> hosts;      // where each rank's actor runs
  std::vector<RankEndpoints> eps;     // where its transfers start and end, by memory
  std::vector<int> placement;         // the fabric node of each job node (fabric.placement.*)
  std::map<std::uint64_t, std::shared_ptr<SwitchCall>> switch_calls;  // by call number
  std::vector<std::uint64_t> switch_seq;                              // each rank's next call number
  bool staged = false;                // GPU memory goes through host bounce buffers
  bool one_endpoint = true;           // every rank's memories share one endpoint (no node model)
  bool keep_endpoints = false;        // requests keep their transfer's endpoints (Op::src, dst) for the record
  std::vector<std::unique_ptr<Nic>> nics;
  static constexpr std::uint32_t kFirstQpn = 0x100;
  MrTable mrs;
  NumberTable<SimgridQp> qps{kFirstQpn};
  std::uint32_t next_qpn = kFirstQpn;
  std::uint32_t pds = 0;  // protection domains made so far (their numbers)
  bool aborted = false;
  std::string abort_reason;
  std::uint64_t transfers = 0;  // phases ended (for the progress line)
  // bootstrap
  int arrived = 0;
  std::uint64_t generation = 0;
  bool mismatch = false;
  std::vector<std::vector<std::byte>> slots;
  std::vector<std::byte> gathered;

  // Any s4u call can let other actors run, and they may destroy the objects being walked. So
  // ranks are not woken while state is being changed: they are queued here and woken by
  // flush_wakes() once the caller touches nothing else. While the end of a transfer is handled,
  // `ending` is that request and its transfer number: a rank whose wait included that transfer
  // was answered by it and is not woken again.
  std::vector<int> pending_wakes;
  std::vector<std::vector<int>> spare_lists;  // lists flushed before, kept with their capacity
  // Transfers and inbox receives made but not started yet (s4u's put_init, get_init), started
  // all in one simcall, start_batch(), in the order made. Every simcall is a context switch after
  // which the rank's state is cold (every other rank ran in between): a ring step's transfer and
  // the refill of its inbox used to cost one each. A rank starts its transfers before its next
  // simcall of any kind. A receive may wait longer — through its rank's block, for whichever rank
  // starts the list next — because a request that matches it goes after it here, and a rank's wait
  // holds only receives already started (start_batch's simcall is carried out after the others
  // of its round have run: until then the receive is neither here nor started). `batching` is set
  // while a wait makes transfers (a transfer made elsewhere is started at once).
  bool batching = false;
  std::vector<sg4::CommPtr> batch;
  std::uint32_t batch_puts = 0;   // requests' transfers among them
  bool in_batch(const sg4::CommPtr& c) const { return std::find(batch.begin(), batch.end(), c) != batch.end(); }
  std::vector<sg4::CommPtr> spare_batch;  // a list started before, kept with its capacity
  void start_batch();
  const Op* ending = nullptr;
  int ending_requester = -1;
  std::uint32_t ending_gen = 0;
  // What-if: links down (fabric.degrade.factor 0). A route that crosses one loses every packet.
  std::vector<const sg4::Link*> down_links;
  struct Route {
    double latency = 0;
    bool down = false;  // crosses one of down_links
  };
  std::map<std::pair<sg4::Host*, sg4::Host*>, Route> routes;  // by endpoints (nic.cc: route)
  void wake_later(int rank) { pending_wakes.push_back(rank); }
  void flush_wakes() {
    if (pending_wakes.empty()) return;
    // Waking is an s4u call during which other actors run and may flush too: each flush owns
    // the list it walks.
    std::vector<int> ranks;
    if (!spare_lists.empty()) {
      ranks.swap(spare_lists.back());
      spare_lists.pop_back();
    }
    ranks.swap(pending_wakes);
    for (int r : ranks) wake(r);
    ranks.clear();
    spare_lists.push_back(std::move(ranks));
  }
  void wake(int r) {
    Nic& n = *nics[static_cast<std::size_t>(r)];
    if (!n.wake.can_fire()) return;
    if (ending) {
      const bool as_requester = r == ending_requester && ending->req_epoch == n.epoch && ending->req_gen == ending_gen;
      const bool as_responder = r == ending->peer && ending->resp_epoch == n.epoch && ending->resp_gen == ending_gen;
      if (as_requester || as_responder) return;
    }
    start_batch();  // resuming the Exec is a simcall: what was made starts first
    n.wake.fire();
  }

  // Timers. A wait with a deadline (a CQ wait's timeout, a compute phase, a request's start time)
  // gives SimGrid no timeout of its own: SimGrid 3.32 allocates a timer for each and keeps them
  // all in one heap (one per waiting rank: most of a wait's cost at 1024 ranks). The rank files
  // an alarm here instead, and one more actor, the timekeeper, sleeps until the earliest alarm
  // and wakes that rank at that instant. A rank keeps one live alarm: one at or before a new
  // deadline already wakes it in time (it then files again); an earlier one replaces it.
  struct Alarm {
    double at;
    int rank;
    bool operator<(const Alarm& o) const { return at != o.at ? at > o.at : rank > o.rank; }  // heap top: earliest
  };
  std::vector<Alarm> alarms;  // a heap; entries a rank no longer holds are dropped when met
  WakeUp keeper;              // in the timekeeper's wait
  double keeper_armed = std::numeric_limits<double>::infinity();
  int ranks_running = 0;  // the timekeeper returns with the last rank
  void set_alarm(int rank, double at) {
    Nic& n = *nics[static_cast<std::size_t>(rank)];
    if (n.alarm_at <= at) return;
    n.alarm_at = at;
    alarms.push_back({at, rank});
    std::push_heap(alarms.begin(), alarms.end());
    if (alarms.size() > 4 * nics.size() + 64) {  // stale entries: keep the live ones
      std::erase_if(alarms, [&](const Alarm& a) { return nics[static_cast<std::size_t>(a.rank)]->alarm_at != a.at; });
      std::make_heap(alarms.begin(), alarms.end());
    }
    if (at < keeper_armed) keeper.fire();
  }

  void abort(const std::string& why);
  bool local_ok(const Sge& s, std::uint32_t pd, bool need_write) const {
    const MrRec* rec = mrs.local(s.lkey);
    if (!rec || rec->pd != pd) return false;
    const MrRec& m = *rec;
    if (s.addr < m.addr || s.addr + s.length > m.addr + m.length) return false;
    return !need_write || (m.access & kAccessLocalWrite);
  }
  bool remote_ok(std::uint32_t rkey, std::uint64_t addr, std::uint64_t len, std::uint32_t pd, std::uint32_t need) const {
    const MrRec* rec = mrs.remote(rkey);
    if (!rec || rec->pd != pd) return false;
    const MrRec& m = *rec;
    if (addr < m.addr || addr + len > m.addr + m.length || addr + len < addr) return false;
    return (m.access & need) == need;
  }
};

}  // namespace rdmalab::sim
