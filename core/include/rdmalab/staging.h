// The staged GPU data path: GPU memory the NIC cannot reach itself (no dmabuf, no nvidia_peermem)
// goes through host bounce buffers, as NCCL does when GPUDirect RDMA is not available.
//
// It is a layer over any backend's Device, written against the contract only:
// - a staged region is a host copy of the memory (the provider's allocate_bounce: pinned for GPU
//   memory) registered with the backend; its addr() is the copy's, so what a peer is given to
//   write to or read from is the copy;
// - post_send and post_recv point the SGEs that name the memory at the copy, and post_send first
//   copies what a write or a send carries from the memory into the copy — the requests a
//   workload keeps in flight make the pipeline: one chunk is copied while the ones before it are
//   on the wire;
// - what the NIC writes into the copy (receives, read and atomic results, remote writes) reaches
//   the memory when the workload calls MemoryRegion::sync_from_nic on it; what a remote reads
//   from it, after sync_to_nic (transport.h says where workloads call them).
// Everything else (completions, errors, keys, QP states) is the backend's own: an SGE outside
// both the memory and its copy is passed on unchanged and fails as it would without the layer.
#pragma once

#include <memory>
#include <string>

#include "rdmalab/memory.h"
#include "rdmalab/transport.h"

namespace rdmalab {

struct StagingOptions {
  MemoryKind kind = MemoryKind::cuda;  // the memory kind that goes through bounce buffers
  // true (workload.gpu_path auto): the backend's own registration first (GPUDirect RDMA); only
  // when it refuses (not_supported) is the memory staged, and the run says why. false (staged):
  // always staged.
  bool fallback = true;
};

// A Device that stages `options.kind` memory over `inner` (which must outlive it).
std::unique_ptr<Device> make_staging_device(Device& inner, StagingOptions options);

}  // namespace rdmalab
