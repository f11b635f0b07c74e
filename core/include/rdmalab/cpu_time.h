// CPU time as the operating system counts it, for the CPU cost of a run on real CPUs (perftest's
// --cpu_util, reported as seconds per GB moved): the calling thread's user + system time
// (getrusage RUSAGE_THREAD: a rank's thread, where the workload posts, polls and checks), and the
// machine's busy time summed over all its CPUs (/proc/stat: everything but idle and iowait; the
// kernel's interrupts and softirqs included, which is where Soft-RoCE does its work).
#pragma once

namespace rdmalab {

struct CpuTimes {
  double thread_s = 0;    // this thread's user + system seconds
  double machine_s = -1;  // the machine's busy seconds over all its CPUs; -1: not known (no /proc/stat)
};

CpuTimes read_cpu_times();

}  // namespace rdmalab
