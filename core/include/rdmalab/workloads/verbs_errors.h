// verbs_error: one verbs error, provoked on purpose between two ranks, and reported as verbs
// reports it: the completion status (IBV_WC_...), the QP's state afterwards, what became of the
// request posted after it, and why. For teaching (docs/labs/), and as a check that every backend
// gives the same status for the same mistake (docs/transport-contract.md).
#pragma once

#include "rdmalab/workload.h"

namespace rdmalab::workloads {

void register_verbs_errors(WorkloadRegistry& registry);

}  // namespace rdmalab::workloads
