#include "rdmalab/trace.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "rdmalab/run.h"

namespace rdmalab {

namespace {
TraceMirror* g_mirror = nullptr;

// Chrome's trace format counts microseconds.
double us(double seconds) { return seconds * 1e6; }
std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }
}  // namespace

void set_trace_mirror(TraceMirror* m) { g_mirror = m; }
TraceMirror* trace_mirror() { return g_mirror; }

bool RankTrace::room() {
  if (count_ < max_) {
    ++count_;
    if (!out_.empty()) out_ += ',';
    return true;
  }
  ++dropped_;
  return false;
}

void RankTrace::span(const char* cat, const std::string& name, double t0, const std::string& args_json) { span(cat, name, t0, now(), args_json); }

void RankTrace::span(const char* cat, const std::string& name, double t0, double t1, const std::string& args_json) {
  if (!room()) return;
  out_ += fmt::format(R"({{"ph":"X","pid":0,"tid":{},"cat":"{}","name":{},"ts":{:.3f},"dur":{:.3f}{}}})", rank_, cat, quoted(name), us(t0),
                      us(std::max(0.0, t1 - t0)), args_json.empty() ? std::string() : ",\"args\":" + args_json);
}

void RankTrace::instant(const char* cat, const std::string& name, const std::string& args_json) {
  if (!room()) return;
  out_ += fmt::format(R"({{"ph":"i","s":"t","pid":0,"tid":{},"cat":"{}","name":{},"ts":{:.3f}{}}})", rank_, cat, quoted(name), us(now()),
                      args_json.empty() ? std::string() : ",\"args\":" + args_json);
}

std::string RankTrace::events_json() const {
  std::string head = fmt::format(R"({{"ph":"M","pid":0,"tid":{},"name":"thread_name","args":{{"name":"rank {}"}}}},)"
                                 R"({{"ph":"M","pid":0,"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
                                 rank_, rank_, rank_, rank_);
  if (dropped_)
    head += fmt::format(R"(,{{"ph":"M","pid":0,"tid":{},"name":"rdmalab_dropped","args":{{"events":{},"kept":{}}}}})", rank_, dropped_, count_);
  return out_.empty() ? head : head + "," + out_;
}

TraceScope::TraceScope(RankTrace* trace, const char* cat, std::string name) : t_(trace), cat_(cat), name_(std::move(name)) {
  if (!t_) return;
  t0_ = t_->now();
  if (TraceMirror* m = t_->mirror()) m->push(name_.c_str());
}

TraceScope::~TraceScope() {
  if (!t_) return;
  t_->span(cat_, name_, t0_);
  if (TraceMirror* m = t_->mirror()) m->pop();
}

Status TracingRuntime::compute(double seconds) {
  TraceScope scope(&trace_, "compute", "compute");
  return inner_.compute(seconds);
}

std::string trace_file_json(const std::vector<std::string>& rank_events, const std::string& backend, const std::string& scenario,
                            const std::string& clock) {
  std::string out = R"({"traceEvents":[)";
  out += fmt::format(R"({{"ph":"M","pid":0,"name":"process_name","args":{{"name":{}}}}})", quoted("rdmalab " + backend + ": " + scenario));
  for (const auto& e : rank_events)
    if (!e.empty()) out += "," + e;
  out += fmt::format(R"(],"displayTimeUnit":"ns","otherData":{{"producer":{},"backend":{},"scenario":{},"clock":{}}}}})",
                     quoted("rdmalab " + std::string(version())), quoted(backend), quoted(scenario), quoted(clock));
  out += '\n';
  return out;
}

}  // namespace rdmalab
