#include "rdmalab/staging.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <vector>

#include "rdmalab/units.h"

namespace rdmalab {
namespace {

class StagedRegion;

// The staged regions of one protection domain, found by the lkey an SGE names.
struct StagedSet {
  std::vector<StagedRegion*> regions;
};

// Memory of the staged kind, registered as a host copy (the bounce buffer) that the NIC works on.
class StagedRegion final : public MemoryRegion {
 public:
  StagedRegion(StagedSet& set, MemoryProvider& mem, std::byte* memory, std::uint64_t length, MemoryKind kind, Buffer bounce,
               std::unique_ptr<MemoryRegion> inner)
      : set_(set), mem_(mem), memory_(memory), length_(length), kind_(kind), bounce_(std::move(bounce)), inner_(std::move(inner)) {
    set_.regions.push_back(this);
  }
  ~StagedRegion() override { std::erase(set_.regions, this); }

  std::uint64_t addr() const override { return inner_->addr(); }
  std::uint64_t length() const override { return length_; }
  std::uint32_t lkey() const override { return inner_->lkey(); }
  std::uint32_t rkey() const override { return inner_->rkey(); }
  std::uint32_t access() const override { return inner_->access(); }
  MemoryKind kind() const override { return kind_; }
  std::string data_path() const override { return "staged (host bounce buffers)"; }

  Status sync_to_nic(std::uint64_t offset, std::uint64_t len) override {
    RDMALAB_TRY(check(offset, len, "sync_to_nic"));
    return mem_.copy_bytes(bounce_.bytes() + offset, memory_ + offset, len);
  }
  Status sync_from_nic(std::uint64_t offset, std::uint64_t len) override {
    RDMALAB_TRY(check(offset, len, "sync_from_nic"));
    return mem_.copy_bytes(memory_ + offset, bounce_.bytes() + offset, len);
  }

  // Where [addr, addr + len), named by an SGE with this region's lkey, starts inside the region:
  // the SGE may name the memory itself (workloads use their buffers' addresses) or the copy
  // (addr() is the copy's). False when it lies in neither: the SGE goes on unchanged and fails
  // as any SGE outside its region does.
  bool offset_of(std::uint64_t addr, std::uint64_t len, std::uint64_t& offset) const {
    for (std::uint64_t base : {reinterpret_cast<std::uint64_t>(memory_), bounce_.addr()}) {
      if (addr >= base && addr - base <= length_ && len <= length_ - (addr - base)) {
        offset = addr - base;
        return true;
      }
    }
    return false;
  }

 private:
  Status check(std::uint64_t offset, std::uint64_t len, const char* what) const {
    if (offset > length_ || len > length_ - offset)
      return Status(Errc::invalid_argument, fmt::format("{} of [{}, {}) is outside the region ({} bytes)", what, offset, offset + len, length_));
    return Status::ok();
  }

  StagedSet& set_;
  MemoryProvider& mem_;
  std::byte* memory_;
  std::uint64_t length_;
  MemoryKind kind_;
  Buffer bounce_;                        // declared before inner_: deregistered before it is freed
  std::unique_ptr<MemoryRegion> inner_;  // the copy's registration with the backend
};

bool carries_local_data(SendOpcode op) {
  return op == SendOpcode::rdma_write || op == SendOpcode::rdma_write_with_imm || op == SendOpcode::send ||
         op == SendOpcode::send_with_imm;
}

class StagedQp final : public QueuePair {
 public:
  StagedQp(std::unique_ptr<QueuePair> inner, const StagedSet& set) : inner_(std::move(inner)), set_(set) {}

  std::uint32_t qpn() const override { return inner_->qpn(); }
  QpState state() const override { return inner_->state(); }
  QpEndpoint endpoint() const override { return inner_->endpoint(); }
  QpCaps caps() const override { return inner_->caps(); }
  Status to_init() override { return inner_->to_init(); }
  Status to_rtr(const QpConnectAttr& attr) override { return inner_->to_rtr(attr); }
  Status to_rts() override { return inner_->to_rts(); }
  Status to_error() override { return inner_->to_error(); }
  Status reset() override { return inner_->reset(); }

  // Writes and sends first copy what they carry from the memory into the copy; every SGE that
  // names staged memory is pointed at the copy. A failed copy posts nothing.
  Status post_send(std::span<const SendWr> wrs, std::size_t* bad_index) override {
    if (set_.regions.empty()) return inner_->post_send(wrs, bad_index);
    send_wrs_.assign(wrs.begin(), wrs.end());
    RDMALAB_TRY(retarget(send_wrs_, [](const SendWr& wr) { return carries_local_data(wr.opcode) && !wr.sg_list.empty(); }, bad_index));
    return inner_->post_send(send_wrs_, bad_index);
  }
  Status post_recv(std::span<const RecvWr> wrs, std::size_t* bad_index) override {
    if (set_.regions.empty()) return inner_->post_recv(wrs, bad_index);
    recv_wrs_.assign(wrs.begin(), wrs.end());
    RDMALAB_TRY(retarget(recv_wrs_, [](const RecvWr&) { return false; }, bad_index));
    return inner_->post_recv(recv_wrs_, bad_index);
  }

