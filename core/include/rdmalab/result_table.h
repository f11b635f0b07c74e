// The result table: as text cells and numbers with the CLI's column names (the dashboard's table,
// CSV export, comparing two runs row by row), and as the terminal's text.
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
// The table's headings for a kind (bandwidth | latency | collective | error | training).
std::vector<std::string> result_columns(const std::string& kind);
// Every kind's columns that hold numbers (what a sweep's plots may show), each once.
std::vector<std::string> result_numeric_columns();
// Rows of the first row's kind (the others are left out: a run's rows are all of one kind).
ResultTable result_table(const std::vector<ResultRow>& rows);
// RFC 4180 CSV with a heading line.
std::string result_table_csv(const ResultTable& table);

// The terminal's text of a run's rows, as `rdmalab run` prints it: nccl-tests' table for collective
// rows, one block per training row, perftest's tables for bandwidth and latency rows.
std::string result_text(const std::vector<ResultRow>& rows);
// --explain: for each collective size, NCCL's tuning model's candidates (notes.tuning) and what ran.
std::string tuning_explanation(const std::vector<ResultRow>& rows);

}  // namespace rdmalab
