// The staged GPU data path (core/include/rdmalab/staging.h) on every usable backend. GPU memory
// needs a GPU (tests/gpu/gpu_test.cc runs it there); here host memory takes the same path, so the
// layer, and every sync call the workloads make, is checked where there is no GPU: a missing
// sync leaves bytes behind in the bounce buffer and the payload checks count them.
#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "../../listing.h"
#include "../../pair_helpers.h"
#include "backends.h"
#include "rdmalab/backend.h"
#include "rdmalab/run.h"
#include "rdmalab/staging.h"

namespace rdmalab {
namespace {

constexpr std::uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr std::size_t kBytes = 256 * 1024 + 17;  // not a multiple of a page or of 8

class Staged : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto b = all_backends().make(GetParam());
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    backend_ = std::move(b).value();
  }
  std::unique_ptr<Backend> backend_;
};

// Rank 0 writes from staged memory into rank 1's staged memory, then reads rank 1's. What
// crosses is what the memory held at post time (post_send copies it); what lands stays in the
// bounce buffer until sync_from_nic; a remote read sees what sync_to_nic published.
TEST_P(Staged, BytesCrossTheBounceBuffersOnlyWhereTheContractSays) {
  Status st = backend_->launch(test::spec_for(2), [&](RankEnv& env) -> Status {
    std::unique_ptr<Device> dev = make_staging_device(env.dev, StagingOptions{MemoryKind::host, false});
    MemoryProvider& mem = host_memory();
    RDMALAB_ASSIGN(auto pd, dev->alloc_pd());
    RDMALAB_ASSIGN(auto cq, dev->create_cq(16));
    RDMALAB_ASSIGN(auto qp, pd->create_qp(*cq, *cq, QpCaps{}));
    RDMALAB_ASSIGN(Buffer buf, mem.allocate(kBytes));
    RDMALAB_ASSIGN(auto mr, pd->register_memory(buf.data(), kBytes, kAll, MemoryKind::host));
    EXPECT_NE(mr->addr(), buf.addr()) << "a staged region's address is its bounce buffer's";
    EXPECT_EQ(mr->length(), kBytes);
    EXPECT_EQ(mr->kind(), MemoryKind::host);
    RDMALAB_ASSIGN(const RemoteBuffer peer, test::connect_to_other_rank(env, *qp, *mr));

    if (env.rank == 0) {
      // Filled after registration and never synced: post_send copies what it sends.
      RDMALAB_TRY(mem.fill(buf, 0, kBytes, 7));
      const Sge sge{buf.addr(), static_cast<std::uint32_t>(kBytes), mr->lkey()};
      RDMALAB_ASSIGN(Completion wc, test::post_and_wait(*qp, *cq, SendOpcode::rdma_write, sge, peer, 1));
      EXPECT_EQ(wc.status, WcStatus::success) << wc_status_str(wc.status);
    }
    RDMALAB_TRY(env.boot.barrier());
    if (env.rank == 1) {
      RDMALAB_ASSIGN(std::uint64_t before, mem.verify(buf, 0, kBytes, 7));
      EXPECT_GT(before, kBytes / 2) << "the write landed in the memory before sync_from_nic";
      RDMALAB_TRY(mr->sync_from_nic(0, kBytes));
      RDMALAB_ASSIGN(std::uint64_t after, mem.verify(buf, 0, kBytes, 7));
      EXPECT_EQ(after, 0u) << "wrong bytes after sync_from_nic";
      // Publish a new pattern for rank 0 to read.
      RDMALAB_TRY(mem.fill(buf, 0, kBytes, 9));
      RDMALAB_TRY(mr->sync_to_nic(0, kBytes));
      // A range outside the region is refused.
      EXPECT_EQ(mr->sync_from_nic(kBytes - 1, 2).code(), Errc::invalid_argument);
    }
    RDMALAB_TRY(env.boot.barrier());
    if (env.rank == 0) {
      RDMALAB_TRY(mem.clear(buf, 0, kBytes));
      const Sge sge{buf.addr(), static_cast<std::uint32_t>(kBytes), mr->lkey()};
      RDMALAB_ASSIGN(Completion wc, test::post_and_wait(*qp, *cq, SendOpcode::rdma_read, sge, peer, 2));
      EXPECT_EQ(wc.status, WcStatus::success) << wc_status_str(wc.status);
      RDMALAB_TRY(mr->sync_from_nic(0, kBytes));
      RDMALAB_ASSIGN(std::uint64_t wrong, mem.verify(buf, 0, kBytes, 9));
      EXPECT_EQ(wrong, 0u) << "wrong bytes read from the peer's published memory";
      // An SGE that lies in neither the memory nor its copy fails as it does without the layer.
      const Sge outside{buf.addr() + 1, static_cast<std::uint32_t>(kBytes), mr->lkey()};
      RDMALAB_ASSIGN(Completion bad, test::post_and_wait(*qp, *cq, SendOpcode::rdma_write, outside, peer, 3));
      EXPECT_EQ(bad.status, WcStatus::loc_prot_err) << wc_status_str(bad.status);
    }
    return env.boot.barrier();
  });
  EXPECT_TRUE(st.is_ok()) << st.to_string();
}

