// The engine that runs collective plans over the transport contract (private to core's
// workloads). See collectives.h for the protocol; docs/collectives.md for the design.
//
// Several plans may be in flight at once (the buckets of a training step, the micro-batches of a
// pipeline): each connection sends and receives chunks in the order the plans were begun, which
// every rank does in the same order, so both ends always agree which chunk is which. Within a
// plan, dependencies order the rest.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "rdmalab/backend.h"
#include "rdmalab/workloads/collectives.h"

namespace rdmalab::workloads {

struct EngineConfig {
  std::uint64_t chunk = 512 * 1024;
  std::uint32_t slots = 8;
  DataType dtype = DataType::fp32;
  ReduceOp op = ReduceOp::sum;
  MemoryKind memory = MemoryKind::host;
  bool phantom = false;  // buffers without bytes (workload.payload: phantom)
  double timeout = 30;
  const char* what = "a collective";  // for messages
};

// A plan with its buffer offsets moved: `in`, `out`, `scratch` are added to every reference of
// that buffer (a bucket of a gradient buffer, a micro-batch's slot).
Plan shift_plan(Plan plan, std::uint64_t in, std::uint64_t out, std::uint64_t scratch);

class CollectiveEngine {
 public:
  CollectiveEngine(RankEnv& env, EngineConfig config);
  ~CollectiveEngine();

  // Buffers sized for every plan, and the connections their transfers need; collective (every
  // rank calls it with its own plans). Extra bytes: the buffers are at least this large.
  Status setup(const std::vector<Plan>& plans, std::uint64_t min_in = 0, std::uint64_t min_out = 0);

  // Starts a plan (its local copies run now); returns its id. Non-blocking.
  Result<int> begin(Plan plan);
  // Moves everything in flight forward: issues chunks, processes arrivals, takes completions.
  // With block, waits for at least one completion when nothing else can move.
  Status progress(bool block);
  bool done(int id) const;
  bool idle() const { return execs_.empty(); }
  Status wait(int id);
  Status wait_all();
  Status execute(Plan plan);
  // Waits for the last credits to complete and for every rank to get there (a barrier).
  Status drain();

  MemoryProvider& mem() { return *mem_; }
  const Buffer& in() const { return in_; }
  const Buffer& out() const { return out_; }
  // How the NIC reaches the buffers (MemoryRegion::data_path), once set up.
  std::string data_path() const { return out_mr_ ? out_mr_->data_path() : std::string(); }

 private:
  struct Conn;
  struct Exec;
  Status post_recv(std::size_t ci);
  Status post_credit(std::size_t ci);
  Status issue(bool& progressed);
  Status process(bool& progressed);
  Status handle(std::size_t n);
  Status gpu_work(std::uint64_t bytes);
  const Buffer& buf(Buf b) const;
  const MemoryRegion& mr(Buf b) const;
  std::uint64_t chunk_of(const Plan& p) const { return p.chunk ? p.chunk : cfg_.chunk; }
  static std::uint64_t nchunks(std::uint64_t len, std::uint64_t chunk) { return (len + chunk - 1) / chunk; }

  RankEnv& env_;
  EngineConfig cfg_;
  MemoryProvider* mem_;
  std::unique_ptr<ProtectionDomain> pd_;
  std::unique_ptr<CompletionQueue> cq_;
  Buffer in_, out_, scratch_, stage_;
  std::unique_ptr<MemoryRegion> in_mr_, out_mr_, scratch_mr_, stage_mr_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::map<std::pair<int, int>, std::size_t> conn_index_;  // (peer, chan) -> conns_
  std::map<int, std::unique_ptr<Exec>> execs_;
  int next_id_ = 0;
  std::vector<Completion> wcs_;
};

}  // namespace rdmalab::workloads
