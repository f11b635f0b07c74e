// The verbs backend: libibverbs from rdma-core, the same code on ConnectX (mlx5) and on the
// kernel's Soft-RoCE (rxe). Ranks are processes. Every errno and ibv_wc_status is translated into
// the contract's Status and WcStatus here, in one place.
//
// Launch: with LaunchSpec::placement (from --bootstrap HOST:PORT --rank R --size N) this process
// is one rank of a run across machines; without it, the backend forks every rank on this machine
// and connects them through a rendezvous on 127.0.0.1 (how tests and single-host Soft-RoCE runs
// start).
#include "verbs/verbs_backend.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <random>
#include <mutex>
#include <thread>

#include "common/child_process.h"
#include "rdmalab/scenario.h"
#include "rdmalab/run.h"
#include "rdmalab/tcp_bootstrap.h"
#include "mpi_bootstrap.h"
#include "rdmalab/units.h"

namespace rdmalab::verbs {
namespace {

using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------------------------------------
// Translation, in one place.

WcStatus from_ibv(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_SUCCESS: return WcStatus::success;
    case IBV_WC_LOC_LEN_ERR: return WcStatus::loc_len_err;
    case IBV_WC_LOC_QP_OP_ERR: return WcStatus::loc_qp_op_err;
    case IBV_WC_LOC_PROT_ERR: return WcStatus::loc_prot_err;
    case IBV_WC_WR_FLUSH_ERR: return WcStatus::wr_flush_err;
    case IBV_WC_REM_INV_REQ_ERR: return WcStatus::rem_inv_req_err;
    case IBV_WC_REM_ACCESS_ERR: return WcStatus::rem_access_err;
    case IBV_WC_REM_OP_ERR: return WcStatus::rem_op_err;
    case IBV_WC_RETRY_EXC_ERR: return WcStatus::retry_exc_err;
    case IBV_WC_RNR_RETRY_EXC_ERR: return WcStatus::rnr_retry_exc_err;
    default: return WcStatus::general_err;
  }
}

WcOpcode from_ibv(ibv_wc_opcode op) {
  switch (op) {
    case IBV_WC_SEND: return WcOpcode::send;
    case IBV_WC_RDMA_WRITE: return WcOpcode::rdma_write;
    case IBV_WC_RDMA_READ: return WcOpcode::rdma_read;
    case IBV_WC_COMP_SWAP: return WcOpcode::comp_swap;
    case IBV_WC_FETCH_ADD: return WcOpcode::fetch_add;
    case IBV_WC_RECV_RDMA_WITH_IMM: return WcOpcode::recv_rdma_with_imm;
    default: return WcOpcode::recv;
  }
}

Status from_errno(int err, const std::string& what) {
  Errc code = Errc::internal;
  switch (err) {
    case EINVAL: code = Errc::invalid_argument; break;
    case ENOMEM: code = Errc::no_memory; break;
    case EPERM:
    case EACCES: code = Errc::permission; break;
    case ENOSYS:
    case EOPNOTSUPP: code = Errc::not_supported; break;
    case ENODEV:
    case ENOENT: code = Errc::not_found; break;
    case ETIMEDOUT: code = Errc::timeout; break;
    default: code = Errc::transport; break;
  }
  return Status(code, fmt::format("{}: {} (errno {})", what, std::strerror(err), err));
}

unsigned int to_ibv_access(std::uint32_t a) {
  unsigned int f = 0;
  if (a & kAccessLocalWrite) f |= IBV_ACCESS_LOCAL_WRITE;
  if (a & kAccessRemoteWrite) f |= IBV_ACCESS_REMOTE_WRITE;
  if (a & kAccessRemoteRead) f |= IBV_ACCESS_REMOTE_READ;
  if (a & kAccessRemoteAtomic) f |= IBV_ACCESS_REMOTE_ATOMIC;
  return f;
}

ibv_mtu to_ibv_mtu(std::uint32_t bytes) {
  if (bytes >= 4096) return IBV_MTU_4096;
  if (bytes >= 2048) return IBV_MTU_2048;
  if (bytes >= 1024) return IBV_MTU_1024;
  if (bytes >= 512) return IBV_MTU_512;
  return IBV_MTU_256;
}

std::uint32_t mtu_bytes(ibv_mtu m) { return 128u << static_cast<int>(m); }

std::string gid_text(const ibv_gid& g) {
  std::string s;
  for (int i = 0; i < 16; i += 2) s += fmt::format("{}{:02x}{:02x}", i ? ":" : "", g.raw[i], g.raw[i + 1]);
  return s;
}

// ------------------------------------------------------------------------------------------
// Devices

struct DeviceList {
  ibv_device** list = nullptr;
  int n = 0;
  int err = 0;
  DeviceList() {
    errno = 0;
    list = ibv_get_device_list(&n);
    err = list ? 0 : errno;
  }
  ~DeviceList() {
    if (list) ibv_free_device_list(list);
  }
};

std::string no_devices_reason(int err) {
  if (err == ENOSYS)
    return "this kernel has no RDMA support (ibv_get_device_list: Function not implemented); scripts/rxe-vm.sh runs the verbs "
           "backend on Soft-RoCE in a VM";
  if (err) return fmt::format("ibv_get_device_list failed: {}", std::strerror(err));
  return "no RDMA devices (load a driver, or create a Soft-RoCE device: rdma link add rxe0 type rxe netdev eth0)";
}

struct Selected {
  ibv_context* ctx = nullptr;
  std::string name;
  std::uint8_t port = 1;
  ibv_port_attr port_attr{};
  int gid_index = -1;
  ibv_gid gid{};
  bool roce = false;
  std::uint32_t max_rd_atom = 16, max_init_rd_atom = 16;  // reads/atomics in flight per QP, as responder and as requester
};

// Reads and atomics a QP keeps in flight: the count asked for (0: the device's most, as perftest
// does; rxe allows 128, ConnectX 16), within what the device and the 8-bit verbs field allow.
std::uint8_t rd_atomic_depth(std::uint32_t asked, std::uint32_t device_max) {
  const std::uint32_t most = std::clamp<std::uint32_t>(device_max, 1, 255);
  return static_cast<std::uint8_t>(asked == 0 ? most : std::min(asked, most));
}

// Opens the named device (or the first with an ACTIVE port), picks the port and the GID the way
// perftest does when -x is not given: a RoCE v2 GID on Ethernet ports.
Result<Selected> open_device(const std::string& want, int want_port, int want_gid) {
  DeviceList dl;
  if (!dl.list || dl.n == 0) return Status(Errc::not_found, no_devices_reason(dl.err));
  std::string present;
  for (int i = 0; i < dl.n; ++i) present += (i ? ", " : "") + std::string(ibv_get_device_name(dl.list[i]));
  std::string why_not;
  for (int i = 0; i < dl.n; ++i) {
    std::string name = ibv_get_device_name(dl.list[i]);
    if (!want.empty() && name != want) continue;
    ibv_context* ctx = ibv_open_device(dl.list[i]);
    if (!ctx) {
      why_not += fmt::format("{}: cannot open ({}); ", name, std::strerror(errno));
      continue;
    }
    ibv_device_attr da{};
    ibv_query_device(ctx, &da);
    for (int p = 1; p <= da.phys_port_cnt; ++p) {
      if (want_port > 0 && p != want_port) continue;
      ibv_port_attr pa{};
      if (ibv_query_port(ctx, static_cast<std::uint8_t>(p), &pa) != 0) continue;
      if (pa.state != IBV_PORT_ACTIVE) {
        why_not += fmt::format("{} port {} is {}; ", name, p, ibv_port_state_str(pa.state));
        continue;
      }
      Selected s;
      s.ctx = ctx;
      s.name = name;
      s.port = static_cast<std::uint8_t>(p);
      s.port_attr = pa;
      s.roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
      s.max_rd_atom = static_cast<std::uint32_t>(std::max(da.max_qp_rd_atom, 1));
      s.max_init_rd_atom = static_cast<std::uint32_t>(std::max(da.max_qp_init_rd_atom, 1));
      if (want_gid >= 0) {
        s.gid_index = want_gid;
      } else if (s.roce) {
        // Prefer a RoCE v2 GID of an IPv4 address, then any RoCE v2, then index 0.
        int v2 = -1, v2_ipv4 = -1;
        for (int g = 0; g < pa.gid_tbl_len; ++g) {
          ibv_gid_entry e{};
          if (ibv_query_gid_ex(ctx, s.port, static_cast<std::uint32_t>(g), &e, 0) != 0) continue;
          if (e.gid_type != IBV_GID_TYPE_ROCE_V2) continue;
          if (v2 < 0) v2 = g;
          const auto* raw = e.gid.raw;
          bool ipv4 = std::all_of(raw, raw + 10, [](std::uint8_t b) { return b == 0; }) && raw[10] == 0xff && raw[11] == 0xff;
          if (ipv4 && v2_ipv4 < 0) v2_ipv4 = g;
        }
        s.gid_index = v2_ipv4 >= 0 ? v2_ipv4 : v2 >= 0 ? v2 : 0;
      }
      if (s.gid_index >= 0 && ibv_query_gid(ctx, s.port, s.gid_index, &s.gid) != 0) {
        ibv_close_device(ctx);
        return Status(Errc::not_found, fmt::format("{} port {}: GID index {} cannot be read", name, p, s.gid_index));
      }
      return s;
    }
    ibv_close_device(ctx);
  }
  if (!want.empty() && present.find(want) == std::string::npos)
    return Status(Errc::not_found, fmt::format("no RDMA device named '{}' (present: {})", want, present));
  return Status(Errc::not_found, fmt::format("no ACTIVE port found ({}present: {})", why_not, present));
}

// ------------------------------------------------------------------------------------------
// Objects

class VerbsDevice;

class VerbsMr final : public MemoryRegion {
 public:
  VerbsMr(ibv_mr* mr, std::uint32_t access, MemoryKind kind, std::string path = "host memory")
      : mr_(mr), access_(access), kind_(kind), path_(std::move(path)) {}
  ~VerbsMr() override { ibv_dereg_mr(mr_); }
  std::uint64_t addr() const override { return reinterpret_cast<std::uint64_t>(mr_->addr); }
  std::uint64_t length() const override { return mr_->length; }
  std::uint32_t lkey() const override { return mr_->lkey; }
  std::uint32_t rkey() const override { return mr_->rkey; }
  std::uint32_t access() const override { return access_; }
  MemoryKind kind() const override { return kind_; }
  std::string data_path() const override { return path_; }