// A device that cannot register one buffer itself (as a NIC without GPUDirect RDMA cannot
// register GPU memory) and passes everything else to the backend's real device.
class RefusingDevice final : public Device {
 public:
  RefusingDevice(Device& inner, const void* refused) : inner_(inner), refused_(refused) {}
  std::string name() const override { return inner_.name(); }
  const Capabilities& caps() const override { return inner_.caps(); }
  Result<std::unique_ptr<CompletionQueue>> create_cq(std::uint32_t entries) override { return inner_.create_cq(entries); }
  Result<std::unique_ptr<ProtectionDomain>> alloc_pd() override {
    RDMALAB_ASSIGN(auto pd, inner_.alloc_pd());
    return std::unique_ptr<ProtectionDomain>(new Pd(std::move(pd), refused_));
  }

 private:
  struct Pd final : ProtectionDomain {
    Pd(std::unique_ptr<ProtectionDomain> p, const void* r) : inner(std::move(p)), refused(r) {}
    Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, std::uint64_t length, std::uint32_t access, MemoryKind kind) override {
      if (addr == refused) return Status(Errc::not_supported, "dmabuf: not on this NIC; peermem: not loaded");
      return inner->register_memory(addr, length, access, kind);
    }
    Result<std::unique_ptr<QueuePair>> create_qp(CompletionQueue& s, CompletionQueue& r, const QpCaps& caps) override {
      return inner->create_qp(s, r, caps);
    }
    std::unique_ptr<ProtectionDomain> inner;
    const void* refused;
  };
  Device& inner_;
  const void* refused_;
};

// auto (fallback): the backend's own registration first; only a not_supported refusal stages.
TEST_P(Staged, AutoStagesOnlyWhenTheBackendRefuses) {
  Status st = backend_->launch(test::spec_for(2), [&](RankEnv& env) -> Status {
    MemoryProvider& mem = host_memory();
    RDMALAB_ASSIGN(Buffer buf, mem.allocate(4096));
    {  // The backend registers it: no bounce buffer.
      std::unique_ptr<Device> dev = make_staging_device(env.dev, StagingOptions{MemoryKind::host, true});
      RDMALAB_ASSIGN(auto pd, dev->alloc_pd());
      RDMALAB_ASSIGN(auto mr, pd->register_memory(buf.data(), 4096, kAccessLocalWrite, MemoryKind::host));
      EXPECT_EQ(mr->addr(), buf.addr());
    }
    RefusingDevice refusing(env.dev, buf.data());
    {  // Without the layer the refusal is the run's error; with it, the memory is staged.
      RDMALAB_ASSIGN(auto plain_pd, refusing.alloc_pd());
      EXPECT_EQ(plain_pd->register_memory(buf.data(), 4096, kAccessLocalWrite, MemoryKind::host).status().code(), Errc::not_supported);
      std::unique_ptr<Device> dev = make_staging_device(refusing, StagingOptions{MemoryKind::host, true});
      RDMALAB_ASSIGN(auto pd, dev->alloc_pd());
      RDMALAB_ASSIGN(auto mr, pd->register_memory(buf.data(), 4096, kAccessLocalWrite, MemoryKind::host));
      EXPECT_NE(mr->addr(), buf.addr());
      // Other refusals by the backend are not a reason to stage: they stay errors.
      RDMALAB_ASSIGN(Buffer other, mem.allocate(4096));
      EXPECT_EQ(pd->register_memory(other.data(), 4096, kAccessRemoteWrite, MemoryKind::host).status().code(), Errc::invalid_argument)
          << "remote write without local write";
    }
    return env.boot.barrier();
  });
  EXPECT_TRUE(st.is_ok()) << st.to_string();
}

