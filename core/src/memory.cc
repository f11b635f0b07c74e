#include "rdmalab/memory.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <fmt/format.h>

namespace rdmalab {

const char* memory_kind_name(MemoryKind kind) noexcept {
  switch (kind) {
    case MemoryKind::host: return "host";
    case MemoryKind::cuda: return "cuda";
    case MemoryKind::phantom: return "phantom";
  }
  return "unknown";
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (data_ && del_) del_(data_);
    data_ = o.data_;
    size_ = o.size_;
    kind_ = o.kind_;
    del_ = o.del_;
    o.data_ = nullptr;
    o.size_ = 0;
    o.del_ = nullptr;
  }
  return *this;
}

Buffer::~Buffer() {
  if (data_ && del_) del_(data_);
}

namespace {

// Writes bytes [0, len) of seed's pattern to p.
void write_pattern(std::uint8_t* p, std::size_t len, std::uint64_t seed) {
  const std::size_t words = len / 8;
  for (std::size_t k = 0; k < words; ++k) {
    const std::uint64_t w = pattern_word(seed, k);
    std::memcpy(p + 8 * k, &w, 8);
  }
  for (std::size_t i = words * 8; i < len; ++i) p[i] = pattern_byte(seed, i);
}

// The pattern of a few recent seeds, kept per thread: workloads check the same message again and
// again (every message of a stream carries the same bytes), and comparing with memcmp runs at
// memory speed where computing the pattern word by word does not (8x cheaper per 64 KiB; it
// matters where the CPU is scarce, as under emulation, and keeps checks out of the way).
class PatternCache {
 public:
  // The first len bytes of seed's pattern, or nullptr when len is over what is worth keeping.
  const std::uint8_t* get(std::uint64_t seed, std::size_t len) {
    if (len > kMaxBytes) return nullptr;
    for (Entry& e : entries_)
      if (e.seed == seed && e.bytes.size() >= len && !e.bytes.empty()) {
        e.used = ++clock_;
        return e.bytes.data();
      }
    Entry& victim = *std::min_element(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
    victim.seed = seed;
    victim.used = ++clock_;
    victim.bytes.resize(std::max<std::size_t>(len, 4096));
    write_pattern(victim.bytes.data(), victim.bytes.size(), seed);
    return victim.bytes.data();
  }

 private:
  static constexpr std::size_t kMaxBytes = 1u << 20;  // at most 4 MiB per thread
  struct Entry {
    std::uint64_t seed = 0;
    std::uint64_t used = 0;
    std::vector<std::uint8_t> bytes;
  };
  std::array<Entry, 4> entries_{};
  std::uint64_t clock_ = 0;
};

class HostMemory : public MemoryProvider {
 public:
  MemoryKind kind() const override { return MemoryKind::host; }

  Result<Buffer> allocate(std::size_t bytes) override {
    constexpr std::size_t kPage = 4096;
    std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kPage - 1) / kPage * kPage;
    void* p = std::aligned_alloc(kPage, rounded);
    if (!p) return Status(Errc::no_memory, fmt::format("cannot allocate {} bytes of host memory", bytes));
    std::memset(p, 0, rounded);
    return Buffer(p, bytes, MemoryKind::host, [](void* q) { std::free(q); });
  }

  Status fill(const Buffer& buf, std::size_t offset, std::size_t len, std::uint64_t seed) override {
    if (offset + len > buf.size()) return Status(Errc::invalid_argument, "fill outside the buffer");
    write_pattern(reinterpret_cast<std::uint8_t*>(buf.bytes() + offset), len, seed);
    return Status::ok();
  }

  Result<std::uint64_t> verify(const Buffer& buf, std::size_t offset, std::size_t len, std::uint64_t seed) override {
    if (offset + len > buf.size()) return Status(Errc::invalid_argument, "verify outside the buffer");
    const auto* p = reinterpret_cast<const std::uint8_t*>(buf.bytes() + offset);
    thread_local PatternCache cache;
    if (const std::uint8_t* want = cache.get(seed, len); want && std::memcmp(p, want, len) == 0) return std::uint64_t{0};
    // Some byte differs (or the range is too long to keep): count them word by word.
    std::uint64_t wrong = 0;
    std::size_t words = len / 8;
    for (std::size_t k = 0; k < words; ++k) {
      std::uint64_t w = pattern_word(seed, k), got;
      std::memcpy(&got, p + 8 * k, 8);
      if (got != w)
        for (int b = 0; b < 8; ++b) wrong += ((got ^ w) >> (8 * b) & 0xff) != 0;
    }
    for (std::size_t i = words * 8; i < len; ++i) wrong += p[i] != pattern_byte(seed, i);
    return wrong;
  }

  Status clear(const Buffer& buf, std::size_t offset, std::size_t len) override {
    if (offset + len > buf.size()) return Status(Errc::invalid_argument, "clear outside the buffer");
    std::memset(buf.bytes() + offset, 0, len);
    return Status::ok();
  }

  Status read(const Buffer& buf, std::size_t offset, void* dst, std::size_t len) override {
    if (offset + len > buf.size()) return Status(Errc::invalid_argument, "read outside the buffer");
    std::memcpy(dst, buf.bytes() + offset, len);
    return Status::ok();
  }