 private:
  ibv_mr* mr_;
  std::uint32_t access_;
  MemoryKind kind_;
  std::string path_;
};

enum class WaitMode { poll, event };

class VerbsCq final : public CompletionQueue {
 public:
  VerbsCq(VerbsDevice& dev, ibv_cq* cq, ibv_comp_channel* ch, std::uint32_t cap, WaitMode mode) : dev_(dev), cq_(cq), ch_(ch), cap_(cap), mode_(mode) {}
  ~VerbsCq() override;  // defined after VerbsDevice
  void destroy() {
    if (unacked_) ibv_ack_cq_events(cq_, unacked_);
    ibv_destroy_cq(cq_);
    if (ch_) ibv_destroy_comp_channel(ch_);
  }
  std::uint32_t capacity() const override { return cap_; }
  Result<std::size_t> poll(std::span<Completion> out) override;
  Result<std::size_t> wait(std::span<Completion> out, double timeout_s) override;
  ibv_cq* cq() const { return cq_; }
  bool overflowed = false;

 private:
  VerbsDevice& dev_;
  ibv_cq* cq_;
  ibv_comp_channel* ch_;
  std::uint32_t cap_;
  WaitMode mode_;
  unsigned unacked_ = 0;
  bool armed_ = false;
};

class VerbsQp final : public QueuePair {
 public:
  VerbsQp(VerbsDevice& dev, ibv_qp* qp, QpCaps caps);
  ~VerbsQp() override;
  std::uint32_t qpn() const override { return qp_->qp_num; }
  QpState state() const override { return state_; }
  QpCaps caps() const override { return caps_; }
  QpEndpoint endpoint() const override;
  Status to_init() override;
  Status to_rtr(const QpConnectAttr& attr) override;
  Status to_rts() override;
  Status to_error() override {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE)) return from_errno(rc, "ibv_modify_qp(ERR)");
    state_ = QpState::err;
    return Status::ok();
  }
  Status reset() override {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RESET;
    if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE)) return from_errno(rc, "ibv_modify_qp(RESET)");
    state_ = QpState::reset;
    return Status::ok();
  }
  Status post_send(std::span<const SendWr> wrs, std::size_t* bad_index) override;
  Status post_recv(std::span<const RecvWr> wrs, std::size_t* bad_index) override;
  void mark_error() { state_ = QpState::err; }
  bool uses(const ibv_cq* cq) const { return qp_->send_cq == cq || qp_->recv_cq == cq; }
  Status post_prepared(ibv_send_wr* v, std::size_t count);
  // Completions carry an internal id (a sequence number, bit 63 set for the send queue) so that
  // the wrapper can enforce the queue depths exactly (providers accept more than they report)
  // and free send slots the verbs way: a polled completion frees its slot and every unsignaled
  // one before it. Returns the caller's wr_id.
  std::uint64_t complete(std::uint64_t internal_id) {
    if (internal_id & kSendBit) {
      std::uint64_t seq = internal_id & ~kSendBit;
      sq_retired_ = std::max(sq_retired_, seq + 1);
      return sq_ids_[seq % sq_ids_.size()];
    }
    rq_retired_ = std::max(rq_retired_, internal_id + 1);
    return rq_ids_[internal_id % rq_ids_.size()];
  }

 private:
  Status expect(QpState from, QpState to) const {
    if (state_ != from)
      return Status(Errc::invalid_state, fmt::format("QP {:#x}: cannot move from {} to {} (only from {})", qp_->qp_num, qp_state_name(state_),
                                                     qp_state_name(to), qp_state_name(from)));
    return Status::ok();
  }
  VerbsDevice& dev_;
  ibv_qp* qp_;
  QpCaps caps_;
  QpState state_ = QpState::reset;
  std::uint32_t psn_ = 0;
  std::uint8_t retry_cnt_ = 7, rnr_retry_ = 7;
  std::uint32_t max_rd_atomic_ = 0;
  static constexpr std::uint64_t kSendBit = 1ull << 63;
  std::vector<std::uint64_t> sq_ids_, rq_ids_;  // caller's wr_id by sequence number
  std::uint64_t sq_posted_ = 0, sq_retired_ = 0, rq_posted_ = 0, rq_retired_ = 0;
};

