// What a sweep's plots show (docs/planning.md): read back a sweep's table (sweep.json) and lay
// out its lines, axes, units and legends. Drawing is the GUI layer's (gui/src/plot.cc, Qt Charts):
// this file decides what is drawn, so the CLI's plot files and the dashboard's Sweep tab agree.
#pragma once

#include <string>
#include <vector>

#include "rdmalab/result_table.h"
#include "rdmalab/status.h"
#include "rdmalab/sweep.h"

namespace rdmalab {

// A sweep as `rdmalab sweep` wrote it (DIR/sweep.json).
struct SweepFile {
  std::string path;
  std::string scenario;
  std::string backend;
  bool zip = false;
  std::vector<SweepAxis> axes;
  ResultTable table;  // sweep_table's columns and lines; cells as text, values NaN where text
};

// Errors: io (cannot open), invalid_argument (not a sweep table: names the path and what is missing).
Result<SweepFile> read_sweep(const std::string& path);

struct PlotLine {
  std::string name;        // the legend's text
  std::vector<double> x;   // log2(bytes) on a size axis, the value's index on a category axis
  std::vector<double> y;   // in the plot's y unit
};

struct Plot {
  std::string id;                        // the file stem: "busbw-vs-size", "busbw-vs-link.bandwidth"
  std::string title;
  std::string x_title;                   // with its unit: "message size (bytes)"
  std::string y_title;                   // with its unit: "busbw (GB/s)"
  bool x_is_size = false;                // x is log2(bytes): label ticks 1 KiB, 1 MiB ...
  std::vector<std::string> x_categories; // otherwise the x values' texts, x = their index
  std::vector<PlotLine> lines;
};

struct PlotOptions {
  std::string measure;  // a column of the table; empty: the kind's headline (busbw, BW average, t_typical, step)
};

// The plots a sweep's table supports: the measure against message size, one line per point (where
// the points ran more than one size), and the measure against each varied key that has two or more
// values, one line per combination of the other keys (at each point's largest size). Only lines
// with status ok; collectives' out-of-place rows. Errors: invalid_argument when the measure is not
// a numeric column (names the columns that are) or nothing ran.
Result<std::vector<Plot>> sweep_plots(const SweepFile& sweep, const PlotOptions& options = {});

// A readable unit for values up to `max` in `unit` ("GB/s", "Gb/s", "us", "ms", "MiB/s"): the
// factor to multiply by and the new unit (400000 Gb/s -> 0.001, "Tb/s").
struct Scale {
  double factor = 1;
  std::string unit;
};
Scale readable_scale(double max, const std::string& unit);

// "1 KiB", "64 MiB", "8 B": a size axis's tick text for log2(bytes).
std::string size_tick_label(double log2_bytes);

}  // namespace rdmalab
