// The verbs backend's registration of GPU memory: GPUDirect RDMA by dmabuf or nvidia_peermem.
#include "verbs/verbs_internal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <random>
#include <mutex>
#include <thread>

#include "common/child_process.h"
#include "rdmalab/scenario.h"
#include "rdmalab/run.h"
#include "rdmalab/tcp_bootstrap.h"
#include "mpi_bootstrap.h"
#include "rdmalab/units.h"

namespace rdmalab::verbs::detail {

namespace {

// Says once per process how GPU memory reached the NIC, and why the better paths did not.
void report_gpu_path(const std::string& taken, const std::vector<std::string>& refused) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::string why;
    for (const auto& r : refused) why += (why.empty() ? " (" : "; ") + r;
    std::fprintf(stderr, "rdmalab verbs: GPU memory registered by %s%s\n", taken.c_str(), why.empty() ? "" : (why + ")").c_str());
  });
}

bool module_loaded(const char* name) { return ::access(fmt::format("/sys/module/{}", name).c_str(), F_OK) == 0; }

}  // namespace

// GPU memory, in workload.gpu_path's order (auto: dmabuf, then peermem):
//   dmabuf   the provider exports the range as a dmabuf (cuMemGetHandleForAddressRange), and
//            ibv_reg_dmabuf_mr registers it (perftest --use_cuda_dmabuf; open GPU kernel modules);
//   peermem  ibv_reg_mr on the device pointer, which nvidia_peermem resolves (perftest --use_cuda);
// The third path, staged (host bounce buffers), is a layer over every backend (core's staging.h):
// with auto it takes over when this refuses with not_supported.
Result<ibv_mr*> register_gpu(ibv_pd* pd, void* addr, std::uint64_t length, int access, const std::string& path, std::string& taken) {
  if (path != "auto" && path != "dmabuf" && path != "peermem")
    return Status(Errc::internal, fmt::format("workload.gpu_path {} reached the verbs backend (the staging layer registers staged memory)", path));
  std::vector<std::string> refused;
  MemoryProvider* gpu = memory_provider(MemoryKind::cuda);
  if (path == "auto" || path == "dmabuf") {
    if (!gpu) {
      refused.push_back(fmt::format("dmabuf: {}", memory_unavailable_reason(MemoryKind::cuda)));
    } else if (auto r = gpu->export_dmabuf(addr, length); !r) {
      refused.push_back(fmt::format("dmabuf: {}", r.status().message()));
    } else {
      ibv_mr* mr = ibv_reg_dmabuf_mr(pd, r->offset, length, reinterpret_cast<std::uint64_t>(addr), r->fd, access);
      const int err = errno;
      ::close(r->fd);  // the MR holds its own reference
      if (mr) {
        report_gpu_path("dmabuf (GPUDirect RDMA)", refused);
        taken = "GPUDirect RDMA (dmabuf)";
        return mr;
      }
      refused.push_back(fmt::format("dmabuf: ibv_reg_dmabuf_mr failed ({}){}", std::strerror(err),
                                    err == EOPNOTSUPP || err == ENOSYS ? ": this NIC's driver cannot import dmabuf (needs kernel 5.12+ and mlx5)" : ""));
    }
  }
  if (path == "auto" || path == "peermem") {
    ibv_mr* mr = ibv_reg_mr(pd, addr, length, access);
    const int err = errno;
    if (mr) {
      report_gpu_path("peermem (GPUDirect RDMA through nvidia_peermem)", refused);
      taken = "GPUDirect RDMA (peermem)";
      return mr;
    }
    refused.push_back(fmt::format("peermem: ibv_reg_mr on the device pointer failed ({}){}", std::strerror(err),
                                  module_loaded("nvidia_peermem") ? "" : ": nvidia_peermem is not loaded (modprobe nvidia_peermem)"));
  }
  std::string why;
  for (const auto& r : refused) why += (why.empty() ? "" : "; ") + r;
  return Status(Errc::not_supported, fmt::format("GPU memory ({}) cannot be registered with workload.gpu_path {}: {}",
                                                 units::format_size(length), path, why));
}


}  // namespace rdmalab::verbs::detail
