// The fabric's keys of the SimGrid model and its node presets (the schema's part of platform.h).
#include "simgrid/platform.h"
#include "simgrid/topologies/topology.h"

#include <fmt/format.h>

namespace rdmalab::sim {

void add_fabric_keys(Schema& s) {
  using T = ValueType;
  // The topologies this model builds, from its table of kinds, and their shapes' node counts
  // checked against fabric.nodes whichever backend runs.
  s.add_allowed("fabric.topology", topology_names());
  s.add_check(check_topology_nodes);
  add_topology_keys(s);  // each kind's own keys
  s.add_choice(
      "fabric.model", "calibrated",
      "alpha_beta: link bandwidth and latency only (checkable against formulas); calibrated: adds NIC and packet effects",
      {"calibrated", "alpha_beta"});
  s.add_choice("fabric.link_layer", "infiniband", "packet headers of the calibrated model", {"infiniband", "roce"});
  s.add("fabric.mtu", T::size, "4KiB", "payload bytes per packet in the calibrated model", 256, 65536);
  s.add("fabric.nic.message_rate", T::number, "200e6", "messages per second one NIC can issue (calibrated model)", 1e3, 1e10);
  // ConnectX-4 to -7 report max_qp_rd_atom = max_qp_init_rd_atom = 16 (ibv_devinfo -v); Soft-RoCE
  // (rxe) reports 128. perftest asks for the device's most (-o), as rdmalab's workloads do.
  s.add("fabric.nic.max_rd_atomic", T::integer, "16",
        "RDMA reads and atomics one QP keeps in flight, as requester and as responder (the device's max_qp_rd_atom; a QP's own "
        "max_rd_atomic may ask for fewer); calibrated model", 1, 255);
  s.add("fabric.nic.latency", T::time, "150ns",
        "NIC processing per NIC a message crosses, sender and receiver each (calibrated model)", 0, 1e-3);
  // The host's timing noise, from ib_write_lat, ib_send_lat and ib_read_lat on ConnectX-6 HDR100
  // through one Quantum leaf, 2 B, 20,000 iterations (xl-tian/calibrate, iblat2.intra.19810191.out):
  // t_typical 0.04-0.05 us above t_min, 99 % 0.10-0.22 us above, 99.9 % 1.7-3.2 us above, t_max
  // 2.6-6.2 us above. A CPU posting and polling sees its doorbell and the completion's arrival vary
  // (an exponential of mean 60 ns per request: median 42 ns above the floor, 99 % at 0.28 us), and
  // its core is taken now and then by the kernel's timer tick (CONFIG_HZ=1000: a thousand a
  // second) for up to about 6.5 us (the read's t_max): a request due then waits. A stall of that
  // rate and length covers 0.1 % of requests by 3.2 us or more, the read's 99.9 %.
  s.add("fabric.nic.jitter", T::time, "60ns",
        "the host's timing noise: mean of the exponential delay at each request's start (calibrated model; requests a CPU posts, "
        "not the collectives' steps, whose NCCL latencies hold it); 0ns: none", 0, 1e-3);
  s.add("fabric.host.stall_rate", T::number, "1000",
        "stalls of a rank's posting core a second (the kernel's timer tick, CONFIG_HZ): a request due during one waits it out "
        "(calibrated model; not the collectives' steps); 0: none", 0, 1e7);
  s.add("fabric.host.stall", T::time, "6.5us", "the longest such stall (each is uniform up to it; calibrated model)", 0, 1);
  s.add("fabric.calibration", T::string, "",
        "a calibration file: bandwidth and latency factors by message size for the calibrated model (rdmalab calibrate makes one; "
        "a relative path is read next to the scenario)");
  s.add("fabric.switch.latency", T::time, "0ns",
        "latency of each switch a message crosses, paid once per switch (fabric.link.latency is then the cable's); star, fat_tree "
        "and rail_optimized", 0, 1e-3);
  s.add("record.interval", T::time, "10us",
        "time between two samples of a --record file: simulated on the model; wall-clock on verbs, where unset means 100ms and "
        "the least is 1ms (docs/record.md)", 1e-9, 3600);

  s.add("fabric.degrade.links", T::string_list, "",
        "what-if: the links whose bandwidth falls to fabric.degrade.factor, as node names from the record (node-3, leaf-1, "
        "spine-0, rail-2): every link at that node, or NAME:up / NAME:down for its links to the tier above or below");
  s.add("fabric.degrade.factor", T::number, "",
        "what-if: the fraction of their bandwidth the degraded links keep, at most 1; 0: down from the start (a route that crosses "
        "one fails after the QP's retries, IBV_WC_RETRY_EXC_ERR: routes are fixed, as before the subnet manager moves them)", 0, 1);
  s.add("fabric.degrade.at", T::time, "0s", "what-if: the simulated time at which the links degrade (0: from the start)", 0, 1e6);
  s.add_choice("fabric.placement.policy", "packed",
               "which fabric node runs each of the job's nodes: packed (in order), spread (round-robin over a fat tree's leaves), "
               "random (a shuffle by fabric.placement.seed), list (fabric.placement.nodes)",
               {"packed", "spread", "random", "list"});
  s.add("fabric.placement.seed", T::integer, "1", "random placement: the shuffle's seed (the same seed, the same placement)", 0, 9e18);
  s.add("fabric.placement.nodes", T::int_list, "",
        "list placement: the fabric node (0-based) of each of the job's nodes, in rank order; every node once", 0, 1e9);

  // Inside a node.
  s.add_choice("fabric.node.model", "none",
               "none: a node is one endpoint; pcie: GPUs and NICs under PCIe switches, CPU sockets, host memory (data paths of GPU memory)",
               {"none", "pcie"});
  s.add("fabric.node.nics", T::integer, "1", "NICs per node (pcie node model)", 1, 64);
  s.add("fabric.node.pcie_switches", T::integer, "1", "PCIe switches per node", 1, 64);
  s.add("fabric.node.sockets", T::integer, "1", "CPU sockets per node", 1, 8);
  s.add("fabric.node.gpu_switch", T::int_list, "", "the PCIe switch of each GPU (default: spread in order)", 0, 63);
  s.add("fabric.node.nic_switch", T::int_list, "", "the PCIe switch of each NIC (default: spread in order)", 0, 63);
  s.add("fabric.node.switch_socket", T::int_list, "", "the CPU socket of each PCIe switch (default: spread in order)", 0, 7);
  s.add("fabric.node.gpu_nic", T::int_list, "", "the NIC each GPU's rank uses (default: the first NIC under its switch, else spread)", 0, 63);
  s.add("fabric.node.pcie.bandwidth", T::bandwidth, "63GB/s",
        "each PCIe link (device to switch, switch to CPU root), each direction: Gen5 x16 = 32 GT/s × 16 × 128/130 / 8", 1, 1e15);
  s.add("fabric.node.pcie.latency", T::time, "150ns", "each PCIe link (a switch hop)", 0, 1e-3);
  s.add("fabric.node.socket.bandwidth", T::bandwidth, "60GB/s", "the link between two CPU sockets (UPI, xGMI), each direction", 1, 1e15);
  s.add("fabric.node.socket.latency", T::time, "300ns", "the link between two CPU sockets", 0, 1e-3);
  s.add("fabric.node.memory.bandwidth", T::bandwidth, "300GB/s", "host memory of one socket, each direction", 1, 1e15);
  s.add("fabric.node.nvlink.bandwidth", T::bandwidth, "",
        "GPU to GPU inside a node through NVSwitch, each direction per GPU; unset: GPUs talk over PCIe", 1, 1e15);
  s.add("fabric.node.nvlink.efficiency", T::number, "1",
        "share of fabric.node.nvlink.bandwidth that NCCL's kernels reach on NVLink (protocol and flow control); presets take "
        "NCCL's own per-link figure over the link's rate", 0.01, 1);
  s.add("fabric.node.gpu.memory_bandwidth", T::bandwidth, "",
        "a GPU's memory bandwidth: collectives' copies and reductions in GPU memory take bytes touched / this (a reduction touches 3 "
        "bytes per byte: two read, one written); unset: they take no simulated time", 1, 1e15);
  s.add("fabric.node.nvswitch.reduce", T::boolean, "false",
        "the NVSwitch reduces (NVLink SHARP, NCCL's NVLS: H100/H200-class NVSwitch); needs fabric.node.nvlink.bandwidth", 0, 1);
  s.add("fabric.node.nvswitch.reduce_bandwidth", T::bandwidth, "",
        "bytes of input the NVSwitch reduces per second, shared by the node's reductions; unset: not limiting (the GPUs' NVLink is)", 1,
        1e15);
  s.add("fabric.node.staging_overhead", T::time, "4us",
        "per message and side on the staged path: launching and waiting for a cudaMemcpyAsync", 0, 1);
  s.add("fabric.node.gpudirect", T::boolean, "true",
        "whether the NIC can reach GPU memory (dmabuf or nvidia_peermem); false: GPU memory is always staged", 0, 1);
  s.add_choice("fabric.preset", "none", "named hardware whose numbers fill the fabric keys a scenario leaves unset (docs/backends/simgrid.md)",
               {"none", "cx6-hdr-a100", "cx7-ndr-h100", "cx7-ndr-h200"});
  add_presets(s);
}

void add_presets(Schema& s) {
  // Numbers from vendor briefs and specifications; each line says which. Everything not listed
  // keeps its default. Both nodes have the DGX layout: 8 GPUs and 8 NICs, two of each under each
  // of 4 PCIe switches, two switches per CPU socket.
  const std::vector<std::pair<std::string, std::string>> dgx = {
      {"fabric.gpus_per_node", "8"},         {"fabric.node.model", "pcie"},
      {"fabric.node.nics", "8"},             {"fabric.node.pcie_switches", "4"},
      {"fabric.node.sockets", "2"},          {"fabric.node.gpu_switch", "[0, 0, 1, 1, 2, 2, 3, 3]"},
      {"fabric.node.nic_switch", "[0, 0, 1, 1, 2, 2, 3, 3]"}, {"fabric.node.switch_socket", "[0, 0, 1, 1]"}};
  auto with_dgx = [&](Schema::Preset p) {
    p.values.insert(p.values.end(), dgx.begin(), dgx.end());
    return p;
  };
  s.add_preset(with_dgx({"fabric.preset", "cx6-hdr-a100",
                "DGX A100-class node: 8 A100, 8 ConnectX-6 HDR 200 Gb/s, 4 PCIe Gen4 switches each with 2 GPUs and 2 NICs, "
                "2 AMD EPYC 7742 sockets",
                {{"fabric.link.bandwidth", "200Gbps"},     // ConnectX-6 HDR InfiniBand, 200 Gb/s per port (product brief)
                 {"fabric.link.latency", "15ns"},          // a cable of about 3 m at about 5 ns/m
                 {"fabric.switch.latency", "130ns"},       // Quantum HDR switch (QM8700): 130 ns port to port (product brief)
                 {"fabric.link_layer", "infiniband"},
                 {"fabric.mtu", "4KiB"},                   // InfiniBand MTU
                 {"fabric.nic.message_rate", "215e6"},     // ConnectX-6: up to 215 million messages/s (product brief)
                 {"fabric.nic.latency", "300ns"},          // ConnectX-6: sub-600 ns end to end, half per NIC
                 {"fabric.node.pcie.bandwidth", "31.5GB/s"},  // PCIe Gen4 x16: 16 GT/s × 16 × 128/130 / 8
                 {"fabric.node.socket.bandwidth", "50GB/s"},  // EPYC 7002 inter-socket xGMI, order of magnitude
                 {"fabric.node.memory.bandwidth", "204.8GB/s"},  // 8 channels DDR4-3200 per socket
                 {"fabric.node.nvlink.bandwidth", "300GB/s"},  // A100 NVLink 3: 12 links × 25 GB/s each direction
                 // NCCL's model of one NVLink 3 link: 20.0 GB/s of data (src/graph/topo.h, SM80_NVLINK_BW) of 25.
                 {"fabric.node.nvlink.efficiency", "0.8"},
                 {"fabric.node.gpu.memory_bandwidth", "2039GB/s"},  // A100 SXM4 80GB HBM2e (datasheet)
                 {"fabric.gpu.model", "a100"},  // and so the generation: ampere
                 {"fabric.cpu.vendor", "amd"}}}));
  s.add_preset(with_dgx({"fabric.preset", "cx7-ndr-h100",
                "DGX H100-class node: 8 H100, 8 ConnectX-7 NDR 400 Gb/s, 4 PCIe Gen5 switches each with 2 GPUs and 2 NICs, "
                "2 Intel Xeon 8480C sockets",
                {{"fabric.link.bandwidth", "400Gbps"},     // ConnectX-7 NDR InfiniBand, 400 Gb/s per port (product brief)
                 {"fabric.link.latency", "15ns"},          // a cable of about 3 m at about 5 ns/m
                 {"fabric.switch.latency", "130ns"},       // Quantum-2 NDR switch (QM9700): port to port, as HDR's (product brief)
                 {"fabric.link_layer", "infiniband"},
                 {"fabric.mtu", "4KiB"},
                 {"fabric.nic.message_rate", "330e6"},     // ConnectX-7: 330-370 million messages/s (product brief)
                 {"fabric.nic.latency", "300ns"},
                 {"fabric.node.pcie.bandwidth", "63GB/s"},    // PCIe Gen5 x16: 32 GT/s × 16 × 128/130 / 8
                 {"fabric.node.socket.bandwidth", "60GB/s"},  // 4 UPI 2.0 links at 16 GT/s, order of magnitude
                 {"fabric.node.memory.bandwidth", "307.2GB/s"},  // 8 channels DDR5-4800 per socket
                 {"fabric.node.nvlink.bandwidth", "450GB/s"},  // H100 NVLink 4: 18 links × 25 GB/s each direction
                 // NCCL's model of one NVLink 4 link: 20.6 GB/s of data (src/graph/topo.h, SM90_NVLINK_BW) of 25.
                 {"fabric.node.nvlink.efficiency", "0.824"},
                 {"fabric.node.gpu.memory_bandwidth", "3.35TB/s"},  // H100 SXM5 HBM3 (datasheet)
                 {"fabric.gpu.model", "h100"},  // and so the generation: hopper
                 {"fabric.cpu.vendor", "intel"},
                 // Third-generation NVSwitch: NVLink SHARP in-network reductions (DGX H100 brief).
                 {"fabric.node.nvswitch.reduce", "true"}}}));
  // DGX H200: the DGX H100 system with H200 GPUs (HBM3e); everything else as above.
  Schema::Preset h200 = s.presets().back();
  h200.name = "cx7-ndr-h200";
  h200.source = "DGX H200-class node: the cx7-ndr-h100 node with 8 H200 (HBM3e 4.8 TB/s)";
  for (auto& [key, value] : h200.values) {
    if (key == "fabric.node.gpu.memory_bandwidth") value = "4.8TB/s";  // H200 SXM HBM3e (datasheet)
    if (key == "fabric.gpu.model") value = "h200";
  }
  s.add_preset(std::move(h200));
}

}  // namespace rdmalab::sim
