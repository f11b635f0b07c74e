// rdmalab doctor: the checks GPUDirect RDMA needs on this machine (docs/gpu.md).
#pragma once

#include <string>
#include <vector>

namespace rdmalab {

int cmd_doctor(bool json);

// The driver's version from the first line of /proc/driver/nvidia/version ("NVRM version: NVIDIA
// UNIX Open Kernel Module for x86_64  580.95.05  Release Build …" gives "580.95.05"); the line
// itself when it holds no version number. For tests.
std::string nvidia_driver_version(const std::string& proc_line);

// How two PCIe devices sit relative to each other (nvidia-smi topo's words: PIX, PXB, PHB,
// NODE, SYS) from their sysfs paths below /sys/devices and their NUMA nodes. For tests.
std::string pci_affinity(const std::vector<std::string>& a, const std::vector<std::string>& b, const std::string& numa_a,
                         const std::string& numa_b);

// libvma (MLNX_OFED's user-space socket library, which tcp_bw and tcp_lat run through when it is
// preloaded): where it is (the first libvma.so* in `dirs`; empty: not installed), whether
// LD_PRELOAD names it, and its settings (the VMA_* variables of `env`, "NAME=value"). For tests.
struct VmaFacts {
  std::string path;
  bool preloaded = false;
  std::vector<std::string> settings;
};
VmaFacts vma_facts(const std::vector<std::string>& dirs, const std::vector<std::string>& env);

}  // namespace rdmalab
