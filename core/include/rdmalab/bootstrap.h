// Out-of-band setup between ranks, separate from the data path: rank, size, barrier and
// allgather of bytes. On hardware this is a TCP rendezvous or MPI; in the simulator it is direct.
#pragma once

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <span>
#include <vector>

#include "rdmalab/status.h"

namespace rdmalab {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Blocking collective: returns when every rank has entered it. Errors: bootstrap, timeout.
  virtual Status barrier() = 0;
  // Blocking collective: every rank contributes `mine` (same length on every rank) and gets the
  // concatenation in rank order (size() * mine.size() bytes).
  // Errors: invalid_argument (lengths differ), bootstrap, timeout.
  virtual Result<std::vector<std::byte>> allgather(std::span<const std::byte> mine) = 0;
  // Non-blocking: whether every peer is still there. Backends call it while they wait on the
  // data path, so a dead peer stops the others with its rank named instead of a hang.
  // Errors: bootstrap.
  virtual Status health() { return Status::ok(); }
};

// Helpers for trivially copyable values.
template <typename T>
Result<std::vector<T>> allgather_value(Bootstrap& boot, const T& mine) {
  static_assert(std::is_trivially_copyable_v<T>);
  auto r = boot.allgather(std::as_bytes(std::span<const T>(&mine, 1)));
  if (!r) return r.status();
  std::vector<T> out(static_cast<std::size_t>(boot.size()));
  std::memcpy(out.data(), r->data(), out.size() * sizeof(T));
  return out;
}

}  // namespace rdmalab
