// The simulated NIC's containers, laid out for thousands of ranks whose state is cold at every
// touch: the registered regions' key table, the QP number table, SGE lists and small lists that keep
// their elements in place, and the ring buffers of requests and completions.
#pragma once

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

#include "rdmalab/transport.h"

namespace rdmalab::sim {

// Phantom buffers (MemoryKind::phantom) live above the canonical x86-64 user range: bytes to or
// from them are not copied.
inline bool phantom(std::uint64_t addr) { return addr >= (1ull << 60); }

inline void copy_bytes(std::uint64_t dst, std::uint64_t src, std::uint64_t n) {
  if (n && !phantom(dst) && !phantom(src)) std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
}

struct World;
class SimgridQp;
class SimgridCq;


// 32 bytes, aligned: two to a cache line, never across two (each transfer checks one or two keys,
// cold at scale).
struct alignas(32) MrRec {
  std::uint64_t addr = 0, length = 0;
  std::uint32_t lkey = 0, rkey = 0;  // 0 while the slot is free
  std::uint32_t pd = 0;              // the protection domain's number (SimgridPd::id)
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
  double ready_at = 0;  // when the NIC has it (a CPU's post: RecvWr::model_host_cost)
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

}  // namespace rdmalab::sim
