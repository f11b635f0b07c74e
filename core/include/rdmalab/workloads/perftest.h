// The perftest RC microbenchmarks, written once against the transport contract:
// write_bw, read_bw, send_bw, atomic_bw, write_lat, read_lat, send_lat, atomic_lat.
// Parameters and reported columns follow perftest (docs/workloads.md says where they differ).
#pragma once

#include "rdmalab/workload.h"

namespace rdmalab::workloads {

void register_perftest(WorkloadRegistry& registry);

}  // namespace rdmalab::workloads
