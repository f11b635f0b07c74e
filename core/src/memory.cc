#include "rdmalab/memory.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>

namespace rdmalab {

const char* memory_kind_name(MemoryKind kind) noexcept {
  switch (kind) {
    case MemoryKind::host: return "host";
    case MemoryKind::cuda: return "cuda";
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

class HostMemory final : public MemoryProvider {
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
    auto* p = reinterpret_cast<std::uint8_t*>(buf.bytes() + offset);
    std::size_t words = len / 8;
    for (std::size_t k = 0; k < words; ++k) {
      std::uint64_t w = pattern_word(seed, k);
      std::memcpy(p + 8 * k, &w, 8);
    }
    for (std::size_t i = words * 8; i < len; ++i) p[i] = pattern_byte(seed, i);
    return Status::ok();
  }

  Result<std::uint64_t> verify(const Buffer& buf, std::size_t offset, std::size_t len, std::uint64_t seed) override {
    if (offset + len > buf.size()) return Status(Errc::invalid_argument, "verify outside the buffer");
    const auto* p = reinterpret_cast<const std::uint8_t*>(buf.bytes() + offset);
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
};

}  // namespace

MemoryProvider& host_memory() {
  static HostMemory mem;
  return mem;
}

}  // namespace rdmalab
