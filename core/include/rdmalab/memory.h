// Memory kinds and the buffers workloads move.
//
// A workload never touches a buffer's bytes directly: it asks the MemoryProvider to fill it with
// a pattern and to verify it. Host memory is provided by core; GPU memory by a provider that
// lives outside core (core never includes a device library), so the same workload runs on both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "rdmalab/reduce.h"
#include "rdmalab/status.h"

// Functions that GPU code calls too (pattern_word): host and device when compiled by nvcc.
#ifdef __CUDACC__
#define RDMALAB_HD __host__ __device__
#else
#define RDMALAB_HD
#endif

namespace rdmalab {

// host: ordinary memory. cuda: GPU memory (its provider lives outside core). phantom: buffers
// that exist only in a model: addresses, sizes and keys are real, bytes are not stored, so a
// simulated 1024-GPU all-reduce of 1 GiB does not need a terabyte. Payload checks are off there.
enum class MemoryKind : std::uint8_t { host = 0, cuda = 1, phantom = 2 };
const char* memory_kind_name(MemoryKind kind) noexcept;

struct MemoryKindSet {
  std::uint32_t bits = 1u << static_cast<unsigned>(MemoryKind::host);
  bool has(MemoryKind k) const { return (bits >> static_cast<unsigned>(k)) & 1u; }
  void add(MemoryKind k) { bits |= 1u << static_cast<unsigned>(k); }
};

// An owned allocation. Move-only; frees on destruction.
class Buffer {
 public:
  using Deleter = void (*)(void*);
  Buffer() = default;
  Buffer(void* data, std::size_t size, MemoryKind kind, Deleter del) : data_(data), size_(size), kind_(kind), del_(del) {}
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  void* data() const { return data_; }
  std::uint64_t addr() const { return reinterpret_cast<std::uint64_t>(data_); }
  std::size_t size() const { return size_; }
  MemoryKind kind() const { return kind_; }
  std::byte* bytes() const { return static_cast<std::byte*>(data_); }
  // Gives up ownership: returns the deleter and leaves an empty buffer (the memory stays).
  Deleter release_deleter() {
    Deleter d = del_;
    data_ = nullptr;
    size_ = 0;
    del_ = nullptr;
    return d;
  }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  MemoryKind kind_ = MemoryKind::host;
  Deleter del_ = nullptr;
};

// Allocation and the byte-level operations workloads need, for one memory kind.
// Thread-safe: one provider may serve several ranks.
// A range of device memory exported as a dmabuf (GPUDirect RDMA through ibv_reg_dmabuf_mr): the
// file descriptor (the caller closes it) and where the range starts inside it.
struct DmabufRange {
  int fd = -1;
  std::uint64_t offset = 0;
};

class MemoryProvider {
 public:
  virtual ~MemoryProvider() = default;
  // Exports [addr, addr + len) of this provider's memory as a dmabuf. Errors: not_supported with
  // the reason (host memory needs none; a driver without dmabuf support says which).
  virtual Result<DmabufRange> export_dmabuf(const void* addr, std::size_t len) {
    (void)addr;
    (void)len;
    return Status(Errc::not_supported, "this memory is not exported as dmabuf (only GPU memory is)");
  }
  virtual MemoryKind kind() const = 0;
  // Page-aligned, zero-filled. Errors: no_memory.
  virtual Result<Buffer> allocate(std::size_t bytes) = 0;
  // Writes the payload pattern for `seed` into [offset, offset+len): byte i of the range is
  // pattern_byte(seed, i).
  virtual Status fill(const Buffer& buf, std::size_t offset, std::size_t len, std::uint64_t seed) = 0;
  // Counts the bytes in [offset, offset+len) that differ from the pattern for `seed`.
  virtual Result<std::uint64_t> verify(const Buffer& buf, std::size_t offset, std::size_t len, std::uint64_t seed) = 0;
  // Sets [offset, offset+len) to zero.
  virtual Status clear(const Buffer& buf, std::size_t offset, std::size_t len) = 0;
  // Plain copies between this provider's memory and the host, for small values (counters).
  virtual Status read(const Buffer& buf, std::size_t offset, void* dst, std::size_t len) = 0;
  virtual Status write(const Buffer& buf, std::size_t offset, const void* src, std::size_t len) = 0;
  // Copies len bytes between raw addresses of this provider's memory or the host (the loopback
  // backend moves GPU memory with it). Host memory: memcpy.
  virtual Status copy_bytes(void* dst, const void* src, std::size_t len);
  // Host memory to stage this provider's memory through (the staged GPU path's bounce buffers,
  // staging.h): page-aligned and zero-filled; pinned for GPU memory, so copies to and from it run
  // at the bus's speed. The default (host memory) is an ordinary allocation.
  virtual Result<Buffer> allocate_bounce(std::size_t bytes);
  // Copies len bytes between two buffers of this provider (regions may not overlap).
  virtual Status copy(const Buffer& dst, std::size_t dst_off, const Buffer& src, std::size_t src_off, std::size_t len) = 0;
  // dst[i] = a[i] op b[i] for `count` elements of type t (the collectives' reduction); dst may
  // be a. Offsets in bytes. Host memory uses host_reduce(); GPU memory a kernel.
  virtual Status reduce(const Buffer& dst, std::size_t dst_off, const Buffer& a, std::size_t a_off, const Buffer& b,
                        std::size_t b_off, std::size_t count, DataType t, ReduceOp op) = 0;
};

// The pattern: a cheap, position-dependent byte stream, different for each seed, never
// constant over a run of bytes (so a missing or shifted copy is caught). Word k covers bytes
// 8k..8k+7, little-endian.
RDMALAB_HD inline std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t k) {
  std::uint64_t x = k * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull + 1;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return x;
}
RDMALAB_HD inline std::uint8_t pattern_byte(std::uint64_t seed, std::uint64_t pos) {
  return static_cast<std::uint8_t>(pattern_word(seed, pos >> 3) >> (8 * (pos & 7)));
}

// The provider for host memory (always available).
MemoryProvider& host_memory();
// GPU memory as a simulator models it (the SimGrid backend, Capabilities::models_gpu_memory):
// host bytes, so payload checks stay real, of kind cuda, so the backend routes transfers through
// the modelled GPU's data path (PCIe, GPUDirect or host staging).
MemoryProvider& modelled_gpu_memory();
// The provider for phantom memory: allocate() hands out address ranges that no real pointer
// can have; fill/clear/write do nothing; verify and read refuse (Errc::not_supported).
MemoryProvider& phantom_memory();
// Phantom memory whose buffers are of kind cuda: no bytes, but a backend routes their transfers
// through the modelled GPU's data path (NVLink, GPUDirect or staging), as real GPU memory's.
MemoryProvider& phantom_gpu_memory();
// The provider for a kind, or nullptr when none is installed (cuda without a GPU build).
MemoryProvider* memory_provider(MemoryKind kind);
// Installs the provider for a kind (the GPU module does this for cuda). Not thread-safe:
// call before any run.
void set_memory_provider(MemoryKind kind, MemoryProvider* provider);
// Why a kind has no provider here ("this build has no CUDA support", "no GPU: ..."), for
// errors; the GPU module records it when it finds no device.
std::string memory_unavailable_reason(MemoryKind kind);
void set_memory_unavailable_reason(MemoryKind kind, std::string why);

}  // namespace rdmalab