class VerbsPd final : public ProtectionDomain {
 public:
  VerbsPd(VerbsDevice& dev, ibv_pd* pd) : dev_(dev), pd_(pd) {}
  ~VerbsPd() override { ibv_dealloc_pd(pd_); }
  Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, std::uint64_t length, std::uint32_t access, MemoryKind kind) override;
  Result<std::unique_ptr<QueuePair>> create_qp(CompletionQueue& send_cq, CompletionQueue& recv_cq, const QpCaps& caps) override;

 private:
  VerbsDevice& dev_;
  ibv_pd* pd_;
};

class VerbsDevice final : public Device {
 public:
  VerbsDevice(Selected s, int rank, WaitMode mode, Capabilities caps) : s_(std::move(s)), rank_(rank), mode_(mode), caps_(caps) {
    // Asynchronous events (a CQ that overflowed, a QP that hit a fatal error) are read without
    // blocking whenever a CQ is polled.
    int flags = fcntl(s_.ctx->async_fd, F_GETFL);
    fcntl(s_.ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
  }
  ~VerbsDevice() override { ibv_close_device(s_.ctx); }
  std::string name() const override { return s_.name; }
  const Capabilities& caps() const override { return caps_; }
  Result<std::unique_ptr<ProtectionDomain>> alloc_pd() override {
    ibv_pd* pd = ibv_alloc_pd(s_.ctx);
    if (!pd) return from_errno(errno, "ibv_alloc_pd");
    return std::unique_ptr<ProtectionDomain>(new VerbsPd(*this, pd));
  }
  Result<std::unique_ptr<CompletionQueue>> create_cq(std::uint32_t entries) override {
    RDMALAB_TRY(check_cq_entries(entries, caps_));
    ibv_comp_channel* ch = nullptr;
    if (mode_ == WaitMode::event) {
      ch = ibv_create_comp_channel(s_.ctx);
      if (!ch) return from_errno(errno, "ibv_create_comp_channel");
    }
    ibv_cq* cq = ibv_create_cq(s_.ctx, static_cast<int>(entries), nullptr, ch, 0);
    if (!cq) {
      int err = errno;
      if (ch) ibv_destroy_comp_channel(ch);
      return from_errno(err, fmt::format("ibv_create_cq({} entries)", entries));
    }
    auto out = std::make_unique<VerbsCq>(*this, cq, ch, entries, mode_);
    cqs_.push_back(out.get());
    return std::unique_ptr<CompletionQueue>(std::move(out));
  }
  // Reads pending asynchronous events every 4096th call (each read is a system call, which a
  // busy-polling loop cannot afford on every poll) or at once when `now` is set.
  void drain_async_events(bool now = false) {
    if (!now && (++async_calls_ & 4095) != 0) return;
    ibv_async_event ev{};
    while (ibv_get_async_event(s_.ctx, &ev) == 0) {
      if (ev.event_type == IBV_EVENT_CQ_ERR) {
        for (VerbsCq* cq : cqs_)
          if (cq->cq() == ev.element.cq) cq->overflowed = true;
        // The QPs that complete into it stop (the contract: CompletionQueue in transport.h).
        for (auto& [qpn, qp] : qps_)
          if (qp->uses(ev.element.cq)) qp->mark_error();
      }
      ibv_ack_async_event(&ev);
    }
  }
  void forget(VerbsCq* cq) { cqs_.erase(std::remove(cqs_.begin(), cqs_.end(), cq), cqs_.end()); }
  // A completion in error moves its QP to ERR in the hardware; the wrapper's state follows.
  void add_qp(std::uint32_t qpn, VerbsQp* qp) { qps_[qpn] = qp; }
  void remove_qp(std::uint32_t qpn) { qps_.erase(qpn); }
  void qp_failed(std::uint32_t qpn);
  std::uint64_t complete(std::uint32_t qpn, std::uint64_t internal_id);
  const Selected& sel() const { return s_; }
  int rank() const { return rank_; }
  Bootstrap* boot = nullptr;  // for peer-health checks while waiting
  std::string gpu_path = "auto";  // workload.gpu_path: how GPU memory is registered

 private:
  Selected s_;
  int rank_;
  WaitMode mode_;
  Capabilities caps_;
  std::vector<VerbsCq*> cqs_;
  std::unordered_map<std::uint32_t, VerbsQp*> qps_;
  std::uint32_t async_calls_ = 0;
};

void VerbsDevice::qp_failed(std::uint32_t qpn) {
  auto it = qps_.find(qpn);
  if (it != qps_.end()) it->second->mark_error();
}

std::uint64_t VerbsDevice::complete(std::uint32_t qpn, std::uint64_t internal_id) {
  auto it = qps_.find(qpn);
  return it == qps_.end() ? internal_id : it->second->complete(internal_id);
}

VerbsCq::~VerbsCq() {
  dev_.forget(this);
  destroy();
}

VerbsQp::VerbsQp(VerbsDevice& dev, ibv_qp* qp, QpCaps caps)
    : dev_(dev), qp_(qp), caps_(caps), sq_ids_(std::max<std::uint32_t>(caps.max_send_wr, 1)), rq_ids_(std::max<std::uint32_t>(caps.max_recv_wr, 1)) {
  dev_.add_qp(qp_->qp_num, this);
}
VerbsQp::~VerbsQp() {
  dev_.remove_qp(qp_->qp_num);
  ibv_destroy_qp(qp_);
}

Result<std::size_t> VerbsCq::poll(std::span<Completion> out) {
  dev_.drain_async_events();
  if (overflowed)
    return Status(Errc::cq_overflow, fmt::format("completion queue of {} entries overflowed (IBV_EVENT_CQ_ERR): completions were lost "
                                                 "(size it for every outstanding request, or poll more often)", cap_));
  ibv_wc wc[32];
  std::size_t n = 0;
  while (n < out.size()) {
    int want = static_cast<int>(std::min<std::size_t>(32, out.size() - n));
    int got = ibv_poll_cq(cq_, want, wc);
    if (got < 0) return Status(Errc::transport, "ibv_poll_cq failed");
    for (int i = 0; i < got; ++i) {
      Completion& c = out[n++];
      c.wr_id = wc[i].wr_id;
      c.status = from_ibv(wc[i].status);
      c.opcode = wc[i].status == IBV_WC_SUCCESS ? from_ibv(wc[i].opcode) : WcOpcode::send;
      c.byte_len = wc[i].byte_len;
      c.has_imm = (wc[i].wc_flags & IBV_WC_WITH_IMM) != 0;
      c.imm = c.has_imm ? ntohl(wc[i].imm_data) : 0;
      c.qp_num = wc[i].qp_num;
      c.wr_id = dev_.complete(c.qp_num, wc[i].wr_id);
      if (c.status != WcStatus::success) {
        dev_.qp_failed(c.qp_num);
        dev_.drain_async_events(true);  // an error may come with a CQ or QP event
      }
    }
    if (got < want) break;
  }
  // A poll that emptied a full CQ may have followed an overflow: look at the events now.
  if (n >= cap_) {
    dev_.drain_async_events(true);
    if (overflowed) return Status(Errc::cq_overflow, fmt::format("completion queue of {} entries overflowed (IBV_EVENT_CQ_ERR): completions "
                                                                 "were lost (size it for every outstanding request, or poll more often)", cap_));
  }
  return n;
}

Result<std::size_t> VerbsCq::wait(std::span<Completion> out, double timeout_s) {
  // The clock is read only when nothing came: a busy loop on the CQ between reads, as perftest
  // polls (reading the clock costs more than a poll under emulation, and delays the completion).
  // The first clock read comes after 256 empty polls (busy mode): a completion that is a few
  // microseconds away is then seen without any clock read, and the deadline starts that much
  // later, which a timeout of seconds does not notice.
  RDMALAB_ASSIGN(std::size_t first, poll(out));
  if (first > 0) return first;
  Clock::time_point deadline{}, last_health{};
  for (unsigned spins = 1;; ++spins) {
    RDMALAB_ASSIGN(std::size_t n, poll(out));
    if (n > 0) return n;
    if (mode_ == WaitMode::poll && spins % 256 != 0) continue;
    auto now = Clock::now();
    if (deadline == Clock::time_point{}) {
      deadline = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
      last_health = now;
    }
    if (now >= deadline) return Status(Errc::timeout, fmt::format("no completion within {}s", timeout_s));
    // A peer that died would never complete our requests: notice it through the bootstrap.
    if (dev_.boot && now - last_health > std::chrono::milliseconds(200)) {
      last_health = now;
      RDMALAB_TRY(dev_.boot->health());
    }
    if (mode_ == WaitMode::event) {
      if (!armed_) {
        if (ibv_req_notify_cq(cq_, 0) != 0) return Status(Errc::transport, "ibv_req_notify_cq failed");
        armed_ = true;
        continue;  // a completion may have arrived before the CQ was armed
      }
      pollfd pfd{ch_->fd, POLLIN, 0};
      int ms = static_cast<int>(std::min<long long>(200, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1));
      if (::poll(&pfd, 1, ms) > 0) {
        ibv_cq* ev_cq = nullptr;
        void* ctx = nullptr;
        if (ibv_get_cq_event(ch_, &ev_cq, &ctx) == 0) {
          ++unacked_;
          armed_ = false;
          if (unacked_ >= 64) {
            ibv_ack_cq_events(cq_, unacked_);
            unacked_ = 0;
          }
        }
      }
    }
  }
}

QpEndpoint VerbsQp::endpoint() const {
  QpEndpoint ep;
  ep.qpn = qp_->qp_num;
  ep.psn = psn_;
  ep.lid = dev_.sel().port_attr.lid;
  std::memcpy(ep.gid.data(), dev_.sel().gid.raw, 16);
  ep.rank = static_cast<std::uint32_t>(dev_.rank());
  ep.mtu = mtu_bytes(dev_.sel().port_attr.active_mtu);
  return ep;
}

Status VerbsQp::to_init() {
  RDMALAB_TRY(expect(QpState::reset, QpState::init));
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = dev_.sel().port;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return from_errno(rc, "ibv_modify_qp(INIT)");
  state_ = QpState::init;
  return Status::ok();
}

Status VerbsQp::to_rtr(const QpConnectAttr& c) {
  RDMALAB_TRY(expect(QpState::init, QpState::rtr));
  if (c.rnr_retry > 7 || c.retry_cnt > 7) return Status(Errc::invalid_argument, "retry_cnt and rnr_retry are 3-bit counters (0..7)");
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  std::uint32_t mtu = mtu_bytes(dev_.sel().port_attr.active_mtu);
  if (c.remote.mtu) mtu = std::min(mtu, c.remote.mtu);
  a.path_mtu = to_ibv_mtu(mtu);
  a.dest_qp_num = c.remote.qpn;
  a.rq_psn = c.remote.psn;
  a.max_dest_rd_atomic = rd_atomic_depth(c.max_rd_atomic, dev_.sel().max_rd_atom);
  a.min_rnr_timer = rnr_timer_code(c.min_rnr_timer_s);
  a.ah_attr.port_num = dev_.sel().port;
  a.ah_attr.dlid = static_cast<std::uint16_t>(c.remote.lid);
  if (dev_.sel().roce || dev_.sel().gid_index >= 0) {
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, c.remote.gid.data(), 16);
    a.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(std::max(0, dev_.sel().gid_index));
    a.ah_attr.grh.hop_limit = 64;
  }
  if (int rc = ibv_modify_qp(qp_, &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                 IBV_QP_MIN_RNR_TIMER))
    return from_errno(rc, "ibv_modify_qp(RTR)");
  retry_cnt_ = c.retry_cnt;
  rnr_retry_ = c.rnr_retry;
  max_rd_atomic_ = c.max_rd_atomic;
  state_ = QpState::rtr;
  return Status::ok();
}

