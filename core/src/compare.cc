#include "rdmalab/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "rdmalab/record.h"

namespace rdmalab {

namespace {

// Columns that say which row it is rather than what was measured.
bool identifying(const std::string& h) {
  return h == "workload" || h == "#bytes" || h == "#iterations" || h == "size (B)" || h == "count" || h == "type" || h == "redop" ||
         h == "root" || h == "placement" || h == "algorithm" || h == "protocol" || h == "channels" || h == "model" ||
         h == "parallelism" || h == "grad bytes" || h == "provoke" || h == "operation";
}

// What pairs two rows: the identifying cells (less the iteration count, which a measurement
// and a prediction may choose differently, and NCCL's algorithm and protocol, which each side
// may pick differently), and the rank count.
std::string row_key(const ResultTable& t, std::size_t r, const ResultRow& row) {
  std::string k = fmt::format("ranks={}", row.ranks);
  for (std::size_t c = 0; c < t.columns.size(); ++c) {
    const std::string& h = t.columns[c];
    if (!identifying(h) || h == "#iterations" || h == "algorithm" || h == "protocol" || h == "channels") continue;
    k += "|" + h + "=" + t.cells[r][c];
  }
  return k;
}

std::string describe(const ResultTable& t, std::size_t r, const ResultRow& row) {
  std::string d = row.workload;
  for (std::size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c] == "#bytes" || t.columns[c] == "size (B)") d += " " + t.cells[r][c] + " B";
    else if (t.columns[c] == "placement") d += " " + t.cells[r][c];
  return d + fmt::format(" on {} ranks", row.ranks);
}

std::string resolved(const RunFile& f, const std::string& key) {
  for (const auto& k : f.info.resolved)
    if (k.key == key) return k.value;
  return "";
}

}  // namespace

Result<RunFile> read_run(const std::string& path) {
  RunFile f;
  f.path = path;
  RDMALAB_ASSIGN(f.rows, read_rows(path));
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("results")) {
    f.has_info = true;
    f.info.scenario = j.value("scenario", "");
    f.info.name = j.value("name", "");
    f.info.backend = j.value("backend", "");
    f.info.status = j.value("status", "ok");
    f.info.error = j.value("error", "");
    if (j.contains("resolved") && j["resolved"].is_object())
      for (const auto& [k, v] : j["resolved"].items())
        if (v.is_object()) f.info.resolved.push_back({k, v.value("value", ""), v.value("from", "")});
  }
  if (f.info.backend.empty() && !f.rows.empty()) f.info.backend = f.rows.front().backend;
  return f;
}

