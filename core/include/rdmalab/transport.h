// The transport contract: a small, verbs-shaped set of objects that every backend implements.
//
// Workloads are written against these classes only. The semantics (what is accepted, what
// completes with which status, what moves a QP to ERR) are specified in
// docs/transport-contract.md and enforced by the conformance suite for every backend.
//
// Threading: unless a method says otherwise, one object is used by one thread (one rank) at a
// time, like a verbs context without locking. Objects of different ranks may be used
// concurrently. A backend may deliver completions from its own threads; that is invisible to
// the caller.
//
// Lifetimes: destroy in reverse order of creation (QPs, then MRs and CQs, then PDs, then the
// Device). Destroying an object that others still use is a caller bug (verbs returns EBUSY).
//
// Starting small: as rdma-core fills a provider's missing operations with ones that answer
// EOPNOTSUPP, every operation that returns a Status or a Result has a default here that answers
// Errc::not_supported, naming the operation. A new backend implements the accessors (qpn, state,
// capacity, ...) and then what it can, one operation at a time; the conformance suite says what
// is still missing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "rdmalab/memory.h"
#include "rdmalab/status.h"

namespace rdmalab {

// ---------------------------------------------------------------------------------------------
// Capabilities: what a backend really implements. Workloads check them; tests skip on them;
// the conformance suite proves each advertised one works (a flag that is set but not wired is a
// bug, as UCX's own tl.h warns).
struct Capabilities {
  bool rdma_read = false;
  bool rdma_write_imm = false;
  bool atomics = false;           // 8-byte fetch-and-add and compare-and-swap
  // Requests and receives posted to a QP already in ERR complete with wr_flush_err. (Linux 6.1's
  // rxe does not: it leaves them without a completion; later kernels flush them.)
  bool flushes_posts_in_err = true;
  bool models_time = false;       // the runtime clock is a model (SimGrid), not a wall clock
  std::uint32_t max_inline = 0;   // largest inline payload, bytes
  std::uint32_t max_sge = 1;      // per work request, send and receive
  std::uint32_t max_qp_wr = 0;    // per queue
  std::uint32_t max_cq_entries = 0;
  std::uint32_t max_msg_size = 0; // bytes
  MemoryKindSet memory_kinds{};   // which memory kinds can be registered
  // GPU memory is modelled, not real (SimGrid): workloads allocate it from
  // modelled_gpu_memory() and need no GPU (see memory_for in backend.h).
  bool models_gpu_memory = false;
  // An NVSwitch that reduces (NVLink SHARP) can be modelled: Device::switch_collective.
  bool switch_reduction = false;
  // The fabric's switches can reduce (InfiniBand SHARP): SwitchCollective::in_network.
  bool in_network_reduction = false;
  // The port's active rate in Gb/s (verbs: ibv_query_port's width x speed, as ibv_devinfo shows
  // it); 0 where there is no real port (the model, loopback). Rows carry it (port_gbps), so a
  // comparison can tell when the scenario's fabric does not describe the device.
  double port_gbps = 0;
};

// Memory access rights, combined with |. Local read is always granted.
enum Access : std::uint32_t {
  kAccessLocalWrite = 1u << 0,
  kAccessRemoteWrite = 1u << 1,  // requires local write, as in verbs
  kAccessRemoteRead = 1u << 2,
  kAccessRemoteAtomic = 1u << 3, // requires local write, as in verbs
};

// Plain data a peer needs to reach a region: safe to copy, serialise and send to another rank.
struct RemoteBuffer {
  std::uint64_t addr = 0;
  std::uint32_t rkey = 0;
  std::uint64_t length = 0;
};

// A registered memory region (local handle). Owned by the caller through unique_ptr; destroying
// it deregisters. Accesses through a destroyed region's keys fail like any wrong key.
class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;
  virtual std::uint64_t addr() const = 0;
  virtual std::uint64_t length() const = 0;
  virtual std::uint32_t lkey() const = 0;
  virtual std::uint32_t rkey() const = 0;
  virtual std::uint32_t access() const = 0;
  virtual MemoryKind kind() const = 0;
  // How the NIC reaches this memory, for result rows ("which data path the run took"): host
  // memory, GPUDirect RDMA (and how), the staged path, or a backend's own way.
  virtual std::string data_path() const {
    return kind() == MemoryKind::cuda ? "GPUDirect RDMA" : kind() == MemoryKind::phantom ? "phantom (no bytes)" : "host memory";
  }
  // The descriptor a peer uses; offset and length are relative to this region.
  RemoteBuffer remote(std::uint64_t offset = 0) const { return {addr() + offset, rkey(), length() - offset}; }