Status VerbsQp::to_rts() {
  RDMALAB_TRY(expect(QpState::rtr, QpState::rts));
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;  // 4.096 us × 2^14 ≈ 67 ms, perftest's default
  a.retry_cnt = retry_cnt_;
  a.rnr_retry = rnr_retry_;
  a.sq_psn = psn_;
  a.max_rd_atomic = rd_atomic_depth(max_rd_atomic_, dev_.sel().max_init_rd_atom);
  if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
    return from_errno(rc, "ibv_modify_qp(RTS)");
  state_ = QpState::rts;
  return Status::ok();
}

Status VerbsQp::post_send(std::span<const SendWr> wrs, std::size_t* bad_index) {
  if (state_ != QpState::rts && state_ != QpState::err) {
    if (bad_index) *bad_index = 0;
    return Status(Errc::invalid_state, fmt::format("QP {:#x}: post_send needs the QP in RTS (it is in {})", qp_->qp_num, qp_state_name(state_)));
  }
  // Small lists (the common case: one request) are built on the stack: no allocation per post.
  std::array<ibv_send_wr, 8> v_small;
  std::array<ibv_sge, 16> s_small;
  std::vector<ibv_send_wr> v_big;
  std::vector<ibv_sge> s_big;
  std::size_t total_sge = 0;
  for (const auto& w : wrs) total_sge += w.sg_list.size();
  if (wrs.size() > v_small.size()) v_big.resize(wrs.size());
  if (total_sge > s_small.size()) s_big.resize(total_sge);
  ibv_send_wr* v = wrs.size() > v_small.size() ? v_big.data() : v_small.data();
  ibv_sge* sges = total_sge > s_small.size() ? s_big.data() : s_small.data();
  std::size_t nsge = 0;
  // Request i is refused: the ones before it are posted, as ibv_post_send does with a bad request
  // in a list (and with ENOMEM when the queue is full).
  auto refuse_at = [&](std::size_t i, Errc code, const std::string& why) {
    if (i) {
      v[i - 1].next = nullptr;
      if (Status st = post_prepared(v, i); !st) return st;
    }
    if (bad_index) *bad_index = i;
    return Status(code, fmt::format("QP {:#x}: {}", qp_->qp_num, why));
  };
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    const SendWr& w = wrs[i];
    std::uint64_t len = 0;
    const bool atomic = is_atomic(w.opcode);
    if (Status bad = check_send_wr(w, caps_, len); !bad) return refuse_at(i, Errc::invalid_argument, bad.message());
    if (sq_posted_ + i - sq_retired_ >= caps_.max_send_wr)
      return refuse_at(i, Errc::queue_full,
                       fmt::format("send queue full ({} outstanding): poll completions before posting more", caps_.max_send_wr));
    ibv_send_wr& r = v[i];
    r = ibv_send_wr{};
    sq_ids_[(sq_posted_ + i) % sq_ids_.size()] = w.wr_id;
    r.wr_id = kSendBit | (sq_posted_ + i);
    r.sg_list = sges + nsge;
    r.num_sge = static_cast<int>(w.sg_list.size());
    for (const auto& s : w.sg_list) sges[nsge++] = ibv_sge{s.addr, s.length, s.lkey};
    r.send_flags = (w.signaled ? static_cast<unsigned>(IBV_SEND_SIGNALED) : 0u) | (w.inline_data ? static_cast<unsigned>(IBV_SEND_INLINE) : 0u);
    r.next = i + 1 < wrs.size() ? &v[i + 1] : nullptr;
    switch (w.opcode) {
      case SendOpcode::rdma_write: r.opcode = IBV_WR_RDMA_WRITE; break;
      case SendOpcode::rdma_write_with_imm: r.opcode = IBV_WR_RDMA_WRITE_WITH_IMM; break;
      case SendOpcode::send: r.opcode = IBV_WR_SEND; break;
      case SendOpcode::send_with_imm: r.opcode = IBV_WR_SEND_WITH_IMM; break;
      case SendOpcode::rdma_read: r.opcode = IBV_WR_RDMA_READ; break;
      case SendOpcode::atomic_fetch_add: r.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD; break;
      case SendOpcode::atomic_cmp_swap: r.opcode = IBV_WR_ATOMIC_CMP_AND_SWP; break;
    }
    if (w.opcode == SendOpcode::rdma_write_with_imm || w.opcode == SendOpcode::send_with_imm) r.imm_data = htonl(w.imm);
    if (atomic) {
      r.wr.atomic.remote_addr = w.remote_addr;
      r.wr.atomic.rkey = w.rkey;
      r.wr.atomic.compare_add = w.compare_add;
      r.wr.atomic.swap = w.swap;
    } else {
      r.wr.rdma.remote_addr = w.remote_addr;
      r.wr.rdma.rkey = w.rkey;
    }
  }
  if (wrs.empty()) return Status::ok();
  Status st = post_prepared(v, wrs.size());
  if (!st && bad_index) *bad_index = 0;
  return st;
}

