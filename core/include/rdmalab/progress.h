// How much of a run's work is done, for progress lines (`rdmalab run`, docs/results.md): rank 0's
// workload declares the bytes it will send in the whole run and counts those it has posted. One
// meter per process: a backend whose ranks share a process (SimGrid's simulation, loopback's
// threads) reads rank 0's; with a process per rank (verbs), each process counts its own.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace rdmalab {

class WorkMeter {
 public:
  void reset() {
    total_ = 0;
    done_ = 0;
    steps_total_ = 0;
    steps_done_ = 0;
    step_bytes_ = 0;
    step_start_ = 0;
  }
  void plan(std::uint64_t bytes) { total_ += bytes; }
  void sent(std::uint64_t bytes) { done_ += bytes; }
  // A workload of steps whose bytes are not known ahead (a training step: buckets, micro-batches):
  // it declares the steps and ends each; within a step the fraction moves with the bytes sent, as
  // many as the first step sent.
  void plan_steps(std::uint64_t steps) { steps_total_ = steps; }
  void step_done() {
    const std::uint64_t d = done_;
    if (steps_done_ == 0) step_bytes_ = d;
    step_start_ = d;
    ++steps_done_;
  }
  // The fraction done (0 to 1), or -1 when no workload declared its work.
  double fraction() const {
    if (const std::uint64_t n = steps_total_) {
      const std::uint64_t per = step_bytes_, in = done_ - step_start_;
      const double within = per ? std::min(1.0, static_cast<double>(in) / static_cast<double>(per)) : 0.0;
      return std::min(1.0, (static_cast<double>(steps_done_) + within) / static_cast<double>(n));
    }
    const std::uint64_t t = total_, d = done_;
    if (t == 0) return -1;
    return d >= t ? 1.0 : static_cast<double>(d) / static_cast<double>(t);
  }

 private:
  std::atomic<std::uint64_t> total_{0}, done_{0};
  std::atomic<std::uint64_t> steps_total_{0}, steps_done_{0}, step_bytes_{0}, step_start_{0};
};

WorkMeter& work_meter();

}  // namespace rdmalab
