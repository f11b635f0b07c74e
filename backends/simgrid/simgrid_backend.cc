// The SimGrid backend: every rank is an s4u actor on a host of a modelled cluster.
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
// SimGrid allows one engine per process and no reconfiguration, so every launch runs in a
// forked child process; what the ranks' code leaves behind comes back through a pipe
// (LaunchSpec::export_state / import_state).
#include "simgrid/simgrid_backend.h"

#include <boost/intrusive_ptr.hpp>
#include <fmt/format.h>
#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>
#include <simgrid/simix.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>

#include "common/child_process.h"
#include "rdmalab/calibration.h"
#include "rdmalab/record.h"
#include "rdmalab/reduce.h"
#include "rdmalab/run.h"
#include "rdmalab/scenario.h"
#include "simgrid/platform.h"

namespace rdmalab::sim {
namespace {

namespace sg4 = simgrid::s4u;

Capabilities sim_caps() {
  Capabilities c;
  c.rdma_read = true;
  c.rdma_write_imm = true;
  c.atomics = true;
  c.models_time = true;
  c.max_inline = 1024;
  c.max_sge = 16;
  c.max_qp_wr = 16384;
  c.max_cq_entries = 1u << 22;
  c.max_msg_size = 1u << 31;
  c.memory_kinds.add(MemoryKind::phantom);
  c.memory_kinds.add(MemoryKind::cuda);  // modelled: host bytes, routed through the GPU's data path
  c.models_gpu_memory = true;
  c.switch_reduction = true;  // where the node's NVSwitch reduces (fabric.node.nvswitch.reduce)
  return c;
}

// Phantom buffers (MemoryKind::phantom) live above the canonical x86-64 user range: bytes to or
// from them are not copied.
bool phantom(std::uint64_t addr) { return addr >= (1ull << 60); }

void copy_bytes(std::uint64_t dst, std::uint64_t src, std::uint64_t n) {
  if (n && !phantom(dst) && !phantom(src)) std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
}

struct World;
class SimQp;
class SimCq;

// 32 bytes, aligned: two to a cache line, never across two (each transfer checks one or two keys,
// cold at scale).
struct alignas(32) MrRec {
  std::uint64_t addr = 0, length = 0;
  std::uint32_t lkey = 0, rkey = 0;  // 0 while the slot is free
  std::uint32_t pd = 0;              // the protection domain's number (SimPd::id)
  std::uint16_t access = 0;          // kAccess* bits
  MemoryKind kind = MemoryKind::host;
};
static_assert(sizeof(MrRec) == 32);

// The registered regions, in a flat table looked up on every transfer (an array access: hash
// maps cost cache misses at thousands of ranks). A key is its slot's index (low 24 bits, from
// 0x1000) with a 7-bit generation above it that changes each time the slot is reused, and the
// rkey has the top bit set; a key whose region is gone, or another region's key of the wrong
// kind, finds nothing. Freed slots are reused, so the table stays as large as the most regions
// registered at once.
class MrTable {
 public:
  static constexpr std::uint32_t kBase = 0x1000, kIndexBits = 24, kMaxSlots = (1u << kIndexBits) - kBase;
  // Files a region and sets its keys; false when 2^24 - 4096 regions are registered already.
  bool add(MrRec& r) {
    std::uint32_t i = 0;
    if (!free_.empty()) {
      i = free_.back();
      free_.pop_back();
    } else {
      if (recs_.size() >= kMaxSlots) return false;
      i = static_cast<std::uint32_t>(recs_.size());
      recs_.emplace_back();
      gens_.push_back(0);
    }
    gens_[i] = static_cast<std::uint8_t>((gens_[i] + 1) & 0x7f);
    r.lkey = (static_cast<std::uint32_t>(gens_[i]) << kIndexBits) | (i + kBase);
    r.rkey = r.lkey | 0x80000000u;
    recs_[i] = r;
    return true;
  }
  const MrRec* local(std::uint32_t lkey) const {
    const MrRec* r = slot(lkey);
    return r && r->lkey == lkey ? r : nullptr;
  }
  const MrRec* remote(std::uint32_t rkey) const {
    const MrRec* r = slot(rkey);
    return r && r->rkey == rkey ? r : nullptr;
  }
  void erase(std::uint32_t lkey) {
    if (!local(lkey)) return;
    const std::uint32_t i = index(lkey);
    recs_[i].lkey = recs_[i].rkey = 0;
    free_.push_back(i);
  }

 private:
  // The slot a key names (unchecked: low bits below kBase wrap to an index past the table).
  static std::uint32_t index(std::uint32_t key) { return (key & ((1u << kIndexBits) - 1)) - kBase; }
  const MrRec* slot(std::uint32_t key) const {
    const std::uint32_t i = index(key);
    return i < recs_.size() ? &recs_[i] : nullptr;
  }
  std::vector<MrRec> recs_;
  std::vector<std::uint8_t> gens_;
  std::vector<std::uint32_t> free_;
};

// QP numbers are handed out in sequence and never reused: they index a flat table.
template <typename T>
class NumberTable {
 public:
  explicit NumberTable(std::uint32_t base) : base_(base) {}
  T* find(std::uint32_t n) const { return n >= base_ && n - base_ < items_.size() ? items_[n - base_] : nullptr; }
  void put(std::uint32_t n, T* item) {
    if (n - base_ >= items_.size()) items_.resize(n - base_ + 1, nullptr);
    items_[n - base_] = item;
  }
  void erase(std::uint32_t n) {
    if (n >= base_ && n - base_ < items_.size()) items_[n - base_] = nullptr;
  }

 private:
  std::uint32_t base_;
  std::vector<T*> items_;
};

// A request's scatter/gather list: nearly always one entry, kept inside the request with its count
// (no allocation per post, and in the request's hot line: see Op); a longer list goes to the heap,
// whose pointer is only set, and only read, when there is one.
class SgeList {
 public:
  SgeList() = default;
  explicit SgeList(std::span<const Sge> s) { assign(s); }
  SgeList(SgeList&& o) noexcept { take(o); }
  SgeList& operator=(SgeList&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~SgeList() { release(); }
  void assign(std::span<const Sge> s) {
    release();
    n_ = static_cast<std::uint32_t>(s.size());
    if (n_ == 1) {
      first_ = s[0];
    } else if (n_ > 1) {
      more_ = new Sge[n_];
      std::copy(s.begin(), s.end(), more_);
    }
  }
  const Sge* begin() const { return n_ > 1 ? more_ : &first_; }
  const Sge* end() const { return begin() + n_; }
  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const Sge& front() const { return *begin(); }
  const Sge& operator[](std::size_t i) const { return begin()[i]; }

 private:
  void release() {
    if (n_ > 1) delete[] more_;
    n_ = 0;
  }
  void take(SgeList& o) {
    n_ = o.n_;
    if (n_ == 1) first_ = o.first_;
    if (n_ > 1) more_ = o.more_;
    o.n_ = 0;
  }
  std::uint32_t n_ = 0;
  Sge first_;   // the list, when it has one entry
  Sge* more_;   // the list, when it has more (owned); unset otherwise
};
static_assert(sizeof(SgeList) == 32);

struct alignas(64) PendingRecv {  // one cache line each in a QP's receive queue
  std::uint64_t wr_id = 0;
  SgeList sges;
};

// A list whose first N elements live inside it. A NIC's short lists (its requests on the wire, the
// receives of its inbox, its requests due at once) hold one or two elements nearly always: inside
// the NIC they share its cache lines instead of costing a heap block each, a line fewer per list at
// every wait. Beyond N the elements move to the heap until the list is short again. Elements past
// the size are kept default-constructed (for a reference, null).
template <typename T, std::size_t N>
class SmallList {
 public:
  SmallList() = default;
  SmallList(const SmallList&) = delete;
  SmallList& operator=(const SmallList&) = delete;
  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T* begin() { return data(); }
  T* end() { return data() + n_; }
  T& operator[](std::size_t i) { return data()[i]; }
  T& emplace_back() {
    if (!heap_ && n_ < N) return inline_[n_++];
    if (!heap_) heap_ = std::make_unique<std::vector<T>>(std::make_move_iterator(inline_.begin()), std::make_move_iterator(inline_.end()));
    ++n_;
    return heap_->emplace_back();
  }
  void push_back(T v) { emplace_back() = std::move(v); }
  // Keeps the order of the others.
  void erase_at(std::size_t i) {
    T* d = data();
    for (std::size_t j = i; j + 1 < n_; ++j) d[j] = std::move(d[j + 1]);
    shrink(n_ - 1);
  }
  template <typename Pred>
  void remove_if(Pred pred) {
    T* d = data();
    std::size_t k = 0;
    for (std::size_t j = 0; j < n_; ++j)
      if (!pred(d[j])) {
        if (k != j) d[k] = std::move(d[j]);
        ++k;
      }
    shrink(k);
  }
  void clear() { shrink(0); }

