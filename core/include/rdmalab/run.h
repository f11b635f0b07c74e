// Running a scenario: the glue between a parsed scenario, a backend and a workload.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "rdmalab/backend.h"
#include "rdmalab/results.h"
#include "rdmalab/scenario.h"
#include "rdmalab/workload.h"

namespace rdmalab {

// The full schema for scenarios: core keys, plus every registered backend's keys, with the
// allowed backend and workload names filled in.
Schema full_schema(const BackendRegistry& backends);

// How many ranks a scenario runs (fabric.nodes × fabric.gpus_per_node).
int scenario_ranks(const Scenario& sc);

// The node shape a scenario describes to a backend that does not model nodes itself (loopback,
// verbs): fabric.gpus_per_node ranks per node when it divides `ranks`, one NIC each. A null
// scenario: one rank per node.
NodeShape scenario_node_shape(const Scenario* sc, int ranks);
// Fills the facts NCCL's tuning model reads that the scenario states (fabric.link.bandwidth as
// the NIC's, fabric.gpu.generation, fabric.cpu.vendor); the node's insides are the backend's.
void fill_tuning_facts(const Scenario& sc, NodeShape& shape);

// The fabric's keys that must agree whichever backend runs: the named GPU and its generation, and
// the schema's checks (Schema::add_check), such as the node count a topology's shape implies (a
// fat tree's down counts) against fabric.nodes, since loopback and verbs run fabric.nodes ranks.
Status check_fabric_shape(const Scenario& sc);

// Keys the user wrote in another backend's section (loopback.*, verbs.*: sections that are not
// core's), which do not act on `backend`.
std::vector<std::string> other_backend_keys(const Scenario& sc, const std::string& backend);
// The workload and training keys the scenario sets that its workload does not read
// (WorkloadInfo::reads).
std::vector<std::string> unread_workload_keys(const Scenario& sc);

// Whether the payload buffers of `ranks_here` ranks (those this machine hosts) fit in the host
// memory available here (MemAvailable, and the cgroup's limit): buffers with real bytes in host
// memory, and modelled GPU memory on a model backend, which holds its bytes in host memory too.
// Refused (invalid_argument, naming the size key) with the numbers and the fixes when they do not.
Status check_host_memory(const Scenario& sc, const Backend& backend, int ranks_here);

// Everything checked before a run: backend usable, backend's own keys, workload keys and caps.
// Errors: invalid_argument (scenario), not_found / not_supported (backend).
Status check_run(const Scenario& sc, Backend& backend);

struct RunOutcome {
  Status status;                  // ok, or why the run failed
  std::vector<ResultRow> rows;    // rank 0's rows (in hosts_all_ranks backends)
  std::uint64_t errors = 0;       // total payload/completion errors across rows
};

struct RunOptions {
  MetricsSink* metrics = nullptr;
  std::string record_path;  // --record FILE: topology, samples, then rows (docs/record.md)
  // Where the record grows until the run ends (a live view follows it there). Empty: a unique
  // name next to record_path (files.h). Either way it is created exclusively and takes
  // record_path's name only once the run's outcome is written.
  std::string record_temp_path;
  // --trace FILE: every rank's timeline as Chrome trace events (trace.h, docs/trace.md), written
  // next to it and renamed once complete. With one rank per process (--bootstrap, mpirun) the
  // ranks send theirs to rank 0, whose process writes the file.
  std::string trace_path;
  bool progress = false;    // progress on stderr for long runs
  Placement placement;      // this process's rank in a multi-process run (verbs)
  // Set to true from another thread to stop the run (backends whose can_cancel() is true);
  // the outcome is then Errc::cancelled and a record in progress ends with status "cancelled".
  const std::atomic<bool>* cancel = nullptr;
  // Sends host memory through the staged GPU path's bounce buffers too (staging.h), so the path
  // and the workloads' sync calls are tested on every backend where there is no GPU. Tests only.
  bool stage_host_memory = false;
  // The caller ran check_run on this scenario and backend already (the CLI does, to refuse a bad
  // scenario before it prints anything): the run does not check it a second time.
  bool checked = false;
};

// Runs the workload on the backend. Blocking.
RunOutcome run_scenario(const Scenario& sc, Backend& backend, const RunOptions& options = {});

const char* version() noexcept;

}  // namespace rdmalab
