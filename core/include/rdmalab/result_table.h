// The result table as text cells and numbers, with the CLI's column names, for views other than
// the terminal (the dashboard's table, CSV export, comparing two runs row by row).
#pragma once

#include <string>
#include <vector>

#include "rdmalab/results.h"

namespace rdmalab {

struct ResultTable {
  std::string kind;                              // bandwidth | latency | collective | training
  std::vector<std::string> columns;              // the CLI's headings
  std::vector<std::vector<std::string>> cells;   // one per row and column, formatted as the CLI does
  std::vector<std::vector<double>> values;       // the same as numbers; NaN where a cell is text
};

// The kind of a row: collective rows carry busbw, training rows step_ms, latency rows lat.
std::string result_kind(const ResultRow& row);
// Rows of the first row's kind (the others are left out: a run's rows are all of one kind).
ResultTable result_table(const std::vector<ResultRow>& rows);
// RFC 4180 CSV with a heading line.
std::string result_table_csv(const ResultTable& table);

}  // namespace rdmalab
