// GPU memory for rdmalab (CUDA): the memory provider for workload.memory: cuda, and the kernels
// the workloads need (reductions, payload fill and verify on the GPU). No CUDA type appears
// here, so code that includes this header builds with a plain C++ compiler.
#pragma once

#include <cstddef>
#include <functional>
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
