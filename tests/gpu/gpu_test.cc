// GPU memory on a real GPU: the reduction kernels against the host reference for every type and
// operator (bit for bit: both compute in fp32 and round to nearest even), fill and verify on the
// GPU, copies, and GPU workloads end to end on the loopback backend (CUDA copies between ranks'
// GPU buffers, reductions by the kernels). Every test skips, saying why, where there is no GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <unistd.h>
#include <random>

#include "../pair_helpers.h"
#include "backends.h"
#include "common/nvml.h"
#include "rdmalab/gpu.h"
#include "rdmalab/run.h"
#include "rdmalab/staging.h"

namespace rdmalab {
namespace {

const gpu::GpuInfo& gpu_info() {
  static const gpu::GpuInfo info = gpu::install();
  return info;
}

#define REQUIRE_GPU() \
  if (!gpu_info().usable) GTEST_SKIP() << "no GPU here (" << gpu_info().why << "): GPU tests run on a machine with one"

std::vector<std::uint8_t> random_elements(DataType t, std::size_t n, std::mt19937_64& rng) {
  std::vector<std::uint8_t> v(n * dtype_size(t));
  std::uniform_real_distribution<double> real(-1000, 1000);
  for (std::size_t i = 0; i < n; ++i) {
    switch (t) {
      case DataType::int32:
      case DataType::int8: {
        std::uint32_t x = static_cast<std::uint32_t>(rng());
        std::memcpy(v.data() + i * dtype_size(t), &x, dtype_size(t));  // any bits: wrapping is tested
        break;
      }
      default: set_element(v.data(), i, t, real(rng) * (i % 7 == 0 ? 1e-3 : 1.0));
    }
  }
  return v;
}

TEST(GpuKernels, ReductionsMatchTheHostReferenceBitForBit) {
  REQUIRE_GPU();
  std::mt19937_64 rng(42);
  for (auto t : {DataType::fp32, DataType::fp16, DataType::bf16, DataType::int32, DataType::int8})
    for (auto op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min})
      for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{4099}, std::size_t{1000003}})
        for (std::size_t skew : {std::size_t{0}, std::size_t{1}}) {  // 1: unaligned, the scalar path
          auto a = random_elements(t, n, rng), b = random_elements(t, n, rng);
          std::vector<std::uint8_t> want(a.size());
          host_reduce(want.data(), a.data(), b.data(), n, t, op);
          auto& mem = *gpu::cuda_memory();
          const std::size_t es = dtype_size(t), off = skew * es;
          auto da = mem.allocate(a.size() + off), db = mem.allocate(b.size() + off), dd = mem.allocate(a.size() + off);
          ASSERT_TRUE(da && db && dd);
          ASSERT_TRUE(mem.write(*da, off, a.data(), a.size()).is_ok());
          ASSERT_TRUE(mem.write(*db, off, b.data(), b.size()).is_ok());
          Status st = mem.reduce(*dd, off, *da, off, *db, off, n, t, op);
          ASSERT_TRUE(st.is_ok()) << st.message();
          std::vector<std::uint8_t> got(a.size());
          ASSERT_TRUE(mem.read(*dd, off, got.data(), got.size()).is_ok());
          std::size_t bad = 0, first = 0;
          for (std::size_t i = 0; i < n; ++i)
            if (std::memcmp(&got[i * es], &want[i * es], es) != 0 && bad++ == 0) first = i;
          EXPECT_EQ(bad, 0u) << dtype_name(t) << " " << reduce_op_name(op) << " n " << n << " skew " << skew << ": first at " << first
                             << " got " << element_as_double(got.data(), first, t) << " want " << element_as_double(want.data(), first, t);
        }
}