Result<Comparison> compare_runs(const RunFile& a, const std::string& la, const RunFile& b, const std::string& lb) {
  Comparison c;
  const ResultTable ta = result_table(a.rows), tb = result_table(b.rows);
  if (!ta.cells.empty() && !tb.cells.empty() && ta.kind != tb.kind)
    return Status(Errc::invalid_argument, fmt::format("{} has {} rows and {} has {} rows: they do not compare", a.path, ta.kind, b.path, tb.kind));
  for (const auto* side : {&a, &b}) {
    const std::string& l = side == &a ? la : lb;
    if (side->has_info && side->info.status != "ok")
      c.warnings.push_back(fmt::format("{} ({}) is a run that {}{}: its rows are what it finished before it stopped", l, side->path,
                                       side->info.status, side->info.error.empty() ? "" : ": " + side->info.error));
    if (side->rows.empty()) c.warnings.push_back(fmt::format("{} ({}) has no rows", l, side->path));
  }
  // The fabric each side describes. A model predicts its scenario's fabric; a run on real verbs
  // measures the device it found, whatever the scenario says (its stderr notes a mismatch).
  for (const char* key : {"fabric.link.bandwidth", "fabric.link.latency", "fabric.nodes", "fabric.preset", "fabric.model"}) {
    const std::string va = resolved(a, key), vb = resolved(b, key);
    if (!va.empty() && !vb.empty() && va != vb)
      c.warnings.push_back(fmt::format("{} differs: {} has {}, {} has {}", key, la, va, lb, vb));
  }
  const bool real_a = a.info.backend == "verbs", real_b = b.info.backend == "verbs";
  if (real_a != real_b && (a.info.backend == "simgrid" || b.info.backend == "simgrid")) {
    const RunFile& model = real_a ? b : a;
    const std::string bw = resolved(model, "fabric.link.bandwidth");
    c.warnings.push_back(fmt::format("{} is the model of {}; {} measured the device it ran on: check that the scenario's fabric describes "
                                     "that device (the verbs run said so on stderr if its port's active rate differs)",
                                     real_a ? lb : la, bw.empty() ? "its scenario's fabric" : "a fabric of " + bw + " links", real_a ? la : lb));
  }

  const ResultTable& shape = ta.cells.empty() ? tb : ta;
  c.table.kind = shape.kind;
  std::vector<std::size_t> id_cols, measured;
  for (std::size_t i = 0; i < shape.columns.size(); ++i) {
    if (shape.columns[i] == "#iterations") continue;
    if (shape.columns[i] == "BW average[MiB/s]") continue;  // the same figure as BW average[Gb/sec]
    if (identifying(shape.columns[i])) {
      id_cols.push_back(i);
      c.table.columns.push_back(shape.columns[i]);
    } else {
      measured.push_back(i);
    }
  }
  for (auto i : measured) {
    c.table.columns.push_back(shape.columns[i] + " " + la);
    c.table.columns.push_back(shape.columns[i] + " " + lb);
    c.table.columns.push_back(shape.columns[i] + " " + lb + "/" + la);
  }
  // B's rows by key, each used once, in order.
  std::multimap<std::string, std::size_t> b_rows;
  std::vector<std::size_t> b_kind_rows;  // indexes into b.rows of the table's kind, as tb lists them
  for (std::size_t i = 0; i < b.rows.size(); ++i)
    if (result_kind(b.rows[i]) == tb.kind) b_kind_rows.push_back(i);
  for (std::size_t r = 0; r < tb.cells.size(); ++r) b_rows.emplace(row_key(tb, r, b.rows[b_kind_rows[r]]), r);
  std::vector<std::size_t> a_kind_rows;
  for (std::size_t i = 0; i < a.rows.size(); ++i)
    if (result_kind(a.rows[i]) == ta.kind) a_kind_rows.push_back(i);
  std::vector<bool> b_used(tb.cells.size(), false);
  auto add = [&](const ResultTable* t1, std::size_t r1, const ResultTable* t2, std::size_t r2, bool first_is_a) {
    std::vector<std::string> cells;
    std::vector<double> values;
    const ResultTable& id = t1 ? *t1 : *t2;
    const std::size_t rid = t1 ? r1 : r2;
    for (auto i : id_cols) {
      // What each side chose (NCCL's algorithm, protocol, channels) shows both when they differ.
      const std::string& h = id.columns[i];
      std::string cell = id.cells[rid][i];
      if (t1 && t2 && (h == "algorithm" || h == "protocol" || h == "channels") && t1->cells[r1][i] != t2->cells[r2][i])
        cell = first_is_a ? t1->cells[r1][i] + " | " + t2->cells[r2][i] : t2->cells[r2][i] + " | " + t1->cells[r1][i];
      cells.push_back(cell);
      values.push_back(id.values[rid][i]);
    }
    const ResultTable* ta_ = first_is_a ? t1 : t2;
    const ResultTable* tb_ = first_is_a ? t2 : t1;
    const std::size_t ra = first_is_a ? r1 : r2, rb = first_is_a ? r2 : r1;
    for (auto i : measured) {
      const bool ha = ta_ != nullptr, hb = tb_ != nullptr;
      const double x = ha ? ta_->values[ra][i] : NAN, y = hb ? tb_->values[rb][i] : NAN;
      cells.push_back(ha ? ta_->cells[ra][i] : "-");
      values.push_back(x);
      cells.push_back(hb ? tb_->cells[rb][i] : "-");
      values.push_back(y);
      if (ha && hb && x == 0 && y == 0) {
        cells.push_back("=");
        values.push_back(1);
      } else if (ha && hb && x != 0 && std::isfinite(x) && std::isfinite(y)) {
        cells.push_back(fmt::format("{:.3f}", y / x));
        values.push_back(y / x);
      } else {
        cells.push_back("-");
        values.push_back(NAN);
      }
    }
    c.table.cells.push_back(std::move(cells));
    c.table.values.push_back(std::move(values));
  };
  std::vector<std::string> lonely_a, lonely_b;
  for (std::size_t r = 0; r < ta.cells.size(); ++r) {
    const std::string k = row_key(ta, r, a.rows[a_kind_rows[r]]);
    auto range = b_rows.equal_range(k);
    auto it = std::find_if(range.first, range.second, [&](const auto& e) { return !b_used[e.second]; });
    if (it == range.second) {
      add(&ta, r, nullptr, 0, true);
      ++c.only_a;
      lonely_a.push_back(describe(ta, r, a.rows[a_kind_rows[r]]));
      continue;
    }
    b_used[it->second] = true;
    add(&ta, r, &tb, it->second, true);
    ++c.matched;
  }
  for (std::size_t r = 0; r < tb.cells.size(); ++r)
    if (!b_used[r]) {
      add(nullptr, 0, &tb, r, true);
      ++c.only_b;
      lonely_b.push_back(describe(tb, r, b.rows[b_kind_rows[r]]));
    }
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size() && i < 4; ++i) s += (i ? ", " : "") + v[i];
    if (v.size() > 4) s += fmt::format(" and {} more", v.size() - 4);
    return s;
  };
  if (!lonely_a.empty()) c.warnings.push_back(fmt::format("{} row(s) of {} have no match in {}: {}", lonely_a.size(), la, lb, list(lonely_a)));
  if (!lonely_b.empty()) c.warnings.push_back(fmt::format("{} row(s) of {} have no match in {}: {}", lonely_b.size(), lb, la, list(lonely_b)));
  return c;
}

std::string comparison_text(const Comparison& c) {
  std::string out;
  for (const auto& w : c.warnings) out += "# note: " + w + "\n";
  out += fmt::format("# {} row(s) matched, {} only in A, {} only in B\n", c.matched, c.only_a, c.only_b);
  std::vector<std::size_t> width(c.table.columns.size());
  for (std::size_t i = 0; i < width.size(); ++i) {
    width[i] = c.table.columns[i].size();
    for (const auto& row : c.table.cells) width[i] = std::max(width[i], row[i].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (std::size_t i = 0; i < cells.size(); ++i) l += fmt::format("{}{:>{}}", i ? "  " : "", cells[i], width[i]);
    out += l + "\n";
  };
  line(c.table.columns);
  for (const auto& row : c.table.cells) line(row);
  return out;
}

}  // namespace rdmalab