Status VerbsQp::post_prepared(ibv_send_wr* v, std::size_t count) {
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(qp_, v, &bad);
  std::size_t accepted = rc && bad ? static_cast<std::size_t>(bad - v) : (rc ? 0 : count);
  sq_posted_ += accepted;
  if (rc) return from_errno(rc, fmt::format("QP {:#x}: ibv_post_send (request {} of the list)", qp_->qp_num, accepted));
  return Status::ok();
}

Status VerbsQp::post_recv(std::span<const RecvWr> wrs, std::size_t* bad_index) {
  if (state_ == QpState::reset) {
    if (bad_index) *bad_index = 0;
    return Status(Errc::invalid_state, fmt::format("QP {:#x}: post_recv needs the QP in INIT or later (it is in RESET)", qp_->qp_num));
  }
  // As post_send: small lists on the stack; requests before a refused one are posted.
  std::array<ibv_recv_wr, 8> v_small;
  std::array<ibv_sge, 16> s_small;
  std::vector<ibv_recv_wr> v_big;
  std::vector<ibv_sge> s_big;
  std::size_t total = 0;
  for (const auto& w : wrs) total += w.sg_list.size();
  if (wrs.size() > v_small.size()) v_big.resize(wrs.size());
  if (total > s_small.size()) s_big.resize(total);
  ibv_recv_wr* v = wrs.size() > v_small.size() ? v_big.data() : v_small.data();
  ibv_sge* sges = total > s_small.size() ? s_big.data() : s_small.data();
  std::size_t nsge = 0, count = wrs.size();
  Status refused = Status::ok();
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    if (rq_posted_ + i - rq_retired_ >= caps_.max_recv_wr || wrs[i].sg_list.size() > caps_.max_recv_sge) {
      if (bad_index) *bad_index = i;
      refused = Status(wrs[i].sg_list.size() > caps_.max_recv_sge ? Errc::invalid_argument : Errc::queue_full,
                       fmt::format("QP {:#x}: receive queue full or too many SGEs", qp_->qp_num));
      count = i;
      break;
    }
    v[i] = ibv_recv_wr{};
    rq_ids_[(rq_posted_ + i) % rq_ids_.size()] = wrs[i].wr_id;
    v[i].wr_id = rq_posted_ + i;
    v[i].sg_list = sges + nsge;
    v[i].num_sge = static_cast<int>(wrs[i].sg_list.size());
    for (const auto& s : wrs[i].sg_list) sges[nsge++] = ibv_sge{s.addr, s.length, s.lkey};
    v[i].next = i + 1 < wrs.size() ? &v[i + 1] : nullptr;
  }
  if (count == 0) return refused;
  v[count - 1].next = nullptr;
  ibv_recv_wr* bad = nullptr;
  int rc = ibv_post_recv(qp_, v, &bad);
  rq_posted_ += rc && bad ? static_cast<std::size_t>(bad - v) : (rc ? 0 : count);
  if (rc) {
    if (bad_index && bad) *bad_index = static_cast<std::size_t>(bad - v);
    return from_errno(rc, fmt::format("QP {:#x}: ibv_post_recv", qp_->qp_num));
  }
  return refused;
}

namespace {

// Says once per process how GPU memory reached the NIC, and why the better paths did not.
void report_gpu_path(const std::string& taken, const std::vector<std::string>& refused) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::string why;
    for (const auto& r : refused) why += (why.empty() ? " (" : "; ") + r;
    std::fprintf(stderr, "rdmalab verbs: GPU memory registered by %s%s\n", taken.c_str(), why.empty() ? "" : (why + ")").c_str());
  });
}

bool module_loaded(const char* name) { return ::access(fmt::format("/sys/module/{}", name).c_str(), F_OK) == 0; }

}  // namespace