  // Where the NIC cannot reach the memory itself (the staged GPU path, staging.h), it works on a
  // host copy, and these two calls move bytes between the memory and that copy, like Linux's
  // dma_sync_* calls. Offsets are relative to the registered memory. Sending from a region needs
  // neither (post_send copies what it sends); a workload calls
  //   sync_to_nic   after it changed bytes a remote will read or apply atomics to, and after it
  //                 cleared a range the NIC will write (so nothing stale is copied back later);
  //   sync_from_nic before it reads bytes the NIC wrote: a receive, a read's or an atomic's
  //                 result, a remote's write.
  // Everywhere else (host memory, GPUDirect RDMA) they do nothing. Errors: invalid_argument for a
  // range outside the region; the copy's own error.
  virtual Status sync_to_nic(std::uint64_t offset, std::uint64_t len) {
    (void)offset;
    (void)len;
    return Status::ok();
  }
  virtual Status sync_from_nic(std::uint64_t offset, std::uint64_t len) {
    (void)offset;
    (void)len;
    return Status::ok();
  }
};

// ---------------------------------------------------------------------------------------------
// Completions, exactly as verbs reports them.

enum class WcOpcode : std::uint8_t {
  send, rdma_write, rdma_read, comp_swap, fetch_add,  // requester side
  recv, recv_rdma_with_imm,                           // responder side
};

enum class WcStatus : std::uint8_t {
  success,
  loc_len_err,        // local length error (receive buffer too small, SGE too long)
  loc_qp_op_err,      // local QP operation error
  loc_prot_err,       // local protection error (bad lkey, SGE outside the local region)
  wr_flush_err,       // the QP was in ERR: the request was flushed, not executed
  rem_inv_req_err,    // remote invalid request (e.g. unaligned atomic, opcode not allowed)
  rem_access_err,     // remote access error (wrong rkey, outside the region, missing access right)
  rem_op_err,         // remote operation error
  retry_exc_err,      // transport retry counter exceeded (peer unreachable)
  rnr_retry_exc_err,  // receiver-not-ready retry counter exceeded (no receive posted)
  general_err,
};

// The text ibv_wc_status_str gives for the same status, so a user can search for it.
const char* wc_status_str(WcStatus status) noexcept;
// The name of verbs' enum value: "IBV_WC_REM_ACCESS_ERR".
std::string wc_status_verbs_name(WcStatus status);
const char* wc_opcode_name(WcOpcode op) noexcept;

struct Completion {
  std::uint64_t wr_id = 0;
  WcOpcode opcode = WcOpcode::send;
  WcStatus status = WcStatus::success;
  std::uint32_t byte_len = 0;  // bytes received (receive side) or transferred
  std::uint32_t imm = 0;       // valid when has_imm
  bool has_imm = false;
  std::uint32_t qp_num = 0;
};

namespace detail {
// The answer of an operation a backend has not implemented (the defaults below).
Status unsupported(const char* operation);
}  // namespace detail

// A completion queue. Capacity is fixed at creation; when more completions arrive than it
// holds, it overflows: the extra completions are lost, every later poll/wait returns
// Errc::cq_overflow, and the QPs that use it move to ERR (verbs raises IBV_EVENT_CQ_ERR).
class CompletionQueue {
 public:
  virtual ~CompletionQueue() = default;
  virtual std::uint32_t capacity() const = 0;
  // Non-blocking. Moves up to out.size() completions, oldest first, into out and returns how
  // many (0 when none is ready). Errors: cq_overflow.
  virtual Result<std::size_t> poll(std::span<Completion> out) {
    (void)out;
    return detail::unsupported("CompletionQueue::poll");
  }
  // Blocking. Returns at least one completion unless the timeout (in the runtime's time base)
  // expires first (Errc::timeout). On the SimGrid backend simulated time advances while it
  // waits; a busy loop of poll() never would, so workloads must wait through this call.
  // Errors: cq_overflow, timeout.
  virtual Result<std::size_t> wait(std::span<Completion> out, double timeout_s) {
    (void)out;
    (void)timeout_s;
    return detail::unsupported("CompletionQueue::wait");
  }
};

// ---------------------------------------------------------------------------------------------
// Work requests.

struct Sge {
  std::uint64_t addr = 0;
  std::uint32_t length = 0;
  std::uint32_t lkey = 0;
};