 private:
  T* data() { return heap_ ? heap_->data() : inline_.data(); }
  void shrink(std::size_t n) {
    if (heap_) {
      heap_->resize(n);
      if (n <= N) {
        std::move(heap_->begin(), heap_->end(), inline_.begin());
        heap_.reset();
      }
    } else {
      for (std::size_t j = n; j < n_; ++j) inline_[j] = T();
    }
    n_ = n;
  }
  std::array<T, N> inline_{};
  std::unique_ptr<std::vector<T>> heap_;
  std::size_t n_ = 0;
};

// A first-in first-out queue in one buffer that it keeps (a power of two, grown by doubling). The
// backend's queues (requests in flight, posted receives, completions) are pushed at one end and
// popped at the other once per transfer; a std::deque walks through fresh blocks as it does and its
// header spans two cache lines, where this one's takes 16 bytes. At thousands of ranks every line
// a rank touches in a step is a cache miss (the other ranks ran in between), so this matters.
template <typename T>
class Ring {
 public:
  Ring() = default;
  Ring(Ring&& o) noexcept { swap(o); }
  Ring& operator=(Ring&& o) noexcept {
    Ring(std::move(o)).swap(*this);
    return *this;
  }
  ~Ring() { release(buf_, cap_); }
  void swap(Ring& o) noexcept {
    std::swap(buf_, o.buf_);
    std::swap(head_, o.head_);
    std::swap(n_, o.n_);
    std::swap(cap_, o.cap_);
  }
  bool empty() const { return n_ == 0; }
  std::size_t size() const { return n_; }
  T& front() { return buf_[head_]; }
  T& operator[](std::size_t i) { return buf_[(head_ + i) & (cap_ - 1)]; }
  const T& operator[](std::size_t i) const { return buf_[(head_ + i) & (cap_ - 1)]; }
  void push_back(T v) { next() = std::move(v); }
  // The slot after the last, added to the queue: it holds a default T (pop_front leaves one),
  // to fill in place.
  T& next() {
    if (n_ == cap_) grow();
    return buf_[(head_ + n_++) & (cap_ - 1)];
  }
  void pop_front() {
    // Drops what it holds now (a request's last reference, a receive's SGE list), in place.
    std::destroy_at(&buf_[head_]);
    std::construct_at(&buf_[head_]);
    head_ = (head_ + 1) & (cap_ - 1);
    --n_;
  }
  void clear() {
    while (n_) pop_front();
  }
  struct Iter {
    const Ring* r;
    std::size_t i;
    const T& operator*() const { return (*r)[i]; }
    Iter& operator++() {
      ++i;
      return *this;
    }
    bool operator!=(const Iter& o) const { return i != o.i; }
  };
  Iter begin() const { return {this, 0}; }
  Iter end() const { return {this, n_}; }

 private:
  void grow() {
    const std::uint32_t cap = cap_ ? 2 * cap_ : 4;
    T* buf = static_cast<T*>(::operator new(sizeof(T) * cap, std::align_val_t{kAlign}));
    for (std::uint32_t i = 0; i < cap; ++i) std::construct_at(buf + i);
    for (std::uint32_t i = 0; i < n_; ++i) buf[i] = std::move((*this)[i]);
    release(buf_, cap_);
    buf_ = buf;
    head_ = 0;
    cap_ = cap;
  }
  // The buffer starts on a cache line, so that elements smaller than a line share lines evenly.
  static constexpr std::size_t kAlign = std::max<std::size_t>(alignof(T), 64);
  static void release(T* buf, std::uint32_t cap) {
    if (!buf) return;
    std::destroy_n(buf, cap);
    ::operator delete(buf, std::align_val_t{kAlign});
  }
  T* buf_ = nullptr;
  std::uint32_t head_ = 0, n_ = 0, cap_ = 0;
};

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
  SimQp* qp = nullptr;
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
  std::uint8_t phase : 1 = 0;
  std::uint8_t rnr_attempts : 4 = 0;  // counted up to rnr_retry (at most 6; 7 retries forever)
  struct Wr {  // the request as posted, less its SGEs (sges) and an atomic's operands (below)
    std::uint32_t rkey = 0;
    std::uint32_t imm = 0;
    SendOpcode opcode = SendOpcode::rdma_write;
    bool signaled = true;
    bool inline_data = false;
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
  std::vector<OpPtr> timed;
  std::vector<OpPtr> incoming;   // requests of other ranks whose phase 0 is on its way here (host to host)
  // Its inbox transfers that ended while its wait was not on them (the responder saw the end, or
  // another end at the same instant answered the wait). SimGrid 3.32 keeps a transfer in its
  // sender's list of activities until the sender waits on it, and searches that list linearly at
  // every end: unreaped, the list grew by about one entry per step and made each transfer cost
  // O(ranks) in a ring. The rank waits on them (they are over: no blocking) before its next wait.
  std::vector<sg4::CommPtr> unreaped;
  std::vector<SimQp*> qps;
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
  sg4::Host* sw = nullptr;
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
  std::map<std::uint64_t, std::shared_ptr<SwitchCall>> switch_calls;  // by call number
  std::vector<std::uint64_t> switch_seq;                              // each rank's next call number
  bool staged = false;                // GPU memory goes through host bounce buffers
  bool one_endpoint = true;           // every rank's memories share one endpoint (no node model)
  bool keep_endpoints = false;        // requests keep their transfer's endpoints (Op::src, dst) for the record
  std::vector<std::unique_ptr<Nic>> nics;
  static constexpr std::uint32_t kFirstQpn = 0x100;
  MrTable mrs;
  NumberTable<SimQp> qps{kFirstQpn};
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
  std::map<std::pair<sg4::Host*, sg4::Host*>, double> route_latency;  // by endpoints (launch_phase)
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

class alignas(64) SimCq final : public CompletionQueue {
 public:
  SimCq(World& w, int rank, std::uint32_t cap) : cap_(cap), rank_(rank), w_(w) {}
  std::uint32_t capacity() const override { return cap_; }
  Result<std::size_t> poll(std::span<Completion> out) override { return take(out); }
  Result<std::size_t> wait(std::span<Completion> out, double timeout_s) override;
  bool push(const Completion& wc, SimQp* qp, std::uint64_t seq, bool send_side);
  // A QP being destroyed or reset: its completions still queued no longer point to it (they keep
  // its number, and free no send queue slots).
  void forget(const SimQp* qp);
  int rank() const { return rank_; }

 private:
  // A completion as queued: 32 bytes, two to a cache line (the ring's buffer starts on one). It
  // points to its QP while that exists: the completion's qp_num is read there when it is taken,
  // and a send completion then frees its QP's send queue slots up to its request, whose sequence
  // number it carries in its low 32 bits (a QP has at most 16384 requests outstanding). Once the
  // QP is gone the entry holds the QP's number instead.
  struct alignas(32) Entry {
    std::uint64_t wr_id;
    SimQp* qp;                 // null once forgotten
    std::uint32_t byte_len;
    std::uint32_t imm;
    std::uint32_t seq_or_qpn;  // qp set: the request's sequence number (low bits); else the QP's number
    WcOpcode opcode;
    WcStatus status;
    bool has_imm;
    bool send_side;
  };
  static_assert(sizeof(Entry) == 32);
  Result<std::size_t> take(std::span<Completion> out);
  Ring<Entry> q_;
  bool overflowed_ = false;
  std::uint32_t cap_;
  int rank_;
  World& w_;

