// Time, compute phases and memory waits, supplied by the backend.
//
// Workloads never read a clock, sleep or spawn threads themselves: on SimGrid the clock is the
// simulated clock and a compute phase takes simulated time; on hardware it is the steady clock.
#pragma once

#include <cstdint>
#include <optional>

#include "rdmalab/cpu_time.h"
#include "rdmalab/status.h"

namespace rdmalab {

class Runtime {
 public:
  virtual ~Runtime() = default;
  // Seconds since the start of the run, in this backend's time base. Monotonic.
  virtual double now() = 0;
  // Occupies this rank for `seconds` (a model of GPU/CPU work). Blocking. Errors: the run was
  // aborted meanwhile (another rank failed: SimGrid's bootstrap error with that rank's reason).
  virtual Status compute(double seconds) = 0;
  // Blocks until the byte at `addr` (inside a region this rank registered) equals `value`, as
  // when a peer's RDMA write lands; this is how perftest's write latency test detects arrival.
  // Hardware backends poll the memory; simulated ones wake the rank when a write lands.
  // Errors: timeout.
  virtual Status wait_for_byte(const volatile std::uint8_t* addr, std::uint8_t value, double timeout_s) = 0;
  // CPU time so far on the rank's thread and the machine (cpu_time.h), where the rank runs on
  // real CPUs; nullopt on a simulated clock, whose CPUs are not the ones running it.
  virtual std::optional<CpuTimes> cpu_times() { return std::nullopt; }
};

}  // namespace rdmalab
