#include "rdmalab/calibration.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "rdmalab/compare.h"
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

namespace {

// The factor per size, from the rows both runs have (perftest point-to-point rows; collectives'
// rows are left out: their time is the sum of many transfers, not one message's).
void match_rows(const std::vector<ResultRow>& measured, const std::vector<ResultRow>& predicted, CalibrationFit& fit) {
  std::map<std::uint64_t, CalibrationPoint> bw, lat;
  std::vector<std::string> lonely;
  for (const auto& m : measured) {
    if (m.extra.count("busbw_gbps")) continue;
    bool found = false;
    for (const auto& p : predicted) {
      if (m.workload != p.workload || m.bytes != p.bytes || p.extra.count("busbw_gbps") || bool(m.lat) != bool(p.lat)) continue;
      found = true;
      CalibrationPoint pt{m.workload, m.bytes, bool(m.lat), 0, 0, 1, ""};
      if (m.lat && p.lat->typical_us > 0) {
        pt.measured = m.lat->typical_us;
        pt.predicted = p.lat->typical_us;
        pt.factor = pt.measured / pt.predicted;
        lat[m.bytes] = pt;
      } else if (!m.lat && p.bw_gbps > 0) {
        pt.measured = m.bw_gbps;
        pt.predicted = p.bw_gbps;
        pt.factor = pt.measured / pt.predicted;
        bw[m.bytes] = pt;
      }
      break;
    }
    if (!found) lonely.push_back(fmt::format("{} {}", m.workload, units::format_size(m.bytes)));
  }
  if (!lonely.empty())
    fit.notes.push_back(fmt::format("{} measured size(s) have no prediction and are left out: {}", lonely.size(), short_list(lonely)));
  for (auto& [size, pt] : bw) fit.points.push_back(pt);
  for (auto& [size, pt] : lat) fit.points.push_back(pt);
}

void add_steps(CalibrationFit& fit) {
  for (const auto& pt : fit.points) {
    auto& steps = pt.latency ? fit.calibration.latency : fit.calibration.bandwidth;
    steps.emplace_back(steps.empty() ? 0 : pt.bytes, pt.latency ? pt.factor : std::min(1.0, pt.factor));
  }
  auto largest = [](const std::vector<std::pair<std::uint64_t, double>>& steps, double& err, std::uint64_t& at) {
    for (std::size_t i = 1; i < steps.size(); ++i) {
      const double e = std::abs(steps[i - 1].second / steps[i].second - 1);
      if (e > err) err = e, at = steps[i].first;
    }
  };
  largest(fit.calibration.bandwidth, fit.bw_step_error, fit.bw_step_at);
  largest(fit.calibration.latency, fit.lat_step_error, fit.lat_step_at);
}

}  // namespace