 private:
  template <class Wr, class CopyOut>
  Status retarget(std::vector<Wr>& wrs, CopyOut copy_out, std::size_t* bad_index) {
    std::size_t total = 0;
    for (const Wr& wr : wrs) total += wr.sg_list.size();
    sges_.clear();
    sges_.reserve(total);  // no reallocation below: the spans point into it
    for (std::size_t i = 0; i < wrs.size(); ++i) {
      Wr& wr = wrs[i];
      const std::size_t first = sges_.size();
      const bool out = copy_out(wr);
      for (Sge sge : wr.sg_list) {
        for (StagedRegion* r : set_.regions) {
          std::uint64_t off = 0;
          if (r->lkey() != sge.lkey || !r->offset_of(sge.addr, sge.length, off)) continue;
          if (out) {
            if (Status st = r->sync_to_nic(off, sge.length); !st) {
              if (bad_index) *bad_index = 0;
              return st.with_context(fmt::format("copying request {}'s data to its bounce buffer", i));
            }
          }
          sge.addr = r->addr() + off;
          break;
        }
        sges_.push_back(sge);
      }
      wr.sg_list = std::span<const Sge>(sges_.data() + first, wr.sg_list.size());
    }
    return Status::ok();
  }

  std::unique_ptr<QueuePair> inner_;
  const StagedSet& set_;
  std::vector<Sge> sges_;  // reused: no allocation per post once they have grown
  std::vector<SendWr> send_wrs_;
  std::vector<RecvWr> recv_wrs_;
};

// Says once per process that memory goes through bounce buffers, and why (auto: why GPUDirect
// RDMA was refused).
void report_staged(MemoryKind kind, const std::string& refused) {
  static std::once_flag once;
  std::call_once(once, [&] {
    if (kind != MemoryKind::cuda) {
      std::fprintf(stderr, "rdmalab: %s memory goes through host bounce buffers (the staged path, tried without a GPU)\n", memory_kind_name(kind));
      return;
    }
    if (refused.empty())
      std::fprintf(stderr, "rdmalab: GPU memory registered by staged (host bounce buffers; workload.gpu_path staged)\n");
    else
      std::fprintf(stderr, "rdmalab: GPU memory registered by staged (host bounce buffers), as GPUDirect RDMA was refused: %s\n", refused.c_str());
  });
}

class StagedPd final : public ProtectionDomain {
 public:
  StagedPd(std::unique_ptr<ProtectionDomain> inner, StagingOptions options) : inner_(std::move(inner)), options_(options) {}

  Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, std::uint64_t length, std::uint32_t access, MemoryKind kind) override {
    if (kind != options_.kind) return inner_->register_memory(addr, length, access, kind);
    std::string refused;
    if (options_.fallback) {
      auto direct = inner_->register_memory(addr, length, access, kind);
      if (direct.is_ok() || direct.status().code() != Errc::not_supported) return direct;
      refused = direct.status().message();
    }
    RDMALAB_TRY(check_registration(addr, length, access));
    MemoryProvider* mem = memory_provider(kind);
    if (!mem) return Status(Errc::not_supported, fmt::format("no {} memory here: {}", memory_kind_name(kind), memory_unavailable_reason(kind)));
    RDMALAB_ASSIGN(Buffer bounce, mem->allocate_bounce(length));
    auto* memory = static_cast<std::byte*>(addr);
    RDMALAB_TRY(mem->copy_bytes(bounce.data(), memory, length));  // the copy starts equal to the memory
    auto inner = inner_->register_memory(bounce.data(), length, access, MemoryKind::host);
    if (!inner) return inner.status().with_context(fmt::format("registering the bounce buffer of {} of {} memory", units::format_size(length), memory_kind_name(kind)));
    report_staged(kind, refused);
    return std::unique_ptr<MemoryRegion>(new StagedRegion(set_, *mem, memory, length, kind, std::move(bounce), std::move(*inner)));
  }

  Result<std::unique_ptr<QueuePair>> create_qp(CompletionQueue& send_cq, CompletionQueue& recv_cq, const QpCaps& caps) override {
    RDMALAB_ASSIGN(auto qp, inner_->create_qp(send_cq, recv_cq, caps));
    return std::unique_ptr<QueuePair>(new StagedQp(std::move(qp), set_));
  }

 private:
  std::unique_ptr<ProtectionDomain> inner_;
  StagingOptions options_;
  StagedSet set_;
};

class StagingDevice final : public Device {
 public:
  StagingDevice(Device& inner, StagingOptions options) : inner_(inner), options_(options), caps_(inner.caps()) {
    caps_.memory_kinds.add(options.kind);
  }
  std::string name() const override { return inner_.name(); }
  const Capabilities& caps() const override { return caps_; }
  Result<std::unique_ptr<ProtectionDomain>> alloc_pd() override {
    RDMALAB_ASSIGN(auto pd, inner_.alloc_pd());
    return std::unique_ptr<ProtectionDomain>(new StagedPd(std::move(pd), options_));
  }
  Result<std::unique_ptr<CompletionQueue>> create_cq(std::uint32_t entries) override { return inner_.create_cq(entries); }

 private:
  Device& inner_;
  StagingOptions options_;
  Capabilities caps_;
};

}  // namespace

std::unique_ptr<Device> make_staging_device(Device& inner, StagingOptions options) {
  return std::make_unique<StagingDevice>(inner, options);
}

}  // namespace rdmalab