enum class SendOpcode : std::uint8_t {
  rdma_write, rdma_write_with_imm, send, send_with_imm, rdma_read, atomic_fetch_add, atomic_cmp_swap,
};
const char* send_opcode_name(SendOpcode op) noexcept;

struct SendWr {
  std::uint64_t wr_id = 0;
  SendOpcode opcode = SendOpcode::rdma_write;
  std::span<const Sge> sg_list;     // read at post time; may be reused once post_send returns
  bool signaled = true;             // false: no completion unless the request fails
  bool inline_data = false;         // payload copied at post time; lkeys are not checked
  std::uint32_t imm = 0;            // for *_with_imm
  std::uint64_t remote_addr = 0;    // rdma and atomics
  std::uint32_t rkey = 0;
  std::uint64_t compare_add = 0;    // fetch-and-add: the addend; compare-and-swap: the compare value
  std::uint64_t swap = 0;           // compare-and-swap: the new value
  // For a backend whose time is a model (Capabilities::models_time), what a protocol above the
  // verbs adds that the bytes do not say (NCCL's LL and LL128, workloads/tuning.h): the wire
  // carries model_wire_factor bytes per payload byte (LL's flags), and the data reaches the peer
  // no sooner than model_min_latency_s after the post (the protocol's step latency, the wire's
  // own included). Backends on real hardware ignore both: there the bytes are what they are.
  double model_wire_factor = 1;
  double model_min_latency_s = 0;
  // Whether the host's timing noise applies to this request on a model that has it (the SimGrid
  // model's fabric.nic.jitter: a CPU posting and polling, as perftest does). The collectives'
  // engine clears it: NCCL's step latencies (model_min_latency_s) are averages that hold it.
  bool model_host_jitter = true;
};

// The requester-side completion opcode of a send opcode.
WcOpcode wc_opcode_for(SendOpcode op) noexcept;
inline bool is_atomic(SendOpcode op) noexcept { return op == SendOpcode::atomic_fetch_add || op == SendOpcode::atomic_cmp_swap; }

// A receive. Its list is read at post time and may be reused once post_recv returns; the memory
// it names stays the caller's, and must stay registered until the receive completes (a send that
// lands in a region deregistered meanwhile completes with loc_prot_err on the receiver).
struct RecvWr {
  std::uint64_t wr_id = 0;
  std::span<const Sge> sg_list;
  // Whether posting it costs the host's time on a model that has it (the SimGrid model: the
  // receive is the NIC's only after the posting CPU's noise and the NIC's processing, so a receive
  // queue reposted just in time runs dry: RNR). The collectives' engine clears it: its receives
  // are posted ahead of the credits that let data come, and NCCL's step latencies hold the rest.
  bool model_host_cost = true;
};

// ---------------------------------------------------------------------------------------------
// Queue pairs (reliable connected only).

enum class QpState : std::uint8_t { reset, init, rtr, rts, err };
const char* qp_state_name(QpState s) noexcept;

// What a peer needs to connect to a QP. Plain data: exchange it over the bootstrap.
struct QpEndpoint {
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  std::uint32_t lid = 0;               // InfiniBand only
  std::array<std::uint8_t, 16> gid{};  // RoCE / global routing
  std::uint32_t rank = 0;              // the owning rank (used by simulated backends)
  std::uint32_t mtu = 0;               // bytes; 0 = backend default
};

struct QpCaps {
  std::uint32_t max_send_wr = 128;
  std::uint32_t max_recv_wr = 128;
  std::uint32_t max_send_sge = 1;
  std::uint32_t max_recv_sge = 1;
  std::uint32_t max_inline = 0;
};

struct QpConnectAttr {
  QpEndpoint remote;
  std::uint8_t retry_cnt = 7;        // transport retries (0..7)
  std::uint8_t rnr_retry = 7;        // receiver-not-ready retries (0..6; 7 = retry forever)
  double min_rnr_timer_s = 12e-6;    // delay before an RNR retry (verbs encodes this as a code)
  // Reads and atomics in flight (this side's as requester and as responder): 0 = as many as the
  // device allows, as perftest (-o) does; the verbs backend clamps a larger count to the device's.
  std::uint32_t max_rd_atomic = 0;
};

// The IB encoding of the minimum RNR NAK timer (IBA table 45, verbs' ibv_qp_attr.min_rnr_timer):
// the seconds a code stands for (code 0 is the longest, 655.36 ms; perftest uses 12, 0.64 ms),
// and the smallest code whose timer is at least `seconds` (0 when none is).
double rnr_timer_seconds(std::uint8_t code) noexcept;
std::uint8_t rnr_timer_code(double seconds) noexcept;

