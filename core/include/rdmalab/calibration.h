// Calibration files: bandwidth and latency factors by message size for the SimGrid model's
// `calibrated` mode (fabric.calibration), and how one is made from a measured and a predicted
// run (`rdmalab calibrate`). Format in docs/backends/simgrid.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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

// A calibration from rows of the same scenario measured (e.g. verbs) and predicted (simgrid):
// per size, measured / predicted of bandwidth rows (BW average) and of latency rows (t_typical,
// as predicted / measured would shorten: the latency factor is measured / predicted). Errors:
// invalid_argument when no size appears in both.
Result<Calibration> calibrate(const std::vector<ResultRow>& measured, const std::vector<ResultRow>& predicted);

// The file text of a calibration, with a comment header.
std::string calibration_yaml(const Calibration& c, const std::string& comment);

}  // namespace rdmalab