 public:
  std::set<SimQp*> users;
};

class alignas(64) SimQp final : public QueuePair {
 public:
  SimQp(World& w, std::uint32_t pd, int rank, std::uint32_t qpn, SimCq& scq, SimCq& rcq, QpCaps caps)
      : qpn_(qpn),
        rank_(rank),
        max_send_sge_(static_cast<std::uint8_t>(caps.max_send_sge)),
        max_recv_sge_(static_cast<std::uint8_t>(caps.max_recv_sge)),
        pd_(pd),
        scq_(scq),
        rcq_(rcq),
        w_(w),
        max_send_wr_(static_cast<std::uint16_t>(caps.max_send_wr)),
        max_recv_wr_(static_cast<std::uint16_t>(caps.max_recv_wr)),
        caps_(caps) {
    w_.qps.put(qpn_, this);
    scq_.users.insert(this);
    rcq_.users.insert(this);
    auto& nq = w_.nics[static_cast<std::size_t>(rank_)]->qps;
    nq.push_back(this);
  }
  ~SimQp() override {
    // Unlink first, then cancel: cancelling is an s4u call, during which the NIC actor runs.
    w_.qps.erase(qpn_);
    forget_peer();
    for (SimQp* q : peer_of_) q->peer_ = nullptr;
    scq_.users.erase(this);
    scq_.forget(this);
    rcq_.forget(this);
    rcq_.users.erase(this);
    auto& nq = w_.nics[static_cast<std::size_t>(rank_)]->qps;
    nq.erase(std::remove(nq.begin(), nq.end(), this), nq.end());
    cancel_inflight();
  }

  void cancel_inflight() {
    w_.start_batch();  // cancelling is a simcall: what was made starts first
    Ring<OpPtr> ops;
    ops.swap(inflight_);
    for (auto& op : ops) op->dead = true;
    for (auto& op : ops)
      if (op->comm && !op->done) op->comm->cancel();
  }

  std::uint32_t qpn() const override { return qpn_; }
  QpState state() const override { return state_; }
  QpEndpoint endpoint() const override {
    QpEndpoint ep;
    ep.qpn = qpn_;
    ep.psn = qpn_ * 7919u & 0xffffff;
    ep.rank = static_cast<std::uint32_t>(rank_);
    return ep;
  }
  QpCaps caps() const override { return caps_; }
  Status to_init() override { return transition(QpState::reset, QpState::init, nullptr); }
  Status to_rtr(const QpConnectAttr& attr) override {
    if (attr.rnr_retry > 7 || attr.retry_cnt > 7) return Status(Errc::invalid_argument, "retry_cnt and rnr_retry are 3-bit counters (0..7)");
    return transition(QpState::init, QpState::rtr, &attr);
  }
  Status to_rts() override { return transition(QpState::rtr, QpState::rts, nullptr); }
  Status to_error() override {
    enter_error();
    w_.flush_wakes();
    return Status::ok();
  }
  Status reset() override {
    rq_.clear();
    cancel_inflight();
    scq_.forget(this);  // its queued completions no longer free slots of the new numbering
    rcq_.forget(this);
    state_ = QpState::reset;
    posted_ = retired_ = 0;
    return Status::ok();
  }
  Status post_send(std::span<const SendWr> wrs, std::size_t* bad_index) override;
  Status post_recv(std::span<const RecvWr> wrs, std::size_t* bad_index) override;

  void enter_error() {
    if (state_ == QpState::err) return;
    state_ = QpState::err;
    flush_all();
  }
  void flush_all() {
    Ring<OpPtr> ops;
    ops.swap(inflight_);
    for (auto& op : ops) {
      op->dead = true;
      complete_send(*op, op->done ? op->status : WcStatus::wr_flush_err, true);
    }
    // Transfers still on the wire are left to end on their own: cancelling is an s4u call, and
    // the caller may be walking state. The NIC ignores them (their requests are dead).
    while (!rq_.empty()) {
      Completion wc;
      wc.wr_id = rq_.front().wr_id;
      wc.opcode = WcOpcode::recv;
      wc.status = WcStatus::wr_flush_err;
      wc.qp_num = qpn_;
      rcq_.push(wc, this, 0, false);
      rq_.pop_front();
    }
  }
  void complete_send(const Op& op, WcStatus st, bool force) {
    if (!op.wr.signaled && st == WcStatus::success && !force) return;
    Completion wc;
    wc.wr_id = op.wr.wr_id;
    wc.status = st;
    wc.byte_len = static_cast<std::uint32_t>(op.len);
    wc.qp_num = qpn_;
    wc.opcode = wc_opcode_for(op.wr.opcode);
    scq_.push(wc, this, op.seq, true);
  }

  // The QP it is connected to, while that one exists (looked up once, not at every transfer).
  SimQp* peer() {
    if (!peer_ && (peer_ = w_.qps.find(conn_.remote.qpn))) peer_->peer_of_.push_back(this);
    return peer_;
  }
  void forget_peer() {
    if (!peer_) return;
    std::erase(peer_->peer_of_, this);
    peer_ = nullptr;
  }

  // What posts and transfers touch, in the QP's first two cache lines (at scale each is a cache
  // miss per transfer): the limits checked at every post are kept here in the widths the model's
  // capabilities allow (sim_caps: 16384 requests, 16 SGEs); caps_ and conn_ follow, cold.
  std::uint32_t qpn_;
  int rank_;
  std::uint64_t posted_ = 0, retired_ = 0;
  Ring<OpPtr> inflight_;
  QpState state_ = QpState::reset;
  std::uint8_t max_send_sge_, max_recv_sge_;
  std::uint32_t pd_;
  Ring<PendingRecv> rq_;
  SimCq& scq_;
  SimCq& rcq_;
  World& w_;
  std::uint16_t max_send_wr_, max_recv_wr_;
  SimQp* peer_ = nullptr;
  QpCaps caps_;
  QpConnectAttr conn_;
  std::vector<SimQp*> peer_of_;  // the QPs whose peer_ this is
  double next_start_ = 0;         // no request of this QP starts before its predecessor (RC order)

