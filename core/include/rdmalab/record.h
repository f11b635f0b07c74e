// Recorded runs (`rdmalab run --record FILE`): the topology of the modelled cluster and samples
// of link utilisation and per-rank throughput over time, then the result rows. JSON Lines, one
// object per line, documented in docs/record.md. The dashboard replays these files.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "rdmalab/results.h"
#include "rdmalab/status.h"

namespace rdmalab {

struct TopoNode {
  std::string name;
  std::string kind;  // host | switch
  int rank = -1;     // for hosts
  int tier = 0;      // 0 for hosts; switches: 1 for those next to hosts (leaves, routers), then up
  int group = -1;    // a dragonfly router's group; -1 when the topology has none
  // Hosts under a node model (fabric.node.model: pcie): the node's GPUs (= its ranks, from
  // `rank` on), NICs, PCIe switches and CPU sockets; 0 when the node has no model.
  int gpus = 0, nics = 0, pcie_switches = 0, sockets = 0;
  // Where each sits: the PCIe switch of each GPU and NIC, the socket of each switch, the NIC each
  // GPU's rank uses (empty without a node model).
  std::vector<int> gpu_switch, nic_switch, switch_socket, gpu_nic;
};

struct TopoLink {
  std::string name;
  double bandwidth_Bps = 0;
  double latency_s = 0;
  std::vector<int> ends;  // node indices; empty when the backend cannot tell
};

struct Topology {
  std::vector<TopoNode> nodes;
  std::vector<TopoLink> links;
};

// One GPU's state in a sample of a real run (NVML).
struct GpuSample {
  int index = 0;                 // NVML's device index
  double util = 0;               // fraction of the interval a kernel ran (nvmlDeviceGetUtilizationRates)
  std::uint64_t mem_used = 0;    // bytes of device memory in use
  std::uint64_t mem_total = 0;
};

struct Sample {
  double t = 0;                                 // seconds (simulated on simgrid)
  std::vector<std::pair<int, double>> link_util;  // (link index, used / capacity), links in use only
  std::vector<double> rank_tx_Bps;              // bytes/s each rank sent over the last interval
  std::vector<int> flows;                       // routes (Record::routes) with a transfer in flight now
  // Real runs only (verbs; empty on the model):
  std::vector<double> rank_cpu;                 // each rank process's CPU time over the interval, in cores
  std::vector<std::pair<std::string, double>> port;  // the device port's counters that moved: per second
  std::vector<GpuSample> gpu;                   // every GPU NVML sees
};

// What a real run's samples watch (a "monitor" line): the device port whose counters are read,
// and the GPUs, or why not.
struct Monitor {
  std::string port;      // "rxe0:1"; empty when the run reads no port counters
  std::string counters;  // where they are read (sysfs folders)
  std::string gpu;       // "NVML: N GPUs", or why GPUs are not sampled
};

// The links a transfer from one rank to another crosses (topology link indices, in order).
struct Route {
  int src = 0, dst = 0;
  std::vector<int> links;
};

struct Record {
  std::string scenario, backend;
  int ranks = 0;
  double interval_s = 0;
  Topology topology;
  std::vector<Route> routes;  // numbered in order of appearance; samples name them
  std::vector<Sample> samples;
  Monitor monitor;            // real runs; empty on the model
  std::vector<ResultRow> rows;
  std::string status;  // ok | failed | "" when the run did not finish
};

// Writes a record incrementally. Not thread-safe.
class RecordWriter {
 public:
  // Errors: io.
  Status open(const std::string& path, bool append);
  void header(const std::string& scenario, const std::string& backend, int ranks, double interval_s);
  void topology(const Topology& t);
  // A route gets the next number (0, 1, …); write it before the first sample that names it.
  void route(const Route& r);
  void monitor(const Monitor& m);
  void sample(const Sample& s);
  void rows(const std::vector<ResultRow>& rows);
  void end(const std::string& status);
  Status close();

 private:
  std::ofstream out_;
  std::string path_;
  std::chrono::steady_clock::time_point last_flush_{};
};

// Reads a whole record. Errors: io, invalid_argument (with the line number).
Result<Record> read_record(const std::string& path);

// A finished run as a file holds it: a results file (--json) or a record (--record).
struct RunFile {
  std::string path;
  RunInfo info;           // from a results file; a record gives its backend only
  bool has_info = false;  // a results file: status, error and resolved keys are known
  std::vector<ResultRow> rows;
  // A key's value as the run resolved it (results files); empty when not known.
  std::string resolved(const std::string& key) const;
};

// A finished run, from either a record (`--record`) or a results file (`--json`,
// docs/results.md). Errors: io, invalid_argument saying which it expected.
Result<RunFile> read_run(const std::string& path);
// Its result rows only.
Result<std::vector<ResultRow>> read_rows(const std::string& path);

// Follows a record while it is being written (the dashboard's live view): each poll() reads the
// complete lines appended since the previous poll and adds them to record(). A file that does
// not exist yet is not an error (the run has not started writing). Not thread-safe.
class RecordFollower {
 public:
  explicit RecordFollower(std::string path) : path_(std::move(path)) {}
  // Returns the number of lines read. Errors: invalid_argument for a malformed line (with its
  // number); the lines before it stay in record().
  Result<int> poll();
  const Record& record() const { return rec_; }
  bool has_header() const { return header_; }
  void set_path(std::string path) { path_ = std::move(path); }

 private:
  std::string path_;
  std::uint64_t offset_ = 0;
  std::string partial_;
  int lineno_ = 0;
  bool header_ = false;
  Record rec_;
};

}  // namespace rdmalab
