// rdmalab doctor's PCIe affinity classification, on sysfs paths of real machine layouts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "doctor.h"

namespace rdmalab {
namespace {

std::vector<std::string> path(std::initializer_list<const char*> parts) { return {parts.begin(), parts.end()}; }

TEST(PciAffinity, ClassifiesAsNvidiaSmiTopoDoes) {
  // DGX-like: GPU and NIC behind one PCIe switch (switch upstream port, two downstream ports).
  auto gpu = path({"pci0000:17", "0000:17:01.0", "0000:18:00.0", "0000:19:00.0", "0000:1a:00.0"});
  auto nic_same_switch = path({"pci0000:17", "0000:17:01.0", "0000:18:00.0", "0000:19:04.0", "0000:1c:00.0"});
  EXPECT_EQ(pci_affinity(gpu, nic_same_switch, "0", "0"), "PIX");
  // Same root port, behind different switches below it.
  auto nic_other_switch = path({"pci0000:17", "0000:17:01.0", "0000:18:00.0", "0000:19:08.0", "0000:20:00.0", "0000:21:00.0", "0000:22:00.0"});
  EXPECT_EQ(pci_affinity(gpu, nic_other_switch, "0", "0"), "PXB");
  // Same host bridge, different root ports: through the CPU.
  auto nic_other_port = path({"pci0000:17", "0000:17:03.0", "0000:30:00.0"});
  EXPECT_EQ(pci_affinity(gpu, nic_other_port, "0", "0"), "PHB");
  // Another root complex on the same socket, then on the other socket.
  auto nic_other_root = path({"pci0000:4a", "0000:4a:01.0", "0000:4b:00.0"});
  EXPECT_EQ(pci_affinity(gpu, nic_other_root, "0", "0"), "NODE");
  EXPECT_EQ(pci_affinity(gpu, nic_other_root, "0", "1"), "SYS");
  EXPECT_EQ(pci_affinity(gpu, nic_other_root, "-1", "-1"), "SYS");  // NUMA unknown: assume the worst
  EXPECT_EQ(pci_affinity({}, nic_other_root, "0", "0"), "unknown");
}

}  // namespace
}  // namespace rdmalab

namespace rdmalab {
namespace {

// The driver line says the version once, not "NVIDIA kernel driver: NVRM version: NVIDIA UNIX …".
TEST(NvidiaDriverVersion, TakesTheVersionFromTheProcLine) {
  EXPECT_EQ(nvidia_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U16)  Tue Sep 23 2025"),
            "580.95.05");
  EXPECT_EQ(nvidia_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024"), "535.183.01");
  EXPECT_EQ(nvidia_driver_version("something else"), "something else");
}

}  // namespace
}  // namespace rdmalab

namespace rdmalab {
namespace {

// libvma found where MLNX_OFED puts it, LD_PRELOAD naming it, and VMA's settings from the
// environment; nothing found in directories without it.
TEST(Vma, FoundPreloadedAndItsSettingsRead) {
  const std::string dir = ::testing::TempDir() + "/vma-lib";
  std::filesystem::create_directories(dir);
  { std::ofstream(dir + "/libvma.so.9.8.40") << "x"; }
  VmaFacts v = vma_facts({"/nonexistent", dir}, {"PATH=/bin", "LD_PRELOAD=/usr/lib/libvma.so", "VMA_SPEC=latency", "VMA_RX_POLL=-1"});
  EXPECT_EQ(v.path, dir + "/libvma.so.9.8.40");
  EXPECT_TRUE(v.preloaded);
  EXPECT_EQ(v.settings, (std::vector<std::string>{"VMA_SPEC=latency", "VMA_RX_POLL=-1"}));
  VmaFacts none = vma_facts({"/nonexistent"}, {"LD_PRELOAD=/usr/lib/libasan.so"});
  EXPECT_TRUE(none.path.empty());
  EXPECT_FALSE(none.preloaded);
  EXPECT_TRUE(none.settings.empty());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rdmalab
