// Workloads: written once against the transport contract, run unchanged on every backend.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "rdmalab/backend.h"
#include "rdmalab/results.h"
#include "rdmalab/scenario.h"
#include "rdmalab/status.h"

namespace rdmalab {

enum class WorkloadKind { bandwidth, latency, collective, training, error };

struct WorkloadInfo {
  std::string name;
  std::string description;
  WorkloadKind kind = WorkloadKind::bandwidth;
  // Before the run: the scenario's workload keys make sense together, and the backend can run
  // it (capabilities). Errors name the key.
  std::function<Status(const Scenario&, const Capabilities&, int ranks)> check;
  // One rank's part. Rows the rank reports are appended to `rows` (rank 0 reports the table).
  std::function<Status(RankEnv&, const Scenario&, std::vector<ResultRow>& rows)> run;
  // Bytes of payload buffers one rank allocates at least, in workload.memory (a lower bound, so
  // a run refused for memory could never have fitted). Empty: not estimated.
  std::function<std::uint64_t(const Scenario&)> min_buffer_bytes;
  // The workload.* and training.* keys it reads (workload.type aside). A scenario that sets one it
  // does not read is refused before the run (check_run): a key that would not act.
  std::vector<std::string> reads;
};

class WorkloadRegistry {
 public:
  void add(WorkloadInfo info);
  const WorkloadInfo* find(const std::string& name) const;
  const std::vector<WorkloadInfo>& all() const { return workloads_; }
  std::vector<std::string> names() const;

 private:
  std::vector<WorkloadInfo> workloads_;
};

// Every workload core provides (perftest set now; collectives and training later).
const WorkloadRegistry& builtin_workloads();

}  // namespace rdmalab
