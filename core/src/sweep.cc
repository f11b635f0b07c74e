#include "rdmalab/sweep.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <set>

namespace rdmalab {

Result<SweepAxis> parse_sweep_axis(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return Status(Errc::invalid_argument, fmt::format("--vary '{}': give KEY=V1,V2,... (e.g. --vary fabric.nodes=8,16,32)", text));
  SweepAxis axis;
  axis.key = text.substr(0, eq);
  const std::string list = text.substr(eq + 1);
  int depth = 0;
  std::string cur;
  auto flush = [&]() -> Status {
    if (cur.empty()) return Status(Errc::invalid_argument, fmt::format("--vary {}: an empty value in '{}'", axis.key, list));
    axis.values.push_back(cur);
    cur.clear();
    return Status::ok();
  };
  for (char c : list) {
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (depth < 0) return Status(Errc::invalid_argument, fmt::format("--vary {}: unbalanced brackets in '{}'", axis.key, list));
    if (c == ',' && depth == 0) {
      RDMALAB_TRY(flush());
      continue;
    }
    cur += c;
  }
  if (depth != 0) return Status(Errc::invalid_argument, fmt::format("--vary {}: unbalanced brackets in '{}'", axis.key, list));
  RDMALAB_TRY(flush());
  return axis;
}

std::vector<std::string> SweepPoint::overrides(const std::vector<SweepAxis>& axes) const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < axes.size() && i < values.size(); ++i) out.push_back(axes[i].key + "=" + values[i]);
  return out;
}

std::string SweepPoint::label(const std::vector<SweepAxis>& axes) const {
  std::string out;
  for (const auto& o : overrides(axes)) out += (out.empty() ? "" : " ") + o;
  return out;
}

Result<std::vector<SweepPoint>> sweep_points(const std::vector<SweepAxis>& axes, bool zip) {
  if (axes.empty()) return Status(Errc::invalid_argument, "a sweep needs at least one --vary KEY=V1,V2,...");
  std::set<std::string> seen;
  for (const auto& a : axes) {
    if (!seen.insert(a.key).second) return Status(Errc::invalid_argument, fmt::format("--vary {}: given twice (give every value in one --vary)", a.key));
    if (a.values.empty()) return Status(Errc::invalid_argument, fmt::format("--vary {}: no values: the product is empty", a.key));
  }
  std::vector<SweepPoint> points;
  if (zip) {
    for (const auto& a : axes)
      if (a.values.size() != axes.front().values.size())
        return Status(Errc::invalid_argument, fmt::format("--zip: --vary {} has {} values but --vary {} has {}: zipped axes need as many each",
                                                          a.key, a.values.size(), axes.front().key, axes.front().values.size()));
    for (std::size_t i = 0; i < axes.front().values.size(); ++i) {
      SweepPoint p;
      for (const auto& a : axes) p.values.push_back(a.values[i]);
      points.push_back(std::move(p));
    }
    return points;
  }
  std::vector<std::size_t> at(axes.size(), 0);
  while (true) {
    SweepPoint p;
    for (std::size_t i = 0; i < axes.size(); ++i) p.values.push_back(axes[i].values[at[i]]);
    points.push_back(std::move(p));
    std::size_t k = axes.size();
    while (k > 0) {
      --k;
      if (++at[k] < axes[k].values.size()) break;
      at[k] = 0;
      if (k == 0) return points;
    }
  }
}

std::string resolved_scenario_text(const Scenario& sc) {
  std::string out;
  for (const auto& [key, e] : sc.values)
    out += fmt::format("{} = {}  # {}\n", key, e.text, e.source());
  return out;
}

std::string text_digest(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

ResultTable sweep_table(const std::vector<SweepAxis>& axes, const std::vector<SweepResult>& results) {
  ResultTable t;
  t.kind = "sweep";
  for (const auto& a : axes) t.columns.push_back(a.key);
  t.columns.push_back("status");
  // The result columns of the first point with rows (a sweep's points run one workload).
  std::vector<std::string> result_columns;
  for (const auto& r : results)
    if (!r.rows.empty()) {
      result_columns = result_table(r.rows).columns;
      break;
    }
  t.columns.insert(t.columns.end(), result_columns.begin(), result_columns.end());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& r : results) {
    std::vector<std::string> head = r.point.values;
    head.push_back(r.status);
    std::vector<double> head_values(head.size(), nan);
    const ResultTable rt = result_table(r.rows);
    if (rt.cells.empty()) {
      std::vector<std::string> line = head;
      line.resize(t.columns.size());
      t.cells.push_back(std::move(line));
      t.values.emplace_back(t.columns.size(), nan);
      continue;
    }
    for (std::size_t i = 0; i < rt.cells.size(); ++i) {
      std::vector<std::string> line = head;
      std::vector<double> values = head_values;
      line.insert(line.end(), rt.cells[i].begin(), rt.cells[i].end());
      values.insert(values.end(), rt.values[i].begin(), rt.values[i].end());
      line.resize(t.columns.size());
      values.resize(t.columns.size(), nan);
      t.cells.push_back(std::move(line));
      t.values.push_back(std::move(values));
    }
  }
  return t;
}

std::string sweep_json(const std::string& scenario, const std::string& backend, bool zip, const std::vector<SweepAxis>& axes,
                       const std::vector<SweepResult>& results) {
  using json = nlohmann::ordered_json;
  json j;
  j["scenario"] = scenario;
  j["backend"] = backend;
  j["form"] = zip ? "zip" : "product";
  json ax = json::array();
  for (const auto& a : axes) ax.push_back({{"key", a.key}, {"values", a.values}});
  j["axes"] = ax;
  const ResultTable t = sweep_table(axes, results);
  j["columns"] = t.columns;
  json rows = json::array();
  for (std::size_t i = 0; i < t.cells.size(); ++i) {
    json line = json::array();
    for (std::size_t c = 0; c < t.cells[i].size(); ++c) {
      const double v = t.values[i][c];
      if (std::isnan(v))
        line.push_back(t.cells[i][c]);
      else
        line.push_back(v);
    }
    rows.push_back(std::move(line));
  }
  j["rows"] = rows;
  json pts = json::array();
  for (const auto& r : results) {
    json p;
    json values = json::object();
    for (std::size_t i = 0; i < axes.size() && i < r.point.values.size(); ++i) values[axes[i].key] = r.point.values[i];
    p["values"] = values;
    p["status"] = r.status;
    if (!r.error.empty()) p["error"] = r.error;
    p["cached"] = r.cached;
    if (!r.id.empty()) p["id"] = r.id;
    p["results"] = json::parse(rows_to_json(r.rows));
    pts.push_back(std::move(p));
  }
  j["points"] = pts;
  return j.dump(2) + "\n";
}

}  // namespace rdmalab
