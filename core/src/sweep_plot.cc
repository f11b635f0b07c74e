#include "rdmalab/sweep_plot.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>

namespace rdmalab {

using json = nlohmann::json;

Result<SweepFile> read_sweep(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(Errc::io, fmt::format("{}: cannot open", path));
  const json j = json::parse(in, nullptr, false);
  auto bad = [&](const std::string& what) {
    return Status(Errc::invalid_argument, fmt::format("{}: not a sweep table (rdmalab sweep writes DIR/sweep.json): {}", path, what));
  };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  for (const char* k : {"axes", "columns", "rows"})
    if (!j.contains(k) || !j[k].is_array()) return bad(fmt::format("no \"{}\" array", k));
  SweepFile s;
  s.path = path;
  s.scenario = j.value("scenario", "");
  s.backend = j.value("backend", "");
  s.zip = j.value("form", "product") == "zip";
  try {
    for (const auto& a : j["axes"]) s.axes.push_back({a.at("key").get<std::string>(), a.at("values").get<std::vector<std::string>>()});
    s.table.kind = "sweep";
    s.table.columns = j["columns"].get<std::vector<std::string>>();
    for (const auto& line : j["rows"]) {
      if (!line.is_array() || line.size() != s.table.columns.size()) return bad("a row whose length is not the columns'");
      std::vector<std::string> cells;
      std::vector<double> values;
      for (const auto& c : line) {
        if (c.is_number()) {
          const double v = c.get<double>();
          values.push_back(v);
          // As the CLI's table writes them: whole numbers whole, others to two places (small ones to four digits).
          if (std::abs(v) < 1e15 && v == std::floor(v))
            cells.push_back(fmt::format("{}", static_cast<long long>(v)));
          else
            cells.push_back(std::abs(v) >= 1 ? fmt::format("{:.2f}", v) : fmt::format("{:.4g}", v));
        } else {
          values.push_back(std::numeric_limits<double>::quiet_NaN());
          cells.push_back(c.is_string() ? c.get<std::string>() : c.dump());
        }
      }
      s.table.cells.push_back(std::move(cells));
      s.table.values.push_back(std::move(values));
    }
  } catch (const json::exception& e) {
    return bad(e.what());
  }
  if (s.axes.empty() || s.table.columns.size() < s.axes.size() + 1) return bad("no varied keys");
  for (std::size_t i = 0; i < s.axes.size(); ++i)
    if (s.table.columns[i] != s.axes[i].key) return bad(fmt::format("column {} is '{}', not the varied key '{}'", i + 1, s.table.columns[i], s.axes[i].key));
  return s;
}

Scale readable_scale(double max, const std::string& unit) {
  struct Ladder {
    const char* units[4];
    double step;
  };
  // Each family from its smallest unit up; the unit given is found in it.
  static const Ladder ladders[] = {
      {{"MB/s", "GB/s", "TB/s", nullptr}, 1000}, {{"Mb/s", "Gb/s", "Tb/s", nullptr}, 1000},
      {{"MiB/s", "GiB/s", "TiB/s", nullptr}, 1024}, {{"us", "ms", "s", nullptr}, 1000},
  };
  for (const auto& l : ladders) {
    int at = -1;
    for (int i = 0; l.units[i]; ++i)
      if (unit == l.units[i]) at = i;
    if (at < 0) continue;
    Scale s{1, unit};
    double m = std::abs(max);
    int i = at;
    while (m >= l.step && l.units[i + 1] && i < 3) {
      m /= l.step;
      s.factor /= l.step;
      s.unit = l.units[++i];
    }
    while (m > 0 && m < 1 && i > 0) {
      m *= l.step;
      s.factor *= l.step;
      s.unit = l.units[--i];
    }
    return s;
  }
  return {1, unit};
}

std::string size_tick_label(double log2_bytes) {
  const double bytes = std::exp2(log2_bytes);
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = bytes;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (std::abs(v - std::round(v)) < 1e-9) return fmt::format("{} {}", static_cast<long long>(std::llround(v)), units[u]);
  return fmt::format("{:.3g} {}", v, units[u]);
}

namespace {

// "busbw (GB/s)" -> {"busbw", "GB/s"}; "BW average[Gb/sec]" -> {"BW average", "Gb/s"}.
std::pair<std::string, std::string> split_unit(const std::string& column) {
  const auto open = column.find_last_of("([");
  if (open == std::string::npos || (column.back() != ')' && column.back() != ']')) return {column, ""};
  std::string name = column.substr(0, open);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  std::string unit = column.substr(open + 1, column.size() - open - 2);
  if (unit == "Gb/sec") unit = "Gb/s";
  if (unit == "usec") unit = "us";
  return {name, unit};
}

// "fabric.link.bandwidth" -> "link.bandwidth": the legend's shorter name.
std::string short_key(const std::string& key) {
  for (const char* p : {"fabric.", "workload.", "training."})
    if (key.rfind(p, 0) == 0 && key.size() > std::string(p).size()) return key.substr(std::string(p).size());
  return key;
}

// "BW average-vs-link.bandwidth" -> "bw-average-vs-link.bandwidth": a file name without spaces.
std::string file_stem(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '-';
  }
  return s;
}

int column(const ResultTable& t, const std::string& name) {
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i] == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

Result<std::vector<Plot>> sweep_plots(const SweepFile& sweep, const PlotOptions& options) {
  const ResultTable& t = sweep.table;
  const std::size_t naxes = sweep.axes.size();
  const int status_col = column(t, "status");
  const int size_col = column(t, "size (B)") >= 0 ? column(t, "size (B)") : column(t, "#bytes");
  const int place_col = column(t, "placement");

  // The numeric result columns: what --measure may name.
  std::vector<std::string> numeric;
  for (std::size_t c = naxes + 1; c < t.columns.size(); ++c) {
    if (static_cast<int>(c) == size_col) continue;
    bool any = false;
    for (const auto& v : t.values) any = any || !std::isnan(v[c]);
    if (any) numeric.push_back(t.columns[c]);
  }
  std::string measure = options.measure;
  if (measure.empty()) {
    for (const char* m : {"busbw (GB/s)", "BW average[Gb/sec]", "t_typical[usec]", "step[ms]"})
      if (std::find(numeric.begin(), numeric.end(), m) != numeric.end()) {
        measure = m;
        break;
      }
    if (measure.empty())
      return Status(Errc::invalid_argument,
                    fmt::format("{}: nothing to plot: no point has a bandwidth, latency or step time{}", sweep.path,
                                status_col >= 0 ? " (did every point fail? see the status column)" : ""));
  } else if (std::find(numeric.begin(), numeric.end(), measure) == numeric.end()) {
    std::string list;
    for (const auto& n : numeric) list += (list.empty() ? "" : ", ") + fmt::format("'{}'", n);
    return Status(Errc::invalid_argument, fmt::format("--measure '{}': not a numeric column of {}; use one of {}", measure, sweep.path, list));
  }
  const int mcol = column(t, measure);
  const auto [mname, munit] = split_unit(measure);

  // The lines that count: ok, the measure present, out-of-place where both placements ran.
  bool any_out_of_place = false;
  if (place_col >= 0)
    for (const auto& c : t.cells) any_out_of_place = any_out_of_place || c[place_col] == "out-of-place";
  struct Pt {
    std::vector<std::string> values;
    std::vector<std::pair<double, double>> by_size;  // (bytes, measure)
  };
  std::vector<Pt> points;
  std::map<std::vector<std::string>, std::size_t> index;
  for (std::size_t r = 0; r < t.cells.size(); ++r) {
    const auto& c = t.cells[r];
    if (status_col >= 0 && c[status_col] != "ok") continue;
    if (any_out_of_place && c[place_col] != "out-of-place") continue;
    const double y = t.values[r][mcol];
    if (std::isnan(y)) continue;
    std::vector<std::string> key(c.begin(), c.begin() + static_cast<long>(naxes));
    auto [it, fresh] = index.emplace(key, points.size());
    if (fresh) points.push_back({key, {}});
    const double bytes = size_col >= 0 ? t.values[r][size_col] : std::numeric_limits<double>::quiet_NaN();
    points[it->second].by_size.emplace_back(bytes, y);
  }
  if (points.empty())
    return Status(Errc::invalid_argument, fmt::format("{}: nothing to plot: no point ran to the end with a value of '{}'", sweep.path, measure));

  auto label = [&](const std::vector<std::string>& values, std::size_t skip) {
    std::string s;
    for (std::size_t i = 0; i < naxes; ++i)
      if (i != skip) s += (s.empty() ? "" : ", ") + short_key(sweep.axes[i].key) + "=" + values[i];
    return s;
  };
  auto finish = [&](Plot& p) {
    double max = 0;
    for (const auto& l : p.lines)
      for (double y : l.y) max = std::max(max, std::abs(y));
    const Scale s = readable_scale(max, munit);
    for (auto& l : p.lines)
      for (double& y : l.y) y *= s.factor;
    p.y_title = s.unit.empty() ? mname : fmt::format("{} ({})", mname, s.unit);
  };

  std::vector<Plot> plots;
  bool several_sizes = false;
  for (const auto& p : points) {
    std::vector<double> sizes;
    for (const auto& [b, y] : p.by_size)
      if (!std::isnan(b) && std::find(sizes.begin(), sizes.end(), b) == sizes.end()) sizes.push_back(b);
    several_sizes = several_sizes || sizes.size() > 1;
  }
  if (several_sizes) {
    Plot p;
    p.id = file_stem(mname + "-vs-size");
    p.title = fmt::format("{} vs message size, one line per point", mname);
    p.x_title = "message size (bytes)";
    p.x_is_size = true;
    for (const auto& pt : points) {
      PlotLine l;
      l.name = label(pt.values, naxes);
      for (const auto& [b, y] : pt.by_size) {
        if (std::isnan(b) || b <= 0) continue;
        l.x.push_back(std::log2(b));
        l.y.push_back(y);
      }
      p.lines.push_back(std::move(l));
    }
    finish(p);
    plots.push_back(std::move(p));
  }

  // The measure against each varied key, at each point's largest size.
  double common_size = std::numeric_limits<double>::quiet_NaN();
  bool same_size = true;
  auto at_largest = [&](const Pt& pt, double* bytes) {
    auto best = pt.by_size.front();
    for (const auto& s : pt.by_size)
      if (s.first > best.first) best = s;
    *bytes = best.first;
    return best.second;
  };
  for (const auto& pt : points) {
    double b = 0;
    at_largest(pt, &b);
    if (std::isnan(common_size)) common_size = b;
    same_size = same_size && (b == common_size || (std::isnan(b) && std::isnan(common_size)));
  }
  for (std::size_t k = 0; k < naxes; ++k) {
    if (sweep.axes[k].values.size() < 2) continue;
    if (sweep.zip && k > 0) break;  // zipped keys move together: one plot, against the first
    Plot p;
    p.id = file_stem(mname + "-vs-" + short_key(sweep.axes[k].key));
    std::string at;
    if (size_col >= 0 && !std::isnan(common_size))
      at = same_size ? fmt::format(" at {}", size_tick_label(std::log2(common_size))) : " at each point's largest size";
    p.title = fmt::format("{} vs {}{}", mname, sweep.axes[k].key, at);
    p.x_title = sweep.axes[k].key;
    p.x_categories = sweep.axes[k].values;
    std::map<std::string, std::size_t> line_of;
    for (const auto& pt : points) {
      const std::string name = sweep.zip || naxes == 1 ? mname : label(pt.values, k);
      auto [it, fresh] = line_of.emplace(name, p.lines.size());
      if (fresh) p.lines.push_back({name, {}, {}});
      const auto pos = std::find(p.x_categories.begin(), p.x_categories.end(), pt.values[k]);
      if (pos == p.x_categories.end()) continue;
      double b = 0;
      const double y = at_largest(pt, &b);
      p.lines[it->second].x.push_back(static_cast<double>(pos - p.x_categories.begin()));
      p.lines[it->second].y.push_back(y);
    }
    finish(p);
    plots.push_back(std::move(p));
  }
  if (plots.empty())
    return Status(Errc::invalid_argument,
                  fmt::format("{}: nothing to plot: one size per point and no varied key with two or more values", sweep.path));
  return plots;
}

}  // namespace rdmalab
