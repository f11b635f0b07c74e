// The staged path: pinned bounce buffers and pipelined cudaMemcpyAsync (gpu.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "rdmalab/gpu.h"

namespace rdmalab::gpu {

namespace {

Status cuda_error(cudaError_t e, const char* what) {
  return Status(e == cudaErrorMemoryAllocation ? Errc::no_memory : Errc::internal,
                std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

#define RDMALAB_CUDA_TRY(call, what)                    \
  do {                                                  \
    cudaError_t rdmalab_e = (call);                     \
    if (rdmalab_e != cudaSuccess) return cuda_error(rdmalab_e, what); \
  } while (0)

}  // namespace

Result<std::unique_ptr<StagingPipeline>> StagingPipeline::create(std::size_t chunk, int depth) {
  if (chunk == 0 || depth < 1) return Status(Errc::invalid_argument, "staging: the chunk must be at least one byte and the depth at least 1");
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return Status(Errc::not_supported, "staging: no GPU here");
  std::unique_ptr<StagingPipeline> p(new StagingPipeline());
  p->chunk_ = chunk;
  p->depth_ = depth;
  RDMALAB_CUDA_TRY(cudaHostAlloc(&p->bounce_, chunk * static_cast<std::size_t>(depth), cudaHostAllocDefault), "staging: cudaHostAlloc");
  cudaStream_t s = nullptr;
  RDMALAB_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "staging: cudaStreamCreate");
  p->stream_ = s;
  for (int i = 0; i < depth; ++i) {
    cudaEvent_t e = nullptr;
    RDMALAB_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "staging: cudaEventCreate");
    p->events_.push_back(e);
  }
  return std::move(p);
}

StagingPipeline::~StagingPipeline() {
  if (stream_) cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
  for (void* e : events_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  if (bounce_) cudaFreeHost(bounce_);
}

Status StagingPipeline::to_host(const void* gpu_src, std::size_t len,
                                const std::function<Status(const void*, std::size_t, std::size_t)>& consume) {
  auto* stream = static_cast<cudaStream_t>(stream_);
  const std::size_t chunks = (len + chunk_ - 1) / chunk_;
  auto slot_ptr = [&](std::size_t i) { return static_cast<char*>(bounce_) + (i % static_cast<std::size_t>(depth_)) * chunk_; };
  auto issue = [&](std::size_t i) -> Status {
    const std::size_t off = i * chunk_, n = std::min(chunk_, len - off);
    RDMALAB_CUDA_TRY(cudaMemcpyAsync(slot_ptr(i), static_cast<const char*>(gpu_src) + off, n, cudaMemcpyDeviceToHost, stream),
                     "staging: cudaMemcpyAsync device to host");
    RDMALAB_CUDA_TRY(cudaEventRecord(static_cast<cudaEvent_t>(events_[i % static_cast<std::size_t>(depth_)]), stream), "staging: cudaEventRecord");
    return Status::ok();
  };
  for (std::size_t i = 0; i < std::min<std::size_t>(chunks, static_cast<std::size_t>(depth_)); ++i) RDMALAB_TRY(issue(i));
  for (std::size_t i = 0; i < chunks; ++i) {
    RDMALAB_CUDA_TRY(cudaEventSynchronize(static_cast<cudaEvent_t>(events_[i % static_cast<std::size_t>(depth_)])), "staging: waiting for a copy");
    const std::size_t off = i * chunk_, n = std::min(chunk_, len - off);
    Status st = consume(slot_ptr(i), off, n);
    if (!st) {
      cudaStreamSynchronize(stream);
      return st;
    }
    // The slot is free again: the copy of a later chunk may use it.
    if (i + static_cast<std::size_t>(depth_) < chunks) RDMALAB_TRY(issue(i + static_cast<std::size_t>(depth_)));
  }
  return Status::ok();
}

Status StagingPipeline::to_gpu(void* gpu_dst, std::size_t len, const std::function<Status(void*, std::size_t, std::size_t)>& produce) {
  auto* stream = static_cast<cudaStream_t>(stream_);
  const std::size_t chunks = (len + chunk_ - 1) / chunk_;
  for (std::size_t i = 0; i < chunks; ++i) {
    const std::size_t slot = i % static_cast<std::size_t>(depth_);
    // The copy that last read this slot must be done before it is overwritten.
    if (i >= static_cast<std::size_t>(depth_))
      RDMALAB_CUDA_TRY(cudaEventSynchronize(static_cast<cudaEvent_t>(events_[slot])), "staging: waiting for a copy");
    char* host = static_cast<char*>(bounce_) + slot * chunk_;
    const std::size_t off = i * chunk_, n = std::min(chunk_, len - off);
    Status st = produce(host, off, n);
    if (!st) {
      cudaStreamSynchronize(stream);
      return st;
    }
    RDMALAB_CUDA_TRY(cudaMemcpyAsync(static_cast<char*>(gpu_dst) + off, host, n, cudaMemcpyHostToDevice, stream),
                     "staging: cudaMemcpyAsync host to device");
    RDMALAB_CUDA_TRY(cudaEventRecord(static_cast<cudaEvent_t>(events_[slot]), stream), "staging: cudaEventRecord");
  }
  RDMALAB_CUDA_TRY(cudaStreamSynchronize(stream), "staging: cudaStreamSynchronize");
  return Status::ok();
}

Result<void*> alloc_pinned(std::size_t bytes) {
  void* p = nullptr;
  RDMALAB_CUDA_TRY(cudaHostAlloc(&p, std::max<std::size_t>(bytes, 1), cudaHostAllocDefault), "cudaHostAlloc");
  return p;
}

void free_pinned(void* p) {
  if (p) cudaFreeHost(p);
}

Status copy_to_host(void* host, const void* gpu, std::size_t bytes) {
  RDMALAB_CUDA_TRY(cudaMemcpy(host, gpu, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy device to host");
  return Status::ok();
}

Status copy_to_gpu(void* gpu, const void* host, std::size_t bytes) {
  RDMALAB_CUDA_TRY(cudaMemcpy(gpu, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy host to device");
  return Status::ok();
}

}  // namespace rdmalab::gpu