 private:
  Status transition(QpState from, QpState to, const QpConnectAttr* attr) {
    if (state_ != from)
      return Status(Errc::invalid_state, fmt::format("QP {:#x}: cannot move from {} to {} (only from {})", qpn_, qp_state_name(state_),
                                                     qp_state_name(to), qp_state_name(from)));
    if (attr) {
      conn_ = *attr;
      forget_peer();
    }
    state_ = to;
    return Status::ok();
  }
};

bool SimCq::push(const Completion& wc, SimQp* qp, std::uint64_t seq, bool send_side) {
  if (overflowed_) return false;
  if (q_.size() >= cap_) {
    overflowed_ = true;
    w_.wake_later(rank_);
    std::vector<SimQp*> us(users.begin(), users.end());
    for (SimQp* u : us) u->enter_error();
    return false;
  }
  assert(qp && wc.qp_num == qp->qpn_);
  Entry& e = q_.next();  // filled in place
  e.wr_id = wc.wr_id;
  e.qp = qp;
  e.byte_len = wc.byte_len;
  e.imm = wc.imm;
  e.seq_or_qpn = static_cast<std::uint32_t>(seq);
  e.opcode = wc.opcode;
  e.status = wc.status;
  e.has_imm = wc.has_imm;
  e.send_side = send_side;
  w_.wake_later(rank_);
  return true;
}

void SimCq::forget(const SimQp* qp) {
  for (std::size_t i = 0; i < q_.size(); ++i)
    if (Entry& e = q_[i]; e.qp == qp) {
      e.qp = nullptr;
      e.seq_or_qpn = qp->qpn_;
    }
}

Result<std::size_t> SimCq::take(std::span<Completion> out) {
  if (overflowed_)
    return Status(Errc::cq_overflow, fmt::format("completion queue of {} entries overflowed: completions were lost (size it for every "
                                                 "outstanding request, or poll more often)", cap_));
  std::size_t n = 0;
  while (n < out.size() && !q_.empty()) {
    Entry& e = q_.front();
    Completion& wc = out[n++];
    wc.wr_id = e.wr_id;
    wc.opcode = e.opcode;
    wc.status = e.status;
    wc.byte_len = e.byte_len;
    wc.imm = e.imm;
    wc.has_imm = e.has_imm;
    if (SimQp* qp = e.qp) {
      wc.qp_num = qp->qpn_;
      // Its request is how far behind the last posted (fewer than 2^32), and still outstanding.
      const std::uint32_t behind = static_cast<std::uint32_t>(qp->posted_) - e.seq_or_qpn;
      if (e.send_side && behind >= 1 && behind <= qp->posted_ - qp->retired_) qp->retired_ = qp->posted_ - behind + 1;
    } else {
      wc.qp_num = e.seq_or_qpn;
    }
    q_.pop_front();
  }
  return n;
}

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
  Nic& nic = *w.nics[static_cast<std::size_t>(op.qp->rank_)];
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

// The latency of the route between two endpoints (SimGrid computes routes on demand: kept).
double route_latency(World& w, sg4::Host* src, sg4::Host* dst) {
  auto [it, fresh] = w.route_latency.try_emplace({src, dst}, 0.0);
  if (fresh) {
    std::vector<sg4::Link*> links;
    src->route_to(dst, links, &it->second);
  }
  return it->second;
}

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
  SimQp* qp = op.qp;
  const SimQp* pq = qp->peer();
  int peer_rank = pq ? pq->rank_ : static_cast<int>(qp->conn_.remote.rank);
  if (peer_rank < 0 || peer_rank >= static_cast<int>(w.hosts.size())) peer_rank = qp->rank_;
  sg4::Host* me = w.hosts[static_cast<std::size_t>(qp->rank_)];
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
    me = endpoint(qp->rank_, local);
    peer = endpoint(peer_rank, remote);
  }
  return {me, peer, peer_rank};
}

void launch_phase(World& w, Op& op) {
  SimQp* qp = op.qp;
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
  if (!w.model.alpha_beta && control_only(op)) {
    // Ends after its route's latency, on the requester's timer list like a start time; the
    // requester is woken for it when it waits elsewhere (its alarm).
    op.comm = nullptr;
    op.control_end = true;
    op.timer_at = sg4::Engine::get_clock() + route_latency(w, src, dst);
    list_timed(w, op);
    w.set_alarm(qp->rank_, op.timer_at);
    return;
  }
  Nic& pn = *w.nics[static_cast<std::size_t>(peer_rank)];
  Nic& rn = *w.nics[static_cast<std::size_t>(qp->rank_)];
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
  if (op.phase == 0 && peer_rank != qp->rank_ && src == w.hosts[static_cast<std::size_t>(qp->rank_)] &&
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
  if (op.phase == 0 && peer_rank != qp->rank_ && !op.incoming) {
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
void retire_heads(World& w, SimQp* qp);

void launch_if_due(World& w, Op& op) {
  if (op.dead || op.done || op.timer_at < 0 || op.timer_at > sg4::Engine::get_clock()) return;
  op.timer_at = -1;
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
void start_op(World& w, Op& op, double min_latency) {
  Nic& nic = *w.nics[static_cast<std::size_t>(op.qp->rank_)];
  const double now = sg4::Engine::get_clock();
  const double issue = std::max(now, nic.next_issue);
  nic.next_issue = issue + w.model.nic.message_overhead_s;
  const double start_delay = w.model.nic_latency_in_routes ? 0.0 : 2 * w.model.nic.nic_latency_s;
  double at = issue + start_delay;
  if (min_latency > 0) {
    const Ends e = request_ends(w, op);
    at = std::max(at, now + min_latency - route_latency(w, e.me, e.peer));
  }
  at = std::max(at, op.qp->next_start_);
  op.qp->next_start_ = at;
  op.timer_at = std::max(at, now);
  // Due now: started by the rank's next wait, before anything else it does there (no simulated
  // time passes until it waits). Starting a transfer is an s4u call, after which the rank's state
  // is cold (every other rank ran meanwhile): from the wait, the rank goes on to its other s4u
  // calls and its wait at once instead of first walking back through the post and its caller.
  if (at <= now)
    nic.launch_now.push_back(OpPtr(&op));
  else
    list_timed(w, op);
}

void deliver_recv(SimQp* peer, const Completion& wc) { peer->rcq_.push(wc, peer, 0, false); }

// Phase 0 ended: the request is at the responder. Does the responder's part.
void at_responder(World& w, Op& op) {
  SimQp* qp = op.qp;
  SimQp* peer = qp->peer();
  auto fail = [&](WcStatus st) {
    op.done = true;
    op.status = st;
  };
  if (!peer || (peer->state_ != QpState::rtr && peer->state_ != QpState::rts)) return fail(WcStatus::retry_exc_err);
  const bool atomic = op.wr.opcode == SendOpcode::atomic_fetch_add || op.wr.opcode == SendOpcode::atomic_cmp_swap;
  std::uint32_t need = 0;
  switch (op.wr.opcode) {
    case SendOpcode::rdma_write:
    case SendOpcode::rdma_write_with_imm: need = kAccessRemoteWrite; break;
    case SendOpcode::rdma_read: need = kAccessRemoteRead; break;
    case SendOpcode::atomic_fetch_add:
    case SendOpcode::atomic_cmp_swap: need = kAccessRemoteAtomic; break;
    default: break;
  }
  if (need && op.len > 0 && !w.remote_ok(op.wr.rkey, op.wr.remote_addr, op.len, peer->pd_, need)) return fail(WcStatus::rem_access_err);
  if (atomic && op.wr.remote_addr % 8 != 0) return fail(WcStatus::rem_inv_req_err);
  const bool consumes_recv = op.wr.opcode == SendOpcode::send || op.wr.opcode == SendOpcode::send_with_imm ||
                             op.wr.opcode == SendOpcode::rdma_write_with_imm;
  if (consumes_recv && peer->rq_.empty()) {
    if (qp->conn_.rnr_retry != 7 && op.rnr_attempts >= qp->conn_.rnr_retry) return fail(WcStatus::rnr_retry_exc_err);
    // RNR NAK: the requester waits the responder's timer and sends again.
    op.rnr_attempts++;
    op.timer_at = sg4::Engine::get_clock() + peer->conn_.min_rnr_timer_s;
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
  switch (op.wr.opcode) {
    case SendOpcode::rdma_write:
    case SendOpcode::rdma_write_with_imm:
      if (op.len) gather(reinterpret_cast<std::uint8_t*>(op.wr.remote_addr));
      w.wake_later(peer->rank_);  // it may be waiting for a byte to change
      break;
    case SendOpcode::atomic_fetch_add:
    case SendOpcode::atomic_cmp_swap: {
      if (phantom(op.wr.remote_addr)) break;
      auto* target = reinterpret_cast<std::uint64_t*>(op.wr.remote_addr);
      op.atomic_old = *target;
      if (op.wr.opcode == SendOpcode::atomic_fetch_add)
        *target = op.atomic_old + op.compare_add;
      else if (op.atomic_old == op.compare_add)
        *target = op.swap;
      break;
    }
    default: break;
  }
  if (consumes_recv) {
    PendingRecv r = std::move(peer->rq_.front());
    peer->rq_.pop_front();
    Completion wc;
    wc.wr_id = r.wr_id;
    wc.qp_num = peer->qpn_;
    wc.has_imm = op.wr.opcode != SendOpcode::send;
    wc.imm = op.wr.imm;
    wc.byte_len = static_cast<std::uint32_t>(op.len);
    if (op.wr.opcode == SendOpcode::rdma_write_with_imm) {
      wc.opcode = WcOpcode::recv_rdma_with_imm;
    } else {
      wc.opcode = WcOpcode::recv;
      std::uint64_t room = 0;
      bool prot_ok = true;
      for (const auto& s : r.sges) {
        room += s.length;
        prot_ok = prot_ok && w.local_ok(s, peer->pd_, true);
      }
      if (!prot_ok || room < op.len) {
        wc.status = prot_ok ? WcStatus::loc_len_err : WcStatus::loc_prot_err;
        wc.byte_len = 0;
        deliver_recv(peer, wc);
        peer->enter_error();
        return fail(prot_ok ? WcStatus::rem_inv_req_err : WcStatus::rem_op_err);
      }
      std::vector<std::uint8_t> tmp(op.len);
      gather(tmp.data());
      const std::uint8_t* src = tmp.data();
      std::uint64_t left = op.len;
      for (const auto& s : r.sges) {
        std::uint64_t n = std::min<std::uint64_t>(left, s.length);
        copy_bytes(s.addr, reinterpret_cast<std::uint64_t>(src), n);
        src += n;
        left -= n;
      }
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
      if (const SimQp* peer = op->qp->peer()) w.nics[static_cast<std::size_t>(peer->rank_)]->tx_bytes += op->len;
    }
    at_requester(*op);
    return;
  }
  if (!read) w.nics[static_cast<std::size_t>(op->qp->rank_)]->tx_bytes += op->len;
  op->arrived = true;
  // The requests of a QP in flight are numbered in sequence from its oldest: walk them by number,
  // as at_responder may make s4u calls (a response's transfer), during which others run and may
  // retire, flush or destroy the QP. A request that is not dead is in its QP's list, so its QP
  // exists: destroying, resetting or flushing a QP marks every request it had dead.
  SimQp* qp = op->qp;
  std::uint64_t seq = 0;
  while (true) {
    auto& q = qp->inflight_;
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
void retire_heads(World& w, SimQp* qp) {
  while (!qp->inflight_.empty() && qp->inflight_.front()->done) {
    auto op = std::move(qp->inflight_.front());
    qp->inflight_.pop_front();
    op->dead = true;
    if (op->wr.opcode == SendOpcode::rdma_read) w.wake_later(qp->rank_);
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
  const int requester = op->qp->rank_;
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

Status SimQp::post_send(std::span<const SendWr> wrs, std::size_t* bad_index) {
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    const SendWr& wr = wrs[i];
    auto fail = [&](Errc code, std::string msg) {
      retire_heads(w_, this);
      w_.flush_wakes();
      if (bad_index) *bad_index = i;
      return Status(code, fmt::format("QP {:#x}: {}", qpn_, msg));
    };
    if (state_ != QpState::rts && state_ != QpState::err)
      return fail(Errc::invalid_state, fmt::format("post_send needs the QP in RTS (it is in {})", qp_state_name(state_)));
    std::uint64_t len = 0;
    QpCaps limits;  // what check_send_wr reads, from the QP's first lines
    limits.max_send_sge = max_send_sge_;
    limits.max_inline = wr.inline_data ? caps_.max_inline : 0;
    if (Status bad = check_send_wr(wr, limits, len); !bad) return fail(bad.code(), bad.message());
    const bool atomic = is_atomic(wr.opcode);
    if (posted_ - retired_ >= max_send_wr_)
      return fail(Errc::no_memory, fmt::format("send queue full ({} outstanding): poll completions before posting more", max_send_wr_));
    OpPtr op(new Op);
    op->qp = this;
    op->wr.rkey = wr.rkey;
    op->wr.imm = wr.imm;
    op->wr.opcode = wr.opcode;
    op->wr.signaled = wr.signaled;
    op->wr.wire_factor = static_cast<float>(wr.model_wire_factor);
    op->wr.wr_id = wr.wr_id;
    op->wr.remote_addr = wr.remote_addr;
    op->sges.assign(wr.sg_list);
    op->len = len;
    op->seq = posted_++;
    op->needs_phase1 = wr.opcode == SendOpcode::rdma_read || atomic || !w_.model.alpha_beta;
    if (atomic) {
      op->compare_add = wr.compare_add;
      op->swap = wr.swap;
      op->atomic_old = 0;
    }
    if (wr.inline_data) {
      op->inline_bytes = new std::uint8_t[len];
      op->wr.inline_data = true;  // from here on the destructor frees inline_bytes
      std::size_t off = 0;
      for (const auto& s : wr.sg_list) {
        std::memcpy(op->inline_bytes + off, reinterpret_cast<const void*>(s.addr), s.length);
        off += s.length;
      }
    }
    Op& ref = *op;
    inflight_.push_back(std::move(op));
    if (state_ == QpState::err) {
      flush_all();
      continue;
    }
    if (!wr.inline_data)
      for (const auto& s : ref.sges)
        if (!w_.local_ok(s, pd_, wr.opcode == SendOpcode::rdma_read || atomic)) {
          ref.done = true;
          ref.status = WcStatus::loc_prot_err;
        }
    if (!ref.done) start_op(w_, ref, wr.model_min_latency_s);
  }
  retire_heads(w_, this);  // requests refused at once complete in order
  w_.flush_wakes();
  return Status::ok();
}

Status SimQp::post_recv(std::span<const RecvWr> wrs, std::size_t* bad_index) {
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    if (state_ == QpState::reset) {
      if (bad_index) *bad_index = i;
      return Status(Errc::invalid_state, fmt::format("QP {:#x}: post_recv needs the QP in INIT or later (it is in RESET)", qpn_));
    }
    if (wrs[i].sg_list.size() > max_recv_sge_ || rq_.size() >= max_recv_wr_) {
      if (bad_index) *bad_index = i;
      return Status(rq_.size() >= max_recv_wr_ ? Errc::no_memory : Errc::invalid_argument,
                    fmt::format("QP {:#x}: receive queue full or too many SGEs", qpn_));
    }
    if (state_ == QpState::err) {
      Completion wc;
      wc.wr_id = wrs[i].wr_id;
      wc.opcode = WcOpcode::recv;
      wc.status = WcStatus::wr_flush_err;
      wc.qp_num = qpn_;
      rcq_.push(wc, this, 0, false);
      continue;
    }
    PendingRecv& r = rq_.next();
    r.wr_id = wrs[i].wr_id;
    r.sges.assign(wrs[i].sg_list);
  }
  w_.flush_wakes();
  return Status::ok();
}

class SimMr final : public MemoryRegion {
 public:
  SimMr(World& w, MrRec rec, std::uint32_t access) : w_(w), rec_(rec), access_(access) {}
  ~SimMr() override {
    w_.mrs.erase(rec_.lkey);
  }
  std::uint64_t addr() const override { return rec_.addr; }
  std::uint64_t length() const override { return rec_.length; }
  std::uint32_t lkey() const override { return rec_.lkey; }
  std::uint32_t rkey() const override { return rec_.rkey; }
  std::uint32_t access() const override { return access_; }
  MemoryKind kind() const override { return rec_.kind; }
  std::string data_path() const override {
    if (rec_.kind != MemoryKind::cuda) return MemoryRegion::data_path();
    return w_.staged ? "staged (host bounce buffers, modelled)" : "GPUDirect RDMA (modelled)";
  }

 private:
  World& w_;
  MrRec rec_;
  std::uint32_t access_;  // as given (the table keeps the kAccess* bits)
};

class SimPd final : public ProtectionDomain {
 public:
  SimPd(World& w, int rank) : w_(w), rank_(rank), id_(++w.pds) {}
  Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, std::uint64_t length, std::uint32_t access, MemoryKind kind) override {
    RDMALAB_TRY(check_registration(addr, length, access));
    MrRec rec;
    rec.addr = reinterpret_cast<std::uint64_t>(addr);
    rec.length = length;
    rec.pd = id_;
    rec.access = static_cast<std::uint16_t>(access & (kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic));
    rec.kind = kind;
    if (!w_.mrs.add(rec))
      return Status(Errc::no_memory, fmt::format("register_memory: {} regions are registered already (the most the model keeps)", MrTable::kMaxSlots));
    return std::unique_ptr<MemoryRegion>(new SimMr(w_, rec, access));
  }
  Result<std::unique_ptr<QueuePair>> create_qp(CompletionQueue& send_cq, CompletionQueue& recv_cq, const QpCaps& caps) override {
    auto* scq = dynamic_cast<SimCq*>(&send_cq);
    auto* rcq = dynamic_cast<SimCq*>(&recv_cq);
    if (!scq || !rcq) return Status(Errc::invalid_argument, "create_qp: the CQs do not belong to the simgrid backend");
    RDMALAB_TRY(check_qp_caps(caps, sim_caps()));
    return std::unique_ptr<QueuePair>(new SimQp(w_, id_, rank_, w_.next_qpn++, *scq, *rcq, caps));
  }

 private:
  World& w_;
  int rank_;
  std::uint32_t id_;  // what its regions and QPs are checked against (never 0)
};

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

class SimDevice final : public Device {
 public:
  SimDevice(World& w, int rank) : w_(w), rank_(rank), caps_(sim_caps()) {}

  Status switch_collective(const SwitchCollective& a) override {
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
  std::string name() const override { return fmt::format("sim-nic{}", rank_); }
  const Capabilities& caps() const override { return caps_; }
  Result<std::unique_ptr<ProtectionDomain>> alloc_pd() override { return std::unique_ptr<ProtectionDomain>(new SimPd(w_, rank_)); }
  Result<std::unique_ptr<CompletionQueue>> create_cq(std::uint32_t entries) override {
    RDMALAB_TRY(check_cq_entries(entries, caps_));
    return std::unique_ptr<CompletionQueue>(new SimCq(w_, rank_, entries));
  }

 private:
  World& w_;
  int rank_;
  Capabilities caps_;
};

class SimBootstrap final : public Bootstrap {
 public:
  SimBootstrap(World& w, int rank, int size) : w_(w), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status barrier() override { return allgather({}).status(); }
  Result<std::vector<std::byte>> allgather(std::span<const std::byte> mine) override {
    // Out of band: takes no simulated time. Ranks wait in progress(), so their transfers go on.
    if (w_.aborted) return Status(Errc::bootstrap, w_.abort_reason);
    std::uint64_t gen = w_.generation;
    w_.slots[static_cast<std::size_t>(rank_)].assign(mine.begin(), mine.end());
    if (++w_.arrived == size_) {
      bool same = true;
      for (const auto& s : w_.slots) same = same && s.size() == mine.size();
      w_.mismatch = !same;
      w_.gathered.clear();
      if (same)
        for (const auto& s : w_.slots) w_.gathered.insert(w_.gathered.end(), s.begin(), s.end());
      w_.arrived = 0;
      ++w_.generation;
      for (auto& n : w_.nics) w_.wake_later(n->rank);
      w_.flush_wakes();
    } else {
      Status st = progress(w_, rank_, std::numeric_limits<double>::infinity(), [&] { return w_.generation != gen; });
      if (!st) return st;
    }
    if (w_.mismatch) return Status(Errc::invalid_argument, "allgather: ranks contributed different lengths");
    return w_.gathered;
  }

 private:
  World& w_;
  int rank_, size_;
};

class SimRuntime final : public Runtime {
 public:
  SimRuntime(World& w, int rank) : w_(w), rank_(rank) {}
  double now() override { return sg4::Engine::get_clock(); }
  void compute(double seconds) override {
    // Transfers go on meanwhile; an aborted run stops computing.
    if (seconds > 0) (void)progress(w_, rank_, sg4::Engine::get_clock() + seconds, [] { return false; });
  }
  Status wait_for_byte(const volatile std::uint8_t* addr, std::uint8_t value, double timeout_s) override {
    Status st = progress(w_, rank_, sg4::Engine::get_clock() + timeout_s, [&] { return *addr == value; });
    if (st.code() == Errc::timeout) return Status(Errc::timeout, fmt::format("byte not written within {}s of simulated time", timeout_s));
    return st;
  }

 private:
  World& w_;
  int rank_;
};

Result<std::size_t> SimCq::wait(std::span<Completion> out, double timeout_s) {
  Status st = progress(w_, rank_, sg4::Engine::get_clock() + timeout_s, [&] { return !q_.empty() || overflowed_; });
  if (st.code() == Errc::timeout) return Status(Errc::timeout, fmt::format("no completion within {}s of simulated time", timeout_s));
  if (!st) return st;
  return take(out);
}

// ------------------------------------------------------------------------------------------
// Running a launch in a child process.

// The record's picture of the platform: a node per rank, the switches (routers) with their
// tier, and every link with its two ends (each direction of a split-duplex link is a link of its
// own). SimGrid's cluster zones do not hand out their switches, so they are read back from the
// link names those zones give (SimGrid 3.32; tests/backends/simgrid/model_test.cc checks that
// every link of each topology gets its ends):
//   fat tree   link_from_<child>_<parent>_<n>_UP|DOWN   (the creation number n gives the level)
//   torus      fabric_link_from_<a>_to_<b>_UP|DOWN
//   dragonfly  local_link_from_router_<r>_to_node_<k>_<n>, green_link_in_chassis_<c>_between_
//              routers_<a>_and_<b>_<n> (group from creation order), black_link_in_group_<g>_
//              between_chassis_<a>_and_<b>_blade_<r>_<n>, blue_link_between_group_<g>_and_<h>_
//              routers_<a>_and_<b>_<n>
Topology describe_topology(const World& w) {
  Topology t;
  // With a node model a fabric node is a machine of several ranks: it is named node-i and carries
  // its first rank; the links inside it are not drawn.
  const int per = w.model.node.on ? w.model.node.gpus : 1;
  const int n = static_cast<int>(w.hosts.size()) / per;
  const NodeModel& nm = w.model.node;
  for (int r = 0; r < n; ++r) {
    TopoNode& tn = t.nodes.emplace_back();
    tn.name = nm.on ? fmt::format("node-{}", r) : w.hosts[static_cast<std::size_t>(r)]->get_name();
    tn.kind = "host";
    tn.rank = r * per;
    if (nm.on) {
      tn.gpus = nm.gpus;
      tn.nics = nm.nics;
      tn.pcie_switches = nm.switches;
      tn.sockets = nm.sockets;
      tn.gpu_switch = nm.gpu_switch;
      tn.nic_switch = nm.nic_switch;
      tn.switch_socket = nm.switch_socket;
      tn.gpu_nic = nm.gpu_nic;
    }
  }
  const std::string& topo = w.model.topology;
  std::map<long, int> switch_index;  // the zone's id of a switch → node index
  auto add_switch = [&](long id, std::string name, int tier, int group) {
    auto it = switch_index.find(id);
    if (it != switch_index.end()) return it->second;
    int idx = static_cast<int>(t.nodes.size());
    TopoNode& sn = t.nodes.emplace_back();
    sn.name = std::move(name);
    sn.kind = "switch";
    sn.tier = tier;
    sn.group = group;
    switch_index.emplace(id, idx);
    return idx;
  };
  if (topo == "star") add_switch(0, "switch", 1, -1);
  if (topo == "rail_optimized") {
    for (int g = 0; g < w.model.rail.gpus; ++g) add_switch(g, fmt::format("rail-{}", g), 1, -1);
    for (int k = 0; k < w.model.rail.spines; ++k) add_switch(1000000 + k, fmt::format("spine-{}", k), 2, -1);
  }
  std::vector<sg4::Link*> links = sg4::Engine::get_instance()->get_all_links();
  std::sort(links.begin(), links.end(), [](const sg4::Link* a, const sg4::Link* b) { return a->get_name() < b->get_name(); });

  // Dragonfly sizes, for router numbering.
  long df_chassis = 1, df_routers = 1, df_blades = 1, df_green = 1;
  if (topo == "dragonfly") {
    df_chassis = w.sc->get_ints("fabric.dragonfly.chassis")[0];
    df_routers = w.sc->get_ints("fabric.dragonfly.routers")[0];
    df_green = w.sc->get_ints("fabric.dragonfly.routers")[1];
    df_blades = w.sc->get_int("fabric.dragonfly.blades");
  }
  if (topo == "dragonfly") {
    const long routers = w.sc->get_ints("fabric.dragonfly.groups")[0] * df_chassis * df_routers;
    for (long r = 0; r < routers; ++r)
      add_switch(r, fmt::format("router-{}", r), 1, static_cast<int>(r / (df_chassis * df_routers)));
  }
  auto router = [&](long global) { return switch_index.at(global); };
  std::vector<std::pair<long, long>> ft_ends;  // per kept link: the fat tree's (child, parent) ids, or (-1,-1)
  // Green dragonfly links carry no group in their name: their creation number does.
  std::vector<std::pair<long, std::size_t>> green;  // (creation number, link index)

  for (sg4::Link* l : links) {
    const std::string& name = l->get_name();
    if (name.rfind("loopback-", 0) == 0 || name.rfind("nic-", 0) == 0 || name.rfind("__", 0) == 0 || name.rfind("node-", 0) == 0 ||
        name == "rail-loopback" || name == "rail-hop" || name == "rail-spine-hop" ||
        name.find("_loopback") != std::string::npos || name.find("_limiter") != std::string::npos)
      continue;  // rank-local
    TopoLink tl{name, l->get_bandwidth(), l->get_latency(), {}};
    const bool up = name.size() > 3 && name.compare(name.size() - 3, 3, "_UP") == 0;
    auto dir = [up](int a, int b) { return up ? std::vector<int>{a, b} : std::vector<int>{b, a}; };
    long a = -1, b = -1, c = -1, g = -1, h = -1, k = -1;
    std::pair<long, long> ft{-1, -1};
    if (topo == "star" && std::sscanf(name.c_str(), "link-%ld_", &a) == 1) {
      tl.ends = dir(static_cast<int>(a), switch_index.at(0));
    } else if (topo == "full" && std::sscanf(name.c_str(), "link-%ld-%ld_", &a, &b) == 2) {
      tl.ends = dir(static_cast<int>(a), static_cast<int>(b));
    } else if (topo == "fat_tree" && std::sscanf(name.c_str(), "link_from_%ld_%ld_%ld_", &a, &b, &k) == 3) {
      ft = {a, b};
    } else if (topo == "rail_optimized" && std::sscanf(name.c_str(), "rail-%ld-spine-%ld_", &a, &b) == 2) {
      tl.ends = dir(switch_index.at(a), switch_index.at(1000000 + b));
    } else if (topo == "rail_optimized" && std::sscanf(name.c_str(), "rail-%ld-%ld_", &a, &b) == 2) {
      tl.ends = dir(static_cast<int>(a * w.model.rail.gpus + b), switch_index.at(b));
    } else if (topo == "torus" && std::sscanf(name.c_str(), "fabric_link_from_%ld_to_%ld_", &a, &b) == 2) {
      tl.ends = dir(static_cast<int>(a), static_cast<int>(b));
    } else if (topo == "dragonfly") {
      if (std::sscanf(name.c_str(), "local_link_from_router_%ld_to_node_%ld_", &a, &b) == 2) {
        tl.ends = dir(static_cast<int>(a * df_blades + b), router(a));
      } else if (std::sscanf(name.c_str(), "black_link_in_group_%ld_between_chassis_%ld_and_%ld_blade_%ld_", &g, &a, &b, &c) == 4) {
        const long base = g * df_chassis * df_routers;
        tl.ends = dir(router(base + a * df_routers + c), router(base + b * df_routers + c));
      } else if (std::sscanf(name.c_str(), "blue_link_between_group_%ld_and_%ld_routers_%ld_and_%ld_", &g, &h, &a, &b) == 4) {
        tl.ends = dir(router(a), router(b));
      } else if (std::sscanf(name.c_str(), "green_link_in_chassis_%ld_between_routers_%ld_and_%ld_%ld_", &c, &a, &b, &k) == 4) {
        green.emplace_back(k, t.links.size());
      }
    }
    ft_ends.push_back(ft);
    t.links.push_back(std::move(tl));
  }
  if (topo == "fat_tree") {
    // Ids of different levels may be equal; the creation number says the level.
    auto level_of = [&](long creation) { return fat_tree_level(*w.sc, n, creation); };
    // Switches numbered tier by tier, in the zone's id order (leaf-0 is above host 0).
    std::map<std::pair<int, long>, int> sw;
    for (std::size_t i = 0; i < t.links.size(); ++i) {
      long cid = 0, pid = 0, k = 0;
      if (ft_ends[i].first < 0) continue;
      std::sscanf(t.links[i].name.c_str(), "link_from_%ld_%ld_%ld_", &cid, &pid, &k);
      const int tier = level_of(k);
      sw.emplace(std::make_pair(tier, pid), -1);
      if (tier > 1) sw.emplace(std::make_pair(tier - 1, cid), -1);
    }
    std::map<int, std::vector<long>> by_tier;
    for (auto& [key, idx] : sw) by_tier[key.first].push_back(key.second);
    for (auto& [tier, ids] : by_tier) {
      std::sort(ids.rbegin(), ids.rend());
      int count = 0;
      for (long id : ids)
        sw[{tier, id}] = add_switch((static_cast<long>(tier) << 40) + id,
                                    fmt::format("{}-{}", tier == 1 ? "leaf" : tier == 2 ? "spine" : fmt::format("tier{}", tier), count++), tier, -1);
    }
    for (std::size_t i = 0; i < t.links.size(); ++i) {
      long cid = 0, pid = 0, k = 0;
      if (ft_ends[i].first < 0) continue;
      std::sscanf(t.links[i].name.c_str(), "link_from_%ld_%ld_%ld_", &cid, &pid, &k);
      const int tier = level_of(k);
      const int x = tier == 1 ? static_cast<int>(cid) : sw.at({tier - 1, cid});
      const int y = sw.at({tier, pid});
      const std::string& name = t.links[i].name;
      const bool up = name.compare(name.size() - 3, 3, "_UP") == 0;
      t.links[i].ends = up ? std::vector<int>{x, y} : std::vector<int>{y, x};
    }
  }
  if (!green.empty()) {
    std::sort(green.begin(), green.end());
    // Created group by group: per group, chassis × router pairs × parallel links, twice (UP and
    // DOWN share a creation number).
    const long per_group = df_chassis * (df_routers * (df_routers - 1) / 2) * df_green;
    long idx = 0;
    for (std::size_t i = 0; i < green.size(); i += 2, ++idx) {
      for (std::size_t j = i; j < std::min(i + 2, green.size()); ++j) {
        TopoLink& tl = t.links[green[j].second];
        long c = 0, a = 0, b = 0, k = 0;
        std::sscanf(tl.name.c_str(), "green_link_in_chassis_%ld_between_routers_%ld_and_%ld_%ld_", &c, &a, &b, &k);
        const long base = (idx / per_group) * df_chassis * df_routers + c * df_routers;
        const bool up = tl.name.compare(tl.name.size() - 3, 3, "_UP") == 0;
        int x = router(base + a), y = router(base + b);
        tl.ends = up ? std::vector<int>{x, y} : std::vector<int>{y, x};
      }
    }
  }
  return t;
}

Status simulate(const LaunchSpec& spec, const RankMain& main, const Scenario& sc) {
  std::vector<std::string> args_s = engine_args("rdmalab");
  std::vector<char*> args;
  for (auto& a : args_s) args.push_back(a.data());
  args.push_back(nullptr);
  int argc = static_cast<int>(args_s.size());
  sg4::Engine engine(&argc, args.data());

  World w;
  w.sc = &sc;
  w.model = read_model(sc);
  w.model.ranks = spec.ranks;
  w.eps = build_platform(sc, w.model);
  for (const auto& e : w.eps) {
    if (!e.gpu) return Status(Errc::internal, "the platform has fewer hosts than ranks");
    w.hosts.push_back(e.gpu);
  }
  w.staged = gpu_staged(sc, w.model);
  w.one_endpoint = std::all_of(w.eps.begin(), w.eps.end(), [](const RankEndpoints& e) { return e.gpu == e.host && e.staged == e.host; });
  if (const std::string cal = calibration_path(sc); !cal.empty()) {
    RDMALAB_ASSIGN(Calibration c, load_calibration(cal));
    auto* net = sg4::Engine::get_instance()->get_netzone_root()->get_network_model();
    // The factors depend on the message size only; SimGrid passes the transfer's bytes.
    if (!c.bandwidth.empty())
      net->set_bw_factor_cb([steps = c.bandwidth](double size, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
                                                  const std::unordered_set<sg4::NetZone*>&) { return Calibration::factor(steps, size); });
    if (!c.latency.empty())
      net->set_lat_factor_cb([steps = c.latency](double size, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
                                                 const std::unordered_set<sg4::NetZone*>&) { return Calibration::factor(steps, size); });
  }
  w.slots.resize(static_cast<std::size_t>(spec.ranks));
  for (int r = 0; r < spec.ranks; ++r) {
    auto nic = std::make_unique<Nic>();
    nic->rank = r;
    nic->inbox = sg4::Mailbox::by_name(fmt::format("inbox-{}", r));
    w.nics.push_back(std::move(nic));
  }
  RecordWriter rec;
  if (!spec.record_path.empty()) {
    RDMALAB_TRY(rec.open(spec.record_path, false));
    rec.header(sc.file, "simgrid", spec.ranks, spec.record_interval_s);
    Topology topo = describe_topology(w);
    rec.topology(topo);
    w.keep_endpoints = true;
    sg4::Actor::create("sampler", w.hosts[0], [&w, &rec, topo, interval = spec.record_interval_s] {
      std::vector<sg4::Link*> links;
      std::unordered_map<std::string, int> link_index;
      for (const auto& l : topo.links) {
        links.push_back(sg4::Link::by_name(l.name));
        link_index.emplace(l.name, static_cast<int>(link_index.size()));
      }
      std::vector<double> last(w.nics.size(), 0);
      // Routes of the transfers seen so far, by their endpoints; numbered as written.
      std::map<std::pair<sg4::Host*, sg4::Host*>, int> routes;
      std::unordered_map<sg4::Host*, int> rank_of;
      for (std::size_t r = 0; r < w.eps.size(); ++r)
        for (sg4::Host* h : {w.eps[r].gpu, w.eps[r].staged, w.eps[r].host}) rank_of[h] = static_cast<int>(r);
      while (true) {
        sg4::this_actor::sleep_for(interval);
        Sample s;
        s.t = sg4::Engine::get_clock();
        for (std::size_t i = 0; i < links.size(); ++i) {
          double used = links[i]->get_usage();
          if (used > 0) s.link_util.emplace_back(static_cast<int>(i), used / links[i]->get_bandwidth());
        }
        // Bytes sent = finished transfers + the part of each transfer on the wire that has
        // crossed (requests sharing a link all progress at once and finish together).
        std::vector<std::pair<sg4::CommPtr, double>> wire;  // (transfer, its size on the wire)
        std::vector<double> ratio;                           // payload bytes per wire byte
        std::vector<std::size_t> owner;
        for (std::size_t r = 0; r < w.nics.size(); ++r)
          for (SimQp* qp : w.nics[r]->qps)
            for (const auto& op : qp->inflight_) {
              // The payload's transfer: a write's or send's request (phase 0), a read's response
              // (phase 1), which the responder sends back to the requester.
              const bool read = op->wr.opcode == SendOpcode::rdma_read;
              if (!op->comm || op->done || op->len == 0 || op->phase != (read ? 1 : 0)) continue;
              const SimQp* peer = read ? qp->peer() : nullptr;
              if (read && !peer) continue;
              {
                sg4::Host* from = op->src;  // this phase's ends: for a read's response, responder to requester
                sg4::Host* to = op->dst;
                auto key = std::make_pair(from, to);
                auto rit = routes.find(key);
                if (rit == routes.end()) {
                  std::vector<sg4::Link*> path;
                  double lat = 0;
                  from->route_to(to, path, &lat);
                  Route rt{rank_of[from], rank_of[to], {}};
                  for (sg4::Link* l : path) {
                    auto li = link_index.find(l->get_name());
                    if (li != link_index.end()) rt.links.push_back(li->second);
                  }
                  rec.route(rt);
                  rit = routes.emplace(key, static_cast<int>(routes.size())).first;
                }
                if (s.flows.empty() || s.flows.back() != rit->second) s.flows.push_back(rit->second);
                const double on_wire = std::max(1.0, phase_wire_bytes(w, *op));
                wire.emplace_back(op->comm, on_wire);
                ratio.push_back(static_cast<double>(op->len) / on_wire);
                owner.push_back(read ? static_cast<std::size_t>(peer->rank_) : r);
              }
            }
        std::vector<double> sent(w.nics.size());
        for (std::size_t r = 0; r < w.nics.size(); ++r) sent[r] = static_cast<double>(w.nics[r]->tx_bytes);
        for (std::size_t i = 0; i < wire.size(); ++i) {
          const sg4::CommPtr& c = wire[i].first;
          if (c->get_state() != sg4::Activity::State::STARTED) continue;
          const double size = wire[i].second;
          sent[owner[i]] += std::max(0.0, size - c->get_remaining()) * ratio[i];
        }
        for (std::size_t r = 0; r < w.nics.size(); ++r) {
          s.rank_tx_Bps.push_back((sent[r] - last[r]) / interval);
          last[r] = sent[r];
        }
        std::sort(s.flows.begin(), s.flows.end());
        s.flows.erase(std::unique(s.flows.begin(), s.flows.end()), s.flows.end());
        rec.sample(s);
      }
    })->daemonize();
  }
  if (spec.progress) {
    // One line on stderr, rewritten about once a second of wall time.
    auto wall0 = std::chrono::steady_clock::now();
    auto last = wall0;
    sg4::Engine::on_time_advance_cb([&w, wall0, last](double) mutable {
      auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::seconds(1)) return;
      last = now;
      double wall = std::chrono::duration<double>(now - wall0).count();
      std::fprintf(stderr, "\r[simgrid] simulated %.6f s, %llu transfers, %.0f transfers/s   ", sg4::Engine::get_clock(),
                   static_cast<unsigned long long>(w.transfers), static_cast<double>(w.transfers) / wall);
      std::fflush(stderr);
    });
  }
  std::vector<Status> results(static_cast<std::size_t>(spec.ranks), Status(Errc::internal, "did not finish"));
  std::vector<bool> finished(static_cast<std::size_t>(spec.ranks), false);
  for (int r = 0; r < spec.ranks; ++r) {
    sg4::Actor::create(fmt::format("rank-{}", r), w.hosts[static_cast<std::size_t>(r)], [&, r] {
      RDMALAB_SIM_COLOUR_STACK(r);  // platform.h
      SimDevice dev(w, r);
      SimBootstrap boot(w, r, spec.ranks);
      SimRuntime rt(w, r);
      NodeShape shape = w.model.shape();
      if (spec.scenario) fill_tuning_facts(*spec.scenario, shape);
      RankEnv env{r, spec.ranks, boot, rt, dev, host_memory(), shape};
      Status st;
      try {
        st = main(env);
      } catch (const simgrid::Exception& e) {
        st = Status(Errc::internal, fmt::format("SimGrid: {}", e.what()));
      } catch (const std::exception& e) {
        st = Status(Errc::internal, fmt::format("uncaught exception: {}", e.what()));
      }
      if (!st) w.abort(fmt::format("rank {} stopped: {}", r, st.message()));
      // Nothing new comes to its inbox; a transfer already matched there is seen to its end (an
      // actor's death would cancel it under its sender).
      Nic& me = *w.nics[static_cast<std::size_t>(r)];
      me.exiting = true;
      w.start_batch();  // cancelling is a simcall: what was made starts first
      std::vector<sg4::CommPtr> idle;
      for (auto& g : me.gets)
        if (!g.op) idle.push_back(g.get);
      me.gets.remove_if([](const Nic::InboxRecv& g) { return !g.op; });
      me.unmatched = 0;
      for (auto& c : idle) c->cancel();
      (void)progress(w, r, std::numeric_limits<double>::infinity(), [&] { return me.gets.empty(); });
      results[static_cast<std::size_t>(r)] = st;
      finished[static_cast<std::size_t>(r)] = true;
      if (--w.ranks_running == 0) w.keeper.fire();
    });
  }
  w.ranks_running = spec.ranks;
  sg4::Actor::create("timekeeper", w.hosts[0], [&w] { keep_time(w); });
  engine.run();
  if (spec.progress && w.transfers > 0) std::fprintf(stderr, "\n");
  if (!spec.record_path.empty()) RDMALAB_TRY(rec.close());
  std::vector<int> stuck;
  for (int r = 0; r < spec.ranks; ++r)
    if (!finished[static_cast<std::size_t>(r)]) stuck.push_back(r);
  if (!stuck.empty()) {
    std::string list;
    for (std::size_t i = 0; i < stuck.size() && i < 8; ++i) list += (i ? ", " : "") + std::to_string(stuck[i]);
    return Status(Errc::internal, fmt::format("the simulation deadlocked: {} rank(s) still waiting ({}{}) with nothing left in flight",
                                              stuck.size(), list, stuck.size() > 8 ? ", …" : ""));
  }
  return first_failure(results);
}

class SimgridBackend final : public Backend {
 public:
  std::string name() const override { return "simgrid"; }
  std::string description() const override { return "a SimGrid model of the scenario's cluster network (no hardware needed)"; }
  Availability availability() const override { return {true, ""}; }
  Capabilities capabilities() const override { return sim_caps(); }
  void add_keys(Schema& schema) const override { add_fabric_keys(schema); }
  Status check(const Scenario& sc) const override { return check_fabric(sc); }
  bool can_record() const override { return true; }
  bool can_cancel() const override { return true; }

  Status launch(const LaunchSpec& spec, const RankMain& main) override {
    Scenario defaults;
    const Scenario* sc = spec.scenario;
    if (!sc) {
      // Tests launch without a scenario: a two-level default (star, 100Gbps, 1us, alpha_beta).
      Schema schema = core_schema();
      add_fabric_keys(schema);
      // Only the fabric keys matter here; give the name enumerations something to check against.
      schema.set_allowed("backend", {"loopback", "simgrid"});
      schema.set_allowed("workload.type", {"write_bw"});
      auto parsed = parse_scenario("fabric: { model: alpha_beta }\n", "(default fabric)", {fmt::format("fabric.nodes={}", spec.ranks)}, schema);
      if (!parsed) return parsed.status();
      defaults = std::move(parsed).value();
      sc = &defaults;
    }
    if (scenario_ranks(*sc) != spec.ranks)
      return Status(Errc::invalid_argument, fmt::format("launch of {} ranks on a fabric of {} ranks", spec.ranks, scenario_ranks(*sc)));
    auto child = fork_child([&] {
      ChildOutcome out;
      out.status = simulate(spec, main, *sc);
      out.state = spec.export_state ? spec.export_state() : std::string();
      return out;
    });
    if (!child) return child.status();
    ChildOutcome out = collect_child(child->first, child->second, "the simulation process", spec.cancel);
    if (spec.import_state && !out.state.empty()) spec.import_state(out.state);
    return out.status;
  }
};

}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<SimgridBackend>(); }

}  // namespace rdmalab::sim
