// The verbs backend's parts shared by its files (not part of the backend's interface):
// translation between libibverbs and the contract, the opened device, and the device object.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "rdmalab/backend.h"
#include "rdmalab/status.h"
#include "rdmalab/transport.h"

namespace rdmalab::verbs::detail {

// Translation, in one place (verbs_device.cc).
WcStatus from_ibv(ibv_wc_status s);
WcOpcode from_ibv(ibv_wc_opcode op);
Status from_errno(int err, const std::string& what);
unsigned int to_ibv_access(std::uint32_t a);
ibv_mtu to_ibv_mtu(std::uint32_t bytes);
std::uint32_t mtu_bytes(ibv_mtu m);
std::string gid_text(const ibv_gid& g);

// The devices present (ibv_get_device_list), freed with the list.
struct DeviceList {
  ibv_device** list = nullptr;
  int n = 0;
  int err = 0;
  DeviceList() {
    errno = 0;
    list = ibv_get_device_list(&n);
    err = list ? 0 : errno;
  }
  ~DeviceList() {
    if (list) ibv_free_device_list(list);
  }
  DeviceList(const DeviceList&) = delete;
  DeviceList& operator=(const DeviceList&) = delete;
};

std::string no_devices_reason(int err);

struct Selected {
  ibv_context* ctx = nullptr;
  std::string name;
  std::uint8_t port = 1;
  ibv_port_attr port_attr{};
  int gid_index = -1;
  ibv_gid gid{};
  bool roce = false;
  std::uint32_t max_rd_atom = 16, max_init_rd_atom = 16;  // reads/atomics in flight per QP, as responder and as requester
};

std::uint8_t rd_atomic_depth(std::uint32_t asked, std::uint32_t device_max);
Result<Selected> open_device(const std::string& want, int want_port, int want_gid);
Capabilities probe_caps(const Selected& s);
const char* link_layer_name(std::uint8_t ll);
double port_gbps(const ibv_port_attr& pa);
std::string gid_netdev(ibv_context* ctx, std::uint8_t port, int index);

enum class WaitMode { poll, event };

// The contract's Device over an opened one (verbs_objects.cc); it closes the context.
// `boot` is for peer-health checks while waiting; `gpu_path` is workload.gpu_path.
std::unique_ptr<Device> make_device(Selected s, int rank, WaitMode mode, Capabilities caps, Bootstrap* boot, std::string gpu_path);

// A recorded run (--record): every send-queue request this process's ranks posted that completes
// successfully adds its payload bytes here (writes, sends, reads, atomics; a signaled completion
// retires the unsignaled requests before it, as verbs does). Null: nothing counted.
void set_completion_meter(std::atomic<std::uint64_t>* bytes);

// GPU memory registered in workload.gpu_path's order (verbs_gpu.cc); `taken` says how.
Result<ibv_mr*> register_gpu(ibv_pd* pd, void* addr, std::uint64_t length, int access, const std::string& path, std::string& taken);

}  // namespace rdmalab::verbs::detail
