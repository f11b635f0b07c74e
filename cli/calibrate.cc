// rdmalab calibrate: a calibration file for the SimGrid model from a measured run and the model's
// prediction of the same scenario (docs/backends/simgrid.md).
#include <fmt/format.h>

#include "commands.h"
#include "rdmalab/calibration.h"
#include "rdmalab/files.h"
#include "rdmalab/record.h"

namespace rdmalab {
namespace {

int cmd_calibrate(const std::string& measured, const std::string& predicted, const std::string& out, bool force) {
  auto m = read_run(measured);
  if (!m) return fmt::print(stderr, "rdmalab: {}\n", m.status().message()), 2;
  auto p = read_run(predicted);
  if (!p) return fmt::print(stderr, "rdmalab: {}\n", p.status().message()), 2;
  auto c = fit_calibration(*m, *p, force);
  if (!c) return fmt::print(stderr, "rdmalab: calibrate: {}\n", c.status().message()), 2;
  const std::string text = calibration_yaml(
      c->calibration, fmt::format("rdmalab calibration, made by `rdmalab calibrate {} {}{}`\nUse it with fabric.calibration (fabric.model: calibrated).",
                                  measured, predicted, force ? " --force" : ""));
  // The table goes where the file does not: with -o to standard output, else to standard error.
  const std::string report = calibration_report(*c);
  if (out.empty()) {
    fmt::print(stderr, "{}", report);
    fmt::print("{}", text);
    return 0;
  }
  Status st = write_file_atomically(out, text);
  if (!st) return fmt::print(stderr, "rdmalab: {}\n", st.message()), 1;
  fmt::print("{}{}: {} bandwidth and {} latency steps\n", report, out, c->calibration.bandwidth.size(), c->calibration.latency.size());
  return 0;
}

}  // namespace

Command add_calibrate(CLI::App& app) {
  auto measured = std::make_shared<std::string>();
  auto predicted = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  auto* calib = app.add_subcommand("calibrate",
                                   "make a calibration file for the SimGrid model from a measured run and the model's prediction of the "
                                   "same scenario (records or --json results)");
  calib->add_option("measured", *measured, "the measured run (e.g. verbs on the real cluster)")->required();
  calib->add_option("predicted", *predicted, "the model's run of the same scenario (simgrid, calibrated model, no calibration file)")->required();
  calib->add_option("-o,--output", *out, "write the file here (default: standard output)");
  calib->add_flag("--force", *force,
                  "keep factors outside the plausible range (bandwidth 0.25..1.02 of the model's, latency 0.1..10x): bandwidth is "
                  "still capped at 1, the model's link");
  return {calib, [=] { return cmd_calibrate(*measured, *predicted, *out, *force); }};
}

}  // namespace rdmalab
