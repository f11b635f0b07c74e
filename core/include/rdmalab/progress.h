// How much of a run's work is done, for progress lines (`rdmalab run`, docs/results.md): rank 0's
// workload declares the bytes it will send in the whole run and counts those it has posted. One
// meter per process: a backend whose ranks share a process (SimGrid's simulation, loopback's
// threads) reads rank 0's; with a process per rank (verbs), each process counts its own.
#pragma once

#include <atomic>
#include <cstdint>

namespace rdmalab {

class WorkMeter {
 public:
  void reset() {
    total_ = 0;
    done_ = 0;
  }
  void plan(std::uint64_t bytes) { total_ += bytes; }
  void sent(std::uint64_t bytes) { done_ += bytes; }
  // The fraction done (0 to 1), or -1 when no workload declared its work.
  double fraction() const {
    const std::uint64_t t = total_, d = done_;
    if (t == 0) return -1;
    return d >= t ? 1.0 : static_cast<double>(d) / static_cast<double>(t);
  }

 private:
  std::atomic<std::uint64_t> total_{0}, done_{0};
};

WorkMeter& work_meter();

}  // namespace rdmalab