  Status write(const Buffer& buf, std::size_t offset, const void* src, std::size_t len) override {
    if (offset + len > buf.size()) return Status(Errc::invalid_argument, "write outside the buffer");
    std::memcpy(buf.bytes() + offset, src, len);
    return Status::ok();
  }

  Status copy(const Buffer& dst, std::size_t dst_off, const Buffer& src, std::size_t src_off, std::size_t len) override {
    if (dst_off + len > dst.size() || src_off + len > src.size()) return Status(Errc::invalid_argument, "copy outside a buffer");
    if (len) std::memmove(dst.bytes() + dst_off, src.bytes() + src_off, len);
    return Status::ok();
  }

  Status reduce(const Buffer& dst, std::size_t dst_off, const Buffer& a, std::size_t a_off, const Buffer& b, std::size_t b_off,
                std::size_t count, DataType t, ReduceOp op) override {
    const std::size_t len = count * dtype_size(t);
    if (dst_off + len > dst.size() || a_off + len > a.size() || b_off + len > b.size())
      return Status(Errc::invalid_argument, "reduce outside a buffer");
    host_reduce(dst.bytes() + dst_off, a.bytes() + a_off, b.bytes() + b_off, count, t, op);
    return Status::ok();
  }
};

class PhantomMemory final : public MemoryProvider {
 public:
  explicit PhantomMemory(MemoryKind as) : as_(as) {}
  MemoryKind kind() const override { return as_; }
  Result<Buffer> allocate(std::size_t bytes) override {
    constexpr std::uint64_t kPage = 4096;
    // Above the canonical x86-64 user range: no real buffer can overlap these addresses.
    std::uint64_t size = (std::max<std::uint64_t>(bytes, 1) + kPage - 1) / kPage * kPage;
    std::uint64_t addr = next_.fetch_add(size + kPage);
    return Buffer(reinterpret_cast<void*>(addr), bytes, as_, [](void*) {});
  }
  Status fill(const Buffer&, std::size_t, std::size_t, std::uint64_t) override { return Status::ok(); }
  Result<std::uint64_t> verify(const Buffer&, std::size_t, std::size_t, std::uint64_t) override {
    return Status(Errc::not_supported, "phantom memory stores no bytes: nothing to verify");
  }
  Status clear(const Buffer&, std::size_t, std::size_t) override { return Status::ok(); }
  Status read(const Buffer&, std::size_t, void*, std::size_t) override {
    return Status(Errc::not_supported, "phantom memory stores no bytes: nothing to read");
  }
  Status write(const Buffer&, std::size_t, const void*, std::size_t) override { return Status::ok(); }
  Status copy(const Buffer&, std::size_t, const Buffer&, std::size_t, std::size_t) override { return Status::ok(); }
  Status reduce(const Buffer&, std::size_t, const Buffer&, std::size_t, const Buffer&, std::size_t, std::size_t, DataType,
                ReduceOp) override {
    return Status::ok();
  }

 private:
  MemoryKind as_;
  // Both kinds hand out addresses from one range, so no two phantom buffers overlap.
  static inline std::atomic<std::uint64_t> next_{1ull << 60};
};

// Host bytes that a simulator treats as GPU memory: the backend routes their transfers through
// the modelled GPU's data path, and the payload checks stay real.
class ModelledGpuMemory final : public HostMemory {
 public:
  MemoryKind kind() const override { return MemoryKind::cuda; }
  Result<Buffer> allocate(std::size_t bytes) override {
    RDMALAB_ASSIGN(Buffer b, HostMemory::allocate(bytes));
    void* p = b.data();
    const std::size_t n = b.size();
    Buffer::Deleter del = b.release_deleter();
    return Buffer(p, n, MemoryKind::cuda, del);
  }
};

MemoryProvider* g_providers[3] = {nullptr, nullptr, nullptr};
std::string g_unavailable[3] = {"", "this build has no CUDA support (nvcc was not found when it was configured)", ""};

}  // namespace

MemoryProvider& host_memory() {
  static HostMemory mem;
  return mem;
}

MemoryProvider& modelled_gpu_memory() {
  static ModelledGpuMemory mem;
  return mem;
}

MemoryProvider& phantom_memory() {
  static PhantomMemory mem(MemoryKind::phantom);
  return mem;
}

MemoryProvider& phantom_gpu_memory() {
  static PhantomMemory mem(MemoryKind::cuda);
  return mem;
}

MemoryProvider* memory_provider(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::host: return &host_memory();
    case MemoryKind::phantom: return &phantom_memory();
    case MemoryKind::cuda: return g_providers[static_cast<int>(kind)];
  }
  return nullptr;
}

void set_memory_provider(MemoryKind kind, MemoryProvider* provider) { g_providers[static_cast<int>(kind)] = provider; }

std::string memory_unavailable_reason(MemoryKind kind) { return g_unavailable[static_cast<int>(kind)]; }
void set_memory_unavailable_reason(MemoryKind kind, std::string why) { g_unavailable[static_cast<int>(kind)] = std::move(why); }

Result<Buffer> MemoryProvider::allocate_bounce(std::size_t bytes) { return host_memory().allocate(bytes); }

Status MemoryProvider::copy_bytes(void* dst, const void* src, std::size_t len) {
  if (len) std::memcpy(dst, src, len);
  return Status::ok();
}

}  // namespace rdmalab