// GPU memory, in workload.gpu_path's order (auto: dmabuf, then peermem):
//   dmabuf   the provider exports the range as a dmabuf (cuMemGetHandleForAddressRange), and
//            ibv_reg_dmabuf_mr registers it (perftest --use_cuda_dmabuf; open GPU kernel modules);
//   peermem  ibv_reg_mr on the device pointer, which nvidia_peermem resolves (perftest --use_cuda);
// The third path, staged (host bounce buffers), is a layer over every backend (core's staging.h):
// with auto it takes over when this refuses with not_supported.
Result<ibv_mr*> register_gpu(ibv_pd* pd, void* addr, std::uint64_t length, int access, const std::string& path, std::string& taken) {
  if (path != "auto" && path != "dmabuf" && path != "peermem")
    return Status(Errc::internal, fmt::format("workload.gpu_path {} reached the verbs backend (the staging layer registers staged memory)", path));
  std::vector<std::string> refused;
  MemoryProvider* gpu = memory_provider(MemoryKind::cuda);
  if (path == "auto" || path == "dmabuf") {
    if (!gpu) {
      refused.push_back(fmt::format("dmabuf: {}", memory_unavailable_reason(MemoryKind::cuda)));
    } else if (auto r = gpu->export_dmabuf(addr, length); !r) {
      refused.push_back(fmt::format("dmabuf: {}", r.status().message()));
    } else {
      ibv_mr* mr = ibv_reg_dmabuf_mr(pd, r->offset, length, reinterpret_cast<std::uint64_t>(addr), r->fd, access);
      const int err = errno;
      ::close(r->fd);  // the MR holds its own reference
      if (mr) {
        report_gpu_path("dmabuf (GPUDirect RDMA)", refused);
        taken = "GPUDirect RDMA (dmabuf)";
        return mr;
      }
      refused.push_back(fmt::format("dmabuf: ibv_reg_dmabuf_mr failed ({}){}", std::strerror(err),
                                    err == EOPNOTSUPP || err == ENOSYS ? ": this NIC's driver cannot import dmabuf (needs kernel 5.12+ and mlx5)" : ""));
    }
  }
  if (path == "auto" || path == "peermem") {
    ibv_mr* mr = ibv_reg_mr(pd, addr, length, access);
    const int err = errno;
    if (mr) {
      report_gpu_path("peermem (GPUDirect RDMA through nvidia_peermem)", refused);
      taken = "GPUDirect RDMA (peermem)";
      return mr;
    }
    refused.push_back(fmt::format("peermem: ibv_reg_mr on the device pointer failed ({}){}", std::strerror(err),
                                  module_loaded("nvidia_peermem") ? "" : ": nvidia_peermem is not loaded (modprobe nvidia_peermem)"));
  }
  std::string why;
  for (const auto& r : refused) why += (why.empty() ? "" : "; ") + r;
  return Status(Errc::not_supported, fmt::format("GPU memory ({}) cannot be registered with workload.gpu_path {}: {}",
                                                 units::format_size(length), path, why));
}

Result<std::unique_ptr<MemoryRegion>> VerbsPd::register_memory(void* addr, std::uint64_t length, std::uint32_t access, MemoryKind kind) {
  if (kind != MemoryKind::host && kind != MemoryKind::cuda)
    return Status(Errc::not_supported, fmt::format("verbs registers host and GPU memory (asked {})", memory_kind_name(kind)));
  RDMALAB_TRY(check_registration(addr, length, access));
  if (kind == MemoryKind::cuda) {
    std::string taken;
    RDMALAB_ASSIGN(ibv_mr * gmr, register_gpu(pd_, addr, length, static_cast<int>(to_ibv_access(access)), dev_.gpu_path, taken));
    return std::unique_ptr<MemoryRegion>(new VerbsMr(gmr, access, kind, taken));
  }
  ibv_mr* mr = ibv_reg_mr(pd_, addr, length, static_cast<int>(to_ibv_access(access)));
  if (!mr) {
    int err = errno;
    rlimit rl{};
    getrlimit(RLIMIT_MEMLOCK, &rl);
    if ((err == ENOMEM || err == EPERM || err == EAGAIN) && rl.rlim_cur != RLIM_INFINITY)
      return Status(Errc::permission,
                    fmt::format("ibv_reg_mr of {} failed ({}): the locked-memory limit (ulimit -l) is {}; raise it: `ulimit -l unlimited` in the "
                                "shell, or `* - memlock unlimited` in /etc/security/limits.conf, or LimitMEMLOCK=infinity for a service",
                                units::format_size(length), std::strerror(err), units::format_size(rl.rlim_cur)));
    return from_errno(err, fmt::format("ibv_reg_mr({})", units::format_size(length)));
  }
  return std::unique_ptr<MemoryRegion>(new VerbsMr(mr, access, kind));
}

Result<std::unique_ptr<QueuePair>> VerbsPd::create_qp(CompletionQueue& send_cq, CompletionQueue& recv_cq, const QpCaps& caps) {
  auto* scq = dynamic_cast<VerbsCq*>(&send_cq);
  auto* rcq = dynamic_cast<VerbsCq*>(&recv_cq);
  if (!scq || !rcq) return Status(Errc::invalid_argument, "create_qp: the CQs do not belong to the verbs backend");
  ibv_qp_init_attr ia{};
  ia.send_cq = scq->cq();
  ia.recv_cq = rcq->cq();
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = caps.max_send_wr;
  ia.cap.max_recv_wr = std::max<std::uint32_t>(caps.max_recv_wr, 1);
  ia.cap.max_send_sge = caps.max_send_sge;
  ia.cap.max_recv_sge = caps.max_recv_sge;
  ia.cap.max_inline_data = caps.max_inline;
  ibv_qp* qp = ibv_create_qp(pd_, &ia);
  if (!qp) return from_errno(errno, "ibv_create_qp");
  // The device may grant more than asked (queue depths rounded up): the QP has what it got.
  QpCaps got = caps;
  got.max_send_wr = ia.cap.max_send_wr;
  got.max_recv_wr = ia.cap.max_recv_wr;
  got.max_send_sge = ia.cap.max_send_sge;
  got.max_recv_sge = ia.cap.max_recv_sge;
  got.max_inline = ia.cap.max_inline_data;
  return std::unique_ptr<QueuePair>(new VerbsQp(dev_, qp, got));
}

// Capabilities from the device itself; the inline limit by asking for QPs until one is made.
double port_gbps(const ibv_port_attr& pa);

Capabilities probe_caps(const Selected& s) {
  Capabilities c;
  c.port_gbps = port_gbps(s.port_attr);
  ibv_device_attr da{};
  ibv_query_device(s.ctx, &da);
  c.rdma_read = true;
  c.rdma_write_imm = true;
  c.atomics = da.atomic_cap != IBV_ATOMIC_NONE;
  c.max_sge = static_cast<std::uint32_t>(std::min(da.max_sge, 16));
  c.max_qp_wr = static_cast<std::uint32_t>(da.max_qp_wr);
  c.max_cq_entries = static_cast<std::uint32_t>(da.max_cqe);
  c.max_msg_size = s.port_attr.max_msg_sz;
  // Linux 6.1's rxe leaves requests posted to a QP in ERR without a completion (seen under the
  // harness); hardware and later kernels flush them.
  c.flushes_posts_in_err = s.name.rfind("rxe", 0) != 0;
  // GPU memory when this process has a GPU provider (gpu::install found a GPU); whether the NIC
  // can reach it is found at registration (dmabuf, then peermem), with the reasons when not.
  if (memory_provider(MemoryKind::cuda)) c.memory_kinds.add(MemoryKind::cuda);
  ibv_pd* pd = ibv_alloc_pd(s.ctx);
  ibv_cq* cq = pd ? ibv_create_cq(s.ctx, 4, nullptr, nullptr, 0) : nullptr;
  for (std::uint32_t inl : {1024u, 512u, 256u, 240u, 128u, 64u, 0u}) {
    if (!cq) break;
    ibv_qp_init_attr ia{};
    ia.send_cq = cq;
    ia.recv_cq = cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = 1;
    ia.cap.max_recv_wr = 1;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    ia.cap.max_inline_data = inl;
    if (ibv_qp* qp = ibv_create_qp(pd, &ia)) {
      c.max_inline = inl;
      ibv_destroy_qp(qp);
      break;
    }
  }
  if (cq) ibv_destroy_cq(cq);
  if (pd) ibv_dealloc_pd(pd);
  return c;
}