TEST(GpuMemory, FillAndVerifyOnTheGpuCatchEveryWrongByte) {
  REQUIRE_GPU();
  auto& mem = *gpu::cuda_memory();
  for (std::size_t len : {std::size_t{1}, std::size_t{13}, std::size_t{4096}, std::size_t{(64u << 20) + 5}}) {
    auto buf = mem.allocate(len + 3);
    ASSERT_TRUE(buf);
    for (std::size_t off : {std::size_t{0}, std::size_t{3}}) {
      ASSERT_TRUE(mem.fill(*buf, off, len, 77).is_ok());
      auto w = mem.verify(*buf, off, len, 77);
      ASSERT_TRUE(w);
      EXPECT_EQ(*w, 0u) << len << " " << off;
      // The same bytes as the host's pattern.
      std::vector<std::uint8_t> host(std::min<std::size_t>(len, 4096));
      ASSERT_TRUE(mem.read(*buf, off, host.data(), host.size()).is_ok());
      for (std::size_t i = 0; i < host.size(); ++i) ASSERT_EQ(host[i], pattern_byte(77, i)) << i;
      std::uint8_t x = 0;
      ASSERT_TRUE(mem.read(*buf, off + len / 2, &x, 1).is_ok());
      x ^= 0x10;
      ASSERT_TRUE(mem.write(*buf, off + len / 2, &x, 1).is_ok());
      w = mem.verify(*buf, off, len, 77);
      ASSERT_TRUE(w);
      EXPECT_EQ(*w, 1u) << len << " " << off;
      if (len >= 4096) {
        EXPECT_GT(*mem.verify(*buf, off, len, 78), len / 2) << "another seed's pattern differs nearly everywhere";
      }
    }
  }
}

RunOutcome run_loopback(std::vector<std::string> sets) {
  sets.push_back("workload.memory=cuda");
  auto sc = parse_scenario("name: gpu\n", "gpu.yaml", sets, full_schema(all_backends()));
  EXPECT_TRUE(sc.is_ok()) << sc.status().message();
  if (!sc) return RunOutcome{sc.status(), {}, 0};
  return run_scenario(*sc, **all_backends().make("loopback"));
}

TEST(GpuLoopback, PerftestWorkloadsMoveGpuMemoryExactly) {
  REQUIRE_GPU();
  for (const char* w : {"write_bw", "read_bw", "send_bw", "send_lat", "read_lat"}) {
    RunOutcome out = run_loopback({std::string("workload.type=") + w, "workload.sizes=[1B,4KiB,1MiB]", "workload.iterations=50"});
    ASSERT_TRUE(out.status.is_ok()) << w << ": " << out.status.to_string();
    for (const auto& r : out.rows) EXPECT_EQ(r.errors, 0u) << w << " " << r.bytes;
  }
}

TEST(GpuLoopback, WriteLatencyOnGpuMemoryIsRefusedWithTheReason) {
  REQUIRE_GPU();
  auto sc = parse_scenario("name: gpu\n", "gpu.yaml", {"workload.memory=cuda", "workload.type=write_lat"}, full_schema(all_backends()));
  ASSERT_TRUE(sc.is_ok());
  Status st = check_run(*sc, **all_backends().make("loopback"));
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("polling its last byte"), std::string::npos) << st.message();
}

