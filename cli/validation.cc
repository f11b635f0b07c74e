// `rdmalab validation`: the model against published measurements (docs/validation.md).
//
// A case is a scenario file whose header says what was measured, where, and the figure:
//   # case: v08
//   # hardware: 2x DGX A100 ...        # tool: all_reduce_perf ...        # source: NVIDIA/nccl issue #812
//   # metric: busbw_gbps               # published: 192                   # tolerance: 15%
// The command runs every case on its scenario's backend and prints case, published, predicted
// and their ratio; it fails (exit 1) when a case is outside its tolerance or the median |error|
// of the suite is above --median (5 % unless given).
#include "validation.h"

#include "commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "backends.h"
#include "rdmalab/files.h"
#include "rdmalab/run.h"

namespace rdmalab {
namespace {

struct Case {
  std::string path, id, metric, source, hardware, tool;
  double published = 0, tolerance = 0.15;
};

// The figures a case can compare, in the units the tools print them.
const std::map<std::string, std::string>& metrics() {
  static const std::map<std::string, std::string> m = {
      {"busbw_gbps", "nccl-tests busbw, GB/s (10^9 B/s)"},
      {"algbw_gbps", "nccl-tests algbw, GB/s"},
      {"bw_gbps", "perftest BW average, Gb/s"},
      {"bw_mibps", "perftest BW average, MB/s (2^20 B/s)"},
      {"t_typical_us", "perftest t_typical, usec"},
      {"time_us", "nccl-tests time, us"},
      {"samples_per_s", "training throughput of the whole job, samples (images, tokens) per second"},
      {"samples_per_s_per_gpu", "training throughput per GPU, samples (tokens) per second per GPU, as NeMo publishes it"},
  };
  return m;
}

Result<double> metric_of(const std::string& metric, const ResultRow& r) {
  if (metric == "busbw_gbps" || metric == "algbw_gbps" || metric == "time_us" || metric == "samples_per_s" || metric == "samples_per_s_per_gpu") {
    auto it = r.extra.find(metric);
    if (it == r.extra.end()) return Status(Errc::invalid_argument, fmt::format("the row of {} has no {}", r.workload, metric));
    return it->second;
  }
  if (metric == "bw_gbps") return r.bw_gbps;
  if (metric == "bw_mibps") return r.bw_gbps * 1e9 / 8 / 1048576.0;
  if (metric == "t_typical_us") {
    if (!r.lat) return Status(Errc::invalid_argument, fmt::format("{} is not a latency workload: no t_typical", r.workload));
    return r.lat->typical_us;
  }
  return Status(Errc::invalid_argument, "unknown metric");
}

Result<Case> read_case(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(Errc::not_found, fmt::format("{}: cannot be read", path));
  Case c;
  c.path = path;
  std::map<std::string, std::string> head;
  std::string line;
  int n = 0;
  while (std::getline(in, line) && n < 200) {
    ++n;
    if (line.rfind("# ", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(2, colon - 2), value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    if (key.find(' ') != std::string::npos) continue;  // prose
    if (head.count(key)) head[key] += " " + value;
    else head[key] = value;
  }
  auto need = [&](const char* k) -> Result<std::string> {
    auto it = head.find(k);
    if (it == head.end() || it->second.empty())
      return Status(Errc::invalid_argument, fmt::format("{}: a validation case needs a '# {}:' line in its header", path, k));
    return it->second;
  };
  RDMALAB_ASSIGN(c.id, need("case"));
  RDMALAB_ASSIGN(c.metric, need("metric"));
  RDMALAB_ASSIGN(c.source, need("source"));
  RDMALAB_ASSIGN(c.hardware, need("hardware"));
  RDMALAB_ASSIGN(c.tool, need("tool"));
  RDMALAB_ASSIGN(std::string pub, need("published"));
  if (!metrics().count(c.metric)) {
    std::string allowed;
    for (const auto& [k, v] : metrics()) allowed += (allowed.empty() ? "" : ", ") + k;
    return Status(Errc::invalid_argument, fmt::format("{}: metric '{}' is not one of {}", path, c.metric, allowed));
  }
  char* end = nullptr;
  c.published = std::strtod(pub.c_str(), &end);
  if (end == pub.c_str() || !(c.published > 0) || !std::isfinite(c.published))
    return Status(Errc::invalid_argument, fmt::format("{}: published: '{}' is not a positive number", path, pub));
  if (auto t = head.find("tolerance"); t != head.end()) {
    c.tolerance = std::strtod(t->second.c_str(), &end) / 100.0;
    if (end == t->second.c_str() || *end != '%' || !(c.tolerance > 0) || c.tolerance >= 1)
      return Status(Errc::invalid_argument, fmt::format("{}: tolerance: '{}' is not a percentage below 100 (e.g. 15%)", path, t->second));
  }
  return c;
}

}  // namespace

int cmd_validation(const std::vector<std::string>& args, const std::string& json_path, double median_limit) {
  std::vector<std::string> files;
  for (const auto& a : args) {
    std::error_code ec;
    if (std::filesystem::is_directory(a, ec)) {
      for (const auto& e : std::filesystem::directory_iterator(a, ec))
        if (e.path().extension() == ".yaml") files.push_back(e.path().string());
    } else if (std::filesystem::is_regular_file(a, ec)) {
      files.push_back(a);
    } else {
      fmt::print(stderr, "rdmalab validation: {}: no such file or folder\n", a);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    fmt::print(stderr, "rdmalab validation: no case (*.yaml) in {}\n", fmt::join(args, ", "));
    return 2;
  }
  std::vector<Case> cases;
  for (const auto& f : files) {
    auto c = read_case(f);
    if (!c) {
      fmt::print(stderr, "rdmalab validation: {}\n", c.status().message());
      return 2;
    }
    cases.push_back(*c);
  }
  fmt::print("{:<5} {:<21} {:>11} {:>11} {:>7} {:>7}  {}\n", "case", "metric", "published", "predicted", "ratio", "within", "file");
  nlohmann::json out = nlohmann::json::array();
  std::vector<double> errors;
  int outside = 0, failed = 0;
  for (const Case& c : cases) {
    auto sc = load_scenario(c.path, {}, full_schema(all_backends()));
    if (!sc) {
      fmt::print(stderr, "rdmalab validation: {}\n", sc.status().message());
      return 2;
    }
    auto backend = all_backends().make(sc->get_string("backend"));
    if (!backend) {
      fmt::print(stderr, "rdmalab validation: {}: {}\n", c.path, backend.status().message());
      return 2;
    }
    if (Status st = check_run(*sc, **backend); !st) {
      fmt::print(stderr, "rdmalab validation: {}\n", st.message());
      return 2;
    }
    RunOutcome run = run_scenario(*sc, **backend);
    Result<double> got = !run.status ? Result<double>(run.status)
                         : run.rows.empty() ? Result<double>(Status(Errc::internal, "the run produced no row"))
                                            : metric_of(c.metric, run.rows.front());
    nlohmann::json j = {{"case", c.id},         {"file", c.path},       {"metric", c.metric}, {"published", c.published},
                        {"tolerance", c.tolerance}, {"hardware", c.hardware}, {"tool", c.tool},     {"source", c.source}};
    if (!got) {
      ++failed;
      fmt::print("{:<5} {:<21} {:>11.6g} {:>11} {:>7} {:>7}  {}: {}\n", c.id, c.metric, c.published, "-", "-", "FAILED", c.path,
                 got.status().message());
      j["error"] = got.status().message();
    } else {
      const double ratio = *got / c.published;
      const bool ok = std::abs(ratio - 1) <= c.tolerance + 1e-12;
      outside += !ok;
      errors.push_back(std::abs(ratio - 1));
      fmt::print("{:<5} {:<21} {:>11.6g} {:>11.6g} {:>7.3f} {:>7}  {}\n", c.id, c.metric, c.published, *got, ratio,
                 ok ? fmt::format("±{:.0f}%", c.tolerance * 100) : "NO", c.path);
      j["predicted"] = *got;
      j["ratio"] = ratio;
      j["within"] = ok;
    }
    out.push_back(j);
  }
  double median = 0;
  if (!errors.empty()) {
    std::sort(errors.begin(), errors.end());
    const std::size_t m = errors.size() / 2;
    median = errors.size() % 2 ? errors[m] : (errors[m - 1] + errors[m]) / 2;
  }
  const bool median_ok = median <= median_limit + 1e-12;
  fmt::print("{} cases: {} within tolerance, {} outside, {} failed; median |error| {:.1f}% (limit {:.1f}%)\n", cases.size(),
             cases.size() - static_cast<std::size_t>(outside + failed), outside, failed, median * 100, median_limit * 100);
  if (!json_path.empty()) {
    Status st = write_file_atomically(json_path, nlohmann::json{{"cases", out}, {"median_abs_error", median}}.dump(2) + "\n");
    if (!st) {
      fmt::print(stderr, "rdmalab validation: --json: {}\n", st.message());
      return 1;
    }
  }
  return outside || failed || !median_ok ? 1 : 0;
}

Command add_validation(CLI::App& app) {
  auto cases = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"tests/validation"});
  auto json = std::make_shared<std::string>();
  auto median = std::make_shared<double>(5);
  auto* validation = app.add_subcommand("validation",
                                        "run the validation cases (published measurements) on the model and print case, published, predicted, "
                                        "ratio (docs/validation.md)");
  validation->add_option("cases", *cases, "case files or folders of them (default: tests/validation)");
  validation->add_option("--json", *json, "also write the table as JSON to this file");
  validation->add_option("--median", *median, "largest median |error| of the suite that passes, in percent (default 5)")->check(CLI::Range(0.0, 100.0));
  return {validation, [=] { return cmd_validation(*cases, *json, *median / 100); }};
}

}  // namespace rdmalab
