// Helpers shared by workloads: waiting for completions with clear errors, pair wiring.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "rdmalab/backend.h"
#include "rdmalab/scenario.h"
#include "rdmalab/transport.h"

namespace rdmalab::workloads {

// Blocks until at least one completion; every completion with a non-success status becomes an
// Errc::transport error naming the rank, the request and the verbs status text.
Result<std::size_t> wait_ok(RankEnv& env, CompletionQueue& cq, std::span<Completion> out, double timeout_s,
                            const char* what);

// "rank 1: rdma_write wr_id 0x5 on QP 3 completed with 'remote access error' (rem_access_err)"
std::string describe_failed_completion(int rank, const Completion& wc);

// The scenario's workload.memory as a MemoryKind.
MemoryKind memory_kind_of(const Scenario& sc);

// Whether buffers hold no bytes: workload.payload: phantom, or workload.memory: phantom (host
// memory without bytes). Payload checks are off then.
bool phantom_payload(const Scenario& sc);

// workload.memory can be used here: a provider is installed (else why not) and the backend can
// register that kind. Errors name the key.
Status check_memory(const Scenario& sc, const Capabilities& caps);

// Seed of the payload pattern a rank sends on one of its QPs.
inline std::uint64_t stream_seed(std::uint64_t scenario_seed, int rank, int qp) {
  return scenario_seed * 1000003ull + static_cast<std::uint64_t>(rank) * 131ull + static_cast<std::uint64_t>(qp) + 1;
}

}  // namespace rdmalab::workloads
