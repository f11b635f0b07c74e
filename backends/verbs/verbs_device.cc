// The verbs backend: translation between libibverbs and the contract (every errno and
// ibv_wc_status is translated here, in one place), and finding and probing a device.
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

// ------------------------------------------------------------------------------------------
// Translation, in one place.

WcStatus from_ibv(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_SUCCESS: return WcStatus::success;
    case IBV_WC_LOC_LEN_ERR: return WcStatus::loc_len_err;
    case IBV_WC_LOC_QP_OP_ERR: return WcStatus::loc_qp_op_err;
    case IBV_WC_LOC_PROT_ERR: return WcStatus::loc_prot_err;
    case IBV_WC_WR_FLUSH_ERR: return WcStatus::wr_flush_err;
    case IBV_WC_REM_INV_REQ_ERR: return WcStatus::rem_inv_req_err;
    case IBV_WC_REM_ACCESS_ERR: return WcStatus::rem_access_err;
    case IBV_WC_REM_OP_ERR: return WcStatus::rem_op_err;
    case IBV_WC_RETRY_EXC_ERR: return WcStatus::retry_exc_err;
    case IBV_WC_RNR_RETRY_EXC_ERR: return WcStatus::rnr_retry_exc_err;
    default: return WcStatus::general_err;
  }
}

WcOpcode from_ibv(ibv_wc_opcode op) {
  switch (op) {
    case IBV_WC_SEND: return WcOpcode::send;
    case IBV_WC_RDMA_WRITE: return WcOpcode::rdma_write;
    case IBV_WC_RDMA_READ: return WcOpcode::rdma_read;
    case IBV_WC_COMP_SWAP: return WcOpcode::comp_swap;
    case IBV_WC_FETCH_ADD: return WcOpcode::fetch_add;
    case IBV_WC_RECV_RDMA_WITH_IMM: return WcOpcode::recv_rdma_with_imm;
    default: return WcOpcode::recv;
  }
}

Status from_errno(int err, const std::string& what) {
  Errc code = Errc::internal;
  switch (err) {
    case EINVAL: code = Errc::invalid_argument; break;
    case ENOMEM: code = Errc::no_memory; break;
    case EPERM:
    case EACCES: code = Errc::permission; break;
    case ENOSYS:
    case EOPNOTSUPP: code = Errc::not_supported; break;
    case ENODEV:
    case ENOENT: code = Errc::not_found; break;
    case ETIMEDOUT: code = Errc::timeout; break;
    default: code = Errc::transport; break;
  }
  return Status(code, fmt::format("{}: {} (errno {})", what, std::strerror(err), err));
}

unsigned int to_ibv_access(std::uint32_t a) {
  unsigned int f = 0;
  if (a & kAccessLocalWrite) f |= IBV_ACCESS_LOCAL_WRITE;
  if (a & kAccessRemoteWrite) f |= IBV_ACCESS_REMOTE_WRITE;
  if (a & kAccessRemoteRead) f |= IBV_ACCESS_REMOTE_READ;
  if (a & kAccessRemoteAtomic) f |= IBV_ACCESS_REMOTE_ATOMIC;
  return f;
}

ibv_mtu to_ibv_mtu(std::uint32_t bytes) {
  if (bytes >= 4096) return IBV_MTU_4096;
  if (bytes >= 2048) return IBV_MTU_2048;
  if (bytes >= 1024) return IBV_MTU_1024;
  if (bytes >= 512) return IBV_MTU_512;
  return IBV_MTU_256;
}

std::uint32_t mtu_bytes(ibv_mtu m) { return 128u << static_cast<int>(m); }

std::string gid_text(const ibv_gid& g) {
  std::string s;
  for (int i = 0; i < 16; i += 2) s += fmt::format("{}{:02x}{:02x}", i ? ":" : "", g.raw[i], g.raw[i + 1]);
  return s;
}

// ------------------------------------------------------------------------------------------
// Devices

