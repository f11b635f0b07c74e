// Timelines (`rdmalab run --trace FILE`, docs/trace.md): Chrome trace events, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open. One track per rank, on the rank's own clock
// (Runtime::now: simulated time on the model, wall time since the rank started on real runs):
// its workload's phases (a message size, a training step), compute, a collective's plans, each
// chunk's transfer from post to completion, the reduction of each arrived chunk, perftest's posts
// and completions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rdmalab/runtime.h"

namespace rdmalab {

// Where a rank's spans also go (the GPU layer's NVTX ranges for Nsight Systems; gpus.h sets it
// where CUDA is present). Called on the rank's thread, in nesting order.
struct TraceMirror {
  virtual ~TraceMirror() = default;
  virtual void push(const char* name) = 0;
  virtual void pop() = 0;
};
// The process's mirror, or null. Set before a run starts; a run on a wall clock hands it to its
// ranks (RankTrace::set_mirror). A model's ranks share threads, where nesting would not hold.
void set_trace_mirror(TraceMirror* m);
TraceMirror* trace_mirror();

class RankTrace {
 public:
  // At most `max_events` events are kept (a long perftest posts millions of requests); past that
  // the trace says how many were dropped.
  RankTrace(int rank, Runtime& rt, std::size_t max_events = 200000) : rank_(rank), rt_(rt), max_(max_events) {}
  double now() { return rt_.now(); }
  // A span from t0 (seconds, now()'s clock) to now: category, name and up to a few numeric args.
  void span(const char* cat, const std::string& name, double t0, const std::string& args_json = {});
  void span(const char* cat, const std::string& name, double t0, double t1, const std::string& args_json = {});
  void instant(const char* cat, const std::string& name, const std::string& args_json = {});
  int rank() const { return rank_; }
  void set_mirror(TraceMirror* m) { mirror_ = m; }
  TraceMirror* mirror() const { return mirror_; }
  std::uint64_t dropped() const { return dropped_; }
  // The events as JSON objects separated by commas (no brackets), with the rank's track name.
  std::string events_json() const;

 private:
  bool room();
  int rank_;
  Runtime& rt_;
  TraceMirror* mirror_ = nullptr;
  std::size_t max_;
  std::size_t count_ = 0;
  std::uint64_t dropped_ = 0;
  std::string out_;
};

// A span for a scope: from construction to destruction (nothing when `trace` is null). Also
// pushed to the trace's mirror, if it has one.
class TraceScope {
 public:
  TraceScope(RankTrace* trace, const char* cat, std::string name);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  RankTrace* t_;
  const char* cat_;
  std::string name_;
  double t0_ = 0;
};

// A Runtime that forwards to another and records its compute() calls as spans.
class TracingRuntime final : public Runtime {
 public:
  TracingRuntime(Runtime& inner, RankTrace& trace) : inner_(inner), trace_(trace) {}
  double now() override { return inner_.now(); }
  Status compute(double seconds) override;
  Status wait_for_byte(const volatile std::uint8_t* addr, std::uint8_t value, double timeout_s) override {
    return inner_.wait_for_byte(addr, value, timeout_s);
  }
  std::optional<CpuTimes> cpu_times() override { return inner_.cpu_times(); }

 private:
  Runtime& inner_;
  RankTrace& trace_;
};

// The whole file from every rank's events_json() (in rank order): the process and track names,
// and the run's facts in otherData.
std::string trace_file_json(const std::vector<std::string>& rank_events, const std::string& backend, const std::string& scenario,
                            const std::string& clock);

}  // namespace rdmalab