Result<CalibrationFit> fit_calibration(const RunFile& measured, const RunFile& predicted, bool force) {
  for (const RunFile* f : {&measured, &predicted}) {
    const char* which = f == &measured ? "the measured run" : "the prediction";
    if (f->info.status != "ok")
      return Status(Errc::invalid_argument, fmt::format("{} ({}) is a run that {}{}: calibrate from finished runs only", which, f->path,
                                                        f->info.status, f->info.error.empty() ? "" : " (" + f->info.error + ")"));
    for (const auto& r : f->rows)
      if (r.errors > 0)
        return Status(Errc::invalid_argument, fmt::format("{} ({}) delivered {} wrong byte(s) or failed completion(s) at {} {}: its figures "
                                                          "are not a measurement to calibrate from",
                                                          which, f->path, r.errors, r.workload, units::format_size(r.bytes)));
  }
  if (!predicted.info.backend.empty() && predicted.info.backend != "simgrid")
    return Status(Errc::invalid_argument, fmt::format("the prediction ({}) ran on {}: it must be the SimGrid model's run of the same "
                                                      "scenario (--backend simgrid)", predicted.path, predicted.info.backend));
  const std::string model = predicted.resolved("fabric.model");
  if (!model.empty() && model != "calibrated")
    return Status(Errc::invalid_argument, fmt::format("the prediction ({}) ran the {} model; the calibration applies to fabric.model: "
                                                      "calibrated: run the prediction again with --set fabric.model=calibrated", predicted.path, model));
  const std::string already = predicted.resolved("fabric.calibration");
  if (!already.empty())
    return Status(Errc::invalid_argument, fmt::format("the prediction ({}) was calibrated already (fabric.calibration: {}): factors from it "
                                                      "would multiply that file's; predict without a calibration file", predicted.path, already));
  CalibrationFit fit;
  match_rows(measured.rows, predicted.rows, fit);
  // The device the measurement ran on (verbs rows carry its port's active rate) against the
  // model's links: factors would fold a different link rate into "NIC effects".
  if (auto port = port_check(predicted, measured); port && port->differs)
    fit.notes.push_back(fmt::format("the prediction models {:g} Gb/s links and the measurement ran on a port active at {:g} Gb/s: predict "
                                    "with --set fabric.link.bandwidth={:g}Gbps so the factors hold only what the model lacks",
                                    port->link_gbps, port->port_gbps, port->port_gbps));
  if (fit.points.empty())
    return Status(Errc::invalid_argument, "no message size appears in both runs (same workload, same sizes): nothing to calibrate");
  std::string bad;
  for (auto& pt : fit.points) {
    const double f = pt.factor;
    if (!pt.latency && f < kMinBandwidthFactor)
      pt.problem = fmt::format("the device reached {:.1f} % of the model's bandwidth: does the scenario's fabric describe it (link rate, "
                               "a Soft-RoCE port)?", 100 * f);
    else if (!pt.latency && f > kMaxBandwidthFactor)
      pt.problem = fmt::format("the device was {:.1f} % faster than the model allows: the scenario's link is slower than the device's",
                               100 * (f - 1));
    else if (pt.latency && (f < kMinLatencyFactor || f > kMaxLatencyFactor))
      pt.problem = fmt::format("the measured latency is {:.3g}x the model's: an emulated NIC (Soft-RoCE) or a fabric the scenario does not "
                               "describe", f);
    if (!pt.problem.empty() && bad.empty()) bad = fmt::format("{} {}: factor {:.4f}: {}", pt.workload, units::format_size(pt.bytes), f, pt.problem);
  }
  if (!bad.empty() && !force)
    return Status(Errc::invalid_argument, fmt::format("implausible factor at {} (plausible: bandwidth {}..{}, latency {}..{}; --force keeps it)",
                                                      bad, kMinBandwidthFactor, kMaxBandwidthFactor, kMinLatencyFactor, kMaxLatencyFactor));
  add_steps(fit);
  return fit;
}

Result<Calibration> calibrate(const std::vector<ResultRow>& measured, const std::vector<ResultRow>& predicted) {
  RunFile m, p;
  m.rows = measured;
  p.rows = predicted;
  RDMALAB_ASSIGN(CalibrationFit fit, fit_calibration(m, p, false));
  return std::move(fit.calibration);
}

std::string calibration_report(const CalibrationFit& fit) {
  std::string out;
  for (const auto& n : fit.notes) out += "# note: " + n + "\n";
  out += fmt::format("{:<10} {:>10} {:>8} {:>14} {:>14} {:>8}\n", "workload", "size", "kind", "measured", "predicted", "factor");
  for (const auto& pt : fit.points) {
    const char* unit = pt.latency ? "us" : "Gb/s";
    out += fmt::format("{:<10} {:>10} {:>8} {:>9.3f} {:<4} {:>9.3f} {:<4} {:>8.4f}{}\n", pt.workload, units::format_size(pt.bytes),
                       pt.latency ? "latency" : "bw", pt.measured, unit, pt.predicted, unit, pt.factor,
                       pt.problem.empty() ? "" : "  <- " + pt.problem);
  }
  auto step = [&](const char* what, double e, std::uint64_t at, bool any) {
    if (!any) return;
    out += fmt::format("{} steps: {}\n", what,
                       e == 0 ? std::string("one size, or the same factor at every size")
                              : fmt::format("the factor changes by up to {:.1f} % between measured sizes (at {}); a size in between takes "
                                            "the lower one's factor, so it can be off by that much{}",
                                            100 * e, units::format_size(at), e > 0.05 ? ": measure more sizes there" : ""));
  };
  step("bandwidth", fit.bw_step_error, fit.bw_step_at, !fit.calibration.bandwidth.empty());
  step("latency", fit.lat_step_error, fit.lat_step_at, !fit.calibration.latency.empty());
  return out;
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