// Every workload that can run with its memory staged (write_lat polls its buffer from the CPU,
// which GPU memory forbids too) moves every byte right.
TEST_P(Staged, WorkloadsCheckEveryByteThroughTheBounceBuffers) {
  struct W {
    std::vector<std::string> sets;
  };
  const std::vector<W> runs = {
      {{"workload.type=write_bw", "workload.sizes=[1B,4KiB,100KiB]", "workload.iterations=40", "workload.qps=2", "workload.bidirectional=true"}},
      {{"workload.type=read_bw", "workload.sizes=[8B,64KiB]", "workload.iterations=40"}},
      {{"workload.type=send_bw", "workload.sizes=[3B,64KiB]", "workload.iterations=40", "workload.post_list=4"}},
      {{"workload.type=write_bw", "workload.size=64B", "workload.inline=64B", "workload.iterations=30"}},
      {{"workload.type=send_lat", "workload.sizes=[8B,4KiB]", "workload.iterations=30"}},
      {{"workload.type=read_lat", "workload.size=4KiB", "workload.iterations=30"}},
      {{"workload.type=atomic_bw", "workload.iterations=40"}},
      {{"workload.type=atomic_lat", "workload.iterations=20", "workload.atomic=cmp_swap"}},
      {{"workload.type=all_reduce", "fabric.nodes=4", "workload.sizes=[1KiB,1MiB]", "workload.iterations=3", "workload.dtype=int32"}},
      {{"workload.type=all_gather", "fabric.nodes=3", "workload.size=300KiB", "workload.iterations=2"}},
      {{"workload.type=reduce_scatter", "fabric.nodes=4", "workload.size=1MiB", "workload.iterations=2"}},
      {{"workload.type=broadcast", "fabric.nodes=3", "workload.size=1MiB", "workload.iterations=2", "workload.root=1"}},
      {{"workload.type=train_dp", "fabric.nodes=4", "training.model=custom", "training.layers=[200000,300000]", "training.batch=2",
        "training.bucket=1MB"}},
  };
  RunOptions options;
  options.stage_host_memory = true;
  for (const auto& w : runs) {
    std::string what;
    for (const auto& s : w.sets) what += " " + s;
    auto sc = parse_scenario("name: t\n", "t.yaml", w.sets, full_schema(all_backends()));
    ASSERT_TRUE(sc.is_ok()) << what << ": " << sc.status().message();
    RunOutcome out = run_scenario(*sc, *backend_, options);
    ASSERT_TRUE(out.status.is_ok()) << what << ": " << out.status.to_string();
    ASSERT_FALSE(out.rows.empty()) << what;
    for (const auto& r : out.rows) {
      EXPECT_EQ(r.errors, 0u) << what << " size " << r.bytes;
      EXPECT_GT(r.iterations, 0u) << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Staged, ::testing::ValuesIn(usable_backend_names("staged path")),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace rdmalab