class WallRuntime final : public Runtime {
 public:
  explicit WallRuntime(Bootstrap* boot) : t0_(Clock::now()), boot_(boot) {}
  double now() override { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  Status compute(double seconds) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return Status::ok();
  }
  Status wait_for_byte(const volatile std::uint8_t* addr, std::uint8_t value, double timeout_s) override {
    // Busy-polls the memory, as ib_write_lat does; the clock is read only every 64Ki spins.
    Clock::time_point deadline{};
    for (std::uint64_t spins = 1;; ++spins) {
      if (*addr == value) return Status::ok();
      if ((spins & 0xffff) == 0) {
        auto now = Clock::now();
        if (deadline == Clock::time_point{})
          deadline = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
        if (now > deadline) return Status(Errc::timeout, fmt::format("byte not written within {}s", timeout_s));
        if (boot_ && (spins & 0xfffff) == 0) RDMALAB_TRY(boot_->health());
      }
    }
  }

 private:
  Clock::time_point t0_;
  Bootstrap* boot_;
};

struct VerbsOptions {
  std::string device;
  int port = -1;
  int gid_index = -1;
  WaitMode wait = WaitMode::poll;
  std::string gpu_path = "auto";
};

VerbsOptions read_options(const Scenario* sc) {
  VerbsOptions o;
  if (!sc) return o;
  if (sc->has("verbs.device")) o.device = sc->get_string("verbs.device");
  if (sc->has("verbs.port")) o.port = static_cast<int>(sc->get_int("verbs.port"));
  if (sc->has("verbs.gid_index")) o.gid_index = static_cast<int>(sc->get_int("verbs.gid_index"));
  if (sc->has("verbs.wait")) o.wait = sc->get_string("verbs.wait") == "event" ? WaitMode::event : WaitMode::poll;
  if (sc->has("workload.gpu_path")) o.gpu_path = sc->get_string("workload.gpu_path");
  return o;
}

// Rank 0 says once when the scenario's fabric does not describe the device this run found (the
// model's prediction of the scenario is then for other hardware): a note, not a failure.
void note_fabric_mismatch(const Scenario* sc, const Selected& sel, int rank) {
  if (!sc || rank != 0) return;
  const double want = sc->get_bandwidth("fabric.link.bandwidth") * 8 / 1e9, have = port_gbps(sel.port_attr);
  if (have <= 0 || std::abs(want - have) <= 0.1 * have) return;
  fmt::print(stderr, "rdmalab: note: fabric.link.bandwidth is {:g} Gb/s{}, but {} port {} is active at {:g} Gb/s: the scenario's fabric does "
                     "not describe this device, so a model run of it predicts other hardware (set fabric.link.bandwidth to compare)\n",
             want, sc->is_set("fabric.link.bandwidth") ? "" : " (the default)", sel.name, sel.port, have);
}

// Runs one rank in this process.
// `abort` tells the other ranks this one failed (so they stop instead of waiting for it).
Status run_rank(const LaunchSpec& spec, const RankMain& main, Bootstrap& boot, const std::function<void(const std::string&)>& abort) {
  VerbsOptions o = read_options(spec.scenario);
  auto sel = open_device(o.device, o.port, o.gid_index);
  if (!sel) {
    Status st = sel.status().with_context(fmt::format("rank {}", boot.rank()));
    abort(st.message());
    return st;
  }
  note_fabric_mismatch(spec.scenario, *sel, boot.rank());
  Capabilities caps = probe_caps(*sel);
  VerbsDevice dev(std::move(sel).value(), boot.rank(), o.wait, caps);
  dev.boot = &boot;
  dev.gpu_path = o.gpu_path;
  WallRuntime rt(&boot);
  RankEnv env{boot.rank(), boot.size(), boot, rt, dev, host_memory(), scenario_node_shape(spec.scenario, boot.size())};
  Status st;
  try {
    st = main(env);
  } catch (const std::exception& e) {
    st = Status(Errc::internal, fmt::format("uncaught exception: {}", e.what()));
  }
  if (!st) abort(st.message());
  return st;
}

Status run_rank(const LaunchSpec& spec, const RankMain& main, TcpBootstrap& boot) {
  return run_rank(spec, main, boot, [&](const std::string& why) { boot.abort(why); });
}

std::string random_token() {
  std::random_device rd;
  return fmt::format("{:016x}{:016x}", (static_cast<std::uint64_t>(rd()) << 32) | rd(), (static_cast<std::uint64_t>(rd()) << 32) | rd());
}

const char* link_layer_name(std::uint8_t ll) {
  switch (ll) {
    case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
    case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
    default: return "unknown";
  }
}

// Active speed in Gb/s from the port's width and speed codes (IBTA encodings).
double port_gbps(const ibv_port_attr& pa) {
  int lanes = pa.active_width == 1 ? 1 : pa.active_width == 2 ? 4 : pa.active_width == 4 ? 8 : pa.active_width == 8 ? 12 : pa.active_width == 16 ? 2 : 0;
  double per_lane = 0;
  switch (pa.active_speed) {
    case 1: per_lane = 2.5; break;
    case 2: per_lane = 5; break;
    case 4:
    case 8: per_lane = 10; break;
    case 16: per_lane = 14; break;
    case 32: per_lane = 25; break;
    case 64: per_lane = 50; break;
    case 128: per_lane = 100; break;
    default: break;
  }
  return lanes * per_lane;
}

