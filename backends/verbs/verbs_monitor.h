// Monitoring a verbs run that this process forked (`rdmalab run --record FILE`, docs/record.md):
// a thread of the parent samples, every record interval of wall time, each rank's payload bytes
// from its completions (set_completion_meter), each rank process's CPU time (/proc/PID/stat),
// the device port's counters (sysfs: counters/ and hw_counters/), and every GPU through NVML.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rdmalab/record.h"
#include "rdmalab/status.h"

namespace rdmalab {
class Nvml;
}

namespace rdmalab::verbs::detail {

struct MonitoredPort {
  std::string device;  // rxe0, mlx5_0
  int port = 1;
  double rate_Bps = 0;  // the port's active rate
};

class RunMonitor {
 public:
  // Opens the record at `path` (created by the caller), writes its header, topology and monitor
  // lines, and starts sampling. `tx_bytes[r]` is rank r's completion meter (shared memory the
  // ranks add to); `pids[r]` its process. Errors: io.
  static Result<std::unique_ptr<RunMonitor>> start(const std::string& path, const std::string& scenario, const MonitoredPort& port,
                                                   std::vector<pid_t> pids, const std::atomic<std::uint64_t>* tx_bytes, double interval_s);
  ~RunMonitor();
  // Takes a last sample, stops the thread and closes the file (the run's rows and end follow,
  // written by the caller). Errors: io.
  Status stop();

 private:
  RunMonitor() = default;
  void loop();
  void take_sample();
  std::vector<std::pair<std::string, std::uint64_t>> read_counters() const;

  RecordWriter out_;
  MonitoredPort port_;
  std::vector<std::string> counter_dirs_;
  std::vector<pid_t> pids_;
  const std::atomic<std::uint64_t>* tx_ = nullptr;
  double interval_s_ = 0.1;
  std::unique_ptr<Nvml> nvml_;
  // The previous sample's readings.
  double last_t_ = 0;
  std::vector<std::uint64_t> last_tx_, last_cpu_ticks_;
  std::vector<std::pair<std::string, std::uint64_t>> last_counters_;
  std::chrono::steady_clock::time_point t0_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace rdmalab::verbs::detail
