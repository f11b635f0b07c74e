// The kernel TCP baseline for the RDMA bandwidth and latency tests: tcp_bw and tcp_lat, between
// the same pairs of ranks with the same columns (docs/workloads.md, "Kernel TCP baseline").
#pragma once

#include "rdmalab/workload.h"

namespace rdmalab::workloads {

void register_tcp(WorkloadRegistry& registry);

}  // namespace rdmalab::workloads