std::string gid_netdev(ibv_context* ctx, std::uint8_t port, int index) {
  char path[256];
  std::snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/%d", ibv_get_device_name(ctx->device), port, index);
  FILE* f = std::fopen(path, "r");
  if (!f) return "";
  char buf[64] = {0};
  if (!std::fgets(buf, sizeof buf, f)) buf[0] = 0;
  std::fclose(f);
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class VerbsBackend final : public Backend {
 public:
  Result<std::vector<DeviceInfo>> devices() const override {
    DeviceList dl;
    if (!dl.list || dl.n == 0) return Status(Errc::not_found, no_devices_reason(dl.err));
    std::vector<DeviceInfo> out;
    for (int i = 0; i < dl.n; ++i) {
      ibv_context* ctx = ibv_open_device(dl.list[i]);
      if (!ctx) continue;
      ibv_device_attr da{};
      ibv_query_device(ctx, &da);
      for (int p = 1; p <= da.phys_port_cnt; ++p) {
        ibv_port_attr pa{};
        if (ibv_query_port(ctx, static_cast<std::uint8_t>(p), &pa) != 0) continue;
        DeviceInfo d;
        d.device = ibv_get_device_name(dl.list[i]);
        d.port = p;
        d.state = ibv_port_state_str(pa.state);
        d.link_layer = link_layer_name(pa.link_layer);
        d.active_mtu = mtu_bytes(pa.active_mtu);
        d.speed_gbps = port_gbps(pa);
        d.lid = pa.lid;
        for (int g = 0; g < pa.gid_tbl_len; ++g) {
          ibv_gid_entry e{};
          if (ibv_query_gid_ex(ctx, static_cast<std::uint32_t>(p), static_cast<std::uint32_t>(g), &e, 0) != 0) continue;
          bool zero = std::all_of(e.gid.raw, e.gid.raw + 16, [](std::uint8_t b) { return b == 0; });
          if (zero) continue;
          const char* type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" : e.gid_type == IBV_GID_TYPE_ROCE_V1 ? "RoCE v1" : "IB";
          d.gids.push_back({g, gid_text(e.gid), type, gid_netdev(ctx, static_cast<std::uint8_t>(p), g)});
        }
        out.push_back(std::move(d));
      }
      ibv_close_device(ctx);
    }
    return out;
  }

  std::string name() const override { return "verbs"; }
  std::string description() const override { return "libibverbs (rdma-core): ConnectX and Soft-RoCE, ranks as processes"; }
  Availability availability() const override {
    DeviceList dl;
    if (!dl.list || dl.n == 0) return {false, no_devices_reason(dl.err)};
    auto s = open_device("", -1, -1);
    if (!s) return {false, s.status().message()};
    ibv_close_device(s->ctx);
    return {true, ""};
  }
  Capabilities capabilities() const override {
    auto s = open_device("", -1, -1);
    if (!s) return {};
    Capabilities c = probe_caps(*s);
    ibv_close_device(s->ctx);
    return c;
  }
  void add_keys(Schema& schema) const override {
    using T = ValueType;
    schema.add(KeySpec{"verbs.device", T::string, "", "RDMA device to use (ibv_devices); default: the first with an ACTIVE port", {}});
    schema.add(KeySpec{"verbs.port", T::integer, "", "port number; default: the first ACTIVE port", {}, 1, 255});
    schema.add(KeySpec{"verbs.gid_index", T::integer, "", "GID index (perftest -x); default: a RoCE v2 GID on Ethernet ports", {}, 0, 1024});
    schema.add(KeySpec{"verbs.wait", T::enumeration, "poll", "waiting for completions: poll (busy, lowest latency) or event (completion channel, low CPU)",
                       {"poll", "event"}});
  }
  Status check(const Scenario& sc) const override {
    VerbsOptions o = read_options(&sc);
    auto s = open_device(o.device, o.port, o.gid_index);
    if (!s) return sc.error(sc.is_set("verbs.device") ? "verbs.device" : "backend", s.status().message());
    ibv_close_device(s->ctx);
    return Status::ok();
  }
  bool hosts_all_ranks() const override { return false; }

  // Local ranks are child processes, killed on a stop request; one rank per process (--bootstrap,
  // mpirun) is stopped by its launcher's signal.
  bool can_cancel() const override { return true; }

  Status launch(const LaunchSpec& spec, const RankMain& main) override {
    if (spec.placement.rendezvous == "mpi") {
      // One rank of a run started by mpirun: MPI gives the rank, the size and the allgather.
      RDMALAB_ASSIGN(auto boot, verbs::MpiBootstrap::init());
      if (boot->size() != spec.ranks)
        return Status(Errc::invalid_argument, fmt::format("mpirun started {} ranks but the scenario has {} (fabric.nodes): run "
                                                          "mpirun -np {}, or --set fabric.nodes={}", boot->size(), spec.ranks, spec.ranks, boot->size()));
      return run_rank(spec, main, *boot, [&](const std::string& why) { boot->abort(why); });
    }
    if (!spec.placement.rendezvous.empty()) {
      // One rank of a run across processes or machines.
      auto hp = parse_host_port(spec.placement.rendezvous);
      if (!hp) return hp.status();
      TcpBootstrapOptions bo;
      bo.host = hp->first;
      bo.port = hp->second;
      bo.rank = spec.placement.rank;
      bo.size = spec.placement.size;
      bo.token = spec.placement.token;
      if (bo.size != spec.ranks)
        return Status(Errc::invalid_argument, fmt::format("--size {} but the scenario has {} ranks (fabric.nodes)", bo.size, spec.ranks));
      RDMALAB_ASSIGN(auto boot, TcpBootstrap::listen(bo));
      RDMALAB_TRY(boot->connect());
      return run_rank(spec, main, *boot);  // in this process: nothing to carry back
    }
    // Local ranks are forked from this process, which has already opened the GPU (CUDA cannot be
    // used in a child forked after that).
    if (spec.scenario && spec.scenario->has("workload.memory") && spec.scenario->get_string("workload.memory") == "cuda")
      return spec.scenario->error("workload.memory",
                                  "GPU memory on the verbs backend needs one process per rank: start them with mpirun, or with "
                                  "--bootstrap HOST:PORT --rank R --size N (CUDA cannot be used in ranks forked from this process)");
    return launch_local(spec, main);
  }

 private:
  // Every rank a child process of this one, connected through 127.0.0.1.
  Status launch_local(const LaunchSpec& spec, const RankMain& main) {
    TcpBootstrapOptions bo;
    bo.host = "127.0.0.1";
    bo.port = 0;
    bo.rank = 0;
    bo.size = spec.ranks;
    bo.token = random_token();
    RDMALAB_ASSIGN(auto hub, TcpBootstrap::listen(bo));  // bound before forking: children connect to it
    const int port = hub->port();
    std::vector<std::pair<pid_t, int>> children;
    for (int r = 0; r < spec.ranks; ++r) {
      auto child = fork_child([&, r] {
        ChildOutcome out;
        if (r == 0) {
          out.status = hub->connect();
          if (out.status) out.status = run_rank(spec, main, *hub);
        } else {
          TcpBootstrapOptions co = bo;
          co.rank = r;
          co.port = port;
          auto b = TcpBootstrap::listen(co);
          out.status = b ? b.value()->connect() : b.status();
          if (out.status) out.status = run_rank(spec, main, *b.value());
        }
        out.state = spec.export_state ? spec.export_state() : std::string();
        return out;
      });
      if (!child) return child.status();
      children.push_back(*child);
    }
    hub.reset();  // the parent's copy of the listening socket
    std::vector<Status> results;
    for (int r = 0; r < spec.ranks; ++r) {
      auto [pid, fd] = children[static_cast<std::size_t>(r)];
      ChildOutcome out = collect_child(pid, fd, fmt::format("rank {}", r), spec.cancel);
      if (spec.import_state && !out.state.empty()) spec.import_state(out.state);
      results.push_back(out.status);
    }
    return first_failure(results);
  }
};

}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<VerbsBackend>(); }

}  // namespace rdmalab::verbs