// The local ACK timeout rdmalab's QPs ask for (verbs' ibv_qp_attr.timeout, perftest's default):
// code 14, 4.096 us x 2^14, about 67 ms (IBA 9.7.6.1.3). A request that gets no answer is resent
// after it, retry_cnt times, then fails with retry_exc_err.
inline constexpr std::uint8_t kAckTimeoutCode = 14;
inline constexpr double kAckTimeoutS = 4.096e-6 * (1u << kAckTimeoutCode);

class QueuePair {
 public:
  virtual ~QueuePair() = default;
  virtual std::uint32_t qpn() const = 0;
  virtual QpState state() const = 0;
  // This QP's address to give the peer. Valid from creation on.
  virtual QpEndpoint endpoint() const = 0;
  // The capacities the QP really has: at least what create_qp asked for (hardware rounds queue
  // depths and inline sizes up, as ibv_create_qp reports).
  virtual QpCaps caps() const = 0;

  // State transitions, as in verbs: RESET→INIT→RTR (needs the peer's endpoint)→RTS.
  // Any state → ERR with to_error(); ERR or any → RESET with reset().
  // Errors: invalid_state for a transition that is not allowed; invalid_argument for bad attrs.
  virtual Status to_init() { return detail::unsupported("QueuePair::to_init"); }
  virtual Status to_rtr(const QpConnectAttr& attr) {
    (void)attr;
    return detail::unsupported("QueuePair::to_rtr");
  }
  virtual Status to_rts() { return detail::unsupported("QueuePair::to_rts"); }
  virtual Status to_error() { return detail::unsupported("QueuePair::to_error"); }
  virtual Status reset() { return detail::unsupported("QueuePair::reset"); }

  // Non-blocking. Accepts a list of requests; the result only says whether they were accepted,
  // outcomes arrive as completions. On error, `*bad_index` (if given) is the first request not
  // accepted; those before it were accepted.
  // Refused (invalid_state) unless the QP is in RTS; in ERR, requests are accepted and complete
  // with wr_flush_err, as in verbs. Refused (invalid_argument) for too many SGEs, inline data
  // over max_inline or an atomic whose length is not 8; refused with Errc::queue_full (verbs'
  // ENOMEM) when max_send_wr requests are outstanding: back-pressure, not a failure — take
  // completions, then post the rest again.
  virtual Status post_send(std::span<const SendWr> wrs, std::size_t* bad_index = nullptr) {
    (void)wrs;
    (void)bad_index;
    return detail::unsupported("QueuePair::post_send");
  }
  // Non-blocking, with `*bad_index` as for post_send. Allowed from INIT on: refused
  // (invalid_state) in RESET; in ERR, receives are accepted and complete with wr_flush_err.
  // Refused (invalid_argument) for more SGEs than max_recv_sge; (queue_full) when max_recv_wr
  // receives are waiting — back-pressure, as for post_send.
  virtual Status post_recv(std::span<const RecvWr> wrs, std::size_t* bad_index = nullptr) {
    (void)wrs;
    (void)bad_index;
    return detail::unsupported("QueuePair::post_recv");
  }
};

// The post-time checks every backend makes on a send request, as verbs does: SGE count, atomic
// length, inline size and kind. Returns invalid_argument with the reason, or ok. `len` receives
// the payload length.
Status check_send_wr(const SendWr& wr, const QpCaps& caps, std::uint64_t& len);

// The argument checks every backend makes, as verbs does, each with the reason on failure
// (invalid_argument): a registration (non-null, non-empty; remote write or atomic need local
// write), QP capacities against the device's, and a CQ size against the device's.
Status check_registration(const void* addr, std::uint64_t length, std::uint32_t access);
Status check_qp_caps(const QpCaps& caps, const Capabilities& device);
Status check_cq_entries(std::uint32_t entries, const Capabilities& device);

class ProtectionDomain {
 public:
  virtual ~ProtectionDomain() = default;
  // Registers [addr, addr+length) of memory of `kind`. The memory stays owned by the caller and
  // must outlive the region. Errors: invalid_argument (zero length, remote write/atomic without
  // local write), not_supported (memory kind), no_memory / permission (pinning refused).
  virtual Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, std::uint64_t length,
                                                                std::uint32_t access,
                                                                MemoryKind kind = MemoryKind::host) {
    (void)addr;
    (void)length;
    (void)access;
    (void)kind;
    return detail::unsupported("ProtectionDomain::register_memory");
  }
  // Creates an RC QP in RESET. The CQs must outlive it. Errors: invalid_argument (caps over the
  // device limits).
  virtual Result<std::unique_ptr<QueuePair>> create_qp(CompletionQueue& send_cq, CompletionQueue& recv_cq,
                                                       const QpCaps& caps) {
    (void)send_cq;
    (void)recv_cq;
    (void)caps;
    return detail::unsupported("ProtectionDomain::create_qp");
  }
};