TEST(GpuLoopback, CollectivesReduceOnTheGpuExactly) {
  REQUIRE_GPU();
  for (const char* coll : {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all"})
    for (const char* dt : {"fp32", "fp16", "bf16", "int32", "int8"}) {
      RunOutcome out = run_loopback({"fabric.nodes=3", std::string("workload.type=") + coll, std::string("workload.dtype=") + dt,
                                     "workload.sizes=[96B,3MiB]", "workload.chunk=256KiB", "workload.iterations=2", "workload.warmup=1"});
      ASSERT_TRUE(out.status.is_ok()) << coll << " " << dt << ": " << out.status.to_string();
      for (const auto& r : out.rows) EXPECT_EQ(r.errors, 0u) << coll << " " << dt << " " << r.bytes;
    }
}

TEST(GpuLoopback, TrainingStepsOnGpuMemory) {
  REQUIRE_GPU();
  RunOutcome dp = run_loopback({"fabric.nodes=4", "workload.type=train_dp", "training.model=custom", "training.layers=[300000,500000]",
                                "training.batch=4", "training.bucket=1MB", "workload.iterations=2"});
  ASSERT_TRUE(dp.status.is_ok()) << dp.status.to_string();
  EXPECT_EQ(dp.rows[0].errors, 0u);
  RunOutcome pp = run_loopback({"fabric.nodes=3", "workload.type=train_pp", "training.model=custom", "training.layers=[1000,1000,1000]",
                                "training.activation=1MB", "workload.iterations=2"});
  ASSERT_TRUE(pp.status.is_ok()) << pp.status.to_string();
  EXPECT_EQ(pp.rows[0].errors, 0u);
}

TEST(GpuLoopback, CorruptionInGpuMemoryIsCaught) {
  REQUIRE_GPU();
  RunOutcome out = run_loopback({"fabric.nodes=4", "workload.type=all_reduce", "workload.size=1MiB", "workload.chunk=64KiB",
                                 "loopback.corrupt_every=5", "workload.iterations=2"});
  EXPECT_EQ(out.status.code(), Errc::data) << out.status.to_string();
}

// The staged path as workloads take it (core's staging layer over the backend): GPU memory
// registered as pinned host bounce buffers, copies at post time and at the workloads' sync calls.
TEST(GpuStaged, WorkloadsMoveGpuMemoryThroughBounceBuffersExactly) {
  REQUIRE_GPU();
  const std::vector<std::vector<std::string>> runs = {
      {"workload.type=write_bw", "workload.sizes=[1B,4KiB,1MiB]", "workload.iterations=50", "workload.qps=2", "workload.bidirectional=true"},
      {"workload.type=read_bw", "workload.sizes=[3B,1MiB]", "workload.iterations=50"},
      {"workload.type=send_bw", "workload.sizes=[8B,1MiB]", "workload.iterations=50", "workload.post_list=4"},
      {"workload.type=send_lat", "workload.sizes=[8B,64KiB]", "workload.iterations=50"},
      {"workload.type=read_lat", "workload.size=64KiB", "workload.iterations=50"},
      {"fabric.nodes=3", "workload.type=all_reduce", "workload.dtype=bf16", "workload.sizes=[96B,3MiB]", "workload.chunk=256KiB"},
      {"fabric.nodes=4", "workload.type=all_reduce", "workload.dtype=int32", "workload.size=8MiB"},
      {"fabric.nodes=3", "workload.type=all_gather", "workload.size=3MiB", "workload.chunk=256KiB"},
      {"fabric.nodes=4", "workload.type=train_dp", "training.model=custom", "training.layers=[300000,500000]", "training.batch=4",
       "training.bucket=1MB", "workload.iterations=2"},
  };
  for (auto sets : runs) {
    std::string what;
    for (const auto& s : sets) what += " " + s;
    sets.push_back("workload.gpu_path=staged");
    RunOutcome out = run_loopback(sets);
    ASSERT_TRUE(out.status.is_ok()) << what << ": " << out.status.to_string();
    for (const auto& r : out.rows) EXPECT_EQ(r.errors, 0u) << what << " " << r.bytes;
  }
  // The checks are live on this path too: a corrupted delivery is caught.
  RunOutcome bad = run_loopback({"fabric.nodes=4", "workload.type=all_reduce", "workload.size=1MiB", "workload.chunk=64KiB",
                                 "loopback.corrupt_every=5", "workload.iterations=2", "workload.gpu_path=staged"});
  EXPECT_EQ(bad.status.code(), Errc::data) << bad.status.to_string();
}

// What lands in a staged GPU region stays in its bounce buffer until sync_from_nic; what crosses
// from one is what the GPU held when the request was posted.
TEST(GpuStaged, TheNicWorksOnTheBounceBufferAndSyncsMoveTheBytes) {
  REQUIRE_GPU();
  auto backend = all_backends().make("loopback");
  ASSERT_TRUE(backend.is_ok());
  constexpr std::size_t kBytes = (3 << 20) + 5;
  LaunchSpec spec;
  spec.ranks = 2;
  Status st = (*backend)->launch(spec, [&](RankEnv& env) -> Status {
    MemoryProvider& mem = *gpu::cuda_memory();
    std::unique_ptr<Device> dev = make_staging_device(env.dev, StagingOptions{MemoryKind::cuda, false});
    RDMALAB_ASSIGN(auto pd, dev->alloc_pd());
    RDMALAB_ASSIGN(auto cq, dev->create_cq(16));
    RDMALAB_ASSIGN(auto qp, pd->create_qp(*cq, *cq, QpCaps{}));
    RDMALAB_ASSIGN(Buffer buf, mem.allocate(kBytes));
    RDMALAB_ASSIGN(auto mr, pd->register_memory(buf.data(), kBytes, kAccessLocalWrite | kAccessRemoteWrite, MemoryKind::cuda));
    EXPECT_NE(mr->addr(), buf.addr());
    EXPECT_EQ(mr->kind(), MemoryKind::cuda);
    RDMALAB_ASSIGN(const RemoteBuffer peer, test::connect_to_other_rank(env, *qp, *mr));
    if (env.rank == 0) {
      RDMALAB_TRY(mem.fill(buf, 0, kBytes, 11));
      const Sge sge{buf.addr(), static_cast<std::uint32_t>(kBytes), mr->lkey()};
      RDMALAB_ASSIGN(Completion wc, test::post_and_wait(*qp, *cq, SendOpcode::rdma_write, sge, peer));
      EXPECT_EQ(wc.status, WcStatus::success) << wc_status_str(wc.status);
    }
    RDMALAB_TRY(env.boot.barrier());
    if (env.rank == 1) {
      RDMALAB_ASSIGN(std::uint64_t before, mem.verify(buf, 0, kBytes, 11));
      EXPECT_GT(before, kBytes / 2) << "the write reached GPU memory before sync_from_nic";
      RDMALAB_TRY(mr->sync_from_nic(0, kBytes));
      RDMALAB_ASSIGN(std::uint64_t after, mem.verify(buf, 0, kBytes, 11));
      EXPECT_EQ(after, 0u);
    }
    return env.boot.barrier();
  });
  EXPECT_TRUE(st.is_ok()) << st.to_string();
}

// Atomics on GPU memory: a ConnectX applies them over PCIe as on host memory, and so does the
// loopback backend (it reads, applies and writes back with the GPU's copies).
TEST(GpuLoopback, AtomicsOnGpuMemoryWorkAsOnHostMemory) {
  REQUIRE_GPU();
  auto backend = all_backends().make("loopback");
  ASSERT_TRUE(backend.is_ok());
  LaunchSpec spec;
  spec.ranks = 2;
  Status st = (*backend)->launch(spec, [&](RankEnv& env) -> Status {
    MemoryProvider& mem = *gpu::cuda_memory();
    RDMALAB_ASSIGN(auto pd, env.dev.alloc_pd());
    RDMALAB_ASSIGN(auto cq, env.dev.create_cq(16));
    RDMALAB_ASSIGN(auto qp, pd->create_qp(*cq, *cq, QpCaps{}));
    RDMALAB_ASSIGN(Buffer buf, mem.allocate(64));
    RDMALAB_ASSIGN(auto mr, pd->register_memory(buf.data(), 64, kAccessLocalWrite | kAccessRemoteAtomic, MemoryKind::cuda));
    const std::uint64_t five = 5;
    RDMALAB_TRY(mem.copy_bytes(buf.data(), &five, 8));  // the target, at offset 0 of rank 1's region
    RDMALAB_ASSIGN(const RemoteBuffer peer, test::connect_to_other_rank(env, *qp, *mr));
    if (env.rank == 0) {
      const Sge result{buf.addr() + 8, 8, mr->lkey()};  // the old value lands in rank 0's GPU memory
      auto atomic = [&](SendOpcode op, std::uint64_t compare_add, std::uint64_t swap) -> Result<std::uint64_t> {
        SendWr wr;
        wr.opcode = op;
        wr.sg_list = std::span<const Sge>(&result, 1);
        wr.remote_addr = peer.addr;
        wr.rkey = peer.rkey;
        wr.compare_add = compare_add;
        wr.swap = swap;
        RDMALAB_TRY(qp->post_send(std::span<const SendWr>(&wr, 1)));
        Completion wc;
        RDMALAB_ASSIGN(std::size_t n, cq->wait({&wc, 1}, 10.0));
        EXPECT_EQ(n, 1u);
        EXPECT_EQ(wc.status, WcStatus::success) << wc_status_str(wc.status);
        std::uint64_t old = 0;
        RDMALAB_TRY(mem.copy_bytes(&old, reinterpret_cast<const void*>(result.addr), 8));
        return old;
      };
      RDMALAB_ASSIGN(std::uint64_t old_add, atomic(SendOpcode::atomic_fetch_add, 3, 0));
      EXPECT_EQ(old_add, 5u);
      RDMALAB_ASSIGN(std::uint64_t old_swap, atomic(SendOpcode::atomic_cmp_swap, 8, 100));
      EXPECT_EQ(old_swap, 8u);
    }
    RDMALAB_TRY(env.boot.barrier());
    if (env.rank == 1) {
      std::uint64_t now_value = 0;
      RDMALAB_TRY(mem.copy_bytes(&now_value, buf.data(), 8));
      EXPECT_EQ(now_value, 100u) << "5 + 3 = 8, then swapped for 100";
    }
    return env.boot.barrier();
  });
  EXPECT_TRUE(st.is_ok()) << st.to_string();
}

// The staged path keeps every byte, across chunk boundaries and at odd sizes, both ways.
TEST(GpuStaging, EveryByteCrossesTheBounceBuffersBothWays) {
  REQUIRE_GPU();
  MemoryProvider& mem = *gpu::cuda_memory();
  constexpr std::size_t kChunk = 64 << 10;
  auto pipe = gpu::StagingPipeline::create(kChunk, 3);
  ASSERT_TRUE(pipe.is_ok()) << pipe.status().message();
  for (std::size_t len : {std::size_t{1}, std::size_t{4095}, kChunk - 1, kChunk, kChunk + 1, 3 * kChunk + 17, std::size_t{1000003}}) {
    auto buf = mem.allocate(len);
    ASSERT_TRUE(buf.is_ok());
    ASSERT_TRUE(mem.fill(*buf, 0, len, 11).is_ok());
    std::vector<std::uint8_t> host(len, 0);
    std::size_t expect_off = 0;
    Status st = (*pipe)->to_host(buf->data(), len, [&](const void* p, std::size_t off, std::size_t n) {
      EXPECT_EQ(off, expect_off) << "chunks in order";
      EXPECT_LE(n, kChunk);
      expect_off = off + n;
      std::memcpy(host.data() + off, p, n);
      return Status::ok();
    });
    ASSERT_TRUE(st.is_ok()) << st.message();
    EXPECT_EQ(expect_off, len);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < len; ++i) wrong += host[i] != pattern_byte(11, i);
    EXPECT_EQ(wrong, 0u) << len << " bytes to the host";
    // Back: another pattern, produced chunk by chunk into the bounce buffers, checked on the GPU.
    st = (*pipe)->to_gpu(buf->data(), len, [&](void* p, std::size_t off, std::size_t n) {
      auto* b = static_cast<std::uint8_t*>(p);
      for (std::size_t i = 0; i < n; ++i) b[i] = pattern_byte(12, off + i);
      return Status::ok();
    });
    ASSERT_TRUE(st.is_ok()) << st.message();
    auto bad = mem.verify(*buf, 0, len, 12);
    ASSERT_TRUE(bad.is_ok());
    EXPECT_EQ(*bad, 0u) << len << " bytes to the GPU";
  }
  // A consumer that fails stops the pipeline with its error.
  auto buf = mem.allocate(4 * kChunk);
  ASSERT_TRUE(buf.is_ok());
  int calls = 0;
  Status st = (*pipe)->to_host(buf->data(), 4 * kChunk, [&](const void*, std::size_t, std::size_t) {
    return ++calls == 2 ? Status(Errc::transport, "the NIC said no") : Status::ok();
  });
  EXPECT_EQ(st.code(), Errc::transport);
  EXPECT_EQ(calls, 2);
}

// GPUDirect registration, as far as a machine without an RDMA device goes: the GPU memory range is
// exported as a dmabuf when the driver can (the first half of perftest's --use_cuda_dmabuf), and
// a verbs run on GPU memory is refused with the reason instead of failing later.
TEST(GpuDirect, DmabufExportAndACleanRefusalWithoutAnRdmaDevice) {
  REQUIRE_GPU();
  MemoryProvider& mem = *gpu::cuda_memory();
  auto buf = mem.allocate(1 << 20);
  ASSERT_TRUE(buf.is_ok());
  const auto facts = gpu::gpu_facts();
  ASSERT_FALSE(facts.empty());
  // An address inside the buffer: the export covers its pages and says where the range starts.
  auto r = mem.export_dmabuf(buf->bytes() + 4096 + 100, 8192);
  if (facts[0].dmabuf == 1) {
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_GE(r->fd, 0);
    EXPECT_EQ(r->offset, 100u);
    ::close(r->fd);
    std::printf("  dmabuf export of GPU memory: fd %d, offset %llu\n", r->fd, static_cast<unsigned long long>(r->offset));
  } else {
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), Errc::not_supported);
    std::printf("  dmabuf export refused: %s\n", r.status().message().c_str());
  }
  EXPECT_EQ(host_memory().export_dmabuf(buf->data(), 1).status().code(), Errc::not_supported);
  // Verbs on this machine: no RDMA device, so a GPU-memory run is refused before anything starts.
  auto verbs = all_backends().make("verbs");
  if (!verbs) GTEST_SKIP() << "this build has no verbs backend";
  const Availability av = (*verbs)->availability();
  if (av.usable) GTEST_SKIP() << "an RDMA device is here: the registration itself is tested on real hardware";
  auto sc = parse_scenario("backend: verbs\nworkload: { type: write_bw, memory: cuda, iterations: 10 }\n", "gpu_test.yaml", {},
                           full_schema(all_backends()));
  ASSERT_TRUE(sc.is_ok()) << sc.status().message();
  Status st = check_run(*sc, **verbs);
  ASSERT_FALSE(st.is_ok());
  std::printf("  verbs on GPU memory here: %s\n", st.message().c_str());
  EXPECT_NE(st.message().find("not usable here"), std::string::npos) << st.message();
}

