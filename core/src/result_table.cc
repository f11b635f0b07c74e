#include "rdmalab/result_table.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace rdmalab {

namespace {

std::string note(const ResultRow& r, const char* key) {
  auto it = r.notes.find(key);
  return it == r.notes.end() ? std::string() : it->second;
}

double extra(const ResultRow& r, const char* key) {
  auto it = r.extra.find(key);
  return it == r.extra.end() ? 0.0 : it->second;
}

struct Cell {
  std::string text;
  double value;
};

Cell num(double v, int decimals) { return {fmt::format("{:.{}f}", v, decimals), v}; }
Cell whole(double v) { return {fmt::format("{}", static_cast<long long>(v)), v}; }
Cell text(std::string s) { return {std::move(s), std::numeric_limits<double>::quiet_NaN()}; }

}  // namespace

std::string result_kind(const ResultRow& r) {
  if (r.extra.count("busbw_gbps")) return "collective";
  if (r.extra.count("step_ms")) return "training";
  if (r.lat) return "latency";
  return "bandwidth";
}

ResultTable result_table(const std::vector<ResultRow>& rows) {
  ResultTable t;
  if (rows.empty()) return t;
  t.kind = result_kind(rows.front());
  if (t.kind == "bandwidth")
    t.columns = {"workload", "#bytes", "#iterations", "BW peak[Gb/sec]", "BW average[Gb/sec]", "MsgRate[Mpps]", "BW average[MiB/s]", "errors"};
  else if (t.kind == "latency")
    t.columns = {"workload",    "#bytes",        "#iterations", "t_min[usec]",  "t_max[usec]", "t_typical[usec]",
                 "t_avg[usec]", "t_stdev[usec]", "99% [usec]",  "99.9% [usec]", "errors"};
  else if (t.kind == "collective")
    t.columns = {"workload",  "size (B)",     "count",        "type",   "redop",    "root", "placement",
                 "time (us)", "algbw (GB/s)", "busbw (GB/s)", "#wrong", "algorithm", "protocol", "channels"};
  else
    t.columns = {"workload", "model",       "parallelism", "grad bytes", "step[ms]",  "compute[ms]",
                 "comm[ms]", "exposed[ms]", "bubble[ms]",  "samples/s",  "#wrong"};
  for (const auto& r : rows) {
    if (result_kind(r) != t.kind) continue;
    std::vector<Cell> c{text(r.workload)};
    if (t.kind == "bandwidth") {
      c.insert(c.end(), {whole(static_cast<double>(r.bytes)), whole(static_cast<double>(r.iterations)), num(r.bw_peak_gbps, 2),
                         num(r.bw_gbps, 2), num(r.msg_rate_mpps, 6), num(r.bw_gbps * 1e9 / 8 / 1048576.0, 2),
                         whole(static_cast<double>(r.errors))});
    } else if (t.kind == "latency") {
      const LatencyStats& l = *r.lat;
      c.insert(c.end(), {whole(static_cast<double>(r.bytes)), whole(static_cast<double>(r.iterations)), num(l.min_us, 2), num(l.max_us, 2),
                         num(l.typical_us, 2), num(l.avg_us, 2), num(l.stdev_us, 2), num(l.p99_us, 2), num(l.p999_us, 2),
                         whole(static_cast<double>(r.errors))});
    } else if (t.kind == "collective") {
      c.insert(c.end(), {whole(static_cast<double>(r.bytes)), whole(extra(r, "count")), text(note(r, "type")), text(note(r, "redop")),
                         text(note(r, "root")), text(note(r, "placement")), num(r.time_s * 1e6, 2), num(extra(r, "algbw_gbps"), 2),
                         num(extra(r, "busbw_gbps"), 2), whole(static_cast<double>(r.errors)), text(note(r, "algorithm")),
                         text(note(r, "protocol")), text(note(r, "channels"))});
    } else {
      c.insert(c.end(), {text(note(r, "model")), text(note(r, "parallelism")), whole(static_cast<double>(r.bytes)),
                         num(extra(r, "step_ms"), 3), num(extra(r, "compute_ms"), 3), num(extra(r, "comm_ms"), 3),
                         num(extra(r, "exposed_ms"), 3), num(extra(r, "bubble_ms"), 3), num(extra(r, "samples_per_s"), 1),
                         whole(static_cast<double>(r.errors))});
    }
    std::vector<std::string> cells;
    std::vector<double> values;
    for (auto& x : c) {
      cells.push_back(std::move(x.text));
      values.push_back(x.value);
    }
    t.cells.push_back(std::move(cells));
    t.values.push_back(std::move(values));
  }
  return t;
}

std::string result_table_csv(const ResultTable& t) {
  auto field = [](const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  std::string out;
  auto line = [&](const std::vector<std::string>& v) {
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + field(v[i]);
    out += "\r\n";
  };
  line(t.columns);
  for (const auto& r : t.cells) line(r);
  return out;
}

}  // namespace rdmalab
