#include "rdmalab/result_table.h"

#include <fmt/format.h>

#include <algorithm>
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
  if (r.notes.count("provoke")) return "error";
  if (r.extra.count("busbw_gbps")) return "collective";
  if (r.extra.count("step_ms")) return "training";
  if (r.lat) return "latency";
  return "bandwidth";
}

std::vector<std::string> result_columns(const std::string& kind) {
  if (kind == "bandwidth")
    return {"workload",          "#bytes",        "#iterations",          "BW peak[Gb/sec]",        "BW average[Gb/sec]",
            "MsgRate[Mpps]",     "BW average[MiB/s]", "errors",            "CPU initiator[s/GB]", "CPU target[s/GB]",
            "CPU machine[s/GB]"};
  if (kind == "latency")
    return {"workload",    "#bytes",        "#iterations", "t_min[usec]",  "t_max[usec]", "t_typical[usec]",
            "t_avg[usec]", "t_stdev[usec]", "99% [usec]",  "99.9% [usec]", "errors"};
  if (kind == "collective")
    return {"workload",  "size (B)",     "count",        "type",   "redop",    "root", "placement",
            "time (us)", "algbw (GB/s)", "busbw (GB/s)", "#wrong", "algorithm", "protocol", "channels"};
  if (kind == "error")
    return {"workload", "provoke", "operation", "#bytes", "completion", "after[usec]", "next request", "QP state", "errors"};
  return {"workload", "model",       "parallelism", "grad bytes", "step[ms]",  "compute[ms]",
          "comm[ms]", "exposed[ms]", "bubble[ms]",  "samples/s",  "#wrong"};
}

std::vector<std::string> result_numeric_columns() {
  static const char* const text[] = {"workload",   "type",       "redop",      "root",         "placement", "algorithm", "protocol",
                                     "model",      "parallelism", "provoke",   "operation",    "completion", "next request",
                                     "QP state"};
  std::vector<std::string> out;
  for (const char* kind : {"bandwidth", "latency", "collective", "error", "training"})
    for (const auto& c : result_columns(kind))
      if (std::find(std::begin(text), std::end(text), c) == std::end(text) && std::find(out.begin(), out.end(), c) == out.end())
        out.push_back(c);
  return out;
}

