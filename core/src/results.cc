#include "rdmalab/results.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
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
  st.histogram.assign(LatencyStats::kHistogramBins, 0);
  const double width = (st.p999_us - st.min_us) / LatencyStats::kHistogramBins;
  for (double v : s) {
    int bin = width > 0 ? static_cast<int>((v - st.min_us) / width) : 0;
    ++st.histogram[static_cast<std::size_t>(std::clamp(bin, 0, LatencyStats::kHistogramBins - 1))];
  }
  return st;
}

namespace {
nlohmann::ordered_json row_json(const ResultRow& r);
}

std::string rows_to_json(const std::vector<ResultRow>& rows) {
  auto arr = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    auto o = row_json(r);
    o["_extra"] = r.extra;
    o["_notes"] = r.notes;
    arr.push_back(std::move(o));
  }
  return arr.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<ResultRow> rows_from_json(const std::string& text) {
  std::vector<ResultRow> rows;
  auto arr = nlohmann::json::parse(text, nullptr, false);
  if (!arr.is_array()) return rows;
  for (const auto& o : arr) {
    ResultRow r;
    r.workload = o.value("workload", "");
    r.backend = o.value("backend", "");
    r.bytes = o.value("bytes", 0ull);
    r.iterations = o.value("iterations", 0ull);
    r.ranks = o.value("ranks", 0);
    r.time_s = o.value("time_s", 0.0);
    r.bw_gbps = o.value("bw_gbps", 0.0);
    r.bw_peak_gbps = o.value("bw_peak_gbps", 0.0);
    r.msg_rate_mpps = o.value("msg_rate_mpps", 0.0);
    r.errors = o.value("errors", 0ull);
    if (o.contains("lat_us")) {
      const auto& l = o["lat_us"];
      r.lat = LatencyStats{l.value("min", 0.0), l.value("max", 0.0), l.value("typical", 0.0), l.value("avg", 0.0),
                           l.value("stdev", 0.0), l.value("p99", 0.0), l.value("p999", 0.0), {}};
      r.lat->histogram = l.value("histogram", std::vector<std::uint64_t>{});
    }
    if (o.contains("_extra")) r.extra = o["_extra"].get<std::map<std::string, double>>();
    if (o.contains("_notes")) r.notes = o["_notes"].get<std::map<std::string, std::string>>();
    if (!o.contains("_extra") && !o.contains("_notes")) {
      // The documented form (--json): a row's own columns sit beside the common ones.
      static const std::set<std::string> common = {"workload", "backend", "bytes", "iterations", "ranks", "time_s", "bw_gbps",
                                                   "bw_peak_gbps", "bw_avg_mibps", "msg_rate_mpps", "errors", "lat_us"};
      for (const auto& [k, v] : o.items()) {
        if (common.count(k)) continue;
        if (v.is_number()) r.extra[k] = v.get<double>();
        if (v.is_string()) r.notes[k] = v.get<std::string>();
      }
      // Whole-number notes were written as numbers: root and channels are notes in a row.
      for (const char* k : {"root", "channels"})
        if (r.extra.count(k)) {
          r.notes[k] = std::to_string(static_cast<std::int64_t>(r.extra[k]));
          r.extra.erase(k);
        }
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string run_name(const std::string& scenario_name, const std::vector<std::string>& overrides) {
  if (overrides.empty()) return scenario_name;
  std::string list;
  for (const auto& o : overrides) list += (list.empty() ? "" : " ") + o;
  return fmt::format("{} [--set {}]", scenario_name, list);
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
  if (!info.overrides.empty()) j["overrides"] = info.overrides;
  if (!info.resolved.empty()) {
    nlohmann::ordered_json res = nlohmann::ordered_json::object();
    for (const auto& k : info.resolved) res[k.key] = {{"value", k.value}, {"from", k.from}};
    j["resolved"] = std::move(res);
  }
  auto arr = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    auto o = row_json(r);
    // Counts are whole numbers in JSON (1048576, not 1048576.0), and a note that is a whole
    // number (root, channels) is written as one.
    for (const auto& [k, v] : r.extra) {
      if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9007199254740992.0)
        o[k] = static_cast<std::int64_t>(v);
      else
        o[k] = v;
    }
    for (const auto& [k, v] : r.notes) {
      std::int64_t n = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (!v.empty() && ec == std::errc() && end == v.data() + v.size())
        o[k] = n;
      else
        o[k] = v;
    }
    arr.push_back(std::move(o));
  }
  j["results"] = std::move(arr);
  // Invalid UTF-8 (a scenario path is bytes) becomes U+FFFD rather than an exception after the run.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {
nlohmann::ordered_json row_json(const ResultRow& r) {
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
    o["lat_us"] = {{"min", r.lat->min_us},     {"typical", r.lat->typical_us}, {"avg", r.lat->avg_us}, {"stdev", r.lat->stdev_us},
                   {"p99", r.lat->p99_us},     {"p999", r.lat->p999_us},       {"max", r.lat->max_us}};
    if (!r.lat->histogram.empty()) o["lat_us"]["histogram"] = r.lat->histogram;
  }
  o["errors"] = r.errors;
  return o;
}
}  // namespace

}  // namespace rdmalab