// A collective the NVSwitch of a node does itself (NVLink SHARP, NCCL's NVLS), on a backend
// that models one (Capabilities::switch_reduction). Every rank of the node calls it, with its
// part (all the ranks of the run: one node). all_reduce: each rank's `bytes` go up to the switch,
// which reduces them; each rank fetches the reduced shard it owns (bytes / ranks) and stores it
// back once, and the switch multicasts it to every rank (NCCL's multimem.ld_reduce and
// multimem.st). reduce_scatter: the first half; all_gather (`bytes` = the whole output): the
// second. With `real`, the bytes themselves are reduced and delivered (host_reduce's arithmetic).
struct SwitchCollective {
  enum class Kind : std::uint8_t { all_reduce, reduce_scatter, all_gather } kind = Kind::all_reduce;
  std::uint64_t bytes = 0;   // all_reduce, reduce_scatter: the input; all_gather: the output
  std::uint64_t chunk = 0;   // bytes per pipelined chunk of a shard
  const void* in = nullptr;  // all_gather: this rank's shard (bytes / ranks)
  void* out = nullptr;       // reduce_scatter: this rank's shard
  bool real = true;          // the buffers hold bytes (false: phantom payload)
  std::uint8_t dtype = 0, op = 0;  // DataType, ReduceOp (reduce.h)
  double wire_factor = 1;    // wire bytes per data byte on NVLink (NVLS's efficiency)
  double latency_s = 0;      // paid once per call (NCCL's NVLS latency)
  // NCCL's NVLSTree (all_reduce; nodes > 1): the ranks are packed on `nodes` nodes, each with its
  // own NVSwitch. On each node the heads (the first GPU on each NIC, NCCL's NVLS heads) own one
  // shard each (bytes / heads): the node's GPUs send it up, the switch reduces it, the head reads
  // the node's sum, which goes up NCCL's double binary tree between the nodes' same heads and the
  // total comes back down; the head stores it once and the switch multicasts it to the node's
  // GPUs. Chunk c of a shard takes tree c % 2: tree_parent[t][node] is that node's parent node
  // (-1 at the root). head_bw: bytes/s of its shard one head's channel moves at most (NCCL's
  // NVLSTree kernel; 0: no limit).
  int nodes = 1;
  std::vector<int> tree_parent[2];
  double head_bw = 0;
  // NCCL's NVLS across nodes with CollNet (InfiniBand SHARP): as NVLSTree inside each node, but
  // each head sends its node's sum to the aggregation node of its rail's leaf switch, the
  // switches reduce it up their tree (leaf, then spine) and multicast the total back down to the
  // heads; tree_parent is not used. Errors: not_supported where the fabric's switches do not reduce.
  bool in_network = false;
  // NCCL's CollNet Direct (with in_network): no switch reduces in the node; each GPU sends each
  // head its share over NVLink, the head reduces the node's copies in its memory (gpu_memory_bw
  // bytes/s touched; 0: no time) and after the network gives the total to every GPU of the node.
  bool direct = false;
  double gpu_memory_bw = 0;
};

// An opened device (verbs' context). One per rank.
class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  virtual const Capabilities& caps() const = 0;
  // A protection domain: regions and QPs made in one are checked against it (a key of another
  // domain is a protection error). Errors: no_memory (the device has no more), or the device's own
  // error (verbs: errno of ibv_alloc_pd).
  virtual Result<std::unique_ptr<ProtectionDomain>> alloc_pd() { return detail::unsupported("Device::alloc_pd"); }
  // Errors: invalid_argument (0 entries or over caps().max_cq_entries).
  virtual Result<std::unique_ptr<CompletionQueue>> create_cq(std::uint32_t entries) {
    (void)entries;
    return detail::unsupported("Device::create_cq");
  }
  // Errors: not_supported where no switch reduces (the default), invalid_argument where the
  // ranks do not fill the switches' nodes as `nodes` says.
  virtual Status switch_collective(const SwitchCollective&) {
    return Status(Errc::not_supported, "no NVSwitch that reduces (NVLink SHARP) here: it is modelled on simgrid only");
  }
};

}  // namespace rdmalab
