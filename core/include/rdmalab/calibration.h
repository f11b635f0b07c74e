// Calibration files: bandwidth and latency factors by message size for the SimGrid model's
// `calibrated` mode (fabric.calibration), and how one is made from a measured and a predicted
// run (`rdmalab calibrate`). Format in docs/backends/simgrid.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rdmalab/record.h"
#include "rdmalab/results.h"
#include "rdmalab/status.h"

namespace rdmalab {

struct Calibration {
  // (from this many bytes up, factor), sorted by size, the first from 0; empty = factor 1.
  std::vector<std::pair<std::uint64_t, double>> bandwidth, latency;
  // The factor for a message of `bytes`.
  static double factor(const std::vector<std::pair<std::uint64_t, double>>& steps, double bytes);
};

// Reads a calibration file. Errors: io, invalid_argument with file:line and what is wrong.
Result<Calibration> load_calibration(const std::string& path);

// One message size of a calibration: what was measured, what the model predicted, and the
// factor (bandwidth rows: measured / predicted BW average; latency rows: measured / predicted
// t_typical).
struct CalibrationPoint {
  std::string workload;
  std::uint64_t bytes = 0;
  bool latency = false;
  double measured = 0, predicted = 0, factor = 1;
  std::string problem;  // why this factor is implausible; empty when it is not
};

// A calibration and how far to trust it.
struct CalibrationFit {
  Calibration calibration;
  std::vector<CalibrationPoint> points;  // bandwidth sizes, then latency sizes, each growing
  // The file's factors are steps: a size between two measured ones takes the lower one's factor.
  // step_error: the largest |f(next) / f(this) - 1| between neighbouring measured sizes, i.e. how
  // far off an unmeasured size can be (0 with one size); step_at: the size where it is.
  double bw_step_error = 0, lat_step_error = 0;
  std::uint64_t bw_step_at = 0, lat_step_at = 0;
  std::vector<std::string> notes;  // said before the table (sizes without a partner, ...)
};

// Plausible factors. Bandwidth: the device reaches at least a quarter of what the model predicts
// and never more than the model's link allows (a factor above 1 would let the model exceed its
// link; 2 % of measurement noise is allowed and taken as 1). Latency: within 10x either way.
// Outside them the scenario's fabric does not describe the device (a 10 Gb/s Soft-RoCE port
// against a 100 Gb/s fabric), and the factors would hide that.
inline constexpr double kMinBandwidthFactor = 0.25, kMaxBandwidthFactor = 1.02;
inline constexpr double kMinLatencyFactor = 0.1, kMaxLatencyFactor = 10;

// A calibration from two runs of the same scenario, one measured (e.g. verbs) and one predicted
// by the model (simgrid, fabric.model: calibrated, no calibration file). Refused
// (invalid_argument, with the reason): a run that did not finish or delivered wrong bytes, a
// prediction that is not the calibrated model's or already calibrated, no size in both, and,
// unless `force`, factors outside the plausible ranges above (forced: kept, bandwidth capped at 1).
Result<CalibrationFit> fit_calibration(const RunFile& measured, const RunFile& predicted, bool force);

// The same from rows alone (no run information to check): per size, as fit_calibration.
Result<Calibration> calibrate(const std::vector<ResultRow>& measured, const std::vector<ResultRow>& predicted);

// The fit as text: its notes, a table of sizes (measured, predicted, factor) and the step errors.
std::string calibration_report(const CalibrationFit& fit);

// The file text of a calibration, with a comment header.
std::string calibration_yaml(const Calibration& c, const std::string& comment);

}  // namespace rdmalab
