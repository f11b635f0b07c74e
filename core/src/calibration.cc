#include "rdmalab/calibration.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

#include "rdmalab/units.h"

namespace rdmalab {

double Calibration::factor(const std::vector<std::pair<std::uint64_t, double>>& steps, double bytes) {
  double f = 1.0;
  for (const auto& [from, v] : steps) {
    if (static_cast<double>(from) > bytes) break;
    f = v;
  }
  return f;
}

namespace {

Status read_steps(const YAML::Node& node, const std::string& path, const char* key, std::vector<std::pair<std::uint64_t, double>>& out) {
  auto where = [&](const YAML::Node& n) { return fmt::format("{}:{}:{}: {}", path, n.Mark().line + 1, n.Mark().column + 1, key); };
  if (!node.IsSequence())
    return Status(Errc::invalid_argument, fmt::format("{}: expected a list of [size, factor] pairs, e.g. [[0, 0.8], [64KiB, 0.97]]", where(node)));
  for (const auto& item : node) {
    if (!item.IsSequence() || item.size() != 2 || !item[0].IsScalar() || !item[1].IsScalar())
      return Status(Errc::invalid_argument, fmt::format("{}: each entry is [size, factor], e.g. [4KiB, 0.9]", where(item)));
    auto size = units::parse_size(item[0].Scalar());
    if (!size) return Status(Errc::invalid_argument, fmt::format("{}: {}", where(item[0]), size.status().message()));
    double f = 0;
    try {
      f = item[1].as<double>();
    } catch (const YAML::Exception&) {
      return Status(Errc::invalid_argument, fmt::format("{}: factor '{}' is not a number", where(item[1]), item[1].Scalar()));
    }
    if (!(f > 0) || f > 100) return Status(Errc::invalid_argument, fmt::format("{}: factor {} must be in (0, 100]", where(item[1]), f));
    if (!out.empty() && *size <= out.back().first)
      return Status(Errc::invalid_argument, fmt::format("{}: sizes must grow ({} after {})", where(item[0]), *size, out.back().first));
    if (out.empty() && *size != 0)
      return Status(Errc::invalid_argument, fmt::format("{}: the first entry must start at size 0 (it starts at {})", where(item[0]), *size));
    out.emplace_back(*size, f);
  }
  return Status::ok();
}

}  // namespace

Result<Calibration> load_calibration(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return Status(Errc::io, fmt::format("{}: cannot read the calibration file", path));
  } catch (const YAML::Exception& e) {
    return Status(Errc::invalid_argument, fmt::format("{}:{}:{}: YAML syntax error: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (!root.IsMap()) return Status(Errc::invalid_argument, fmt::format("{}: expected bandwidth_factor and latency_factor lists", path));
  Calibration c;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (key == "bandwidth_factor")
      RDMALAB_TRY(read_steps(it->second, path, "bandwidth_factor", c.bandwidth));
    else if (key == "latency_factor")
      RDMALAB_TRY(read_steps(it->second, path, "latency_factor", c.latency));
    else
      return Status(Errc::invalid_argument, fmt::format("{}:{}: unknown key '{}' (allowed: bandwidth_factor, latency_factor)", path,
                                                        it->first.Mark().line + 1, key));
  }
  return c;
}

Result<Calibration> calibrate(const std::vector<ResultRow>& measured, const std::vector<ResultRow>& predicted) {
  std::map<std::uint64_t, double> bw, lat;
  for (const auto& m : measured)
    for (const auto& p : predicted) {
      if (m.workload != p.workload || m.bytes != p.bytes) continue;
      if (m.lat && p.lat && p.lat->typical_us > 0)
        lat[m.bytes] = m.lat->typical_us / p.lat->typical_us;
      else if (!m.lat && !p.lat && p.bw_gbps > 0 && !m.extra.count("busbw_gbps"))
        bw[m.bytes] = std::min(1.0, m.bw_gbps / p.bw_gbps);
    }
  if (bw.empty() && lat.empty())
    return Status(Errc::invalid_argument, "no message size appears in both runs (same workload, same sizes): nothing to calibrate");
  Calibration c;
  auto steps = [](const std::map<std::uint64_t, double>& m, std::vector<std::pair<std::uint64_t, double>>& out) {
    for (const auto& [size, f] : m) out.emplace_back(out.empty() ? 0 : size, f);
  };
  steps(bw, c.bandwidth);
  steps(lat, c.latency);
  return c;
}

std::string calibration_yaml(const Calibration& c, const std::string& comment) {
  std::string out;
  for (std::size_t start = 0; start < comment.size();) {
    auto nl = comment.find('\n', start);
    out += "# " + comment.substr(start, nl == std::string::npos ? std::string::npos : nl - start) + "\n";
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  auto list = [](const std::vector<std::pair<std::uint64_t, double>>& v) {
    std::string s;
    for (const auto& [size, f] : v) s += fmt::format("  - [{}, {:.4f}]\n", units::format_size(size), f);
    return s;
  };
  if (!c.bandwidth.empty()) out += "bandwidth_factor:   # from this size up: achieved / modelled bandwidth\n" + list(c.bandwidth);
  if (!c.latency.empty()) out += "latency_factor:     # from this size up: measured / modelled latency\n" + list(c.latency);
  return out;
}

}  // namespace rdmalab
