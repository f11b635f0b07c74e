// rdmalab calibrate: a calibration file for the SimGrid model from a measured run and the model's
// prediction of the same scenario (docs/backends/simgrid.md).
#include <fmt/format.h>

#include "commands.h"
#include "rdmalab/calibration.h"
#include "rdmalab/files.h"
#include "rdmalab/record.h"

namespace rdmalab {
namespace {

int cmd_calibrate(const std::string& measured, const std::string& predicted, const std::string& out) {
  auto m = read_rows(measured);
  if (!m) return fmt::print(stderr, "rdmalab: {}\n", m.status().message()), 2;
  auto p = read_rows(predicted);
  if (!p) return fmt::print(stderr, "rdmalab: {}\n", p.status().message()), 2;
  auto c = calibrate(*m, *p);
  if (!c) return fmt::print(stderr, "rdmalab: calibrate: {}\n", c.status().message()), 2;
  const std::string text = calibration_yaml(
      *c, fmt::format("rdmalab calibration, made by `rdmalab calibrate {} {}`\nUse it with fabric.calibration (fabric.model: calibrated).",
                      measured, predicted));
  if (out.empty()) {
    fmt::print("{}", text);
    return 0;
  }
  Status st = write_file_atomically(out, text);
  if (!st) return fmt::print(stderr, "rdmalab: {}\n", st.message()), 1;
  fmt::print("{}: {} bandwidth and {} latency steps\n", out, c->bandwidth.size(), c->latency.size());
  return 0;
}

}  // namespace

Command add_calibrate(CLI::App& app) {
  auto measured = std::make_shared<std::string>();
  auto predicted = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto* calib = app.add_subcommand("calibrate",
                                   "make a calibration file for the SimGrid model from a measured run and the model's prediction of the "
                                   "same scenario (records or --json results)");
  calib->add_option("measured", *measured, "the measured run (e.g. verbs on the real cluster)")->required();
  calib->add_option("predicted", *predicted, "the model's run of the same scenario (simgrid, calibrated model, no calibration file)")->required();
  calib->add_option("-o,--output", *out, "write the file here (default: standard output)");
  return {calib, [=] { return cmd_calibrate(*measured, *predicted, *out); }};
}

}  // namespace rdmalab
