// The perftest workloads' shared part (perftest.cc registers them): the parameters, one rank's
// side of a connected pair, and its set-up. Internal to core/src/workloads.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>

#include "rdmalab/metrics.h"
#include "rdmalab/progress.h"
#include "rdmalab/trace.h"
#include "rdmalab/units.h"
#include "rdmalab/workloads/common.h"

namespace rdmalab::workloads::perftest_detail {

inline constexpr int kMaxQps = 16;
inline constexpr std::uint64_t kRegionCap = 16ull << 20;  // bytes of slots per QP and direction
// With checks off, messages are sent from and land in one slot per QP (a send's receives share
// it), as perftest reuses one buffer: the working set stays in cache (a slot per request in
// flight, 128 × 64 KiB a side, measured 1.8 % slower on Soft-RoCE; a send's 512 receives, 32 MiB
// a side, 2–3 %). With checks on, every request or receive in flight has its own slot: a write's
// or read's is checked once the run is over (a corrupted message among the last tx_depth is then
// still there to be found, not overwritten by a good one), a receive's before it is posted again.
inline constexpr std::uint64_t kUncheckedSlots = 1;
inline constexpr std::uint32_t kLastImm = 0x4C415354;     // "LAST": marks a sender's final message
inline constexpr int kWcBatch = 64;

enum class Op { write, read, send, atomic };

struct Params {
  std::vector<std::uint64_t> sizes;
  std::uint64_t iterations = 0;
  std::uint64_t warmup = 0;
  bool use_duration = false;
  double duration = 0;
  int qps = 1;
  std::uint32_t tx_depth = 128;
  std::uint32_t rx_depth = 512;
  std::uint32_t inline_size = 0;
  std::uint32_t cq_mod = 100;
  std::uint32_t post_list = 1;
  bool bidir = false;
  bool cmp_swap = false;
  bool verify = true;
  MemoryKind memory = MemoryKind::host;
  bool phantom = false;  // workload.payload: phantom (no bytes)
  double timeout = 30;
  std::uint64_t seed = 1;
};

Params read_params(const Scenario& sc, Op op);

// ------------------------------------------------------------------------------------------
// One rank's side of a connected pair.

struct Exchange {
  std::array<QpEndpoint, kMaxQps> ep{};
  RemoteBuffer rx;    // where the peer writes / sends land
  RemoteBuffer tx;    // what the peer reads
  RemoteBuffer atom;  // counters the peer's atomics target
};

struct Pair {
  RankEnv& env;
  Params p;
  Op op;
  MemoryProvider* mem = nullptr;  // for p.memory
  bool client = false;
  int peer = 0;
  std::uint64_t max_size = 0;
  std::uint64_t region = 0;    // bytes per QP in tx and in rx
  std::uint64_t size = 0;      // message size of the current phase
  std::uint64_t slots = 1;     // message slots per QP at the current size
  std::uint64_t rx_posted_depth = 0;
  std::unique_ptr<ProtectionDomain> pd;
  std::unique_ptr<CompletionQueue> cq;
  std::vector<std::unique_ptr<QueuePair>> qps;
  Buffer tx, rx, atom;
  std::unique_ptr<MemoryRegion> tx_mr, rx_mr, atom_mr;
  Exchange remote;
  std::vector<std::uint64_t> recv_outstanding;  // posted receives per QP

  Pair(RankEnv& e, Params params, Op o) : env(e), p(std::move(params)), op(o), mem(memory_for(e, p.memory, p.phantom)) {}

  // Every fill, check and clear of the buffers goes through these: where the NIC works on a host
  // copy of the memory (the staged GPU path, staging.h), the copy is brought up to date.
  Status fill_tx(std::uint64_t off, std::uint64_t len, std::uint64_t seed) {
    RDMALAB_TRY(mem->fill(tx, off, len, seed));
    return tx_mr->sync_to_nic(off, len);  // the peer may read it (read_bw)
  }
  Result<std::uint64_t> verify_rx(std::uint64_t off, std::uint64_t len, std::uint64_t seed) {
    RDMALAB_TRY(rx_mr->sync_from_nic(off, len));
    return mem->verify(rx, off, len, seed);
  }
  Status clear_rx(std::uint64_t off, std::uint64_t len) {
    RDMALAB_TRY(mem->clear(rx, off, len));
    return rx_mr->sync_to_nic(off, len);
  }
  Result<std::uint64_t> read_atom(std::uint64_t off) {
    std::uint64_t v = 0;
    RDMALAB_TRY(atom_mr->sync_from_nic(off, 8));
    RDMALAB_TRY(mem->read(atom, off, &v, 8));
    return v;
  }
  Status zero_atom(std::uint64_t off) {
    const std::uint64_t zero = 0;
    RDMALAB_TRY(mem->write(atom, off, &zero, 8));
    return atom_mr->sync_to_nic(off, 8);
  }

  std::uint64_t slot_off(int q, std::uint64_t slot) const { return static_cast<std::uint64_t>(q) * region + slot * size; }
  bool sends() const { return client || p.bidir; }
  bool receives_sends() const { return op == Op::send && (!client || p.bidir); }
  std::uint64_t counter_off(int q) const { return static_cast<std::uint64_t>(q) * 8; }
  std::uint64_t fetch_off(int q, std::uint64_t slot) const { return static_cast<std::uint64_t>(p.qps) * 8 + (static_cast<std::uint64_t>(q) * slots + slot) * 8; }
};

// Queue depth of a QP (send side, or the receive queue of a send test).
std::uint64_t queue_depth(const Pair& c);
// Creates this rank's QPs, exchanges endpoints with every rank and connects to the peer.
Status connect(Pair& c);
// Buffers, QPs and the connection (once per run).
Status setup(Pair& c);
// Prepares the buffers and slots for a message size (receives posted for a send test).
Status begin_size(Pair& c, std::uint64_t size, bool first);
Status post_recv_slot(Pair& c, int q, std::uint64_t slot);
// A result row with what every perftest row carries (device and port where the device is real).
ResultRow base_row(const RankEnv& env, const char* name, std::uint64_t size);
// The progress line's 100 % (progress.h).
void plan_work(RankEnv& env, const Params& p, std::uint64_t messages_per_size);

// The bandwidth tests (perftest_bw.cc) and the latency tests (perftest_lat.cc).
Status run_bw(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows, Op op, const char* name);
Status run_lat(RankEnv& env, const Scenario& sc, std::vector<ResultRow>& rows, Op op, const char* name);

}  // namespace rdmalab::workloads::perftest_detail
