#include "rdmalab/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "rdmalab/units.h"

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

// The indexes of the rows result_table(rows) lists (those of its kind), in its order.
std::vector<std::size_t> table_rows(const std::vector<ResultRow>& rows, const std::string& kind) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (result_kind(rows[i]) == kind) out.push_back(i);
  return out;
}

}  // namespace

std::optional<PortCheck> port_check(const RunFile& model, const RunFile& measured) {
  auto link = units::parse_bandwidth(model.resolved("fabric.link.bandwidth"));
  if (!link) return std::nullopt;
  for (const auto& r : measured.rows) {
    auto rate = r.extra.find("port_gbps");
    if (rate == r.extra.end()) continue;
    PortCheck c;
    c.link_gbps = *link * 8 / 1e9;
    c.port_gbps = rate->second;
    auto dev = r.notes.find("device");
    c.device = dev == r.notes.end() ? "a port" : dev->second;
    c.differs = std::abs(c.link_gbps - c.port_gbps) > 0.1 * c.port_gbps;
    return c;
  }
  return std::nullopt;
}

std::string short_list(const std::vector<std::string>& items, std::size_t shown) {
  std::string s;
  for (std::size_t i = 0; i < items.size() && i < shown; ++i) s += (i ? ", " : "") + items[i];
  if (items.size() > shown) s += fmt::format(" and {} more", items.size() - shown);
  return s;
}

Result<Comparison> compare_runs(const RunFile& a, const std::string& la, const RunFile& b, const std::string& lb) {
  Comparison c;
  const ResultTable ta = result_table(a.rows), tb = result_table(b.rows);
  if (!ta.cells.empty() && !tb.cells.empty() && ta.kind != tb.kind)
    return Status(Errc::invalid_argument, fmt::format("{} has {} rows and {} has {} rows: they do not compare", a.path, ta.kind, b.path, tb.kind));
  for (const auto* side : {&a, &b}) {
    const std::string& l = side == &a ? la : lb;
    if (side->info.status != "ok")
      c.warnings.push_back(fmt::format("{} ({}) is a run that {}{}: its rows are what it finished before it stopped", l, side->path,
                                       side->info.status, side->info.error.empty() ? "" : ": " + side->info.error));
    if (side->rows.empty()) c.warnings.push_back(fmt::format("{} ({}) has no rows", l, side->path));
  }
  // The fabric each side describes. A model predicts its scenario's fabric; a run on real verbs
  // measures the device it found, whatever the scenario says (its stderr notes a mismatch).
  for (const char* key : {"fabric.link.bandwidth", "fabric.link.latency", "fabric.nodes", "fabric.preset", "fabric.model"}) {
    const std::string va = a.resolved(key), vb = b.resolved(key);
    if (!va.empty() && !vb.empty() && va != vb)
      c.warnings.push_back(fmt::format("{} differs: {} has {}, {} has {}", key, la, va, lb, vb));
  }
  const bool real_a = a.info.backend == "verbs", real_b = b.info.backend == "verbs";
  if (real_a != real_b && (a.info.backend == "simgrid" || b.info.backend == "simgrid")) {
    const RunFile& model = real_a ? b : a;
    const RunFile& real = real_a ? a : b;
    if (auto port = port_check(model, real)) {
      if (port->differs)
        c.warnings.push_back(fmt::format("{} models links of {:g} Gb/s, but {} ran on {} active at {:g} Gb/s: the prediction is for other "
                                         "hardware (run the model with --set fabric.link.bandwidth={:g}Gbps)",
                                         real_a ? lb : la, port->link_gbps, real_a ? la : lb, port->device, port->port_gbps, port->port_gbps));
    } else {
      const std::string bw = model.resolved("fabric.link.bandwidth");
      c.warnings.push_back(fmt::format("{} is the model of {}; {} measured the device it ran on: check that the scenario's fabric describes "
                                       "that device (the verbs run said so on stderr if its port's active rate differs)",
                                       real_a ? lb : la, bw.empty() ? "its scenario's fabric" : "a fabric of " + bw + " links", real_a ? la : lb));
    }
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
  const std::vector<std::size_t> a_rows = table_rows(a.rows, ta.kind), b_rows = table_rows(b.rows, tb.kind);
  std::multimap<std::string, std::size_t> b_by_key;  // B's table rows by key, each used once, in order
  for (std::size_t r = 0; r < tb.cells.size(); ++r) b_by_key.emplace(row_key(tb, r, b.rows[b_rows[r]]), r);
  std::vector<bool> b_used(tb.cells.size(), false);
  // One line: A's row ra of ta and B's row rb of tb; a side without a row is null.
  auto add = [&](const ResultTable* pa, std::size_t ra, const ResultTable* pb, std::size_t rb) {
    std::vector<std::string> cells;
    std::vector<double> values;
    const ResultTable& id = pa ? *pa : *pb;
    const std::size_t rid = pa ? ra : rb;
    for (auto i : id_cols) {
      // What each side chose (NCCL's algorithm, protocol, channels) shows both when they differ.
      const std::string& h = id.columns[i];
      std::string cell = id.cells[rid][i];
      if (pa && pb && (h == "algorithm" || h == "protocol" || h == "channels") && pa->cells[ra][i] != pb->cells[rb][i])
        cell = pa->cells[ra][i] + " | " + pb->cells[rb][i];
      cells.push_back(cell);
      values.push_back(id.values[rid][i]);
    }
    for (auto i : measured) {
      const bool ha = pa != nullptr, hb = pb != nullptr;
      const double x = ha ? pa->values[ra][i] : NAN, y = hb ? pb->values[rb][i] : NAN;
      cells.push_back(ha ? pa->cells[ra][i] : "-");
      values.push_back(x);
      cells.push_back(hb ? pb->cells[rb][i] : "-");
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
    const std::string k = row_key(ta, r, a.rows[a_rows[r]]);
    auto range = b_by_key.equal_range(k);
    auto it = std::find_if(range.first, range.second, [&](const auto& e) { return !b_used[e.second]; });
    if (it == range.second) {
      add(&ta, r, nullptr, 0);
      ++c.only_a;
      lonely_a.push_back(describe(ta, r, a.rows[a_rows[r]]));
      continue;
    }
    b_used[it->second] = true;
    add(&ta, r, &tb, it->second);
    ++c.matched;
  }
  for (std::size_t r = 0; r < tb.cells.size(); ++r)
    if (!b_used[r]) {
      add(nullptr, 0, &tb, r);
      ++c.only_b;
      lonely_b.push_back(describe(tb, r, b.rows[b_rows[r]]));
    }
  if (!lonely_a.empty()) c.warnings.push_back(fmt::format("{} row(s) of {} have no match in {}: {}", lonely_a.size(), la, lb, short_list(lonely_a)));
  if (!lonely_b.empty()) c.warnings.push_back(fmt::format("{} row(s) of {} have no match in {}: {}", lonely_b.size(), lb, la, short_list(lonely_b)));
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