std::string no_devices_reason(int err) {
  if (err == ENOSYS)
    return "this kernel has no RDMA support (ibv_get_device_list: Function not implemented); scripts/rxe-vm.sh runs the verbs "
           "backend on Soft-RoCE in a VM";
  if (err) return fmt::format("ibv_get_device_list failed: {}", std::strerror(err));
  return "no RDMA devices (load a driver, or create a Soft-RoCE device: rdma link add rxe0 type rxe netdev eth0)";
}

// Reads and atomics a QP keeps in flight: the count asked for (0: the device's most, as perftest
// does; rxe allows 128, ConnectX 16), within what the device and the 8-bit verbs field allow.
std::uint8_t rd_atomic_depth(std::uint32_t asked, std::uint32_t device_max) {
  const std::uint32_t most = std::clamp<std::uint32_t>(device_max, 1, 255);
  return static_cast<std::uint8_t>(asked == 0 ? most : std::min(asked, most));
}

// Opens the named device (or the first with an ACTIVE port), picks the port and the GID the way
// perftest does when -x is not given: a RoCE v2 GID on Ethernet ports.
Result<Selected> open_device(const std::string& want, int want_port, int want_gid) {
  DeviceList dl;
  if (!dl.list || dl.n == 0) return Status(Errc::not_found, no_devices_reason(dl.err));
  std::string present;
  for (int i = 0; i < dl.n; ++i) present += (i ? ", " : "") + std::string(ibv_get_device_name(dl.list[i]));
  std::string why_not;
  for (int i = 0; i < dl.n; ++i) {
    std::string name = ibv_get_device_name(dl.list[i]);
    if (!want.empty() && name != want) continue;
    ibv_context* ctx = ibv_open_device(dl.list[i]);
    if (!ctx) {
      why_not += fmt::format("{}: cannot open ({}); ", name, std::strerror(errno));
      continue;
    }
    ibv_device_attr da{};
    ibv_query_device(ctx, &da);
    for (int p = 1; p <= da.phys_port_cnt; ++p) {
      if (want_port > 0 && p != want_port) continue;
      ibv_port_attr pa{};
      if (ibv_query_port(ctx, static_cast<std::uint8_t>(p), &pa) != 0) continue;
      if (pa.state != IBV_PORT_ACTIVE) {
        why_not += fmt::format("{} port {} is {}; ", name, p, ibv_port_state_str(pa.state));
        continue;
      }
      Selected s;
      s.ctx = ctx;
      s.name = name;
      s.port = static_cast<std::uint8_t>(p);
      s.port_attr = pa;
      s.roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
      s.max_rd_atom = static_cast<std::uint32_t>(std::max(da.max_qp_rd_atom, 1));
      s.max_init_rd_atom = static_cast<std::uint32_t>(std::max(da.max_qp_init_rd_atom, 1));
      if (want_gid >= 0) {
        s.gid_index = want_gid;
      } else if (s.roce) {
        // Prefer a RoCE v2 GID of an IPv4 address, then any RoCE v2, then index 0.
        int v2 = -1, v2_ipv4 = -1;
        for (int g = 0; g < pa.gid_tbl_len; ++g) {
          ibv_gid_entry e{};
          if (ibv_query_gid_ex(ctx, s.port, static_cast<std::uint32_t>(g), &e, 0) != 0) continue;
          if (e.gid_type != IBV_GID_TYPE_ROCE_V2) continue;
          if (v2 < 0) v2 = g;
          const auto* raw = e.gid.raw;
          bool ipv4 = std::all_of(raw, raw + 10, [](std::uint8_t b) { return b == 0; }) && raw[10] == 0xff && raw[11] == 0xff;
          if (ipv4 && v2_ipv4 < 0) v2_ipv4 = g;
        }
        s.gid_index = v2_ipv4 >= 0 ? v2_ipv4 : v2 >= 0 ? v2 : 0;
      }
      if (s.gid_index >= 0 && ibv_query_gid(ctx, s.port, s.gid_index, &s.gid) != 0) {
        ibv_close_device(ctx);
        return Status(Errc::not_found, fmt::format("{} port {}: GID index {} cannot be read", name, p, s.gid_index));
      }
      return s;
    }
    ibv_close_device(ctx);
  }
  if (!want.empty() && present.find(want) == std::string::npos)
    return Status(Errc::not_found, fmt::format("no RDMA device named '{}' (present: {})", want, present));
  return Status(Errc::not_found, fmt::format("no ACTIVE port found ({}present: {})", why_not, present));
}

