// GPU memory for rdmalab (CUDA): the memory provider for workload.memory: cuda, and the kernels
// the workloads need (reductions, payload fill and verify on the GPU). No CUDA type appears
// here, so code that includes this header builds with a plain C++ compiler.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rdmalab/memory.h"
#include "rdmalab/reduce.h"
#include "rdmalab/status.h"

namespace rdmalab::gpu {

struct GpuInfo {
  bool usable = false;
  std::string why;     // when not usable: no driver, no device, ...
  int devices = 0;
  std::string name;    // of device 0
  int cc_major = 0, cc_minor = 0;
  std::size_t memory_bytes = 0;
};

// Looks for a GPU; when there is one, installs the cuda memory provider (set_memory_provider),
// else records why not (set_memory_unavailable_reason). Call once at startup, before runs.
GpuInfo install();

// Mirrors --trace's spans as NVTX ranges for Nsight Systems (trace.h's TraceMirror); install()
// calls it, with or without a GPU.
void install_nvtx();

// What GPUDirect needs to know about each GPU (rdmalab doctor).
struct GpuFacts {
  int index = 0;
  std::string name;
  std::string pci_bus_id;        // "0000:19:00.0", lower case, as sysfs names it
  bool gpudirect_rdma = false;   // the device supports GPUDirect RDMA (nvidia_p2p_* / peermem)
  int dmabuf = -1;               // 1/0: the driver exports device memory as dmabuf; -1: unknown
};
std::vector<GpuFacts> gpu_facts();

// The provider (null before install() found a GPU).
MemoryProvider* cuda_memory();

// dst[i] = a[i] op b[i] on device pointers, on the current device; synchronous.
Status reduce(void* dst, const void* a, const void* b, std::size_t count, DataType t, ReduceOp op);

// Device-to-device copy, synchronous (the reference rate for the kernels' bandwidth).
Status copy(void* dst, const void* src, std::size_t bytes);

// Seconds one call of `fn` takes on the GPU, timed with events, best of `reps` after a warm-up.
double time_gpu(int reps, const std::function<void()>& fn);

}  // namespace rdmalab::gpu

namespace rdmalab::gpu {

// The staged path of GPU memory (what NCCL does without GPUDirect RDMA): pinned host bounce
// buffers, a ring of `depth` chunks, and cudaMemcpyAsync on a stream of its own, so that the copy
// of the next chunks runs while the current one is handed over (to the NIC). Not thread-safe.
class StagingPipeline {
 public:
  // Errors: no_memory (pinned memory), not_supported (no GPU), invalid_argument (chunk 0, depth < 1).
  static Result<std::unique_ptr<StagingPipeline>> create(std::size_t chunk, int depth);
  ~StagingPipeline();
  StagingPipeline(const StagingPipeline&) = delete;
  StagingPipeline& operator=(const StagingPipeline&) = delete;

  std::size_t chunk() const { return chunk_; }
  int depth() const { return depth_; }

  // GPU → host: copies gpu_src[0, len) chunk by chunk into the bounce ring and calls
  // consume(host, offset, n) for each chunk in order, as soon as its copy is done, while the
  // following copies run. The host pointer is valid until consume returns. Blocking.
  Status to_host(const void* gpu_src, std::size_t len, const std::function<Status(const void*, std::size_t, std::size_t)>& consume);
  // Host → GPU: produce(host, offset, n) fills a bounce chunk (from the network), which is then
  // copied to gpu_dst + offset while the next chunk is produced. Returns when all has landed.
  Status to_gpu(void* gpu_dst, std::size_t len, const std::function<Status(void*, std::size_t, std::size_t)>& produce);

 private:
  StagingPipeline() = default;
  std::size_t chunk_ = 0;
  int depth_ = 0;
  void* bounce_ = nullptr;  // depth × chunk bytes, pinned
  void* stream_ = nullptr;  // cudaStream_t
  std::vector<void*> events_;
};

// Plain copies between GPU memory and pinned host memory (the staged path's reference rate).
// Errors: no_memory; synchronous.
Result<void*> alloc_pinned(std::size_t bytes);
void free_pinned(void* p);
Status copy_to_host(void* host, const void* gpu, std::size_t bytes);
Status copy_to_gpu(void* gpu, const void* host, std::size_t bytes);

}  // namespace rdmalab::gpu
