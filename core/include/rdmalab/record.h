// Recorded runs (`rdmalab run --record FILE`): the topology of the modelled cluster and samples
// of link utilisation and per-rank throughput over time, then the result rows. JSON Lines, one
// object per line, documented in docs/record.md. The dashboard replays these files.
#pragma once

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

struct Sample {
  double t = 0;                                 // seconds (simulated on simgrid)
  std::vector<std::pair<int, double>> link_util;  // (link index, used / capacity), links in use only
  std::vector<double> rank_tx_Bps;              // bytes/s each rank sent over the last interval
};

struct Record {
  std::string scenario, backend;
  int ranks = 0;
  double interval_s = 0;
  Topology topology;
  std::vector<Sample> samples;
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
  void sample(const Sample& s);
  void rows(const std::vector<ResultRow>& rows);
  void end(const std::string& status);
  Status close();

 private:
  std::ofstream out_;
  std::string path_;
};

// Reads a whole record. Errors: io, invalid_argument (with the line number).
Result<Record> read_record(const std::string& path);

}  // namespace rdmalab
