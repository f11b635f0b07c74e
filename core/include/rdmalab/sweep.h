// Sweeps (`rdmalab sweep`, docs/planning.md): one scenario run at every point of a product (or a
// zip) of values of some keys, and the table of all the points' results.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rdmalab/result_table.h"
#include "rdmalab/results.h"
#include "rdmalab/scenario.h"
#include "rdmalab/status.h"

namespace rdmalab {

// One varied key and its values, as written ("fabric.nodes=8,16,32").
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
};

// Reads "KEY=V1,V2,..." (commas inside [...] or {...} belong to the value, so list values work:
// workload.sizes=[1KiB,2KiB],[4KiB]). Errors: invalid_argument naming the text (no '=', no key, an
// empty value, unbalanced brackets).
Result<SweepAxis> parse_sweep_axis(const std::string& text);

// A point: the value of each axis, in the axes' order.
struct SweepPoint {
  std::vector<std::string> values;
  // The --set overrides that make it ("key=value", one per axis).
  std::vector<std::string> overrides(const std::vector<SweepAxis>& axes) const;
  // "fabric.nodes=8 workload.size=1GiB": for progress lines and messages.
  std::string label(const std::vector<SweepAxis>& axes) const;
};

// Every point: the cartesian product of the axes (the last axis varies fastest), or with `zip`
// the i-th value of every axis (all must have as many values). Errors: invalid_argument for no
// axis, a key given twice, or a zip of unequal lengths.
Result<std::vector<SweepPoint>> sweep_points(const std::vector<SweepAxis>& axes, bool zip);

// The scenario as it resolved: every key's final text and where it came from (the file and line,
// --set, or default), one "key = value  # source" line each, sorted by key. Two runs whose
// resolved scenarios are equal run the same thing (the sweep's cache key).
std::string resolved_scenario_text(const Scenario& sc);

// A short, stable digest of a text (64-bit FNV-1a, 16 hex digits): the cache key of a point.
std::string text_digest(const std::string& text);

// One point's outcome, for the table.
struct SweepResult {
  SweepPoint point;
  std::string status;  // ok | failed | cancelled | not run
  std::string error;
  bool cached = false;
  std::vector<ResultRow> rows;
  std::string id;  // its digest: its files under the sweep's points/ folder are <id>.json, .txt, .err
};

// The table of a sweep: one line per point and result row, the varied keys first, then the
// point's status, then the result table's columns (result_table.h) of the rows' kind (kind
// "sweep"; values NaN where a cell is text). A point without rows (failed before any) has one
// line with its status and empty result cells. CSV: result_table_csv.
ResultTable sweep_table(const std::vector<SweepAxis>& axes, const std::vector<SweepResult>& results);
// {"scenario", "backend", "axes": [...], "columns": [...], "rows": [[...]...], "points": [...]}.
std::string sweep_json(const std::string& scenario, const std::string& backend, bool zip, const std::vector<SweepAxis>& axes,
                       const std::vector<SweepResult>& results);

}  // namespace rdmalab