TEST(GpuMemory, WithoutAGpuTheReasonIsGiven) {
  if (gpu_info().usable) GTEST_SKIP() << "a GPU is here (" << gpu_info().name << "): this checks the message when there is none";
  auto sc = parse_scenario("name: gpu\n", "gpu.yaml", {"workload.memory=cuda"}, full_schema(all_backends()));
  ASSERT_TRUE(sc.is_ok());
  Status st = check_run(*sc, **all_backends().make("loopback"));
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("workload.memory"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("GPU"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace rdmalab

namespace rdmalab {
namespace {

// The GPU side of a recorded real run (docs/record.md): NVML, loaded at run time, sees the GPU,
// and memory a rank allocates shows in its samples.
TEST(Nvml, SeesTheGpuAndTheMemoryARankAllocates) {
  REQUIRE_GPU();
  std::string why;
  auto nvml = Nvml::open(why);
  ASSERT_TRUE(nvml) << "a GPU machine without NVML: " << why;
  ASSERT_EQ(nvml->count(), gpu_info().devices) << nvml->describe();
  const auto before = nvml->sample();
  MemoryProvider* mem = memory_provider(MemoryKind::cuda);
  ASSERT_NE(mem, nullptr);
  const std::size_t bytes = std::size_t{2} << 30;
  auto buf = mem->allocate(bytes);
  ASSERT_TRUE(buf.is_ok()) << buf.status().message();
  ASSERT_TRUE(mem->fill(*buf, 0, bytes, 7).is_ok());  // touched, and a kernel ran
  const auto after = nvml->sample();
  ASSERT_EQ(after.size(), before.size());
  const GpuSample& g = after[0];
  std::printf("%s: %.1f of %.1f GiB in use after allocating 2 GiB (%.1f before), utilisation %.0f %%\n", nvml->describe().c_str(),
              static_cast<double>(g.mem_used) / (1 << 30), static_cast<double>(g.mem_total) / (1 << 30),
              static_cast<double>(before[0].mem_used) / (1 << 30), g.util * 100);
  EXPECT_GE(g.mem_used, before[0].mem_used + bytes);
  EXPECT_LE(g.mem_used, g.mem_total);
  EXPECT_NEAR(static_cast<double>(g.mem_total), static_cast<double>(gpu_info().memory_bytes), 0.02 * static_cast<double>(g.mem_total));
  EXPECT_GE(g.util, 0.0);
  EXPECT_LE(g.util, 1.0);
}

}  // namespace
}  // namespace rdmalab