// Capabilities from the device itself; the inline limit by asking for QPs until one is made.

Capabilities probe_caps(const Selected& s) {
  Capabilities c;
  c.port_gbps = port_gbps(s.port_attr);
  ibv_device_attr da{};
  ibv_query_device(s.ctx, &da);
  c.rdma_read = true;
  c.rdma_write_imm = true;
  c.atomics = da.atomic_cap != IBV_ATOMIC_NONE;
  c.max_sge = static_cast<std::uint32_t>(std::min(da.max_sge, 16));
  c.max_qp_wr = static_cast<std::uint32_t>(da.max_qp_wr);
  c.max_cq_entries = static_cast<std::uint32_t>(da.max_cqe);
  c.max_msg_size = s.port_attr.max_msg_sz;
  // Linux 6.1's rxe leaves requests posted to a QP in ERR without a completion (seen under the
  // harness); hardware and later kernels flush them.
  c.flushes_posts_in_err = s.name.rfind("rxe", 0) != 0;
  // GPU memory when this process has a GPU provider (gpu::install found a GPU); whether the NIC
  // can reach it is found at registration (dmabuf, then peermem), with the reasons when not.
  if (memory_provider(MemoryKind::cuda)) c.memory_kinds.add(MemoryKind::cuda);
  ibv_pd* pd = ibv_alloc_pd(s.ctx);
  ibv_cq* cq = pd ? ibv_create_cq(s.ctx, 4, nullptr, nullptr, 0) : nullptr;
  for (std::uint32_t inl : {1024u, 512u, 256u, 240u, 128u, 64u, 0u}) {
    if (!cq) break;
    ibv_qp_init_attr ia{};
    ia.send_cq = cq;
    ia.recv_cq = cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = 1;
    ia.cap.max_recv_wr = 1;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    ia.cap.max_inline_data = inl;
    if (ibv_qp* qp = ibv_create_qp(pd, &ia)) {
      c.max_inline = inl;
      ibv_destroy_qp(qp);
      break;
    }
  }
  if (cq) ibv_destroy_cq(cq);
  if (pd) ibv_dealloc_pd(pd);
  return c;
}


const char* link_layer_name(std::uint8_t ll) {
  switch (ll) {
    case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
    case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
    default: return "unknown";
  }
}

// Active speed in Gb/s from the port's width and speed codes (IBTA encodings).
double port_gbps(const ibv_port_attr& pa) {
  int lanes = pa.active_width == 1 ? 1 : pa.active_width == 2 ? 4 : pa.active_width == 4 ? 8 : pa.active_width == 8 ? 12 : pa.active_width == 16 ? 2 : 0;
  double per_lane = 0;
  switch (pa.active_speed) {
    case 1: per_lane = 2.5; break;
    case 2: per_lane = 5; break;
    case 4:
    case 8: per_lane = 10; break;
    case 16: per_lane = 14; break;
    case 32: per_lane = 25; break;
    case 64: per_lane = 50; break;
    case 128: per_lane = 100; break;
    default: break;
  }
  return lanes * per_lane;
}

std::string gid_netdev(ibv_context* ctx, std::uint8_t port, int index) {
  char path[256];
  std::snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/%d", ibv_get_device_name(ctx->device), port, index);
  FILE* f = std::fopen(path, "r");
  if (!f) return "";
  char buf[64] = {0};
  if (!std::fgets(buf, sizeof buf, f)) buf[0] = 0;
  std::fclose(f);
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}


}  // namespace rdmalab::verbs::detail
