// Result rows: the same columns whichever backend produced them, so a prediction and a
// measurement can be compared line by line. The JSON schema is documented in docs/results.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rdmalab {

struct LatencyStats {
  double min_us = 0, max_us = 0, typical_us = 0, avg_us = 0, stdev_us = 0, p99_us = 0, p999_us = 0;
  // Histogram of the samples: kHistogramBins equal bins from min_us to p999_us (samples above
  // p999_us count in the last bin). Empty when the row came from a file without one.
  static constexpr int kHistogramBins = 40;
  std::vector<std::uint64_t> histogram;
};

// Computes perftest's latency statistics from samples in microseconds (sorted in place).
LatencyStats latency_stats(std::vector<double>& samples_us);

struct ResultRow {
  std::string workload;
  std::string backend;
  std::uint64_t bytes = 0;       // message size
  std::uint64_t iterations = 0;  // per QP, per pair
  int ranks = 0;
  double time_s = 0;             // mean seconds per iteration
  double bw_gbps = 0;            // average, 10^9 bits/s (0 for latency rows)
  double bw_peak_gbps = 0;
  double msg_rate_mpps = 0;      // million messages/s
  std::optional<LatencyStats> lat;
  std::uint64_t errors = 0;      // wrong bytes (payload checks) + failed completions
  std::map<std::string, double> extra;  // workload-specific columns (e.g. algbw for collectives)
  std::map<std::string, std::string> notes;
};

struct RunInfo {
  std::string scenario;   // path
  std::string name;       // scenario name
  std::string backend;
  std::uint64_t seed = 0;
  std::string version;
  std::string status = "ok";  // ok | failed
  std::string error;          // message when failed
  // What produced the run: the --set overrides as given, and every key of the scenario as it
  // resolved (its final text and where it came from: "file:line:column", "--set" or "default").
  std::vector<std::string> overrides;
  struct Key {
    std::string key, value, from;
  };
  std::vector<Key> resolved;
};

// The run's name: the scenario's, marked when --set changed it ("ar-1gib [--set fabric.nodes=32]"),
// so two runs of one file with different overrides never look alike.
std::string run_name(const std::string& scenario_name, const std::vector<std::string>& overrides);

// Rows to and from a compact JSON array (used to carry rows across processes).
std::string rows_to_json(const std::vector<ResultRow>& rows);
std::vector<ResultRow> rows_from_json(const std::string& text);

// Serialises to the documented JSON form.
std::string results_to_json(const RunInfo& info, const std::vector<ResultRow>& rows);

}  // namespace rdmalab
