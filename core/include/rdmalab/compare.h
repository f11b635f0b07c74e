// Two runs side by side, row by row: a prediction against a measurement (simgrid against verbs),
// or two runs of one backend. Rows are matched by what identifies them (workload, size, ranks,
// placement, algorithm ...), not by their order; for every measured column the table has A's
// value, B's and B/A. What makes the comparison doubtful — a failed run, rows without a partner,
// fabrics that differ — is listed before the table. `rdmalab compare` prints it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rdmalab/record.h"
#include "rdmalab/result_table.h"
#include "rdmalab/results.h"
#include "rdmalab/status.h"

namespace rdmalab {

struct Comparison {
  std::vector<std::string> warnings;  // said before the table
  ResultTable table;                  // the identifying columns, then "<column> A", "<column> B", "<column> B/A"
  std::size_t matched = 0, only_a = 0, only_b = 0;
};

// The model's link rate against the port a measurement ran on (verbs rows carry its active rate,
// port_gbps), when both are known: `differs` when they are more than 10 % apart, so the model
// predicts other hardware.
struct PortCheck {
  double link_gbps = 0, port_gbps = 0;
  std::string device;  // "a port" when the rows do not name it
  bool differs = false;
};
std::optional<PortCheck> port_check(const RunFile& model, const RunFile& measured);

// The first `shown` items, comma-separated, then "and N more".
std::string short_list(const std::vector<std::string>& items, std::size_t shown = 4);

// Errors: invalid_argument when the runs' rows are of different kinds (bandwidth and latency).
Result<Comparison> compare_runs(const RunFile& a, const std::string& label_a, const RunFile& b, const std::string& label_b);

// The comparison as text: the warnings as "# " lines, then the table in aligned columns.
std::string comparison_text(const Comparison& c);

}  // namespace rdmalab
