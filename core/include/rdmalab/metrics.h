// The metrics stream: what a run reports while it goes (progress, throughput samples), for the
// CLI's progress line, the --record file and the dashboard. Implementations must be thread-safe:
// backends call them from rank threads.
#pragma once

#include <cstdint>
#include <string>

#include "rdmalab/results.h"

namespace rdmalab {

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  // A result row is final (called by rank 0).
  virtual void on_row(const ResultRow& row) { (void)row; }
  // Free-form progress, e.g. "size 64KiB: 1000/1000 iterations".
  virtual void on_progress(double now_s, const std::string& what) { (void)now_s; (void)what; }
};

}  // namespace rdmalab