ResultTable result_table(const std::vector<ResultRow>& rows) {
  ResultTable t;
  if (rows.empty()) return t;
  t.kind = result_kind(rows.front());
  t.columns = result_columns(t.kind);
  for (const auto& r : rows) {
    if (result_kind(r) != t.kind) continue;
    std::vector<Cell> c{text(r.workload)};
    if (t.kind == "bandwidth") {
      c.insert(c.end(), {whole(static_cast<double>(r.bytes)), whole(static_cast<double>(r.iterations)), num(r.bw_peak_gbps, 2),
                         num(r.bw_gbps, 2), num(r.msg_rate_mpps, 6), num(r.bw_gbps * 1e9 / 8 / 1048576.0, 2),
                         whole(static_cast<double>(r.errors))});
      for (const char* k : {"cpu_initiator_s_per_gb", "cpu_target_s_per_gb", "cpu_machine_s_per_gb"})
        c.push_back(r.extra.count(k) ? num(extra(r, k), 4) : text("-"));
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
    } else if (t.kind == "error") {
      c.insert(c.end(), {text(note(r, "provoke")), text(note(r, "operation")), whole(static_cast<double>(r.bytes)), text(note(r, "completion")),
                         r.extra.count("time_us") ? num(extra(r, "time_us"), 2) : text("-"), text(note(r, "next")), text(note(r, "qp_state")),
                         whole(static_cast<double>(r.errors))});
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

// ---------------------------------------------------------------------------------------------
// The terminal's text: perftest's tables for bandwidth and latency rows, nccl-tests' for
// collectives, one block per training row.

namespace {

using Out = std::back_insert_iterator<std::string>;

bool is_collective_row(const ResultRow& r) { return r.extra.count("busbw_gbps") > 0; }


// The algorithm, its protocol and, where it was split over several, the channels:
// "ring, LL128, 8 channels".
std::string algorithm_text(const ResultRow& r) {
  std::string out = note(r, "algorithm");
  if (const std::string pr = note(r, "protocol"); !pr.empty()) out += ", " + pr;
  const std::string ch = note(r, "channels");
  if (!ch.empty() && ch != "1") out += fmt::format(", {} channels", ch);
  return out;
}

// nccl-tests' table: one line per size, out-of-place then in-place columns.
void collective_table(Out text, const std::vector<const ResultRow*>& rows) {
  fmt::format_to(text, "#{:>62}{:>36}\n", "out-of-place", "in-place");
  fmt::format_to(text, "#{:>11} {:>12} {:>9} {:>6} {:>6} {:>9} {:>7} {:>7} {:>6} {:>9} {:>7} {:>7} {:>6}\n", "size", "count", "type", "redop", "root",
             "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  fmt::format_to(text, "#{:>11} {:>12} {:>9} {:>6} {:>6} {:>9} {:>7} {:>7} {:>6} {:>9} {:>7} {:>7} {:>6}\n", "(B)", "(elements)", "", "", "", "(us)",
             "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  auto cols = [](const ResultRow* r) {
    if (!r) return fmt::format("{:>9} {:>7} {:>7} {:>6}", "N/A", "N/A", "N/A", "N/A");
    return fmt::format("{:>9.2f} {:>7.2f} {:>7.2f} {:>6}", r->time_s * 1e6, r->extra.at("algbw_gbps"), r->extra.at("busbw_gbps"), r->errors);
  };
  for (std::size_t i = 0; i < rows.size();) {
    const ResultRow* out = nullptr;
    const ResultRow* in = nullptr;
    const ResultRow* first = rows[i];
    for (; i < rows.size() && rows[i]->bytes == first->bytes && rows[i]->workload == first->workload; ++i) {
      if (note(*rows[i], "placement") == "in-place") {
        if (in) break;
        in = rows[i];
      } else {
        if (out || in) break;
        out = rows[i];
      }
    }
    fmt::format_to(text, " {:>11} {:>12} {:>9} {:>6} {:>6} {} {}   {}\n", first->bytes, static_cast<std::uint64_t>(first->extra.at("count")),
               note(*first, "type"), note(*first, "redop"), note(*first, "root"), cols(out), cols(in), algorithm_text(*first));
  }
}

bool is_training_row(const ResultRow& r) { return r.extra.count("step_ms") > 0; }
bool is_error_row(const ResultRow& r) { return r.notes.count("provoke") > 0; }

// verbs_error: what rank 0's request became, as verbs says it, and why.
void error_row(Out out, const ResultRow& r) {
  const std::string text = note(r, "completion_text");
  fmt::format_to(out, "# verbs_error: {}: one {} of {} B, rank 0 to rank 1 ({})\n", note(r, "provoke"), note(r, "operation"), r.bytes,
                 note(r, "data_path"));
  fmt::format_to(out, "{:>28}  {}{}{}\n", "completion", note(r, "completion"), text.empty() ? "" : " (" + text + ")",
                 r.extra.count("time_us") ? fmt::format(", {:.2f} usec after the post", extra(r, "time_us")) : "");
  fmt::format_to(out, "{:>28}  {}\n", "the next request", note(r, "next"));
  fmt::format_to(out, "{:>28}  {}\n", "rank 0's QP afterwards", note(r, "qp_state"));
  fmt::format_to(out, "{:>28}  {}\n", note(r, "target"), r.errors);
  // The reason, wrapped at about 100 columns.
  const std::string why = note(r, "why");
  std::string line = "why:";
  std::size_t from = 0;
  while (from < why.size()) {
    std::size_t to = why.find(' ', from);
    if (to == std::string::npos) to = why.size();
    const std::string word = why.substr(from, to - from);
    if (line.size() + 1 + word.size() > 100) {
      fmt::format_to(out, "{}\n", line);
      line = "    ";
    } else {
      line += ' ';
    }
    line += word;
    from = to + 1;
  }
  fmt::format_to(out, "{}\n", line);
}

void training_row(Out out, const ResultRow& r) {
  if (r.workload == "train_pp") {
    fmt::format_to(out, "{:>12} {:>28} {:>10} {:>11} {:>10} {:>9} {:>9} {:>12} {:>7}\n", "model", "parallelism", "step[ms]", "compute[ms]", "bubble[ms]",
               "bubble", "ideal", "samples/s", "#wrong");
    fmt::format_to(out, "{:>12} {:>28} {:>10.3f} {:>11.3f} {:>10.3f} {:>8.1f}% {:>8.1f}% {:>12.1f} {:>7}\n", note(r, "model"), note(r, "parallelism"),
               extra(r, "step_ms"), extra(r, "compute_ms"), extra(r, "bubble_ms"), 100 * extra(r, "bubble_fraction"),
               100 * extra(r, "ideal_bubble_fraction"), extra(r, "samples_per_s"), r.errors);
    return;
  }
  if (r.workload == "train_3d") {
    // Megatron-LM's step: compute, the tensor-parallel collectives on the critical path, the time
    // waiting for other stages (pipeline bubble, exposed data-parallel traffic), tokens per GPU.
    fmt::format_to(out, "{:>12} {:>36} {:>10} {:>11} {:>11} {:>10} {:>9} {:>13} {:>7}\n", "model", "parallelism", "step[ms]", "compute[ms]",
                   "tp comm[ms]", "idle[ms]", "mfu", "samples/s/gpu", "#wrong");
    fmt::format_to(out, "{:>12} {:>36} {:>10.3f} {:>11.3f} {:>11.3f} {:>10.3f} {:>8.1f}% {:>13.1f} {:>7}\n", note(r, "model"), note(r, "parallelism"),
                   extra(r, "step_ms"), extra(r, "compute_ms"), extra(r, "tp_comm_ms"), extra(r, "idle_ms"), 100 * extra(r, "mfu"),
                   extra(r, "samples_per_s_per_gpu"), r.errors);
    return;
  }
  // train_dp all-reduces its gradients in buckets; train_fsdp gathers and reduce-scatters per unit.
  const bool fsdp = r.workload == "train_fsdp";
  fmt::format_to(out, "{:>12} {:>20} {:>14} {:>8} {:>10} {:>11} {:>9} {:>12} {:>12} {:>7}\n", "model", "parallelism", "grad bytes",
                 fsdp ? "units" : "buckets", "step[ms]", "compute[ms]", "comm[ms]", "exposed[ms]", "samples/s", "#wrong");
  fmt::format_to(out, "{:>12} {:>20} {:>14} {:>8} {:>10.3f} {:>11.3f} {:>9.3f} {:>12.3f} {:>12.1f} {:>7}\n", note(r, "model"), note(r, "parallelism"),
             r.bytes, static_cast<int>(extra(r, fsdp ? "units" : "buckets")), extra(r, "step_ms"), extra(r, "compute_ms"), extra(r, "comm_ms"),
             extra(r, "exposed_ms"), extra(r, "samples_per_s"), r.errors);
}

}  // namespace

std::string result_text(const std::vector<ResultRow>& rows) {
  std::string text;
  Out out = std::back_inserter(text);
  bool header_bw = false, header_lat = false, cpu_bw = false;
  std::vector<const ResultRow*> coll;
  for (const auto& r : rows)
    if (is_collective_row(r)) coll.push_back(&r);
  if (!coll.empty()) collective_table(out, coll);
  for (const auto& r : rows)
    if (is_training_row(r)) training_row(out, r);
  for (const auto& r : rows)
    if (is_error_row(r)) error_row(out, r);
  for (const auto& r : rows) {
    if (is_collective_row(r) || is_training_row(r) || is_error_row(r)) continue;
    if (r.lat) {
      if (!header_lat) {
        if (!note(r, "data_path").empty()) fmt::format_to(out, "# data path: {}\n", note(r, "data_path"));
        fmt::format_to(out, "{:>10} {:>12} {:>12} {:>12} {:>16} {:>12} {:>14} {:>14} {:>16} {:>8}\n", "#bytes", "#iterations", "t_min[usec]",
                   "t_max[usec]", "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]", "99% [usec]", "99.9% [usec]", "errors");
        header_lat = true;
      }
      fmt::format_to(out, "{:>10} {:>12} {:>12.2f} {:>12.2f} {:>16.2f} {:>12.2f} {:>14.2f} {:>14.2f} {:>16.2f} {:>8}\n", r.bytes, r.iterations,
                 r.lat->min_us, r.lat->max_us, r.lat->typical_us, r.lat->avg_us, r.lat->stdev_us, r.lat->p99_us, r.lat->p999_us, r.errors);
    } else {
      if (!header_bw) {
        // What the figures add up: perftest's table is one pair's; rdmalab sums every pair.
        const auto pairs = r.extra.count("pairs") ? static_cast<long>(r.extra.at("pairs")) : 1L;
        const std::string path = note(r, "data_path");
        if (pairs > 1 || !path.empty())
          fmt::format_to(out, "# {}{}\n", pairs > 1 ? fmt::format("{} pairs: bandwidth and message rate summed over all of them; ", pairs) : "",
                     path.empty() ? "" : "data path: " + path);
        cpu_bw = r.extra.count("cpu_initiator_s_per_gb") > 0;
        if (cpu_bw)
          fmt::format_to(out, "# CPU: seconds per GB moved, of the initiators' and the targets' threads and of rank 0's machine (all its CPUs)\n");
        fmt::format_to(out, "{:>10} {:>12} {:>16} {:>19} {:>14} {:>19} {:>8}{}\n", "#bytes", "#iterations", "BW peak[Gb/sec]", "BW average[Gb/sec]",
                   "MsgRate[Mpps]", "BW average[MiB/s]", "errors",
                   cpu_bw ? fmt::format(" {:>15} {:>12} {:>13}", "CPU init[s/GB]", "target[s/GB]", "machine[s/GB]") : std::string());
        header_bw = true;
      }
      std::string cpu;
      if (cpu_bw)
        for (auto [k, w] : {std::pair{"cpu_initiator_s_per_gb", 15}, std::pair{"cpu_target_s_per_gb", 12}, std::pair{"cpu_machine_s_per_gb", 13}})
          cpu += r.extra.count(k) ? fmt::format(" {:>{}.4f}", r.extra.at(k), w) : fmt::format(" {:>{}}", "-", w);
      fmt::format_to(out, "{:>10} {:>12} {:>16.2f} {:>19.2f} {:>14.6f} {:>19.2f} {:>8}{}\n", r.bytes, r.iterations, r.bw_peak_gbps, r.bw_gbps,
                 r.msg_rate_mpps, r.bw_gbps * 1e9 / 8 / 1048576.0, r.errors, cpu);
    }
  }
  return text;
}

// --explain: NCCL's tuning model's candidates for each collective size (notes.tuning), and what
// ran. One block per size (the in-place row repeats the out-of-place one's choice).
std::string tuning_explanation(const std::vector<ResultRow>& rows) {
  std::string text;
  Out out = std::back_inserter(text);
  bool any = false;
  for (const auto& r : rows) {
    if (!is_collective_row(r) || note(r, "placement") == "in-place") continue;
    const std::string t = note(r, "tuning");
    if (!any) fmt::format_to(out, "\n# NCCL's tuning model (NCCL 2.30 src/graph/tuning.cc; docs/collectives.md), per size:\n");
    any = true;
    if (t.empty()) {
      fmt::format_to(out, "# {} {} B: not tuned by NCCL (point to point); ran {}\n", r.workload, r.bytes, algorithm_text(r));
      continue;
    }
    fmt::format_to(out, "# {} {} B on {} ranks: ran {}; NCCL's model picks {}\n", r.workload, r.bytes, r.ranks, algorithm_text(r), note(r, "nccl_choice"));
    std::size_t from = 0;
    while (from < t.size()) {
      std::size_t to = t.find("; ", from);
      if (to == std::string::npos) to = t.size();
      fmt::format_to(out, "#   {}\n", t.substr(from, to - from));
      from = to + 2;
    }
  }
  if (!any) fmt::format_to(out, "\n# --explain: no collective in this run, so no tuning to explain\n");
  return text;
}


}  // namespace rdmalab
