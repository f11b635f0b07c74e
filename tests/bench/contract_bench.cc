// The contract's overhead on the loopback backend: what a workload pays per request.
//   BM_PostAndPollWrite8B: one signaled 8-byte RDMA write posted and its completion waited for.
//   BM_WriteMessageRate8B: 8-byte writes kept 128 deep, one completion per 64 (perftest -Q 64).
// Run: build/bench/bench_contract
#include <benchmark/benchmark.h>

#include <array>

#include "backends.h"
#include "rdmalab/backend.h"

namespace rdmalab {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

struct Hello {
  QpEndpoint ep;
  RemoteBuffer rb;
};

// Runs `body` on rank 0 of a connected loopback pair; rank 1 only keeps its QP alive.
template <typename Body>
void on_pair(benchmark::State& state, Body body) {
  auto backend = all_backends().make("loopback");
  LaunchSpec spec;
  spec.ranks = 2;
  Status st = (*backend)->launch(spec, [&](RankEnv& env) -> Status {
    RDMALAB_ASSIGN(auto pd, env.dev.alloc_pd());
    RDMALAB_ASSIGN(auto cq, env.dev.create_cq(1024));
    QpCaps caps;
    caps.max_send_wr = 256;
    RDMALAB_ASSIGN(auto qp, pd->create_qp(*cq, *cq, caps));
    RDMALAB_ASSIGN(auto buf, env.mem.allocate(4096));
    RDMALAB_ASSIGN(auto mr, pd->register_memory(buf.data(), 4096, kAll));
    RDMALAB_TRY(qp->to_init());
    RDMALAB_ASSIGN(auto all, allgather_value(env.boot, Hello{qp->endpoint(), mr->remote()}));
    QpConnectAttr attr;
    attr.remote = all[static_cast<std::size_t>(1 - env.rank)].ep;
    RDMALAB_TRY(qp->to_rtr(attr));
    RDMALAB_TRY(qp->to_rts());
    RDMALAB_TRY(env.boot.barrier());
    if (env.rank == 0) RDMALAB_TRY(body(*qp, *cq, *mr, all[1].rb));
    return env.boot.barrier();
  });
  if (!st) state.SkipWithError(st.to_string().c_str());
}

void BM_PostAndPollWrite8B(benchmark::State& state) {
  on_pair(state, [&](QueuePair& qp, CompletionQueue& cq, MemoryRegion& mr, RemoteBuffer rb) -> Status {
    Sge sge{mr.addr(), 8, mr.lkey()};
    SendWr wr;
    wr.opcode = SendOpcode::rdma_write;
    wr.sg_list = {&sge, 1};
    wr.remote_addr = rb.addr;
    wr.rkey = rb.rkey;
    std::array<Completion, 1> wc{};
    for (auto _ : state) {
      RDMALAB_TRY(qp.post_send(std::span<const SendWr>(&wr, 1)));
      auto n = cq.wait(wc, 10.0);
      if (!n) return n.status();
    }
    return Status::ok();
  });
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PostAndPollWrite8B)->UseRealTime();

void BM_WriteMessageRate8B(benchmark::State& state) {
  constexpr std::uint64_t kDepth = 128, kMod = 64;
  on_pair(state, [&](QueuePair& qp, CompletionQueue& cq, MemoryRegion& mr, RemoteBuffer rb) -> Status {
    Sge sge{mr.addr(), 8, mr.lkey()};
    std::array<Completion, 16> wc{};
    std::uint64_t posted = 0, completed = 0;
    for (auto _ : state) {
      // One iteration = one message posted (and, in steady state, one completed).
      while (posted - completed >= kDepth) {
        auto n = cq.wait(wc, 10.0);
        if (!n) return n.status();
        for (std::size_t i = 0; i < *n; ++i) completed = wc[i].wr_id + 1;
      }
      SendWr wr;
      wr.opcode = SendOpcode::rdma_write;
      wr.sg_list = {&sge, 1};
      wr.remote_addr = rb.addr;
      wr.rkey = rb.rkey;
      wr.wr_id = posted;
      wr.signaled = (posted + 1) % kMod == 0;
      RDMALAB_TRY(qp.post_send(std::span<const SendWr>(&wr, 1)));
      ++posted;
    }
    // Drain: the last one signaled so every slot is accounted for.
    SendWr last;
    last.opcode = SendOpcode::rdma_write;
    last.sg_list = {&sge, 1};
    last.remote_addr = rb.addr;
    last.rkey = rb.rkey;
    last.wr_id = posted++;
    RDMALAB_TRY(qp.post_send(std::span<const SendWr>(&last, 1)));
    while (completed < posted) {
      auto n = cq.wait(wc, 10.0);
      if (!n) return n.status();
      for (std::size_t i = 0; i < *n; ++i) completed = wc[i].wr_id + 1;
    }
    return Status::ok();
  });
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_WriteMessageRate8B)->UseRealTime();

}  // namespace
}  // namespace rdmalab

BENCHMARK_MAIN();
