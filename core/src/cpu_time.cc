#include "rdmalab/cpu_time.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

namespace rdmalab {

CpuTimes read_cpu_times() {
  CpuTimes t;
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) == 0)
    t.thread_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  // The first line of /proc/stat: "cpu  user nice system idle iowait irq softirq steal ...", in
  // clock ticks summed over the CPUs.
  if (std::FILE* f = std::fopen("/proc/stat", "r")) {
    unsigned long long v[8] = {};
    if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
      const long hz = sysconf(_SC_CLK_TCK);
      const unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
      if (hz > 0) t.machine_s = static_cast<double>(busy) / static_cast<double>(hz);
    }
    std::fclose(f);
  }
  return t;
}

}  // namespace rdmalab
