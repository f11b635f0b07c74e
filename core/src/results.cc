#include "rdmalab/results.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace rdmalab {

LatencyStats latency_stats(std::vector<double>& s) {
  LatencyStats st;
  if (s.empty()) return st;
  std::sort(s.begin(), s.end());
  auto pct = [&](double p) {
    // perftest's convention: the sample at index ceil(p * n) - 1.
    std::size_t idx = static_cast<std::size_t>(std::ceil(p * static_cast<double>(s.size())));
    idx = idx == 0 ? 0 : idx - 1;
    return s[std::min(idx, s.size() - 1)];
  };
  st.min_us = s.front();
  st.max_us = s.back();
  st.typical_us = s[s.size() / 2];
  double sum = 0;
  for (double v : s) sum += v;
  st.avg_us = sum / static_cast<double>(s.size());
  double var = 0;
  for (double v : s) var += (v - st.avg_us) * (v - st.avg_us);
  st.stdev_us = std::sqrt(var / static_cast<double>(s.size()));
  st.p99_us = pct(0.99);
  st.p999_us = pct(0.999);
  return st;
}

std::string results_to_json(const RunInfo& info, const std::vector<ResultRow>& rows) {
  nlohmann::ordered_json j;
  j["rdmalab_version"] = info.version;
  j["scenario"] = info.scenario;
  j["name"] = info.name;
  j["backend"] = info.backend;
  j["seed"] = info.seed;
  j["status"] = info.status;
  if (!info.error.empty()) j["error"] = info.error;
  auto arr = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    nlohmann::ordered_json o;
    o["workload"] = r.workload;
    o["backend"] = r.backend;
    o["bytes"] = r.bytes;
    o["iterations"] = r.iterations;
    o["ranks"] = r.ranks;
    o["time_s"] = r.time_s;
    o["bw_gbps"] = r.bw_gbps;
    o["bw_peak_gbps"] = r.bw_peak_gbps;
    o["bw_avg_mibps"] = r.bw_gbps * 1e9 / 8 / 1048576.0;
    o["msg_rate_mpps"] = r.msg_rate_mpps;
    if (r.lat) {
      o["lat_us"] = {{"min", r.lat->min_us},         {"typical", r.lat->typical_us}, {"avg", r.lat->avg_us},
                     {"stdev", r.lat->stdev_us},     {"p99", r.lat->p99_us},         {"p999", r.lat->p999_us},
                     {"max", r.lat->max_us}};
    }
    o["errors"] = r.errors;
    for (const auto& [k, v] : r.extra) o[k] = v;
    for (const auto& [k, v] : r.notes) o[k] = v;
    arr.push_back(std::move(o));
  }
  j["results"] = std::move(arr);
  return j.dump(2) + "\n";
}

}  // namespace rdmalab
