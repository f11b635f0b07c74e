// rdmalab doctor: what GPUDirect RDMA needs, checked on this machine — the GPUs and whether they
// support GPUDirect and dmabuf export, the kernel modules (nvidia_peermem, the open GPU modules),
// the RDMA devices, and how each GPU sits relative to each NIC on PCIe (as nvidia-smi topo -m) —
// and libvma, through which the TCP baseline can run.
#include "doctor.h"

#include "commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends.h"
#ifdef RDMALAB_HAVE_CUDA
#include "rdmalab/gpu.h"
#endif

namespace rdmalab {
namespace fs = std::filesystem;

namespace {

std::string read_first_line(const fs::path& p) {
  std::ifstream f(p);
  std::string line;
  std::getline(f, line);
  return line;
}

// /sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0 -> its parts after /sys/devices.
std::vector<std::string> pci_chain(const fs::path& device_link) {
  std::error_code ec;
  fs::path real = fs::canonical(device_link, ec);
  std::vector<std::string> out;
  if (ec) return out;
  bool in = false;
  for (const auto& part : real) {
    const std::string s = part.string();
    if (in) out.push_back(s);
    if (s == "devices") in = true;
  }
  return out;
}

}  // namespace

// PIX: under the same PCIe switch (one bridge between them); PXB: several bridges, same root
// port tree; PHB: through the CPU's root complex; NODE: different root complexes, one NUMA
// node; SYS: across the link between CPU sockets. The same words nvidia-smi topo -m uses.
std::string pci_affinity(const std::vector<std::string>& a, const std::vector<std::string>& b, const std::string& numa_a,
                         const std::string& numa_b) {
  if (a.size() < 2 || b.size() < 2) return "unknown";
  if (a[0] != b[0]) return numa_a == numa_b && !numa_a.empty() && numa_a != "-1" ? "NODE" : "SYS";
  std::size_t common = 0;
  while (common < a.size() - 1 && common < b.size() - 1 && a[common] == b[common]) ++common;
  if (common <= 1) return "PHB";  // they share only the host bridge
  // Bridges between them below the shared one.
  const std::size_t hops = (a.size() - 1 - common) + (b.size() - 1 - common);
  return hops <= 2 ? "PIX" : "PXB";
}

const char* affinity_meaning(const std::string& a) {
  if (a == "PIX") return "same PCIe switch: GPUDirect at full speed";
  if (a == "PXB") return "several PCIe bridges, no CPU in between: GPUDirect works well";
  if (a == "PHB") return "through the CPU's root complex: GPUDirect works, often slower than staging on some CPUs";
  if (a == "NODE") return "different root complexes on one socket: GPUDirect is slow here";
  if (a == "SYS") return "across the CPU socket link: GPUDirect is slowest here; prefer a NIC near the GPU";
  return "could not be determined from sysfs";
}

std::string nvidia_driver_version(const std::string& proc_line) {
  // The first word of digits and dots with at least one dot.
  std::size_t i = 0;
  while (i < proc_line.size()) {
    while (i < proc_line.size() && (proc_line[i] == ' ' || proc_line[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < proc_line.size() && proc_line[j] != ' ' && proc_line[j] != '\t') ++j;
    const std::string w = proc_line.substr(i, j - i);
    if (!w.empty() && w.find('.') != std::string::npos && w.front() != '.' &&
        w.find_first_not_of("0123456789.") == std::string::npos)
      return w;
    i = j;
  }
  return proc_line;
}

VmaFacts vma_facts(const std::vector<std::string>& dirs, const std::vector<std::string>& env) {
  VmaFacts v;
  std::error_code ec;
  for (const auto& d : dirs) {
    if (!v.path.empty()) break;
    if (!fs::is_directory(d, ec)) continue;
    for (const auto& e : fs::directory_iterator(d, ec))
      if (e.path().filename().string().rfind("libvma.so", 0) == 0) {
        v.path = e.path().string();
        break;
      }
  }
  for (const auto& kv : env) {
    if (kv.rfind("LD_PRELOAD=", 0) == 0 && kv.find("libvma") != std::string::npos) v.preloaded = true;
    if (kv.rfind("VMA_", 0) == 0) v.settings.push_back(kv);
  }
  return v;
}

int cmd_doctor(bool json) {
  nlohmann::json out;
  std::vector<std::string> lines;
  auto say = [&](const std::string& s) { lines.push_back(s); };

  // GPUs.
  struct Gpu {
    std::string name, bus;
  };
  std::vector<Gpu> gpus;
#ifdef RDMALAB_HAVE_CUDA
  gpu::GpuInfo info = gpu::install();
  if (!info.usable) {
    say(fmt::format("GPU: none usable ({})", info.why));
    out["gpus"] = nlohmann::json::array();
    out["gpu_problem"] = info.why;
  } else {
    out["gpus"] = nlohmann::json::array();
    for (const auto& f : gpu::gpu_facts()) {
      say(fmt::format("GPU {}: {} at {} | GPUDirect RDMA: {} | dmabuf export: {}", f.index, f.name, f.pci_bus_id,
                      f.gpudirect_rdma ? "supported" : "not supported", f.dmabuf < 0 ? "unknown" : f.dmabuf ? "supported" : "not supported"));
      out["gpus"].push_back({{"index", f.index}, {"name", f.name}, {"pci", f.pci_bus_id}, {"gpudirect_rdma", f.gpudirect_rdma},
                             {"dmabuf", f.dmabuf < 0 ? nlohmann::json(nullptr) : nlohmann::json(f.dmabuf == 1)}});
      gpus.push_back({f.name, f.pci_bus_id});
    }
  }
#else
  say("GPU: this build has no CUDA support (nvcc was not found when it was configured)");
  out["gpus"] = nlohmann::json::array();
  out["gpu_problem"] = "no CUDA support in this build";
#endif

  // Kernel side of GPUDirect.
  const std::string version = read_first_line("/proc/driver/nvidia/version");
  const bool open_modules = version.find("Open Kernel Module") != std::string::npos;
  const bool peermem = fs::exists("/sys/module/nvidia_peermem");
  say(version.empty() ? "NVIDIA kernel driver: not loaded"
                      : fmt::format("NVIDIA kernel driver: {} ({} kernel modules)", nvidia_driver_version(version),
                                    open_modules ? "open" : "proprietary"));
  say(fmt::format("open GPU kernel modules (needed for dmabuf): {}", version.empty() ? "no driver" : open_modules ? "yes" : "no (proprietary modules)"));
  say(fmt::format("nvidia_peermem (needed for peermem registration): {}", peermem ? "loaded" : "not loaded (modprobe nvidia_peermem)"));
  out["nvidia_driver"] = version;
  out["open_kernel_modules"] = open_modules;
  out["nvidia_peermem"] = peermem;

  // RDMA devices, from sysfs (the verbs backend lists their ports with rdmalab devices).
  struct Nic {
    std::string name;
    std::vector<std::string> chain;
    std::string numa;
  };
  std::vector<Nic> nics;
  std::error_code ec;
  if (fs::exists("/sys/class/infiniband", ec))
    for (const auto& e : fs::directory_iterator("/sys/class/infiniband", ec)) {
      Nic n;
      n.name = e.path().filename().string();
      n.chain = pci_chain(e.path() / "device");
      n.numa = read_first_line(e.path() / "device" / "numa_node");
      nics.push_back(n);
    }
  out["rdma_devices"] = nlohmann::json::array();
  if (nics.empty()) say("RDMA devices: none (load a NIC driver, or create Soft-RoCE: rdma link add rxe0 type rxe netdev eth0)");
  for (const auto& n : nics) {
    say(fmt::format("RDMA device {}: {}", n.name, n.chain.empty() ? "not on PCIe (a software device such as rxe)" : n.chain.back()));
    out["rdma_devices"].push_back({{"name", n.name}, {"pci", n.chain.empty() ? "" : n.chain.back()}});
  }

  // GPU-NIC affinity.
  out["affinity"] = nlohmann::json::array();
  for (std::size_t g = 0; g < gpus.size(); ++g)
    for (const auto& n : nics) {
      const auto gchain = pci_chain(fs::path("/sys/bus/pci/devices") / gpus[g].bus);
      const std::string gnuma = read_first_line(fs::path("/sys/bus/pci/devices") / gpus[g].bus / "numa_node");
      const std::string a = n.chain.empty() ? "none" : pci_affinity(gchain, n.chain, gnuma, n.numa);
      say(fmt::format("GPU {} <-> {}: {} ({})", g, n.name, a, a == "none" ? "a software device: data is staged through host memory" : affinity_meaning(a)));
      out["affinity"].push_back({{"gpu", g}, {"nic", n.name}, {"path", a}});
    }

  // What that means for the three ways GPU memory reaches a NIC.
  const bool any_gpu = !gpus.empty(), any_nic = !nics.empty();
  std::string dmabuf_why = !any_gpu ? "no GPU" : !any_nic ? "no RDMA device" : version.empty() ? "no NVIDIA driver" : !open_modules ? "needs the open GPU kernel modules" : "";
  std::string peermem_why = !any_gpu ? "no GPU" : !any_nic ? "no RDMA device" : !peermem ? "nvidia_peermem is not loaded" : "";
  say(fmt::format("path dmabuf: {}", dmabuf_why.empty() ? "possible" : "not possible: " + dmabuf_why));
  say(fmt::format("path peermem: {}", peermem_why.empty() ? "possible" : "not possible: " + peermem_why));
  say(fmt::format("path staged (host bounce buffers): {}", any_gpu && any_nic ? "possible" : !any_gpu ? "not needed: no GPU" : "not possible: no RDMA device"));
  out["paths"] = {{"dmabuf", dmabuf_why.empty() ? "possible" : dmabuf_why},
                  {"peermem", peermem_why.empty() ? "possible" : peermem_why},
                  {"staged", any_gpu && any_nic ? "possible" : !any_gpu ? "no GPU" : "no RDMA device"}};

  // libvma: TCP through the NIC from user space (tcp_bw and tcp_lat run through it when preloaded).
  // From /proc/self/environ, not `environ`: naming that symbol copies it into the executable, where
  // the MPI library (loaded with RTLD_DEEPBIND) would not see it (cli/sweep.cc says more).
  std::vector<std::string> env;
  {
    std::ifstream in("/proc/self/environ", std::ios::binary);
    for (std::string kv; std::getline(in, kv, '\0');) env.push_back(kv);
  }
  const VmaFacts vma = vma_facts({"/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/local/lib"}, env);
  if (vma.path.empty())
    say("libvma (socket acceleration, from MLNX_OFED): not installed (Debian does not ship it); tcp_bw and tcp_lat measure the kernel's TCP");
  else
    say(fmt::format("libvma: {} | {} | settings: {}", vma.path,
                    vma.preloaded ? "preloaded (LD_PRELOAD): tcp_bw and tcp_lat run through it" : "not preloaded (LD_PRELOAD=libvma.so to use it)",
                    vma.settings.empty() ? std::string("VMA's defaults") : fmt::format("{}", fmt::join(vma.settings, " "))));
  out["libvma"] = {{"path", vma.path}, {"preloaded", vma.preloaded}, {"settings", vma.settings}};

  if (json)
    fmt::print("{}\n", out.dump(2));
  else
    for (const auto& l : lines) fmt::print("{}\n", l);
  return 0;
}

Command add_doctor(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto* doctor = app.add_subcommand("doctor", "check what GPUDirect RDMA needs here: GPUs, dmabuf, nvidia_peermem, RDMA devices, GPU-NIC PCIe affinity");
  doctor->add_flag("--json", *json, "print JSON");
  return {doctor, [json] { return cmd_doctor(*json); }};
}

}  // namespace rdmalab
